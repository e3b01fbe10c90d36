/* How rows of output are written: directly from one pass over the keys (tiled_write_rows, shared by
 * the tiled path and the direct path), or by the split-KV merge, which combines partial (max, sum,
 * output) triples of the same rows over disjoint key ranges.
 *
 * With M = max_k m_k and w_k = 2^(m_k - M) (maxima are in base 2, as the scores are), the row's
 * output is sum_k w_k acc_k / sum_k w_k l_k -- the online-softmax update applied once per partial.
 * A partial whose max is -inf (it saw no key, or only keys scoring -inf) weighs 0 but still counts:
 * its acc holds 0 * v of every key it saw, NaN where v held a NaN (or an infinity), as the
 * reference's exp(-inf - M) * v does, and the contract makes such a row NaN. A NaN max or sum in
 * any partial makes the whole row NaN.
 *
 * A row's sum is 0 only when its max is -inf: it sees no key (exact zeros), or every key it sees
 * scores -inf, which makes every weight exp(-inf - -inf) of the reference NaN (0 / 0): NaN. */
#include <math.h>

#include "tiled_internal.h"

/* The value of every element of a row whose sum is 0: see above. */
static float empty_sum_value(const tiled_geom *g, int64_t i) {
  int64_t lo, hi;
  txattn_visible_range(g->p, i, &lo, &hi);
  return lo < hi ? NAN : 0.0f;
}

void tiled_write_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                      const float *acc, const float *l) {
  const txattn_tensors *t = g->t;
  for (int64_t row = t0; row < t1; row++) {
    const int64_t r = row - t0, i = row / g->group, h = kvh * g->group + row % g->group;
    float *o = txattn_row_mut(t->o, &t->o_layout, b, h, i);
    const float *a = acc + r * g->dvp;
    if (l[r] == 0.0f) { /* never 0/0 */
      const float z = empty_sum_value(g, i);
      for (int64_t c = 0; c < g->dv; c++) o[c] = z;
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
    if (isnan(mx) || mx == -INFINITY) { /* a NaN partial, or every sum 0 */
      const float z = isnan(mx) ? NAN : empty_sum_value(g, i);
      for (int64_t c = 0; c < g->dv; c++) o[c] = z;
      continue;
    }
    float l = 0.0f;
    for (int64_t c = 0; c < g->dv; c++) o[c] = 0.0f;
    for (int k = 0; k < n_parts; k++) {
      /* 0 for a partial whose max is -inf: its acc still enters, so that 0 * NaN stays NaN */
      const float w = exp2f(parts[k].m[r] - mx), *acc = parts[k].acc + r * parts[k].ld;
      l += parts[k].l[r] * w;
      for (int64_t c = 0; c < g->dv; c++) o[c] += acc[c] * w;
    }
    const float inv = 1.0f / l;
    for (int64_t c = 0; c < g->dv; c++) o[c] *= inv;
    txattn_row_spread_nan(o, g->dv);
  }
}
