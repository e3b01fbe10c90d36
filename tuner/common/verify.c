/* SPDX-License-Identifier: MIT */
#include "verify.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "txattn/plugin.h"

void tx_plant_nan(tx_buffers *b, const tx_nan_site *s) {
  if (s->where == TX_NAN_IN_K)
    tx_elem_put(b->k, b->p.k_type, &b->k_str, s->batch, s->head_kv, s->key, s->col, NAN);
  else if (s->where == TX_NAN_IN_V)
    tx_elem_put(b->v, b->p.v_type, &b->v_str, s->batch, s->head_kv, s->key, s->col, NAN);
}

static void violation(tx_verdict *v, int64_t bb, int64_t h, int64_t i, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void violation(tx_verdict *v, int64_t bb, int64_t h, int64_t i, const char *fmt, ...) {
  if (v->violations++ > 0) return;
  int len = snprintf(v->first, sizeof v->first, "batch %lld head %lld row %lld: ", (long long)bb,
                     (long long)h, (long long)i);
  va_list ap;
  va_start(ap, fmt);
  if (len > 0 && (size_t)len < sizeof v->first)
    vsnprintf(v->first + len, sizeof v->first - (size_t)len, fmt, ap);
  va_end(ap);
}

/* Whether b's mask tensor (if any) shows key j to row i of head h, sequence bb. */
static int mask_shows(const tx_buffers *b, int64_t bb, int64_t h, int64_t i, int64_t j) {
  const txattn_mask_layout *l = &b->t.mask_layout;
  if (!b->mask) return 1;
  size_t at = (size_t)(bb * l->batch + h * l->head + i * l->row + j * l->key);
  if (b->p.mask_tensor == TXATTN_MASK_TENSOR_BOOL) return ((const unsigned char *)b->mask)[at] != 0;
  return tx_elem_get(b->mask, b->p.mask_type, at) != -INFINITY;
}

/* Whether the row's visible keys, [0, sink_hi) and [lo, hi) less those the mask tensor hides,
   hold the NaN site. */
static int sees_nan(const tx_buffers *b, const tx_nan_site *s, int64_t bb, int64_t h, int64_t i,
                    int64_t sink_hi, int64_t lo, int64_t hi) {
  const txattn_problem *p = &b->p;
  return s && s->where != TX_NAN_NONE && s->batch == bb &&
         h / (p->heads_q / p->heads_kv) == s->head_kv &&
         ((lo <= s->key && s->key < hi) || s->key < sink_hi) && mask_shows(b, bb, h, i, s->key);
}

/* Whether the row sees no key: its ranges are empty or the mask tensor hides all they hold. */
static int row_empty(const tx_buffers *b, int64_t bb, int64_t h, int64_t i, int64_t sink_hi,
                     int64_t lo, int64_t hi) {
  for (int64_t j = 0; j < sink_hi; j++)
    if (mask_shows(b, bb, h, i, j)) return 0;
  for (int64_t j = lo; j < hi; j++)
    if (mask_shows(b, bb, h, i, j)) return 0;
  return 1;
}

/* The contract's rules for one output row; returns 1 if the row obeys them. */
static int check_row(const float *row, int64_t d_v, int empty, int nan_expected, tx_verdict *v,
                     int64_t bb, int64_t h, int64_t i) {
  int64_t n_nan = 0, n_inf = 0, n_nonzero = 0;
  for (int64_t c = 0; c < d_v; c++) {
    n_nan += isnan(row[c]) != 0;
    n_inf += isinf(row[c]) != 0;
    n_nonzero += row[c] != 0.0f;
  }
  if (empty && n_nonzero)
    violation(v, bb, h, i, "no visible key but %lld of %lld values are not exact zeros",
              (long long)n_nonzero, (long long)d_v);
  else if (nan_expected && !n_nan)
    violation(v, bb, h, i, "reads the planted NaN but has no NaN");
  else if (!nan_expected && (n_nan || n_inf))
    violation(v, bb, h, i, "%lld NaN and %lld infinite values", (long long)n_nan, (long long)n_inf);
  else
    return 1;
  return 0;
}

/* Elementwise against the reference; returns the largest finite difference and its column. */
static double compare_row(const float *row, const float *ref, int64_t d_v, tx_verdict *v,
                          int64_t bb, int64_t h, int64_t i, int64_t *col) {
  double m = 0;
  *col = 0;
  for (int64_t c = 0; c < d_v; c++) {
    int on = isnan(row[c]) != 0, rn = isnan(ref[c]) != 0;
    if (on != rn) {
      violation(v, bb, h, i, "column %lld is %g, the reference %g", (long long)c, (double)row[c],
                (double)ref[c]);
      return m;
    }
    if (on) continue;
    double d = fabs((double)row[c] - (double)ref[c]);
    if (d > m) {
      m = d;
      *col = c;
    }
  }
  return m;
}

/* Row i of head h of sequence bb (packed rows too) of an output of o's type, widened into row
   (exact). */
static void widen_row(const tx_buffers *b, const void *o, int64_t bb, int64_t h, int64_t i,
                      float *row) {
  int64_t at_b, at_i;
  tx_buffers_row_at(b, bb, i, &at_b, &at_i);
  for (int64_t c = 0; c < b->p.d_v; c++)
    row[c] = tx_elem_at(o, b->p.o_type, &b->o_str, at_b, h, at_i, c);
}

static float lse_at(const tx_buffers *b, const float *lse, int64_t bb, int64_t h, int64_t i) {
  int64_t at_b, at_i;
  tx_buffers_row_at(b, bb, i, &at_b, &at_i);
  return lse[at_b * b->lse_str.batch + h * b->lse_str.head + at_i * b->lse_str.row];
}

/* Row (bb, h, i)'s lse: the contract's rules, then against the reference's within
   bound[0] + bound[1] |lse_ref| (b->lse_ref_bound: txattn_lse_error_bound). */
static void check_lse(const tx_buffers *b, const float *lse, const float *lse_ref, int empty,
                      int nan_in_k, const double bound[2], tx_verdict *v, int64_t bb, int64_t h,
                      int64_t i) {
  const float x = lse_at(b, lse, bb, h, i);
  if (empty) {
    if (!(isinf(x) && x < 0))
      violation(v, bb, h, i, "no visible key but lse is %g, not -inf", (double)x);
    return;
  }
  if (nan_in_k) return; /* the scores are NaN: the contract says nothing of lse */
  if (!isfinite(x)) {
    violation(v, bb, h, i, "lse is %g", (double)x);
    return;
  }
  if (!lse_ref) return;
  const double r = (double)lse_at(b, lse_ref, bb, h, i);
  if (!isfinite(r)) return; /* the reference broke the contract: its own check says so */
  const double d = fabs((double)x - r), row_bound = bound[0] + bound[1] * fabs(r);
  if (d > v->lse_error || isnan(v->lse_error)) v->lse_error = d;
  if (d / row_bound > v->lse_ratio || isnan(v->lse_ratio)) {
    v->lse_ratio = d / row_bound;
    v->lse_bound = row_bound;
    v->worst_lse[0] = bb, v->worst_lse[1] = h, v->worst_lse[2] = i;
  }
}

void tx_verify(const tx_buffers *b, const void *o, const void *ref, const tx_nan_site *site,
               tx_verdict *out) {
  const txattn_problem *p = &b->p;
  out->violations = 0;
  out->first[0] = '\0';
  for (int x = 0; x < 4; x++) out->worst[x] = 0;
  for (int x = 0; x < 3; x++) out->worst_lse[x] = 0;
  out->lse_error = out->lse_ratio = out->lse_bound = NAN;
  const float *lse = !p->lse ? NULL : o == b->o_ref ? b->lse_ref : b->lse;
  const float *lse_ref = p->lse && ref ? b->lse_ref : NULL;
  if (lse_ref && !(b->lse_ref_bound[0] >= 0 && b->lse_ref_bound[1] >= 0)) {
    violation(out, 0, 0, 0, "no lse bound: the reference was not made with lse");
    lse_ref = NULL; /* the contract's rules are still checked */
  }
  if (lse) out->lse_error = out->lse_ratio = 0;
  double max_diff = 0;
  /* both outputs are in o's type: compared as the values they hold (the bound has the rounding) */
  float *row = malloc(2 * (size_t)p->d_v * sizeof *row), *ref_row = row + p->d_v;
  if (!row) {
    violation(out, 0, 0, 0, "out of memory comparing the output");
    out->error = out->bound = out->rel_error = out->tolerance = out->scaled_error = NAN;
    return;
  }
  for (int64_t bb = 0; bb < p->batch; bb++) {
    /* its own kv_len when ragged, its own rows with q_lens: rows past them are never written */
    const txattn_problem seq = tx_buffers_sequence(b, bb);
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < seq.n_q; i++) {
        int64_t sink_hi, lo, hi;
        txattn_visible_ranges(&seq, i, &sink_hi, &lo, &hi);
        const int empty =
            b->mask ? row_empty(b, bb, h, i, sink_hi, lo, hi) : lo >= hi && sink_hi == 0;
        if (lse) {
          const tx_nan_site *k_site = site && site->where == TX_NAN_IN_K ? site : NULL;
          check_lse(b, lse, lse_ref, empty, sees_nan(b, k_site, bb, h, i, sink_hi, lo, hi),
                    b->lse_ref_bound, out, bb, h, i);
        }
        widen_row(b, o, bb, h, i, row);
        if (!check_row(row, p->d_v, empty, sees_nan(b, site, bb, h, i, sink_hi, lo, hi), out, bb, h,
                       i) ||
            !ref)
          continue;
        int64_t col;
        widen_row(b, ref, bb, h, i, ref_row);
        double d = compare_row(row, ref_row, p->d_v, out, bb, h, i, &col);
        if (d > max_diff) {
          max_diff = d;
          out->worst[0] = bb, out->worst[1] = h, out->worst[2] = i, out->worst[3] = col;
        }
      }
  }
  free(row);
  /* max|V| depends on the inputs only: tx_buffers_reference found it with ref and ref_bound */
  double max_v = b->v_max_abs > 0 ? b->v_max_abs : 1.0, bound = ref ? b->ref_bound : NAN;
  out->error = ref ? max_diff : NAN;
  out->bound = bound;
  out->rel_error = ref ? max_diff / max_v : NAN;
  out->tolerance = bound / max_v;
  out->scaled_error = !ref ? NAN : max_diff == 0 ? 0.0 : max_diff / bound * TXATTN_EXACT_TOLERANCE;
}

int tx_verdict_pass(const tx_verdict *v) {
  return v->violations == 0 && !(v->error > v->bound) && !(v->lse_ratio > 1);
}

void tx_verdict_explain(const tx_verdict *v, char *buf, size_t size) {
  if (v->violations)
    snprintf(buf, size, "%s%s", v->first, v->violations > 1 ? " (and more rows)" : "");
  else if (v->error > v->bound)
    snprintf(buf, size,
             "error %.2e above the bound %.2e (relative to max|V|), worst at batch %lld head %lld "
             "row %lld column %lld",
             v->rel_error, v->tolerance, (long long)v->worst[0], (long long)v->worst[1],
             (long long)v->worst[2], (long long)v->worst[3]);
  else if (v->lse_ratio > 1)
    snprintf(buf, size, "lse error %.2e above its bound %.2e at batch %lld head %lld row %lld",
             v->lse_ratio * v->lse_bound, v->lse_bound, (long long)v->worst_lse[0],
             (long long)v->worst_lse[1], (long long)v->worst_lse[2]);
  else
    snprintf(buf, size, "%s", "");
}
