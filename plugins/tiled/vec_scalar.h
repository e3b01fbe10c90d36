/* Vector layer for tiled.scalar: a "vector" of one float, portable C for any CPU.
 *
 * This file is the reference for what every vector layer (vec_<isa>.h) provides:
 *
 * TILED_W lanes per vector; TILED_MR rows per register block; TILED_NRS vectors of keys per score
 * tile (a packed K panel holds TILED_NRS * TILED_W keys); TILED_NRV vectors of d_v per P V tile.
 *
 * vf_load(p), vf_store(p, x): TILED_W floats at an address aligned to the vector size.
 * vf_loadu(p): TILED_W floats at any address.
 * vf_bcast(p): every lane = *p.
 * vf_fma(a, b, c): a * b + c, fused (one rounding) where the ISA has it.
 * vf_max(c, x): the max of a constant c and x, NaN where x is NaN (where c is NaN the result may
 *   be either).
 * vf_exp2_scale(t): for t = k + TILED_EXP2_MAGIC with integral k in [-127, 127], the float 2^k (+0
 *   for k = -127): the bits of t shifted left by 23.
 * vf_hmax(x), vf_hsum(x): horizontal max and sum (a NaN lane may or may not win the max).
 * vf_transpose(src, c, dst, ld): dst[i * ld + r] = src[r][c + i] for r, i < TILED_W: a W x W block
 *   of W rows (any alignment) into vector-aligned dst rows, for packing K into panels.
 */
#ifndef TILED_VEC_SCALAR_H
#define TILED_VEC_SCALAR_H

#include "tiled_blocks.h"

#include <stdint.h>
#include <string.h>

#define TILED_ISA      scalar
#define TILED_ISA_ENUM TXATTN_ISA_SCALAR
#define TILED_W        TILED_SCALAR_W
/* 4 rows x 4 keys (and 4 x 4 columns in P V): plain C, which GCC's -O3 SLP vectoriser maps onto one
   4-lane register per row of baseline SIMD (SSE2 on x86-64, ASIMD on arm64), and which stays
   correct scalar code anywhere else. Measured on Zen 2, n = 1024, d = 64: 3.5-4.7 GFLOP/s this
   way, 2.7-3.2 with the vectorisers off (4 x 3 or 4 x 4), naive.scalar 1.2. */
#define TILED_MR  TILED_SCALAR_MR
#define TILED_NRS TILED_SCALAR_NRS
#define TILED_NRV TILED_SCALAR_NRV

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
/* a * b + c without fmaf(): a libm call per FMA would be slower than two roundings. */
static inline vf vf_fma(vf a, vf b, vf c) {
  return a * b + c;
}
static inline vf vf_max(vf c, vf x) {
  return x < c ? c : x;
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

#endif /* TILED_VEC_SCALAR_H */
