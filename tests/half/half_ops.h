/* SPDX-License-Identifier: MIT */
/* The row conversions of plugins/common/vec_rows_half.h, compiled once per ISA (half_<isa>.c, each
 * with that ISA's flags) for test_half.c. Include after a vec_<isa>.h to define that ISA's table;
 * without one, only the declarations. */
#ifndef TEST_HALF_OPS_H
#define TEST_HALF_OPS_H

#include <stdint.h>

typedef struct half_ops {
  const char *name;
  int width; /* VEC_W */
  void (*from_f16)(const uint16_t *src, int64_t n, int64_t np, float *dst);
  void (*from_bf16)(const uint16_t *src, int64_t n, int64_t np, float *dst);
  void (*to_f16)(const float *src, int64_t n, uint16_t *dst);
  void (*to_bf16)(const float *src, int64_t n, uint16_t *dst);
} half_ops;

extern const half_ops half_ops_scalar, half_ops_avx2, half_ops_avx512, half_ops_neon;

#endif

#ifdef VEC_W
#include "vec_rows_half.h"

#define HALF_OPS_CAT2(a, b) a##b
#define HALF_OPS_CAT(a, b)  HALF_OPS_CAT2(a, b)
#define HALF_OPS_STR2(a)    #a
#define HALF_OPS_STR(a)     HALF_OPS_STR2(a)

const half_ops HALF_OPS_CAT(half_ops_, VEC_ISA) = {
    HALF_OPS_STR(VEC_ISA), VEC_W, vf_row_from_f16, vf_row_from_bf16, vf_row_to_f16, vf_row_to_bf16};
#endif
