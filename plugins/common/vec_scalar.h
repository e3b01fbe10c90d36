/* SPDX-License-Identifier: MIT */
/* Scalar vector layer: a "vector" of one float, portable C for any CPU.
 *
 * A vector layer (vec_<isa>.h, one per ISA) lets a plugin write an algorithm once over the type vf
 * and the functions below, and compile it once per ISA with that ISA's flags. This file is the
 * reference for what every layer provides:
 *
 * VEC_ISA: the ISA's token (scalar, avx2, avx512, neon), for pasting into names; VEC_ISA_ENUM: its
 * txattn_isa value; VEC_W: floats per vector.
 *
 * vf_load(p), vf_store(p, x): VEC_W floats at an address aligned to the vector size.
 * vf_loadu(p): VEC_W floats at any address.
 * vf_bcast(p): every lane = *p.
 * vf_fma(a, b, c): a * b + c, fused (one rounding) where the ISA has it.
 * vf_div(a, b): a / b, correctly rounded. vf_copysign(m, s): |m| with the sign of s.
 * vf_max(c, x), vf_min(c, x): the max (min) of a constant c and x, NaN where x is NaN (where c is
 *   NaN the result may be either).
 * vf_exp2_scale(t): for t = k + VEC_EXP2_MAGIC (vec_exp2.h) with integral k in [-127, 128], the
 *   float 2^k (+0 for k = -127, +inf for k = 128): the bits of t shifted left by 23.
 * vf_hmax(x), vf_hsum(x): horizontal max and sum (a NaN lane may or may not win the max).
 * vf_transpose(src, c, dst, ld): dst[i * ld + r] = src[r][c + i] for r, i < VEC_W: a W x W block
 *   of W rows (any alignment) into vector-aligned dst rows (packing K into panels of keys).
 */
#ifndef VEC_SCALAR_H
#define VEC_SCALAR_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define VEC_ISA      scalar
#define VEC_ISA_ENUM TXATTN_ISA_SCALAR
#define VEC_W        1

typedef float vf;

static inline vf vf_zero(void) {
  return 0.0f;
}
static inline vf vf_set1(float x) {
  return x;
}
static inline vf vf_load(const float *p) {
  return *p;
}
static inline vf vf_loadu(const float *p) {
  return *p;
}
static inline void vf_store(float *p, vf x) {
  *p = x;
}
static inline vf vf_bcast(const float *p) {
  return *p;
}
static inline vf vf_add(vf a, vf b) {
  return a + b;
}
static inline vf vf_sub(vf a, vf b) {
  return a - b;
}
static inline vf vf_mul(vf a, vf b) {
  return a * b;
}
static inline vf vf_div(vf a, vf b) {
  return a / b;
}
static inline vf vf_copysign(vf mag, vf sgn) {
  return copysignf(mag, sgn);
}
/* a * b + c without fmaf(): a libm call per FMA would be slower than two roundings. */
static inline vf vf_fma(vf a, vf b, vf c) {
  return a * b + c;
}
static inline vf vf_max(vf c, vf x) {
  return x < c ? c : x;
}
static inline vf vf_min(vf c, vf x) {
  return x > c ? c : x;
}
static inline vf vf_exp2_scale(vf t) {
  uint32_t u;
  memcpy(&u, &t, sizeof u);
  u <<= 23;
  memcpy(&t, &u, sizeof t);
  return t;
}
static inline float vf_hmax(vf x) {
  return x;
}
static inline float vf_hsum(vf x) {
  return x;
}
static inline void vf_transpose(const float *const *src, int64_t c, float *dst, int64_t ld) {
  (void)ld;
  dst[0] = src[0][c];
}

/* ---- 16-bit elements (f16, bf16) ----
 * vf_loadu_f16(p), vf_loadu_bf16(p): VEC_W 16-bit values at any address (uint16_t aligned),
 *   widened exactly to fp32 (half.h says what becomes of NaNs).
 * vf_storeu_f16(p, x), vf_storeu_bf16(p, x): VEC_W floats narrowed with round to nearest even, to
 *   any address; bit for bit the results of half.h's txh_f32_to_f16 / txh_f32_to_bf16.
 * vec_rows_half.h builds row conversions on these. */
#include "half.h"

static inline vf vf_loadu_f16(const uint16_t *p) {
  return txh_f16_to_f32(*p);
}
static inline vf vf_loadu_bf16(const uint16_t *p) {
  return txh_bf16_to_f32(*p);
}
static inline void vf_storeu_f16(uint16_t *p, vf x) {
  *p = txh_f32_to_f16(x);
}
static inline void vf_storeu_bf16(uint16_t *p, vf x) {
  *p = txh_f32_to_bf16(x);
}

/* ---- 8-bit elements (q8_0's int8, fp8 e4m3fn and e5m2) ----
 * vf_loadu_i8(p): VEC_W int8 values (any address) as fp32, exactly; vf_set1_f16(h): the f16 h in
 *   every lane.
 * vf_loadu_e4m3(p), vf_loadu_e5m2(p): VEC_W fp8 values (their bytes, any address) as fp32 through
 *   their f16 forms, exactly: e5m2 is the top byte of an f16 (infinities and NaNs included), its
 *   value; e4m3fn's bits are moved into an f16 of the same exponent field, whose value is 2^-8 of
 *   theirs (subnormals included), with 0x7f and 0xff made the f16 NaN they are: vf_loadu_e4m3
 *   returns that f16's value, 2^-8 times the e4m3 value (its caller folds the 2^8 into the head's
 *   scale, where it is exact). */
static inline uint16_t vf_e4m3_as_f16(uint8_t x) {
  const uint16_t h = (uint16_t)(((x & 0x7f) << 7) | ((x & 0x80) << 8));
  return (x & 0x7f) == 0x7f ? (uint16_t)(h | 0x7c00) : h;
}
static inline vf vf_loadu_i8(const int8_t *p) {
  return (float)*p;
}
static inline vf vf_set1_f16(uint16_t h) {
  return txh_f16_to_f32(h);
}
static inline vf vf_loadu_e4m3(const uint8_t *p) {
  return txh_f16_to_f32(vf_e4m3_as_f16(*p));
}
static inline vf vf_loadu_e5m2(const uint8_t *p) {
  return txh_f16_to_f32((uint16_t)(*p << 8));
}

#endif /* VEC_SCALAR_H */
