/* SPDX-License-Identifier: MIT */
/* How rows of output are written: directly from one pass over the keys (tiled_write_rows, shared by
 * the tiled path and the direct path), or by the split-KV merge, which combines partial (max, sum,
 * output) triples of the same rows over disjoint key ranges.
 *
 * With M = max_k m_k and w_k = 2^((m_k - M) scale2) (maxima are unscaled, as the scores are), the
 * row's output is sum_k w_k acc_k / sum_k w_k l_k -- the online-softmax update applied once per
 * partial. A partial whose max is -inf (it saw no key, or only keys scoring -inf) weighs 0 but still counts:
 * its acc holds 0 * v of every key it saw, NaN where v held a NaN (or an infinity), as the
 * reference's exp(-inf - M) * v does, and the contract makes such a row NaN. A NaN max or sum in
 * any partial makes the whole row NaN.
 *
 * A row's sum is 0 only when its max is -inf: it sees no key (exact zeros; keys a mask tensor
 * hides are not seen), or every key it sees scores -inf, which makes every weight exp(-inf - -inf) of the reference NaN (0 / 0): NaN.
 *
 * A 16-bit o: each row is computed in fp32 as above (its NaN spread there) and rounded once to o's
 * type, to nearest even, by the ISA's narrow_row (overflow becomes Inf, a NaN stays NaN).
 *
 * With the problem's lse, each row's log-sum-exp is written here too, from the same max and sum
 * that normalise its output: the only cost of lse is this per-row step, none in the key loops. */
#include <math.h>

#include "mask_value.h"
#include "tiled_internal.h"

/* The value of every element of a row whose sum is 0: see above. */
static float empty_sum_value(const tiled_geom *g, int64_t b, int64_t h, int64_t i) {
  int64_t sink_hi, lo, hi;
  txattn_visible_ranges(g->p, i, &sink_hi, &lo, &hi);
  if (g->mask == TXATTN_MASK_TENSOR_NONE) return lo < hi || sink_hi > 0 ? NAN : 0.0f;
  /* keys the mask tensor hides are not seen */
  const void *row = txattn_mask_row(g->p, g->t, b, h, i);
  for (int64_t j = 0; j < sink_hi; j++)
    if (txm_mask_value(g->p, g->t, row, j) != -INFINITY) return NAN;
  for (int64_t j = lo; j < hi; j++)
    if (txm_mask_value(g->p, g->t, row, j) != -INFINITY) return NAN;
  return 0.0f;
}

/* A row's denominator: its sum l of exp(lse_scale (s - m)) and, with sinks, exp(t_h - lse_scale m)
   in fp64 from the same max (docs/error_bound.md, "Score modifiers": exact next to l). */
static double denominator(const tiled_geom *g, int64_t h, float m, double l) {
  if (!g->sinks) return l;
  return l + exp((double)g->sinks[h] - g->lse_scale * (double)m);
}

/* Row i of head h of o: *out is where its d_v elements go, the returned fp32 row where they are
   computed (out itself when o is f32, else buf, narrowed by finish_row). */
static float *output_row(const tiled_geom *g, int64_t b, int64_t h, int64_t i, float *buf,
                         void **out) {
  const txattn_tensors *t = g->t;
  const txattn_dtype ot = g->p->o_type;
  *out = txattn_row_of_mut(t->o_data, ot, &t->o_layout, b, h, i);
  return ot == TXATTN_DTYPE_F32 ? *out : buf;
}

/* A 16-bit o: the fp32 row o, NaN already spread, rounded once into out. */
static void finish_row(const tiled_geom *g, const float *o, void *out) {
  if (g->p->o_type != TXATTN_DTYPE_F32) g->ops->narrow_row(o, g->dv, out, g->p->o_type);
}

/* lse of row i of head h from its max m (unscaled, as the scores: the score times |scale| is the
   exponent; for modified scores lse_scale is 1) and its sum l of exp(|scale| (s - m)): m |scale| + log(l), in fp64 so that only the
   final rounding to fp32 adds error (it overflows to +-inf only where the true value exceeds fp32).
   A sum of 0 means no visible key, -inf, or, where keys are visible (all scoring -inf), the NaN of
   the row's o. A NaN m or l gives NaN. */
static void write_lse(const tiled_geom *g, int64_t b, int64_t h, int64_t i, float m, double l) {
  const txattn_layout *y = &g->lse_layout;
  float v;
  if (l == 0.0)
    v = empty_sum_value(g, b, h, i) == 0.0f ? -INFINITY : NAN;
  else
    v = (float)((double)m * g->lse_scale + log(l));
  g->lse[b * y->batch + h * y->head + i * y->row] = v;
}

/* write_lse of the rows [t0, t1) of (b, kvh), row r (= t - t0) with m[r] and l[r]. */
static void write_lse_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                           const float *m, const double *l) {
  for (int64_t row = t0; row < t1; row++)
    write_lse(g, b, kvh * g->group + row % g->group, row / g->group, m[row - t0], l[row - t0]);
}

void tiled_write_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                      float *acc, const float *m, const double *l) {
  if (g->lse) write_lse_rows(g, b, kvh, t0, t1, m, l);
  for (int64_t row = t0; row < t1; row++) {
    const int64_t r = row - t0, i = row / g->group, h = kvh * g->group + row % g->group;
    float *a = acc + r * g->dvp;
    void *out;
    float *o = output_row(g, b, h, i, a, &out); /* a 16-bit o's row is computed in place in acc */
    if (l[r] == 0.0) {                          /* never 0/0 */
      const float z = empty_sum_value(g, b, h, i);
      for (int64_t c = 0; c < g->dv; c++) o[c] = z;
    } else {
      const float inv = (float)(1.0 / denominator(g, h, m[r], l[r]));
      for (int64_t c = 0; c < g->dv; c++) o[c] = a[c] * inv;
      txattn_row_spread_nan(o, g->dv); /* a NaN read in one V column poisons the whole row */
    }
    finish_row(g, o, out);
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
                          const tiled_partial *parts, int n_parts, float *row) {
  for (int64_t rw = t0; rw < t1; rw++) {
    const int64_t r = rw - t0, i = rw / g->group, h = kvh * g->group + rw % g->group;
    void *out;
    float *o = output_row(g, b, h, i, row, &out);
    const float mx = merged_max(parts, n_parts, r);
    if (isnan(mx) || mx == -INFINITY) { /* a NaN partial, or every sum 0 */
      const float z = isnan(mx) ? NAN : empty_sum_value(g, b, h, i);
      for (int64_t c = 0; c < g->dv; c++) o[c] = z;
      if (g->lse) write_lse(g, b, h, i, mx, isnan(mx) ? NAN : 0.0f);
    } else {
      float l = 0.0f;
      for (int64_t c = 0; c < g->dv; c++) o[c] = 0.0f;
      for (int k = 0; k < n_parts; k++) {
        /* 0 for a partial whose max is -inf: its acc still enters, so that 0 * NaN stays NaN */
        const float w = exp2f((parts[k].m[r] - mx) * g->scale2),
                    *acc = parts[k].acc + r * parts[k].ld;
        l += parts[k].l[r] * w;
        for (int64_t c = 0; c < g->dv; c++) o[c] += acc[c] * w;
      }
      const float inv = g->sinks ? (float)(1.0 / denominator(g, h, mx, (double)l)) : 1.0f / l;
      for (int64_t c = 0; c < g->dv; c++) o[c] *= inv;
      txattn_row_spread_nan(o, g->dv);
      if (g->lse) write_lse(g, b, h, i, mx, l);
    }
    finish_row(g, o, out);
  }
}
