/* SPDX-License-Identifier: MIT */
/* The mask and softmax on one row of the dense S block. Its passes run over every visible score, as
 * often as the two products' inner loops, so they are written without serial chains: the max in
 * independent branch-free lanes, the sum in four double lanes and the scaling as plain loops, which
 * GCC vectorises; only exp() is a call per score (the gain over one serial loop each:
 * docs/measurements.md). */
#include <math.h>
#include <string.h>

#include "masked.h"

#define LANES 8

/* The max of s[0..n), NaN if any s[j] is NaN: (a > m ? a : m) alone would skip a NaN score, and a
   NaN max is what turns the whole row NaN. Eight independent lanes (GCC 12 keeps them as scalar
   maxss, but no longer one dependent chain). */
static float max_keep_nan(const float *s, int64_t n) {
  float m[LANES];
  int nan[LANES] = {0};
  for (int u = 0; u < LANES; u++) m[u] = s[0];
  int64_t j = 0;
  for (; j + LANES <= n; j += LANES) {
    for (int u = 0; u < LANES; u++) {
      m[u] = s[j + u] > m[u] ? s[j + u] : m[u];
      nan[u] |= s[j + u] != s[j + u];
    }
  }
  for (; j < n; j++) {
    m[0] = s[j] > m[0] ? s[j] : m[0];
    nan[0] |= s[j] != s[j];
  }
  for (int u = 1; u < LANES; u++) {
    m[0] = m[u] > m[0] ? m[u] : m[0];
    nan[0] |= nan[u];
  }
  return nan[0] ? NAN : m[0];
}

/* In double: a float sum of n nearly equal terms drifts by ~n/5 ulp, 5e-5 at n = 4096. */
static double sum_double(const float *s, int64_t n) {
  double acc[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (int u = 0; u < 4; u++) acc[u] += s[j + u];
  for (; j < n; j++) acc[0] += s[j];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

void masked_softmax(float *s, int64_t n, int64_t lo, int64_t hi, float scale, float *lse) {
  float *v = s + lo;
  int64_t len = hi - lo;
  float max = max_keep_nan(v, len);
  for (int64_t j = 0; j < len; j++)
    v[j] = expf((v[j] - max) * scale); /* <= 1 whatever the scale: no overflow */
  double sum = sum_double(v, len);
  float inv = (float)(1.0 / sum);
  /* In double, once per row: scale * max may be far larger than log(sum) (a NaN max gives NaN). */
  if (lse) *lse = (float)((double)scale * (double)max + log(sum));
  for (int64_t j = 0; j < len; j++) v[j] *= inv;
  /* The mask: keys outside [lo, hi) get probability exactly 0, which is what a -inf score gives
     after exp(); setting it directly spares the exp() calls. */
  memset(s, 0, (size_t)lo * sizeof(float));
  memset(s + hi, 0, (size_t)(n - hi) * sizeof(float));
}
