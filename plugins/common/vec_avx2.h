/* SPDX-License-Identifier: MIT */
/* AVX2 vector layer: 8 floats per vector (AVX2 + FMA), 16 ymm registers; compile with -mavx2
 * -mfma. Every function keeps the semantics documented in vec_scalar.h, the reference mapping. */
#ifndef VEC_AVX2_H
#define VEC_AVX2_H

#include <immintrin.h>
#include <stdint.h>

#define VEC_ISA      avx2
#define VEC_ISA_ENUM TXATTN_ISA_AVX2
#define VEC_W        8

typedef __m256 vf;

static inline vf vf_zero(void) {
  return _mm256_setzero_ps();
}
static inline vf vf_set1(float x) {
  return _mm256_set1_ps(x);
}
static inline vf vf_load(const float *p) {
  return _mm256_load_ps(p);
}
static inline vf vf_loadu(const float *p) {
  return _mm256_loadu_ps(p);
}
static inline void vf_store(float *p, vf x) {
  _mm256_store_ps(p, x);
}
static inline vf vf_bcast(const float *p) {
  return _mm256_broadcast_ss(p);
}
static inline vf vf_add(vf a, vf b) {
  return _mm256_add_ps(a, b);
}
static inline vf vf_sub(vf a, vf b) {
  return _mm256_sub_ps(a, b);
}
static inline vf vf_mul(vf a, vf b) {
  return _mm256_mul_ps(a, b);
}
static inline vf vf_div(vf a, vf b) {
  return _mm256_div_ps(a, b);
}
static inline vf vf_copysign(vf mag, vf sgn) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  return _mm256_or_ps(_mm256_andnot_ps(sign, mag), _mm256_and_ps(sign, sgn));
}
static inline vf vf_fma(vf a, vf b, vf c) {
  return _mm256_fmadd_ps(a, b, c);
}
/* maxps returns the second operand when either is NaN: a NaN in x survives. */
static inline vf vf_max(vf c, vf x) {
  return _mm256_max_ps(c, x);
}
/* minps likewise returns the second operand when either is NaN. */
static inline vf vf_min(vf c, vf x) {
  return _mm256_min_ps(c, x);
}
/* 2^k from t = k + VEC_EXP2_MAGIC: the low bits of t's significand hold k + 127, shift them into
   the exponent field. */
static inline vf vf_exp2_scale(vf t) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23));
}
static inline float vf_hmax(vf x) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
static inline float vf_hsum(vf x) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
/* 8 x 8 transpose: unpack pairs of rows, shuffle pairs of pairs, then swap 128-bit halves (24
   shuffles for 64 floats). */
static inline void vf_transpose(const float *const *src, int64_t c, float *dst, int64_t ld) {
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

/* ---- 16-bit elements (f16, bf16): semantics in vec_scalar.h ----
 * f16 through F16C (part of this project's avx2 ISA; -mf16c); bf16 with integer ops. */
static inline vf vf_loadu_f16(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
static inline vf vf_loadu_bf16(const uint16_t *p) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
/* The immediate rounding mode (bit 2 clear), not MXCSR's; vcvtps2ph ignores FTZ. */
static inline void vf_storeu_f16(uint16_t *p, vf x) {
  _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
/* Round to nearest even on the low 16 bits (a carry runs into the exponent, up to Inf); a NaN
   becomes its top half with the quiet bit set instead. The 32-bit results fit 16 bits, so the
   saturating pack is a plain narrowing. */
static inline void vf_storeu_bf16(uint16_t *p, vf x) {
  __m256i u = _mm256_castps_si256(x);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r =
      _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
  __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  r = _mm256_blendv_epi8(r, q, nan);
  _mm_storeu_si128((__m128i *)p,
                   _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
}

/* ---- 8-bit elements (int8, fp8 e4m3fn and e5m2): semantics in vec_scalar.h ----
 * The fp8 values through their f16 forms and F16C. e4m3 in 16-bit lanes: the byte sign-extended
 * and shifted left 7 puts its exponent and mantissa in place and its sign in bits 15 and 14; adding
 * 0x80 carries into bit 14 exactly for 0x7f and 0xff (exponent and mantissa all ones), so bit 14 xor
 * that sum's bit 14 clears bit 14 for every value and sets it for the NaNs, whose f16 form then has
 * an all-ones exponent and a nonzero mantissa. */
static inline vf vf_loadu_i8(const int8_t *p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
static inline vf vf_set1_f16(uint16_t h) {
  return _mm256_cvtph_ps(_mm_set1_epi16((short)h));
}
static inline vf vf_loadu_e4m3(const uint8_t *p) {
  const __m128i h = _mm_slli_epi16(_mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)p)), 7);
  const __m128i b14 = _mm_and_si128(_mm_add_epi16(h, _mm_set1_epi16(0x80)), _mm_set1_epi16(0x4000));
  return _mm256_cvtph_ps(_mm_xor_si128(h, b14));
}
static inline vf vf_loadu_e5m2(const uint8_t *p) {
  return _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)p)), 8));
}
/* 2 VEC_W fp8 values as two vectors (*lo elements 0 .. 7, *hi 8 .. 15), the same values as two
   single loads: the integer ops on all 16 at once in a ymm of 16-bit lanes. */
#define VF_HAVE_FP8X2 1
static inline void vf_loadu_e4m3x2(const uint8_t *p, vf *lo, vf *hi) {
  const __m256i h = _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p)), 7);
  const __m256i b14 =
      _mm256_and_si256(_mm256_add_epi16(h, _mm256_set1_epi16(0x80)), _mm256_set1_epi16(0x4000));
  const __m256i f = _mm256_xor_si256(h, b14);
  *lo = _mm256_cvtph_ps(_mm256_castsi256_si128(f));
  *hi = _mm256_cvtph_ps(_mm256_extracti128_si256(f, 1));
}
static inline void vf_loadu_e5m2x2(const uint8_t *p, vf *lo, vf *hi) {
  const __m256i f = _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)p)), 8);
  *lo = _mm256_cvtph_ps(_mm256_castsi256_si128(f));
  *hi = _mm256_cvtph_ps(_mm256_extracti128_si256(f, 1));
}

#endif /* VEC_AVX2_H */
