/* SPDX-License-Identifier: MIT */
/* Scalar conversions between fp32 and the 16-bit types f16 (IEEE binary16) and bf16 (the top half
 * of an fp32), in portable C11 on bit patterns (uint16_t), independent of the FP environment.
 *
 * Widening is exact: every f16 and bf16 value, subnormals included, is an fp32 value. Narrowing
 * rounds to nearest, ties to even; a result beyond the largest finite value becomes +-Inf as IEEE
 * says (f16: |x| >= 65520; bf16: |x| >= 2^128 - 2^119).
 *
 * NaNs follow the hardware, so that these functions and the vector ones (the vf_*_f16 / vf_*_bf16
 * sections of vec_<isa>.h) agree bit for bit on every input:
 *  - f16 -> f32 quiets a NaN (sets the quiet bit) and keeps its payload, as F16C's vcvtph2ps and
 *    arm64's fcvtl do;
 *  - bf16 -> f32 is a 16-bit shift: every bf16 bit pattern, a signalling NaN too, stays as it is;
 *  - f32 -> f16 and f32 -> bf16 return a quiet NaN of the same sign with the payload's top bits
 *    (the bits that fit), as vcvtps2ph and fcvtn do: a NaN never rounds into Inf.
 *
 * The row helpers convert n elements between a 16-bit row and an fp32 row (any alignment); the
 * vector layers' row helpers (vec_rows_half.h) do the same faster. */
#ifndef TXATTN_PLUGIN_HALF_H
#define TXATTN_PLUGIN_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t txh_f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static inline float txh_bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* f16 -> f32, exact. A subnormal m * 2^-24 is rebuilt by an exact integer-to-float conversion and
   an exact multiplication by a power of two (the product is a normal fp32, FTZ/DAZ do not apply). */
static inline float txh_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  uint32_t u;
  if (exp == 0x1Fu) /* Inf, or NaN quietened with its payload */
    u = 0x7F800000u | (man << 13) | (man ? 0x00400000u : 0u);
  else if (exp != 0) /* normal: rebias 15 -> 127 */
    u = ((exp + 112u) << 23) | (man << 13);
  else /* zero or subnormal */
    u = txh_f32_bits((float)man * 0x1p-24f);
  return txh_bits_f32(sign | u);
}

/* bf16 -> f32, exact: the bf16 bits are the fp32's top half. */
static inline float txh_bf16_to_f32(uint16_t h) {
  return txh_bits_f32((uint32_t)h << 16);
}

/* f32 -> f16, round to nearest even. */
static inline uint16_t txh_f32_to_f16(float x) {
  uint32_t u = txh_f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  u &= 0x7FFFFFFFu;
  if (u > 0x7F800000u) /* NaN: quiet, top 9 bits of the payload */
    return (uint16_t)(sign | 0x7E00u | ((u >> 13) & 0x3FFu));
  if (u >= 0x477FF000u) /* >= 65520 = 65504 + half an ulp, or Inf: rounds to Inf */
    return (uint16_t)(sign | 0x7C00u);
  if (u >= 0x387FF000u) {
    /* normal result (2^-14 - 2^-26 and above round to at least 2^-14): rebias the exponent 127 ->
       15, then drop 13 bits with round to nearest even; a carry out of the significand moves to
       the exponent, which is the correct rounding up to the next binade. */
    uint32_t r = u - (112u << 23);
    r += 0x0FFFu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
  }
  if (u <= 0x33000000u) /* <= 2^-25, half the smallest subnormal: the tie goes to even 0 */
    return sign;
  /* subnormal result: the significand with its implicit bit, 1.m * 2^(e - 127), in units of
     2^-24 is (1m) >> (126 - e), with e in [102, 112] here, a shift of 14 to 24 */
  uint32_t man = (u & 0x007FFFFFu) | 0x00800000u;
  unsigned shift = 126u - (u >> 23);
  uint32_t q = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) q++;
  return (uint16_t)(sign | q);
}

/* f32 -> bf16, round to nearest even on the low 16 bits; a carry runs into the exponent (up to
   Inf), which is the correct rounding of every finite fp32, subnormals included. */
static inline uint16_t txh_f32_to_bf16(float x) {
  uint32_t u = txh_f32_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static inline void txh_f16_row_to_f32(const uint16_t *src, int64_t n, float *dst) {
  for (int64_t i = 0; i < n; i++) dst[i] = txh_f16_to_f32(src[i]);
}
static inline void txh_bf16_row_to_f32(const uint16_t *src, int64_t n, float *dst) {
  for (int64_t i = 0; i < n; i++) dst[i] = txh_bf16_to_f32(src[i]);
}
static inline void txh_f32_row_to_f16(const float *src, int64_t n, uint16_t *dst) {
  for (int64_t i = 0; i < n; i++) dst[i] = txh_f32_to_f16(src[i]);
}
static inline void txh_f32_row_to_bf16(const float *src, int64_t n, uint16_t *dst) {
  for (int64_t i = 0; i < n; i++) dst[i] = txh_f32_to_bf16(src[i]);
}

#endif /* TXATTN_PLUGIN_HALF_H */
