/* SPDX-License-Identifier: MIT */
/* The AVX-512 intrinsics our kernels use, emulated in portable C on GCC vector types, so that the
 * AVX-512 kernels' logic (tails, lane shuffles, masks, NaN propagation) runs and is tested on a CPU
 * without AVX-512. Force-included (-include) before a kernel source that is compiled with its AVX2
 * flags instead of AVX-512 ones: <immintrin.h> is included here first, so the source's own include
 * is a no-op, and every _mm512_* name the kernels use is then redirected to an emu512_* function
 * below, which follows the Intel Intrinsics Guide's pseudocode for that instruction. An intrinsic
 * not listed here fails to compile (inlining a function of another target), never silently.
 *
 * This checks the algorithm over 16-lane vectors, not the silicon: the real instructions are
 * deterministic functions of their inputs, and these are the same functions. */
#ifndef TXATTN_AVX512_EMULATION_H
#define TXATTN_AVX512_EMULATION_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "half.h"

typedef float emu_f32x16 __attribute__((vector_size(64)));
typedef int32_t emu_i32x16 __attribute__((vector_size(64)));
typedef int16_t emu_i16x32 __attribute__((vector_size(64)));

static inline emu_f32x16 emu_f(__m512 v) {
  emu_f32x16 r;
  memcpy(&r, &v, sizeof r);
  return r;
}
static inline __m512 emu_m(emu_f32x16 v) {
  __m512 r;
  memcpy(&r, &v, sizeof r);
  return r;
}
static inline emu_i32x16 emu_i(__m512i v) {
  emu_i32x16 r;
  memcpy(&r, &v, sizeof r);
  return r;
}
static inline __m512i emu_mi(emu_i32x16 v) {
  __m512i r;
  memcpy(&r, &v, sizeof r);
  return r;
}
static inline emu_i16x32 emu_i16(__m512i v) {
  emu_i16x32 r;
  memcpy(&r, &v, sizeof r);
  return r;
}
static inline __m512i emu_mi16(emu_i16x32 v) {
  __m512i r;
  memcpy(&r, &v, sizeof r);
  return r;
}

static inline __m512 emu512_setzero_ps(void) {
  return emu_m((emu_f32x16){0});
}
static inline __m512 emu512_set1_ps(float x) {
  emu_f32x16 r;
  for (int i = 0; i < 16; i++) r[i] = x;
  return emu_m(r);
}
static inline __m512 emu512_setr_ps(float e0, float e1, float e2, float e3, float e4, float e5,
                                    float e6, float e7, float e8, float e9, float e10, float e11,
                                    float e12, float e13, float e14, float e15) {
  return emu_m((emu_f32x16){e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15});
}
static inline __m512i emu512_setr_epi32(int e0, int e1, int e2, int e3, int e4, int e5, int e6,
                                        int e7, int e8, int e9, int e10, int e11, int e12, int e13,
                                        int e14, int e15) {
  return emu_mi((emu_i32x16){e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12, e13, e14, e15});
}

/* load_ps/store_ps fault on a pointer that is not 64-byte aligned: so does the emulation */
static inline __m512 emu512_load_ps(const void *p) {
  if ((uintptr_t)p % 64) __builtin_trap();
  __m512 r;
  memcpy(&r, p, sizeof r);
  return r;
}
static inline __m512 emu512_loadu_ps(const void *p) {
  __m512 r;
  memcpy(&r, p, sizeof r);
  return r;
}
static inline void emu512_store_ps(void *p, __m512 v) {
  if ((uintptr_t)p % 64) __builtin_trap();
  memcpy(p, &v, sizeof v);
}
static inline void emu512_storeu_ps(void *p, __m512 v) {
  memcpy(p, &v, sizeof v);
}

