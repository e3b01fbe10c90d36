/* SPDX-License-Identifier: MIT */
/* The FMA peak loops, one per ISA, each in its own source file so that it gets its ISA's compiler
   flags and nothing else does. Only what those files need: no library headers. */
#ifndef TXTUNE_ROOF_PEAK_LOOPS_H
#define TXTUNE_ROOF_PEAK_LOOPS_H

#include <stdint.h>

/* A register-only loop of independent multiply-add chains. run() returns a value that depends on every
   chain, so the compiler cannot drop any of them. */
typedef struct tx_peak_loop {
  const char *how; /* the instruction and chain count, for the report */
  double flops_per_iter;
  float (*run)(int64_t iters, float seed);
} tx_peak_loop;

extern const tx_peak_loop tx_peak_scalar;
#if defined(__x86_64__)
extern const tx_peak_loop tx_peak_avx2, tx_peak_avx512;
#elif defined(__aarch64__)
extern const tx_peak_loop tx_peak_neon;
#endif

#endif
