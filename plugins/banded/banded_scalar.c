/* SPDX-License-Identifier: MIT */
/* banded.scalar inner loops: portable C shaped so that GCC vectorises them at -O3 with the baseline
 * ISA (SSE2 on x86-64, ASIMD on arm64) without -ffast-math.
 *
 * A float sum in one variable is a serial chain GCC must not reorder, so the dot products keep
 * LANES independent partial sums in an array: the inner loop over the lanes has no carried
 * dependence and becomes whole-vector multiplies and adds. The weighted sum has no reduction at all
 * (output row += weight * value row), which vectorises once `restrict` rules out aliasing.
 */
#include <math.h>

#include "banded.h"

/* 8 partial sums = 2 SSE vectors: with 16 lanes, or two keys per pass over q, GCC vectorises
   across the lanes' outer loop with shuffles and spills, which is slower (docs/measurements.md). */
#define LANES 8

static float dot(const float *restrict q, const float *restrict k, int64_t d) {
  float acc[LANES] = {0};
  int64_t c = 0;
  for (; c + LANES <= d; c += LANES)
    for (int u = 0; u < LANES; u++) acc[u] += q[c + u] * k[c + u];
  float tail = 0.0f;
  for (; c < d; c++) tail += q[c] * k[c];
  for (int u = 0; u < LANES; u++) tail += acc[u];
  return tail;
}

/* Key rows may be any distance apart, 0 and < d included: each is still d contiguous floats. */
static void scalar_scores(const float *q, const float *k, int64_t k_row, int64_t n, int64_t d,
                          float scale, float *restrict s) {
  for (int64_t j = 0; j < n; j++) s[j] = scale * dot(q, k + j * k_row, d);
}

/* (a > m ? a : m) alone would skip NaNs, so NaN is tracked beside it and wins at the end. */
static float scalar_max(const float *s, int64_t n) {
  float m = s[0];
  int nan = 0;
  for (int64_t j = 0; j < n; j++) {
    m = s[j] > m ? s[j] : m;
    nan |= isnan(s[j]);
  }
  return nan ? NAN : m;
}

static float scalar_exp_sum(float *s, int64_t n, float max, float scale) {
  float sum = 0.0f;
  for (int64_t j = 0; j < n; j++) {
    s[j] = expf((s[j] - max) * scale);
    sum += s[j];
  }
  return sum;
}

/* Four value rows per pass over o, so o is loaded and stored a quarter as often. */
static void scalar_weighted_sum(const float *w, const float *v, int64_t v_row, int64_t n, int64_t d,
                                float *restrict o) {
  for (int64_t c = 0; c < d; c++) o[c] = 0.0f;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float *restrict v0 = v + j * v_row, *restrict v1 = v0 + v_row;
    const float *restrict v2 = v1 + v_row, *restrict v3 = v2 + v_row;
    float w0 = w[j], w1 = w[j + 1], w2 = w[j + 2], w3 = w[j + 3];
    for (int64_t c = 0; c < d; c++) o[c] = o[c] + w0 * v0[c] + w1 * v1[c] + w2 * v2[c] + w3 * v3[c];
  }
  for (; j < n; j++) {
    const float *restrict vj = v + j * v_row;
    float wj = w[j];
    for (int64_t c = 0; c < d; c++) o[c] += wj * vj[c];
  }
}

static const banded_ops scalar_ops = {
    .scores = scalar_scores,
    .max = scalar_max,
    .exp_sum = scalar_exp_sum,
    .weighted_sum = scalar_weighted_sum,
};

void banded_head_scalar(const banded_head *hd) {
  banded_ops_head(hd, &scalar_ops);
}
