/* SPDX-License-Identifier: MIT */
/* banded.avx2: the banded vector kernel (banded_algo.h) over the shared AVX2 vector layer
 * (plugins/common), built with -mavx2 -mfma. The register blocks fit 16 ymm registers: group
 * scores 4 rows x 3 panels of 8 keys (12 accumulators, 3 panel vectors, 1 broadcast), group
 * weighted sums 3 rows x 4 vectors (12 accumulators, 1 value vector, 3 broadcasts: the fastest
 * shape that does not spill, docs/measurements.md), a row alone 8 keys x 8 column vectors. */
#include <math.h>

#include "vec_avx2.h"
#include "vec_exp2.h"
#include "banded.h"

static inline void vf_storeu(float *p, vf x) {
  _mm256_storeu_ps(p, x);
}

/* Lane j = the sum of a[j]'s lanes: two rounds of horizontal adds leave, in each 128-bit half, the
   half-sums of four accumulators; adding the low halves to the high halves finishes them. */
static inline vf vf_sum_lanes(const vf *a) {
  __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
  __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
  __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

static inline vf vf_lane_index(void) {
  return _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
}
static inline vf vf_keep_range(vf x, vf i, vf a, vf e) {
  __m256 in = _mm256_and_ps(_mm256_cmp_ps(i, a, _CMP_GE_OQ), _mm256_cmp_ps(i, e, _CMP_LT_OQ));
  return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, in);
}

#define BANDED_NP      BANDED_AVX2_NP
#define BANDED_WSUM_MR 3
#define BANDED_WSUM_CB 4
#define BANDED_ROW_KB  BANDED_AVX2_ROW_KB
#define BANDED_ROW_CB  8
#define BANDED_HEAD_FN banded_head_avx2
_Static_assert(BANDED_AVX2_W == VEC_W, "banded.h disagrees with the vector layer's width");
#include "banded_algo.h"
