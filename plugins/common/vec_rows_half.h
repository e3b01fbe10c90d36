/* SPDX-License-Identifier: MIT */
/* Row conversions between 16-bit elements (f16, bf16) and fp32 over the vector layer: include after
 * a vec_<isa>.h. Whole vectors go through the layer's vf_loadu_f16 / vf_storeu_f16 (and bf16)
 * functions, the last n % VEC_W elements through half.h's scalar functions, which give the same
 * bits (half.h); so a row converts the same on every ISA.
 *
 * vf_row_from_f16(src, n, np, dst), vf_row_from_bf16(...): n 16-bit values of a row (any
 *   alignment) widened into dst (aligned to the vector size), zeros from n up to np, as
 *   td_copy_row does for an fp32 row.
 * vf_row_to_f16(src, n, dst), vf_row_to_bf16(...): n floats (any alignment) narrowed with round to
 *   nearest even into dst (any alignment). */
#ifndef VEC_ROWS_HALF_H
#define VEC_ROWS_HALF_H

#include <stdint.h>

#include "half.h"

static inline void vf_row_from_f16(const uint16_t *src, int64_t n, int64_t np, float *dst) {
  int64_t c = 0;
  for (; c + VEC_W <= n; c += VEC_W) vf_store(dst + c, vf_loadu_f16(src + c));
  for (; c < n; c++) dst[c] = txh_f16_to_f32(src[c]);
  for (; c < np; c++) dst[c] = 0.0f;
}
static inline void vf_row_from_bf16(const uint16_t *src, int64_t n, int64_t np, float *dst) {
  int64_t c = 0;
  for (; c + VEC_W <= n; c += VEC_W) vf_store(dst + c, vf_loadu_bf16(src + c));
  for (; c < n; c++) dst[c] = txh_bf16_to_f32(src[c]);
  for (; c < np; c++) dst[c] = 0.0f;
}
static inline void vf_row_to_f16(const float *src, int64_t n, uint16_t *dst) {
  int64_t c = 0;
  for (; c + VEC_W <= n; c += VEC_W) vf_storeu_f16(dst + c, vf_loadu(src + c));
  for (; c < n; c++) dst[c] = txh_f32_to_f16(src[c]);
}
static inline void vf_row_to_bf16(const float *src, int64_t n, uint16_t *dst) {
  int64_t c = 0;
  for (; c + VEC_W <= n; c += VEC_W) vf_storeu_bf16(dst + c, vf_loadu(src + c));
  for (; c < n; c++) dst[c] = txh_f32_to_bf16(src[c]);
}

#endif /* VEC_ROWS_HALF_H */
