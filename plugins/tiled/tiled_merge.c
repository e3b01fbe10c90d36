/* How rows of output are written: directly from one pass over the keys (tiled_write_rows, shared by
 * the tiled drivers and the OpenMP decode path), or by the split-KV merge, which combines partial
 * (max, sum, output) triples of the same rows over disjoint key ranges.
 *
 * With M = max_k m_k and w_k = 2^(m_k - M) (maxima are in base 2, as the scores are), the row's
 * output is sum_k w_k acc_k / sum_k w_k l_k -- the online-softmax update applied once per partial.
 * A partial that saw no key has m = -inf, l = 0, acc = 0 and weighs 0; a row no partial saw gets
 * exact zeros; a NaN max, sum or output in any partial makes the whole row NaN. */
#include <math.h>

#include "tiled_internal.h"

void tiled_write_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                      const float *acc, const float *l) {
  const txattn_tensors *t = g->t;
  for (int64_t row = t0; row < t1; row++) {
    const int64_t r = row - t0, i = row / g->group, h = kvh * g->group + row % g->group;
    float *o = txattn_row_mut(t->o, &t->o_layout, b, h, i);
    const float *a = acc + r * g->dvp;
    if (l[r] == 0.0f) { /* no visible key: exact zeros, never 0/0 */
      for (int64_t c = 0; c < g->dv; c++) o[c] = 0.0f;
    } else {
      const float inv = 1.0f / l[r];
      for (int64_t c = 0; c < g->dv; c++) o[c] = a[c] * inv;
      txattn_row_spread_nan(o, g->dv); /* a NaN read in one V column poisons the whole row */
    }
  }
}

/* The largest max of row r, or NaN if a partial's max or sum is NaN. */
static float merged_max(const tiled_partial *parts, int n_parts, int64_t r) {
  float mx = -INFINITY;
  for (int k = 0; k < n_parts; k++) {
    if (isnan(parts[k].m[r]) || isnan(parts[k].l[r])) return NAN;
    if (parts[k].m[r] > mx) mx = parts[k].m[r];
  }
  return mx;
}

void tiled_merge_partials(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                          const tiled_partial *parts, int n_parts) {
  const txattn_tensors *t = g->t;
  for (int64_t row = t0; row < t1; row++) {
    const int64_t r = row - t0, i = row / g->group, h = kvh * g->group + row % g->group;
    float *o = txattn_row_mut(t->o, &t->o_layout, b, h, i);
    const float mx = merged_max(parts, n_parts, r);
    float l = 0.0f;
    for (int64_t c = 0; c < g->dv; c++) o[c] = isnan(mx) ? NAN : 0.0f;
    if (isnan(mx) || mx == -INFINITY) continue; /* -inf: no partial saw a key */
    for (int k = 0; k < n_parts; k++) {
      if (parts[k].m[r] == -INFINITY) continue;
      const float w = exp2f(parts[k].m[r] - mx), *acc = parts[k].acc + r * parts[k].ld;
      l += parts[k].l[r] * w;
      for (int64_t c = 0; c < g->dv; c++) o[c] += acc[c] * w;
    }
    const float inv = 1.0f / l;
    for (int64_t c = 0; c < g->dv; c++) o[c] *= inv;
    txattn_row_spread_nan(o, g->dv);
  }
}
