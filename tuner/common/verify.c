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

static double max_abs_v(const tx_buffers *b) {
  const txattn_problem *p = &b->p;
  double m = 0;
  for (int64_t bb = 0; bb < p->batch; bb++)
    for (int64_t h = 0; h < p->heads_kv; h++)
      for (int64_t j = 0; j < p->n_kv; j++)
        for (int64_t c = 0; c < p->d_v; c++) {
          double x = fabs((double)tx_elem_at(b->v, p->v_type, &b->v_str, bb, h, j, c));
          if (x > m) m = x; /* NaN compares false: skipped */
        }
  return m > 0 ? m : 1.0;
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

static int sees_nan(const txattn_problem *p, const tx_nan_site *s, int64_t bb, int64_t h,
                    int64_t lo, int64_t hi) {
  return s && s->where != TX_NAN_NONE && s->batch == bb &&
         h / (p->heads_q / p->heads_kv) == s->head_kv && lo <= s->key && s->key < hi;
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

/* Row (bb, h, i) of an output of o's type, widened into row (exact). */
static void widen_row(const tx_buffers *b, const void *o, int64_t bb, int64_t h, int64_t i,
                      float *row) {
  for (int64_t c = 0; c < b->p.d_v; c++)
    row[c] = tx_elem_at(o, b->p.o_type, &b->o_str, bb, h, i, c);
}

void tx_verify(const tx_buffers *b, const void *o, const void *ref, const tx_nan_site *site,
               tx_verdict *out) {
  const txattn_problem *p = &b->p;
  out->violations = 0;
  out->first[0] = '\0';
  for (int x = 0; x < 4; x++) out->worst[x] = 0;
  double max_diff = 0;
  /* both outputs are in o's type: compared as the values they hold (the bound has the rounding) */
  float *row = malloc(2 * (size_t)p->d_v * sizeof *row), *ref_row = row + p->d_v;
  if (!row) {
    violation(out, 0, 0, 0, "out of memory comparing the output");
    out->error = out->bound = out->rel_error = out->tolerance = out->scaled_error = NAN;
    return;
  }
  for (int64_t bb = 0; bb < p->batch; bb++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++) {
        int64_t lo, hi;
        txattn_visible_range(p, i, &lo, &hi);
        widen_row(b, o, bb, h, i, row);
        if (!check_row(row, p->d_v, lo >= hi, sees_nan(p, site, bb, h, lo, hi), out, bb, h, i) ||
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
  free(row);
  double max_v = max_abs_v(b), bound = ref ? b->ref_bound : NAN;
  out->error = ref ? max_diff : NAN;
  out->bound = bound;
  out->rel_error = ref ? max_diff / max_v : NAN;
  out->tolerance = bound / max_v;
  out->scaled_error = !ref ? NAN : max_diff == 0 ? 0.0 : max_diff / bound * TXATTN_EXACT_TOLERANCE;
}

int tx_verdict_pass(const tx_verdict *v) {
  return v->violations == 0 && !(v->error > v->bound);
}

void tx_verdict_explain(const tx_verdict *v, char *buf, size_t size) {
  if (v->violations)
    snprintf(buf, size, "%s%s", v->first, v->violations > 1 ? " (and more rows)" : "");
  else if (!tx_verdict_pass(v))
    snprintf(buf, size,
             "error %.2e above the bound %.2e (relative to max|V|), worst at batch %lld head %lld "
             "row %lld column %lld",
             v->rel_error, v->tolerance, (long long)v->worst[0], (long long)v->worst[1],
             (long long)v->worst[2], (long long)v->worst[3]);
  else
    snprintf(buf, size, "%s", "");
}
