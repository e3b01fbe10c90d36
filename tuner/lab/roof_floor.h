/* SPDX-License-Identifier: MIT */
/* What no call can beat: the roofs of `txtune bench --roofline` measured once, quickly, and the
   least time a call's work needs under them (txtune profile refuses a time below it). */
#ifndef TXTUNE_ROOF_FLOOR_H
#define TXTUNE_ROOF_FLOOR_H

#include <stddef.h>

/* The machine's roofs as the floor of a call's time: the best FMA peak of one thread over the ISAs
   it can run (a team of threads has at most that many times as much), the read bandwidth of
   `threads` threads from arrays beyond the caches, and the caches' bytes together (reads that fit
   in them need not come from memory). A rate <= 0 is unknown. */
typedef struct tx_roof_ceiling {
  double gflops_1t, read_gbs;
  int threads; /* the read bandwidth's */
  double cache_bytes;
} tx_roof_ceiling;
/* 16-bit inputs may meet matrix units (AMX) that multiply them this many times faster than the
   FP32 FMA the peak measures. */
#define TX_ROOF_MATRIX_UNITS 16
/* Measures c (a fraction of a second; arrays of max(cache_bytes, 64 MiB) up to 512 MiB), with the
   loops of the ISAs of isa_mask (txattn_machine_info's). */
void tx_roof_ceiling_measure(unsigned isa_mask, int threads, double cache_bytes,
                             tx_roof_ceiling *c);
/* The least seconds a call of `flops` that must read `bytes` can take on `threads` threads with
   `slack` x the roofs: its flops at the peak (x TX_ROOF_MATRIX_UNITS with half_inputs), and its
   bytes beyond the caches at the read bandwidth, whichever is longer (0: no roof known); why says
   which, with the figures. */
double tx_roof_floor_s(const tx_roof_ceiling *c, int threads, double flops, double bytes,
                       int half_inputs, double slack, char *why, size_t size);

#endif