static inline __m512 emu512_add_ps(__m512 a, __m512 b) {
  return emu_m(emu_f(a) + emu_f(b));
}
static inline __m512 emu512_sub_ps(__m512 a, __m512 b) {
  return emu_m(emu_f(a) - emu_f(b));
}
static inline __m512 emu512_mul_ps(__m512 a, __m512 b) {
  return emu_m(emu_f(a) * emu_f(b));
}
/* MAXPS: a > b ? a : b, so a NaN in either operand yields b */
static inline __m512 emu512_max_ps(__m512 a, __m512 b) {
  emu_f32x16 x = emu_f(a), y = emu_f(b), r;
  for (int i = 0; i < 16; i++) r[i] = x[i] > y[i] ? x[i] : y[i];
  return emu_m(r);
}
/* MINPS: a < b ? a : b, so a NaN in either operand yields b */
static inline __m512 emu512_min_ps(__m512 a, __m512 b) {
  emu_f32x16 x = emu_f(a), y = emu_f(b), r;
  for (int i = 0; i < 16; i++) r[i] = x[i] < y[i] ? x[i] : y[i];
  return emu_m(r);
}
/* one rounding, as the instruction */
static inline __m512 emu512_fmadd_ps(__m512 a, __m512 b, __m512 c) {
  emu_f32x16 x = emu_f(a), y = emu_f(b), z = emu_f(c), r;
  for (int i = 0; i < 16; i++) r[i] = fmaf(x[i], y[i], z[i]);
  return emu_m(r);
}

static inline __m512i emu512_slli_epi32(__m512i a, unsigned imm) {
  emu_i32x16 x = emu_i(a), r;
  for (int i = 0; i < 16; i++) r[i] = imm > 31 ? 0 : (int32_t)((uint32_t)x[i] << imm);
  return emu_mi(r);
}

/* casts reinterpret the bits */
static inline __m512 emu512_castsi512_ps(__m512i a) {
  __m512 r;
  memcpy(&r, &a, sizeof r);
  return r;
}
static inline __m512i emu512_castps_si512(__m512 a) {
  __m512i r;
  memcpy(&r, &a, sizeof r);
  return r;
}
static inline __m512d emu512_castps_pd(__m512 a) {
  __m512d r;
  memcpy(&r, &a, sizeof r);
  return r;
}
static inline __m256 emu512_castps512_ps256(__m512 a) {
  __m256 r;
  memcpy(&r, &a, sizeof r);
  return r;
}
static inline __m256d emu512_extractf64x4_pd(__m512d a, int imm) {
  __m256d r;
  memcpy(&r, (const char *)&a + (imm & 1) * 32, sizeof r);
  return r;
}

/* VSHUFF32X4: 128-bit lanes 0, 1 from a and 2, 3 from b, each chosen by two bits of imm */
static inline __m512 emu512_shuffle_f32x4(__m512 a, __m512 b, int imm) {
  emu_f32x16 x = emu_f(a), y = emu_f(b), r;
  for (int lane = 0; lane < 4; lane++) {
    int from = (imm >> (2 * lane)) & 3;
    for (int e = 0; e < 4; e++) r[4 * lane + e] = (lane < 2 ? x : y)[4 * from + e];
  }
  return emu_m(r);
}
/* VSHUFPS: within each 128-bit lane, elements 0, 1 from a and 2, 3 from b */
static inline __m512 emu512_shuffle_ps(__m512 a, __m512 b, int imm) {
  emu_f32x16 x = emu_f(a), y = emu_f(b), r;
  for (int lane = 0; lane < 4; lane++)
    for (int e = 0; e < 4; e++) {
      int from = (imm >> (2 * e)) & 3;
      r[4 * lane + e] = (e < 2 ? x : y)[4 * lane + from];
    }
  return emu_m(r);
}
/* VUNPCKLPS / VUNPCKHPS: in each 128-bit lane, elements 0, 1 (lo) or 2, 3 (hi) of a and b
   interleaved */
