/* SPDX-License-Identifier: MIT */
/* The scalar peak: fp32 multiply then add, not FMA, because that is what the scalar kernels are
   compiled to (baseline x86-64 has no FMA instruction, and ISO C11 mode keeps GCC from contracting
   a * b + c on arm64). This file is built with -fno-tree-vectorize so the chains stay scalar.
   12 chains: a chain's step is a multiply and an add (6 cycles on Zen 2, 8 on Haswell), and about
   2 steps retire per cycle on current cores, so 12 keep the units busy instead of waiting. */
#include "roof_peak_loops.h"

#define CHAINS 12

static float run(int64_t iters, float seed) {
  /* x -> a x + b converges to b / (1 - a) = 1: no overflow, no subnormals, whatever iters is */
  const float a = 0.999999f, b = 1e-6f;
  float x[CHAINS];
  for (int c = 0; c < CHAINS; c++) x[c] = seed + (float)c; /* distinct: no chain equals another */
  for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 16
    for (int c = 0; c < CHAINS; c++) x[c] = x[c] * a + b;
  }
  float s = 0;
  for (int c = 0; c < CHAINS; c++) s += x[c];
  return s;
}

const tx_peak_loop tx_peak_scalar = {"12 chains of fp32 mul+add (no FMA)", 2.0 * CHAINS, run};
