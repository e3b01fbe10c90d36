/* SPDX-License-Identifier: MIT */
/* The AVX2 peak: built with -mavx2 -mfma (this file only), called only when the CPU and OS support
   both. 12 chains of 8-lane FMA: more than FMA ports x latency on current x86 cores (2 x 4 on
   Skylake, 2 x 5 on Haswell and Zen 2), so the ports, not the latency, bound the loop; with the
   two constants that is 14 of the 16 ymm registers, so nothing spills. */
#include <immintrin.h>

#include "roof_peak_loops.h"

#define CHAINS 12

static float run(int64_t iters, float seed) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f); /* x -> 1, see scalar */
  __m256 x[CHAINS];
  for (int c = 0; c < CHAINS; c++) x[c] = _mm256_set1_ps(seed + (float)c);
  for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 16
    for (int c = 0; c < CHAINS; c++) x[c] = _mm256_fmadd_ps(x[c], a, b);
  }
  __m256 s = x[0];
  for (int c = 1; c < CHAINS; c++) s = _mm256_add_ps(s, x[c]);
  return _mm256_cvtss_f32(s);
}

const tx_peak_loop tx_peak_avx2 = {"12 chains of ymm vfmadd (8 lanes)", 2.0 * 8 * CHAINS, run};