static inline __m512 emu512_unpack_ps(__m512 a, __m512 b, int hi) {
  emu_f32x16 x = emu_f(a), y = emu_f(b), r;
  for (int lane = 0; lane < 4; lane++)
    for (int e = 0; e < 2; e++) {
      r[4 * lane + 2 * e] = x[4 * lane + 2 * hi + e];
      r[4 * lane + 2 * e + 1] = y[4 * lane + 2 * hi + e];
    }
  return emu_m(r);
}
static inline __m512 emu512_unpacklo_ps(__m512 a, __m512 b) {
  return emu512_unpack_ps(a, b, 0);
}
static inline __m512 emu512_unpackhi_ps(__m512 a, __m512 b) {
  return emu512_unpack_ps(a, b, 1);
}
static inline __m128 emu512_castps512_ps128(__m512 a) {
  __m128 r;
  memcpy(&r, &a, sizeof r);
  return r;
}
static inline __m128 emu512_extractf32x4_ps(__m512 a, int imm) {
  __m128 r;
  memcpy(&r, (const char *)&a + (imm & 3) * 16, sizeof r);
  return r;
}
/* VPERMPS: r[i] = a[idx[i] mod 16] */
static inline __m512 emu512_permutexvar_ps(__m512i idx, __m512 a) {
  emu_i32x16 k = emu_i(idx);
  emu_f32x16 x = emu_f(a), r;
  for (int i = 0; i < 16; i++) r[i] = x[k[i] & 15];
  return emu_m(r);
}

/* VCMPPS into a mask: the predicates of the _CMP_* constants (ordered: false on NaN; unordered:
   true on NaN); signalling and quiet agree on the result. Others trap: extend when a kernel needs
   them. */
static inline __mmask16 emu512_cmp_ps_mask(__m512 a, __m512 b, int pred) {
  emu_f32x16 x = emu_f(a), y = emu_f(b);
  unsigned m = 0;
  for (int i = 0; i < 16; i++) {
    int nan = isnan(x[i]) || isnan(y[i]), t;
    switch (pred) {
    case _CMP_EQ_OQ:
    case _CMP_EQ_OS:
      t = !nan && x[i] == y[i];
      break;
    case _CMP_LT_OQ:
    case _CMP_LT_OS:
      t = !nan && x[i] < y[i];
      break;
    case _CMP_LE_OQ:
    case _CMP_LE_OS:
      t = !nan && x[i] <= y[i];
      break;
    case _CMP_GT_OQ:
    case _CMP_GT_OS:
      t = !nan && x[i] > y[i];
      break;
    case _CMP_GE_OQ:
    case _CMP_GE_OS:
      t = !nan && x[i] >= y[i];
      break;
    case _CMP_NEQ_UQ:
    case _CMP_NEQ_US:
      t = nan || x[i] != y[i];
      break;
    case _CMP_UNORD_Q:
    case _CMP_UNORD_S:
      t = nan;
      break;
    case _CMP_ORD_Q:
    case _CMP_ORD_S:
      t = !nan;
      break;
    default:
      __builtin_trap();
    }
    m |= (unsigned)t << i;
  }
  return (__mmask16)m;
}
/* VBLENDMPS: b where the mask bit is set, else a */
static inline __m512 emu512_mask_blend_ps(__mmask16 k, __m512 a, __m512 b) {
  emu_f32x16 x = emu_f(a), y = emu_f(b), r;
  for (int i = 0; i < 16; i++) r[i] = (k >> i) & 1 ? y[i] : x[i];
  return emu_m(r);
}

/* ---- 16-bit elements (the vf_*_f16 / vf_*_bf16 functions of vec_avx512.h) ----
   The conversions are half.h's, which agree with VCVTPH2PS / VCVTPS2PH bit for bit (NaNs
   included: tests/test_half.c checks them against the real AVX2 forms). */
typedef uint16_t emu_u16x16 __attribute__((vector_size(32)));

static inline emu_u16x16 emu_h(__m256i v) {
  emu_u16x16 r;
  memcpy(&r, &v, sizeof r);
  return r;
}
static inline __m256i emu_mh(emu_u16x16 v) {
  __m256i r;
  memcpy(&r, &v, sizeof r);
  return r;
}

