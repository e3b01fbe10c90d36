/* AVX-512 vector layer: 16 floats per vector (AVX-512 F), 32 zmm registers; compile with
 * -mavx512f (the plugins add DQ/BW/VL for their ISA check) and -mfma.
 *
 * Differs from vec_avx2.h only in the intrinsics; the semantics of each function are those of
 * vec_scalar.h. This mapping cannot run on the development VM (no AVX-512): it is kept one-to-one
 * with the AVX2 layer, which the tests exercise. */
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

#endif /* VEC_AVX512_H */
