/* SPDX-License-Identifier: MIT */
/* NEON vector layer: 4 floats per vector (arm64 Advanced SIMD, no flags needed), 32 q registers.
 *
 * Semantics of each function: see vec_scalar.h. */
#ifndef VEC_NEON_H
#define VEC_NEON_H

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#define VEC_ISA      neon
#define VEC_ISA_ENUM TXATTN_ISA_NEON
#define VEC_W        4

typedef float32x4_t vf;

static inline vf vf_zero(void) {
  return vdupq_n_f32(0.0f);
}
static inline vf vf_set1(float x) {
  return vdupq_n_f32(x);
}
static inline vf vf_load(const float *p) {
  return vld1q_f32(p);
}
static inline vf vf_loadu(const float *p) {
  return vld1q_f32(p);
}
static inline void vf_store(float *p, vf x) {
  vst1q_f32(p, x);
}
static inline vf vf_bcast(const float *p) {
  return vld1q_dup_f32(p);
}
static inline vf vf_add(vf a, vf b) {
  return vaddq_f32(a, b);
}
static inline vf vf_sub(vf a, vf b) {
  return vsubq_f32(a, b);
}
static inline vf vf_mul(vf a, vf b) {
  return vmulq_f32(a, b);
}
static inline vf vf_div(vf a, vf b) {
  return vdivq_f32(a, b);
}
static inline vf vf_copysign(vf mag, vf sgn) {
  return vbslq_f32(vdupq_n_u32(0x80000000u), sgn, mag);
}
static inline vf vf_fma(vf a, vf b, vf c) {
  return vfmaq_f32(c, a, b);
}
/* FMAX returns NaN when either operand is NaN. */
static inline vf vf_max(vf c, vf x) {
  return vmaxq_f32(c, x);
}
/* FMIN likewise. */
static inline vf vf_min(vf c, vf x) {
  return vminq_f32(c, x);
}
static inline vf vf_exp2_scale(vf t) {
  return vreinterpretq_f32_u32(vshlq_n_u32(vreinterpretq_u32_f32(t), 23));
}
static inline float vf_hmax(vf x) {
  return vmaxvq_f32(x);
}
static inline float vf_hsum(vf x) {
  return vaddvq_f32(x);
}
/* 4 x 4 transpose: TRN1/TRN2 on row pairs, then combine their halves. */
static inline void vf_transpose(const float *const *src, int64_t c, float *dst, int64_t ld) {
  float32x4x2_t t01 = vtrnq_f32(vld1q_f32(src[0] + c), vld1q_f32(src[1] + c));
  float32x4x2_t t23 = vtrnq_f32(vld1q_f32(src[2] + c), vld1q_f32(src[3] + c));
  vst1q_f32(dst + 0 * ld, vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0])));
  vst1q_f32(dst + 1 * ld, vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1])));
  vst1q_f32(dst + 2 * ld, vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0])));
  vst1q_f32(dst + 3 * ld, vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1])));
}

/* ---- 16-bit elements (f16, bf16): semantics in vec_scalar.h ----
 * f16 through fcvtl / fcvtn (FPCR as Linux leaves it: round to nearest, no default NaN, no
 * flush-to-zero), bf16 with integer ops. */
static inline vf vf_loadu_f16(const uint16_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}
static inline vf vf_loadu_bf16(const uint16_t *p) {
  return vreinterpretq_f32_u32(vshlq_n_u32(vmovl_u16(vld1_u16(p)), 16));
}
static inline void vf_storeu_f16(uint16_t *p, vf x) {
  vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(x)));
}
static inline void vf_storeu_bf16(uint16_t *p, vf x) {
  uint32x4_t u = vreinterpretq_u32_f32(x);
  uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
  uint32x4_t r = vshrq_n_u32(vaddq_u32(u, vaddq_u32(lsb, vdupq_n_u32(0x7FFF))), 16);
  uint32x4_t q = vorrq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(0x40));
  uint32x4_t nan = vmvnq_u32(vceqq_f32(x, x));
  vst1_u16(p, vmovn_u32(vbslq_u32(nan, q, r)));
}

/* ---- 8-bit elements (int8, fp8 e4m3fn and e5m2): semantics in vec_scalar.h, the fp8 values
 * through their f16 forms as in vec_avx2.h ---- */
static inline uint8x8_t vf__load4_u8(const void *p) {
  uint32_t w;
  memcpy(&w, p, sizeof w);
  return vreinterpret_u8_u32(vdup_n_u32(w));
}
static inline vf vf_set1_f16(uint16_t h) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h)));
}
static inline vf vf_loadu_i8(const int8_t *p) {
  const int16x8_t h = vmovl_s8(vreinterpret_s8_u8(vf__load4_u8(p)));
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
}
static inline vf vf_loadu_e4m3(const uint8_t *p) {
  const uint16x4_t x = vget_low_u16(vmovl_u8(vf__load4_u8(p))), m = vdup_n_u16(0x7f);
  const uint16x4_t nan = vceq_u16(vand_u16(x, m), m);
  uint16x4_t h = vreinterpret_u16_s16(
      vshr_n_s16(vreinterpret_s16_u16(vshl_n_u16(x, 8)), 1)); /* sign in bits 15 and 14 */
  h = vorr_u16(vand_u16(h, vdup_n_u16(0xbfff)), vand_u16(nan, vdup_n_u16(0x7c00)));
  return vcvt_f32_f16(vreinterpret_f16_u16(h));
}
static inline vf vf_loadu_e5m2(const uint8_t *p) {
  const uint16x4_t x = vget_low_u16(vmovl_u8(vf__load4_u8(p)));
  return vcvt_f32_f16(vreinterpret_f16_u16(vshl_n_u16(x, 8)));
}

#endif /* VEC_NEON_H */