/* VCVTPH2PS: exact, a NaN quietened with its payload */
static inline __m512 emu512_cvtph_ps(__m256i a) {
  emu_u16x16 x = emu_h(a);
  emu_f32x16 r;
  for (int i = 0; i < 16; i++) r[i] = txh_f16_to_f32(x[i]);
  return emu_m(r);
}
/* VCVTPS2PH with an immediate rounding mode: only round to nearest even (imm 0, with or without
   _MM_FROUND_NO_EXC) is emulated; MXCSR's mode (bit 2) or a directed one traps. */
static inline __m256i emu512_cvtps_ph(__m512 a, int imm) {
  if ((imm & ~_MM_FROUND_NO_EXC) != _MM_FROUND_TO_NEAREST_INT) __builtin_trap();
  emu_f32x16 x = emu_f(a);
  emu_u16x16 r;
  for (int i = 0; i < 16; i++) r[i] = txh_f32_to_f16(x[i]);
  return emu_mh(r);
}
/* VPMOVZXWD: 16 unsigned 16-bit values zero-extended to 32 bits */
static inline __m512i emu512_cvtepu16_epi32(__m256i a) {
  emu_u16x16 x = emu_h(a);
  emu_i32x16 r;
  for (int i = 0; i < 16; i++) r[i] = (int32_t)x[i];
  return emu_mi(r);
}
/* VPMOVSXBD: 16 signed bytes sign-extended to 32 bits (q8_0's values) */
static inline __m512i emu512_cvtepi8_epi32(__m128i a) {
  int8_t x[16];
  memcpy(x, &a, sizeof x);
  emu_i32x16 r;
  for (int i = 0; i < 16; i++) r[i] = x[i];
  return emu_mi(r);
}
/* VCVTDQ2PS: exact for the values it is given here (|x| < 2^24) */
static inline __m512 emu512_cvtepi32_ps(__m512i a) {
  emu_i32x16 x = emu_i(a);
  emu_f32x16 r;
  for (int i = 0; i < 16; i++) r[i] = (float)x[i];
  return emu_m(r);
}
/* VPMOVDW: each 32-bit lane truncated to its low 16 bits */
static inline __m256i emu512_cvtepi32_epi16(__m512i a) {
  emu_i32x16 x = emu_i(a);
  emu_u16x16 r;
  for (int i = 0; i < 16; i++) r[i] = (uint16_t)((uint32_t)x[i] & 0xFFFFu);
  return emu_mh(r);
}
/* VPSRLD: logical shift right, 0 for counts above 31 */
static inline __m512i emu512_srli_epi32(__m512i a, unsigned imm) {
  emu_i32x16 x = emu_i(a), r;
  for (int i = 0; i < 16; i++) r[i] = imm > 31 ? 0 : (int32_t)((uint32_t)x[i] >> imm);
  return emu_mi(r);
}
static inline __m512i emu512_and_si512(__m512i a, __m512i b) {
  return emu_mi(emu_i(a) & emu_i(b));
}
static inline __m512i emu512_or_si512(__m512i a, __m512i b) {
  return emu_mi(emu_i(a) | emu_i(b));
}
/* VPADDD wraps around */
static inline __m512i emu512_add_epi32(__m512i a, __m512i b) {
  emu_i32x16 x = emu_i(a), y = emu_i(b), r;
  for (int i = 0; i < 16; i++) r[i] = (int32_t)((uint32_t)x[i] + (uint32_t)y[i]);
  return emu_mi(r);
}
static inline __m512i emu512_set1_epi32(int x) {
  emu_i32x16 r;
  for (int i = 0; i < 16; i++) r[i] = x;
  return emu_mi(r);
}
static inline __m512i emu512_setzero_si512(void) {
  return emu_mi((emu_i32x16){0});
}
static inline __m512i emu512_load_si512(const void *p) {
  __m512i r;
  memcpy(&r, p, sizeof r);
  return r;
}
static inline __m512i emu512_set1_epi16(short x) {
  emu_i16x32 r;
  for (int i = 0; i < 32; i++) r[i] = x;
  return emu_mi16(r);
}
/* VPMOVSXBW / VPMOVZXBW (BW): 32 bytes to 16-bit lanes */
static inline __m512i emu512_cvtepi8_epi16(__m256i a) {
  int8_t x[32];
  memcpy(x, &a, sizeof x);
  emu_i16x32 r;
  for (int i = 0; i < 32; i++) r[i] = x[i];
  return emu_mi16(r);
}
static inline __m512i emu512_cvtepu8_epi16(__m256i a) {
  uint8_t x[32];
  memcpy(x, &a, sizeof x);
  emu_i16x32 r;
  for (int i = 0; i < 32; i++) r[i] = x[i];
  return emu_mi16(r);
}
/* VPSLLW / VPADDW (BW), modulo 2^16 */
static inline __m512i emu512_slli_epi16(__m512i a, unsigned int n) {
  emu_i16x32 x = emu_i16(a), r;
  for (int i = 0; i < 32; i++) r[i] = n > 15 ? 0 : (int16_t)(uint16_t)((uint16_t)x[i] << n);
  return emu_mi16(r);
}
static inline __m512i emu512_add_epi16(__m512i a, __m512i b) {
  emu_i16x32 x = emu_i16(a), y = emu_i16(b), r;
  for (int i = 0; i < 32; i++) r[i] = (int16_t)(uint16_t)((uint16_t)x[i] + (uint16_t)y[i]);
  return emu_mi16(r);
}
/* VPTERNLOGD: bit j of each result is bit (4 a_j + 2 b_j + c_j) of imm */
static inline __m512i emu512_ternarylogic_epi32(__m512i a, __m512i b, __m512i c, int imm) {
  uint32_t x[16], y[16], z[16], r[16];
  memcpy(x, &a, sizeof x);
  memcpy(y, &b, sizeof y);
  memcpy(z, &c, sizeof z);
  for (int i = 0; i < 16; i++) {
    r[i] = 0;
    for (int j = 0; j < 32; j++) {
      const unsigned idx = ((x[i] >> j) & 1u) << 2 | ((y[i] >> j) & 1u) << 1 | ((z[i] >> j) & 1u);
      r[i] |= (uint32_t)((imm >> idx) & 1) << j;
    }
  }
  __m512i out;
  memcpy(&out, r, sizeof out);
  return out;
}
/* The low and the high 256 bits, as the float forms' */
static inline __m256i emu512_castsi512_si256(__m512i a) {
  return _mm256_castps_si256(emu512_castps512_ps256(emu512_castsi512_ps(a)));
}
static inline __m256i emu512_extracti64x4_epi64(__m512i a, int i) {
  return _mm256_castpd_si256(emu512_extractf64x4_pd(emu512_castps_pd(emu512_castsi512_ps(a)), i));
}
/* VPCMPW (BW): bit i of the mask for 16-bit lane i */
static inline __mmask32 emu512_cmpeq_epi16_mask(__m512i a, __m512i b) {
  emu_i16x32 x = emu_i16(a), y = emu_i16(b);
  uint32_t m = 0;
  for (int i = 0; i < 32; i++) m |= (uint32_t)(x[i] == y[i]) << i;
  return (__mmask32)m;
}
static inline __mmask32 emu512_cmpneq_epi16_mask(__m512i a, __m512i b) {
  return (__mmask32) ~(uint32_t)emu512_cmpeq_epi16_mask(a, b);
}

