/* SPDX-License-Identifier: MIT */
/* banded.neon: the banded vector kernel (banded_algo.h) over the shared NEON vector layer
 * (plugins/common; arm64 Advanced SIMD, 4 floats per vector, 32 registers): group scores 4 rows x 4
 * panels of 4 keys (16 accumulators), group weighted sums 4 rows x 4 vectors (16 accumulators, 4
 * broadcasts), a row alone 8 keys (two groups of 4, so 8 accumulator chains) x 16 column vectors.
 * Tested under qemu-user; its speed is not measured (no arm64 hardware here). */
#include <math.h>

#include "vec_neon.h"
#include "vec_exp2.h"
#include "banded.h"

static inline void vf_storeu(float *p, vf x) {
  vst1q_f32(p, x);
}

/* Lane j = the sum of a[j]'s lanes: pairwise adds of pairs, twice. */
static inline vf vf_sum_lanes(const vf *a) {
  return vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]));
}

static inline vf vf_lane_index(void) {
  const float32x4_t lane = {0.0f, 1.0f, 2.0f, 3.0f};
  return lane;
}
static inline vf vf_keep_range(vf x, vf i, vf a, vf e) {
  uint32x4_t in = vandq_u32(vcgeq_f32(i, a), vcltq_f32(i, e));
  return vbslq_f32(in, x, vdupq_n_f32(-INFINITY));
}

#define BANDED_NP      BANDED_NEON_NP
#define BANDED_WSUM_MR 4
#define BANDED_WSUM_CB 4
#define BANDED_ROW_KB  BANDED_NEON_ROW_KB
#define BANDED_ROW_CB  16
#define BANDED_HEAD_FN banded_head_neon
_Static_assert(BANDED_NEON_W == VEC_W, "banded.h disagrees with the vector layer's width");
#include "banded_algo.h"
