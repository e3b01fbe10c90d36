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
  /* where the layer has vf_loadu_e4m3x2 / e5m2x2 (else NULL): how many of the loads of every byte
     value in every lane differ from two single loads' (vf_loadu_e4m3, vf_loadu_e5m2) */
  int (*fp8_pairs_differ)(void);
} half_ops;

extern const half_ops half_ops_scalar, half_ops_avx2, half_ops_avx512, half_ops_neon;

#endif

#ifdef VEC_W
#include "vec_rows_half.h"

#define HALF_OPS_CAT2(a, b) a##b
#define HALF_OPS_CAT(a, b)  HALF_OPS_CAT2(a, b)
#define HALF_OPS_STR2(a)    #a
#define HALF_OPS_STR(a)     HALF_OPS_STR2(a)

#ifdef VF_HAVE_FP8X2
#include <string.h>
static int fp8_pairs_differ(void) {
  unsigned char b[256 + 2 * VEC_W];
  int bad = 0;
  for (int i = 0; i < (int)sizeof b; i++) b[i] = (unsigned char)i;
  for (int s = 0; s < 256; s++) /* every byte value in every lane of both vectors */
    for (int e4m3 = 0; e4m3 < 2; e4m3++) {
      vf pair[2], single[2];
      if (e4m3) {
        vf_loadu_e4m3x2(b + s, &pair[0], &pair[1]);
        single[0] = vf_loadu_e4m3(b + s);
        single[1] = vf_loadu_e4m3(b + s + VEC_W);
      } else {
        vf_loadu_e5m2x2(b + s, &pair[0], &pair[1]);
        single[0] = vf_loadu_e5m2(b + s);
        single[1] = vf_loadu_e5m2(b + s + VEC_W);
      }
      bad += memcmp(pair, single, sizeof pair) != 0;
    }
  return bad;
}
#define HALF_OPS_FP8 fp8_pairs_differ
#else
#define HALF_OPS_FP8 0 /* none */
#endif

const half_ops HALF_OPS_CAT(half_ops_, VEC_ISA) = {
    HALF_OPS_STR(VEC_ISA), VEC_W,          vf_row_from_f16, vf_row_from_bf16,
    vf_row_to_f16,         vf_row_to_bf16, HALF_OPS_FP8};
#endif