/* VDPBF16PS (AVX512_BF16), as the SDM's pseudocode says and Zen 4 does bit for bit (checked by
   tests/test_bf16dp.c on a CPU that has it): per lane, acc += a.odd * b.odd, then acc += a.even *
   b.even, each step one fused multiply-add rounded to nearest even; bf16 inputs and the incoming
   accumulator that are subnormal read as zero (DAZ) and a step whose result is tiny after rounding
   to 24 bits with an unbounded exponent (below 2^-126) gives a zero of its sign (FTZ), whatever
   MXCSR says. */
static inline float emu_bf16dp_daz(float x) {
  return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x;
}
static inline float emu_bf16dp_step(float acc, uint16_t a, uint16_t b) {
  const float c = emu_bf16dp_daz(acc), x = emu_bf16dp_daz(txh_bf16_to_f32(a)),
              y = emu_bf16dp_daz(txh_bf16_to_f32(b));
  const float r = fmaf(x, y, c);
  if (!(fabsf(r) <= 0x1p-126f) || r == 0.0f) return r; /* normal, Inf, NaN or an exact zero */
  if (fabsf(r) < 0x1p-126f) return copysignf(0.0f, r);
  /* |r| = 2^-126: fmaf rounded on the subnormal grid; on the 24-bit grid the exact value rounds
     below 2^-126 when it is below 2^-126 - 2^-151 (the tie rounds to 2^-126, even). The exact
     value is s + e: the product is exact in double, e the error of the double sum. */
  const double p = (double)x * (double)y, s = (double)c + p, bb = s - (double)c,
               e = ((double)c - (s - bb)) + (p - bb);
  const double t = 0x1p-126 - 0x1p-151, as = r > 0 ? s : -s, ae = r > 0 ? e : -e;
  return as < t || (as == t && ae < 0) ? copysignf(0.0f, r) : r;
}
static inline __m512 emu512_dpbf16_ps(__m512 acc, __m512bh a, __m512bh b) {
  emu_f32x16 r = emu_f(acc);
  uint16_t x[32], y[32];
  memcpy(x, &a, sizeof x);
  memcpy(y, &b, sizeof y);
  for (int i = 0; i < 16; i++) {
    r[i] = emu_bf16dp_step(r[i], x[2 * i + 1], y[2 * i + 1]);
    r[i] = emu_bf16dp_step(r[i], x[2 * i], y[2 * i]);
  }
  return emu_m(r);
}

