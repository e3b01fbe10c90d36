/* SPDX-License-Identifier: MIT */
/* AVX-512 vector layer: 16 floats per vector (AVX-512 F), 32 zmm registers; compile with
 * -mavx512f (the plugins add DQ/BW/VL for their ISA check) and -mfma.
 *
 * Differs from vec_avx2.h only in the intrinsics; the semantics of each function are those of
 * vec_scalar.h. Beyond that layer: vf_hsum16 and vf_loadu_bf16x2 (VF_HAVE_*), which the direct
 * path uses where they exist. On a CPU without AVX-512 the tests run this layer through
 * tests/emulation/avx512_emulation.h. */
#ifndef VEC_AVX512_H
#define VEC_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#define VEC_ISA      avx512
#define VEC_ISA_ENUM TXATTN_ISA_AVX512
#define VEC_W        16

typedef __m512 vf;

static inline vf vf_zero(void) {
  return _mm512_setzero_ps();
}
static inline vf vf_set1(float x) {
  return _mm512_set1_ps(x);
}
static inline vf vf_load(const float *p) {
  return _mm512_load_ps(p);
}
static inline vf vf_loadu(const float *p) {
  return _mm512_loadu_ps(p);
}
static inline void vf_store(float *p, vf x) {
  _mm512_store_ps(p, x);
}
static inline vf vf_bcast(const float *p) {
  return _mm512_set1_ps(*p);
}
static inline vf vf_add(vf a, vf b) {
  return _mm512_add_ps(a, b);
}
static inline vf vf_sub(vf a, vf b) {
  return _mm512_sub_ps(a, b);
}
static inline vf vf_mul(vf a, vf b) {
  return _mm512_mul_ps(a, b);
}
static inline vf vf_div(vf a, vf b) {
  return _mm512_div_ps(a, b);
}
/* in integer operations (AVX-512 F): _mm512_and_ps needs DQ, which the emulation lacks */
static inline vf vf_copysign(vf mag, vf sgn) {
  const __m512i abs = _mm512_set1_epi32(0x7fffffff), sign = _mm512_set1_epi32((int)0x80000000u);
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(mag), abs),
                                             _mm512_and_si512(_mm512_castps_si512(sgn), sign)));
}
static inline vf vf_fma(vf a, vf b, vf c) {
  return _mm512_fmadd_ps(a, b, c);
}
/* vmaxps (zmm) returns the second operand when either is NaN, as the AVX2 form does. */
static inline vf vf_max(vf c, vf x) {
  return _mm512_max_ps(c, x);
}
static inline vf vf_min(vf c, vf x) {
  return _mm512_min_ps(c, x);
}
static inline vf vf_exp2_scale(vf t) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512(t), 23));
}
static inline float vf_hmax(vf x) {
  __m256 h = _mm256_max_ps(_mm512_castps512_ps256(x),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
static inline float vf_hsum(vf x) {
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(x),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
/* The sums of 16 vectors at once: lane 4 g + i of the result is the sum of x[4 g + i]'s lanes. A
   transposing tree of 45 shuffles and adds, where 16 vf_hsum take 128: the direct path's 4 x 4 score
   tiles (tiled_direct_algo.h) end in it. The lanes are summed in another order than vf_hsum's. */
#define VF_HAVE_HSUM16 1
static inline __m512 vf_hsum4(const vf *x) {
  /* 128-bit lane j of the result: x[0..3]'s partial sums over their own lane j */
  const __m512 a = _mm512_add_ps(_mm512_unpacklo_ps(x[0], x[1]), _mm512_unpackhi_ps(x[0], x[1]));
  const __m512 b = _mm512_add_ps(_mm512_unpacklo_ps(x[2], x[3]), _mm512_unpackhi_ps(x[2], x[3]));
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}
static inline vf vf_hsum16(const vf *x) {
  const __m512 w0 = vf_hsum4(x), w1 = vf_hsum4(x + 4), w2 = vf_hsum4(x + 8), w3 = vf_hsum4(x + 12);
  /* lanes (w0 L0+L1, w0 L2+L3, w1 L0+L1, w1 L2+L3), and the same of w2, w3 */
  const __m512 p = _mm512_add_ps(_mm512_shuffle_f32x4(w0, w1, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(w0, w1, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 q = _mm512_add_ps(_mm512_shuffle_f32x4(w2, w3, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_f32x4(w2, w3, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(p, q, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(p, q, _MM_SHUFFLE(3, 1, 3, 1)));
}
/* Lanes 4 g .. 4 g + 3 of x to s + g ld, for g = 0 .. 3. */
static inline void vf_store4x4(float *s, int64_t ld, vf x) {
  _mm_storeu_ps(s, _mm512_castps512_ps128(x));
  _mm_storeu_ps(s + ld, _mm512_extractf32x4_ps(x, 1));
  _mm_storeu_ps(s + 2 * ld, _mm512_extractf32x4_ps(x, 2));
  _mm_storeu_ps(s + 3 * ld, _mm512_extractf32x4_ps(x, 3));
}
/* x to s, any alignment. */
static inline void vf_storeu(float *s, vf x) {
  _mm512_storeu_ps(s, x);
}
/* Lanes 8 g .. 8 g + 7 of x to s + g ld, for g = 0, 1. */
static inline void vf_store2x8(float *s, int64_t ld, vf x) {
  _mm256_storeu_ps(s, _mm512_castps512_ps256(x));
  _mm256_storeu_ps(s + ld, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
}
/* The 8 x 8 ymm transpose of vec_avx2.h, verbatim (that one is tested on this machine). */
static inline void vf_transpose8(const float *const *src, int64_t c, float *dst, int64_t ld) {
  __m256 t0 = _mm256_unpacklo_ps(_mm256_loadu_ps(src[0] + c), _mm256_loadu_ps(src[1] + c));
  __m256 t1 = _mm256_unpackhi_ps(_mm256_loadu_ps(src[0] + c), _mm256_loadu_ps(src[1] + c));
  __m256 t2 = _mm256_unpacklo_ps(_mm256_loadu_ps(src[2] + c), _mm256_loadu_ps(src[3] + c));
  __m256 t3 = _mm256_unpackhi_ps(_mm256_loadu_ps(src[2] + c), _mm256_loadu_ps(src[3] + c));
  __m256 t4 = _mm256_unpacklo_ps(_mm256_loadu_ps(src[4] + c), _mm256_loadu_ps(src[5] + c));
  __m256 t5 = _mm256_unpackhi_ps(_mm256_loadu_ps(src[4] + c), _mm256_loadu_ps(src[5] + c));
  __m256 t6 = _mm256_unpacklo_ps(_mm256_loadu_ps(src[6] + c), _mm256_loadu_ps(src[7] + c));
  __m256 t7 = _mm256_unpackhi_ps(_mm256_loadu_ps(src[6] + c), _mm256_loadu_ps(src[7] + c));
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(dst + 0 * ld, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(dst + 1 * ld, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(dst + 2 * ld, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(dst + 3 * ld, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(dst + 4 * ld, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(dst + 5 * ld, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(dst + 6 * ld, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(dst + 7 * ld, _mm256_permute2f128_ps(s3, s7, 0x31));
}
/* 16 x 16 as four 8 x 8 blocks: block (rows rb, columns cb) lands at dst rows cb, columns rb. */
static inline void vf_transpose(const float *const *src, int64_t c, float *dst, int64_t ld) {
  vf_transpose8(src, c, dst, ld);
  vf_transpose8(src, c + 8, dst + 8 * ld, ld);
  vf_transpose8(src + 8, c, dst + 8, ld);
  vf_transpose8(src + 8, c + 8, dst + 8 * ld + 8, ld);
}

/* ---- 16-bit elements (f16, bf16): semantics in vec_scalar.h ----
 * f16 through AVX-512 F's vcvtph2ps / vcvtps2ph on zmm; bf16 with integer ops, as in vec_avx2.h.
 * (AVX512_BF16's vcvtneps2bf16 is no replacement: it flushes subnormal inputs and results to
 * zero.) */
static inline vf vf_loadu_f16(const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
static inline vf vf_loadu_bf16(const uint16_t *p) {
  __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
/* 2 VEC_W bf16 values as two vectors, one op each: *even their even elements, *odd their odd ones
   (the bf16 in the high half of a 32-bit lane is that lane's float). A consumer that permutes its
   other operand alike (tiled_direct_algo.h's TD_BF16X2) saves vf_loadu_bf16's widening shuffle. */
#define VF_HAVE_BF16X2 1
static inline void vf_loadu_bf16x2(const uint16_t *p, vf *even, vf *odd) {
  const __m512i w = _mm512_loadu_si512((const void *)p);
  *even = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  *odd = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32((int)0xFFFF0000u)));
}
static inline void vf_storeu_f16(uint16_t *p, vf x) {
  _mm256_storeu_si256((__m256i *)p,
                      _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
static inline void vf_storeu_bf16(uint16_t *p, vf x) {
  __m512i u = _mm512_castps_si512(x);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  r = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), r, q);
  _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(r));
}

/* ---- 8-bit elements (int8, fp8 e4m3fn and e5m2): semantics in vec_scalar.h, the fp8 values
 * through their f16 forms as in vec_avx2.h (16 lanes of 16 bits in a ymm, the same ops) ---- */
static inline vf vf_loadu_i8(const int8_t *p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}
static inline vf vf_set1_f16(uint16_t h) {
  return _mm512_cvtph_ps(_mm256_set1_epi16((short)h));
}
static inline vf vf_loadu_e4m3(const uint8_t *p) {
  const __m256i h = _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p)), 7);
  const __m256i b14 =
      _mm256_and_si256(_mm256_add_epi16(h, _mm256_set1_epi16(0x80)), _mm256_set1_epi16(0x4000));
  return _mm512_cvtph_ps(_mm256_xor_si256(h, b14));
}
static inline vf vf_loadu_e5m2(const uint8_t *p) {
  return _mm512_cvtph_ps(
      _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p)), 8));
}
/* 2 VEC_W fp8 values as two vectors (*lo elements 0 .. 15, *hi 16 .. 31), the same values as two
   single loads: the integer ops on all 32 at once in a zmm of 16-bit lanes, vpternlog for the
   NaN fix-up's mask and xor. */
#define VF_HAVE_FP8X2 1
static inline void vf_loadu_e4m3x2(const uint8_t *p, vf *lo, vf *hi) {
  const __m512i h =
      _mm512_slli_epi16(_mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)p)), 7);
  /* h ^ ((h + 0x80) & 0x4000) */
  const __m512i f = _mm512_ternarylogic_epi32(h, _mm512_add_epi16(h, _mm512_set1_epi16(0x80)),
                                              _mm512_set1_epi16(0x4000), 0x78);
  *lo = _mm512_cvtph_ps(_mm512_castsi512_si256(f));
  *hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(f, 1));
}
static inline void vf_loadu_e5m2x2(const uint8_t *p, vf *lo, vf *hi) {
  const __m512i f =
      _mm512_slli_epi16(_mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)p)), 8);
  *lo = _mm512_cvtph_ps(_mm512_castsi512_si256(f));
  *hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(f, 1));
}

#endif /* VEC_AVX512_H */
