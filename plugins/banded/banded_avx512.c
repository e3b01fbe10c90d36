/* SPDX-License-Identifier: MIT */
/* banded.avx512: the banded vector kernel (banded_algo.h) over the shared AVX-512 vector layer
 * (plugins/common), built with -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma. The same register
 * blocks as banded.avx2 on vectors twice as wide (panels of 16 keys, 16 keys per single-row block).
 * The development VM has no AVX-512: this file is compile-checked only, and so kept to the AVX2
 * code but for the lane operations below; the blocks could grow into the 32 zmm registers once it
 * can be measured. */
#include <math.h>

#include "vec_avx512.h"
#include "vec_exp2.h"
#include "banded.h"

/* Adds pairs of vectors' halves, then quarters, then pairs and single lanes inside 128-bit lanes
   (a transpose folded into the additions): after the four rounds lane 4k + m holds the sum of
   a[k + 4m], which one permutation puts at lane k + 4m. */
static inline vf vf_sum_lanes(const vf *a) {
  vf h[8], q[4], p[2];
  for (int i = 0; i < 8; i++) /* [x q0+q2, x q1+q3, y q0+q2, y q1+q3] in 128-bit lanes */
    h[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  for (int i = 0; i < 4; i++) /* 128-bit lane k: 4 partial sums of a[4i + k] */
    q[i] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * i], h[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(h[2 * i], h[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  for (int i = 0; i < 2; i++) /* lane k: 2 partial sums of a[8i + k], then of a[8i + 4 + k] */
    p[i] = _mm512_add_ps(_mm512_shuffle_ps(q[2 * i], q[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(q[2 * i], q[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  vf s = _mm512_add_ps(_mm512_shuffle_ps(p[0], p[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(p[0], p[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i to_key = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(to_key, s);
}

static inline vf vf_lane_index(void) {
  return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
static inline vf vf_keep_range(vf x, vf i, vf a, vf e) {
  __mmask16 in = _mm512_cmp_ps_mask(i, a, _CMP_GE_OQ) & _mm512_cmp_ps_mask(i, e, _CMP_LT_OQ);
  return _mm512_mask_blend_ps(in, _mm512_set1_ps(-INFINITY), x);
}

#define BANDED_NP      BANDED_AVX512_NP
#define BANDED_WSUM_MR 3
#define BANDED_WSUM_CB 4
#define BANDED_ROW_KB  BANDED_AVX512_ROW_KB
#define BANDED_ROW_CB  8
#define BANDED_HEAD_FN banded_head_avx512
_Static_assert(BANDED_AVX512_W == VEC_W, "banded.h disagrees with the vector layer's width");
#include "banded_algo.h"