/* VPBLENDMD: b where the mask bit is set, else a */
static inline __m512i emu512_mask_blend_epi32(__mmask16 k, __m512i a, __m512i b) {
  emu_i32x16 x = emu_i(a), y = emu_i(b), r;
  for (int i = 0; i < 16; i++) r[i] = (k >> i) & 1 ? y[i] : x[i];
  return emu_mi(r);
}

/* Some of these are macros in <immintrin.h> (immediate operands): #undef before redirecting. */
#undef _mm512_setzero_ps
#define _mm512_setzero_ps emu512_setzero_ps
#undef _mm512_set1_ps
#define _mm512_set1_ps emu512_set1_ps
#undef _mm512_setr_ps
#define _mm512_setr_ps emu512_setr_ps
#undef _mm512_setr_epi32
#define _mm512_setr_epi32 emu512_setr_epi32
#undef _mm512_load_ps
#define _mm512_load_ps emu512_load_ps
#undef _mm512_loadu_ps
#define _mm512_loadu_ps emu512_loadu_ps
#undef _mm512_store_ps
#define _mm512_store_ps emu512_store_ps
#undef _mm512_storeu_ps
#define _mm512_storeu_ps emu512_storeu_ps
#undef _mm512_add_ps
#define _mm512_add_ps emu512_add_ps
#undef _mm512_sub_ps
#define _mm512_sub_ps emu512_sub_ps
#undef _mm512_mul_ps
#define _mm512_mul_ps emu512_mul_ps
#undef _mm512_max_ps
#define _mm512_max_ps emu512_max_ps
#undef _mm512_min_ps
#define _mm512_min_ps emu512_min_ps
#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps emu512_fmadd_ps
#undef _mm512_slli_epi32
#define _mm512_slli_epi32 emu512_slli_epi32
static inline __m512 emu512_div_ps(__m512 a, __m512 b) {
  return emu_m(emu_f(a) / emu_f(b));
}
#undef _mm512_div_ps
#define _mm512_div_ps emu512_div_ps
#undef _mm512_castsi512_ps
#define _mm512_castsi512_ps emu512_castsi512_ps
#undef _mm512_castps_si512
#define _mm512_castps_si512 emu512_castps_si512
#undef _mm512_castps_pd
#define _mm512_castps_pd emu512_castps_pd
#undef _mm512_castps512_ps256
#define _mm512_castps512_ps256 emu512_castps512_ps256
#undef _mm512_extractf64x4_pd
#define _mm512_extractf64x4_pd emu512_extractf64x4_pd
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4 emu512_shuffle_f32x4
#undef _mm512_shuffle_ps
#define _mm512_shuffle_ps emu512_shuffle_ps
#undef _mm512_unpacklo_ps
#define _mm512_unpacklo_ps emu512_unpacklo_ps
#undef _mm512_unpackhi_ps
#define _mm512_unpackhi_ps emu512_unpackhi_ps
#undef _mm512_castps512_ps128
#define _mm512_castps512_ps128 emu512_castps512_ps128
#undef _mm512_extractf32x4_ps
#define _mm512_extractf32x4_ps emu512_extractf32x4_ps
#undef _mm512_loadu_si512
#define _mm512_loadu_si512 emu512_load_si512
#undef _mm512_permutexvar_ps
#define _mm512_permutexvar_ps emu512_permutexvar_ps
#undef _mm512_cmp_ps_mask
#define _mm512_cmp_ps_mask emu512_cmp_ps_mask
#undef _mm512_mask_blend_ps
#define _mm512_mask_blend_ps emu512_mask_blend_ps
#undef _mm512_cvtph_ps
#define _mm512_cvtph_ps emu512_cvtph_ps
#undef _mm512_cvtps_ph
#define _mm512_cvtps_ph emu512_cvtps_ph
#undef _mm512_cvtepu16_epi32
#define _mm512_cvtepu16_epi32 emu512_cvtepu16_epi32
#undef _mm512_cvtepi8_epi32
#define _mm512_cvtepi8_epi32 emu512_cvtepi8_epi32
#undef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps emu512_cvtepi32_ps
#undef _mm512_cvtepi32_epi16
#define _mm512_cvtepi32_epi16 emu512_cvtepi32_epi16
#undef _mm512_srli_epi32
#define _mm512_srli_epi32 emu512_srli_epi32
#undef _mm512_and_si512
#define _mm512_and_si512 emu512_and_si512
#undef _mm512_or_si512
#define _mm512_or_si512 emu512_or_si512
#undef _mm512_add_epi32
#define _mm512_add_epi32 emu512_add_epi32
#undef _mm512_set1_epi32
#define _mm512_set1_epi32 emu512_set1_epi32
#undef _mm512_mask_blend_epi32
#define _mm512_mask_blend_epi32 emu512_mask_blend_epi32
#undef _mm512_setzero_si512
#define _mm512_setzero_si512 emu512_setzero_si512
#undef _mm512_load_si512
#define _mm512_load_si512 emu512_load_si512
#undef _mm512_set1_epi16
#define _mm512_set1_epi16 emu512_set1_epi16
#undef _mm512_cvtepi8_epi16
#define _mm512_cvtepi8_epi16 emu512_cvtepi8_epi16
#undef _mm512_cvtepu8_epi16
#define _mm512_cvtepu8_epi16 emu512_cvtepu8_epi16
#undef _mm512_slli_epi16
#define _mm512_slli_epi16 emu512_slli_epi16
#undef _mm512_add_epi16
#define _mm512_add_epi16 emu512_add_epi16
#undef _mm512_ternarylogic_epi32
#define _mm512_ternarylogic_epi32 emu512_ternarylogic_epi32
#undef _mm512_castsi512_si256
#define _mm512_castsi512_si256 emu512_castsi512_si256
#undef _mm512_extracti64x4_epi64
#define _mm512_extracti64x4_epi64 emu512_extracti64x4_epi64
#undef _mm512_cmpeq_epi16_mask
#define _mm512_cmpeq_epi16_mask emu512_cmpeq_epi16_mask
#undef _mm512_cmpneq_epi16_mask
#define _mm512_cmpneq_epi16_mask emu512_cmpneq_epi16_mask
#undef _mm512_dpbf16_ps
#define _mm512_dpbf16_ps emu512_dpbf16_ps

#endif
