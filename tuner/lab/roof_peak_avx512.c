/* SPDX-License-Identifier: MIT */
/* The AVX-512 peak: built with -mavx512f (this file only), called only when the CPU has AVX-512F
   and the OS saves the ZMM and opmask state (XCR0), else it would die of SIGILL. 16 chains of
   16-lane FMA: at least FMA ports x latency on the cores that have it (2 x 4 on Skylake-SP and
   Ice Lake, Zen 4), and 18 of the 32 zmm registers. */
#include <immintrin.h>

#include "roof_peak_loops.h"

#define CHAINS 16

static float run(int64_t iters, float seed) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f); /* x -> 1, see scalar */
  __m512 x[CHAINS];
  for (int c = 0; c < CHAINS; c++) x[c] = _mm512_set1_ps(seed + (float)c);
  for (int64_t i = 0; i < iters; i++) {
#pragma GCC unroll 16
    for (int c = 0; c < CHAINS; c++) x[c] = _mm512_fmadd_ps(x[c], a, b);
  }
  __m512 s = x[0];
  for (int c = 1; c < CHAINS; c++) s = _mm512_add_ps(s, x[c]);
  return _mm512_cvtss_f32(s);
}

const tx_peak_loop tx_peak_avx512 = {"16 chains of zmm vfmadd (16 lanes)", 2.0 * 16 * CHAINS, run};
