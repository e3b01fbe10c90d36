/* SPDX-License-Identifier: MIT */
/* The NEON peak (arm64 only; Advanced SIMD is part of the base ISA there). 24 chains of 4-lane
   FMLA: at least FMA pipes x latency on current cores (2 x 4 on Neoverse N1, 4 x 4 on Neoverse V1
   and Apple M1), and 26 of the 32 vector registers. */
#include <arm_neon.h>

#include "roof_peak_loops.h"

#define CHAINS 24

static float run(int64_t iters, float seed) {
  const float32x4_t a = vdupq_n_f32(0.999999f), b = vdupq_n_f32(1e-6f); /* x -> 1, see scalar */
  float32x4_t x[CHAINS];
  for (int c = 0; c < CHAINS; c++) x[c] = vdupq_n_f32(seed + (float)c);
  for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 24
    for (int c = 0; c < CHAINS; c++) x[c] = vfmaq_f32(b, x[c], a);
  }
  float32x4_t s = x[0];
  for (int c = 1; c < CHAINS; c++) s = vaddq_f32(s, x[c]);
  return vgetq_lane_f32(s, 0);
}

const tx_peak_loop tx_peak_neon = {"24 chains of fmla (4 lanes)", 2.0 * 4 * CHAINS, run};
