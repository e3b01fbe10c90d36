/* SPDX-License-Identifier: MIT */
/* txattn_error_bound: the bound on max|O - O_ref| every kernel meets, as a formula in the inputs.
 *
 *   bound = max|V| * max(TXATTN_EXACT_TOLERANCE, (3 + sqrt(d_qk)) * 2^-24 * L),
 *   L = |scale| * max over visible (query row, key) pairs of sum_c |q_c k_c|.
 *
 * Each fp32 score is off by at most (3 + sqrt(d_qk)) u L (u = 2^-24): the product and scale
 * roundings (3 u L) plus the d_qk - 1 additions of the dot product, whose rounding errors grow as
 * sqrt(d_qk) u L (the probabilistic analysis of Higham and Mary, lambda = 1). Score errors of at
 * most delta move a softmax-weighted average of V rows by at most delta * max|V| to first order.
 * Everything else (exp, sums, P V, the running max) does not grow with L and fits in the tolerance.
 * 16-bit inputs are exact in fp32, so they change nothing, and so are q8_0's (q * d: 8 + 11 bits);
 * an fp8 value times its fp32 scale may round once: 2^-24 L more for K, 2^-24 max|V| for V. A 16-bit o is rounded to its type twice,
 * by the kernel and by the reference, each by at most half an ulp of the largest |O|: the bound adds
 * one ulp of max|V| + the fp32 bound (|O| <= max|V|, a convex combination of V rows).
 * docs/error_bound.md has the derivation and the measurements behind the constant. In a ragged
 * batch, max|V| and L are taken over each sequence's own visible pairs. txattn_lse_error_bound,
 * the bound on lse, takes L from the same pass (bound_terms); txattn__error_bounds gives both
 * bounds from one pass, bit for bit what the two public calls give. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error_bound.h"

#include "dtype.h"
#include "error.h"
#include "problem.h"
#include "tensors.h"
#include "txattn/plugin.h"

/* sum_c |q_c k_c| in double (each product of two floats is exact in double; q is the query row
   widened once); NaN if it is not finite, so that a NaN or infinite input never counts (its rows
   follow the NaN rule). */
static double abs_dot(const txattn_problem *p, const double *q, const void *k, double ks) {
  double s = 0.0;
  for (int64_t c = 0; c < p->d_qk; c++) s += fabs(q[c] * (txattn__load(k, p->k_type, c) * ks));
  return isfinite(s) ? s : NAN;
}

/* seen[j] = 1 for every key some query row sees (the same for every batch and head). */
static void mark_visible_keys(const txattn_problem *p, unsigned char *seen) {
  memset(seen, 0, (size_t)p->n_kv);
  int64_t next = 0; /* keys below next are marked: lo and hi never decrease with i */
  for (int64_t i = 0; i < p->n_q; i++) {
    int64_t sink_hi, lo, hi;
    txattn_visible_ranges(p, i, &sink_hi, &lo, &hi);
    if (i == 0) memset(seen, 1, (size_t)sink_hi); /* the same sink keys for every row */
    for (int64_t j = lo > next ? lo : next; j < hi; j++) seen[j] = 1;
    if (hi > next) next = hi;
  }
}

static double max_abs_visible_v(const txattn_problem *p, const txattn_tensors *t,
                                const unsigned char *seen) {
  double m = 0.0;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_kv; h++)
      for (int64_t j = 0; j < p->n_kv; j++) {
        if (!seen[j]) continue;
        const void *v = txattn_kv_row_of(p, t, t->v_data, p->v_type, &t->v_layout, b, h, j);
        const double vs = txattn__kv_scale(t->v_scale, h);
        for (int64_t c = 0; c < p->d_v; c++) {
          double x = fabs(txattn__load(v, p->v_type, c) * vs);
          if (isfinite(x) && x > m) m = x;
        }
      }
  return m;
}

/* The absolute error of the kernels' fp32 tanh(y), in units of u = 2^-24: the vector kernels'
   1 - 2 / (exp2(2 log2(e) |y|) + 1) with its sign is within 5.2 u (docs/error_bound.md, "Score
   modifiers"), libm's tanhf within 2 ulp of |tanh| <= 1. */
#define TANH_ERR_U 6.0

/* The score error the modifiers add to a visible pair (u = 2^-24), on top of the (3 + sqrt(d_qk))
   u |scale| S the scores have before them (docs/error_bound.md, "Score modifiers"): softcap c
   (Lipschitz 1, so the earlier error passes unchanged) adds its own evaluation, c (TANH_ERR_U + 2)
   u: the product by fl(1/c) and the product by c; ALiBi adds the rounding of (j - pos) to fp32,
   of its product with m_h and of the sum, u (3 |m_h (j - pos)| + |capped score|). */
static double modifier_error(const txattn_problem *p, const txattn_tensors *t, int64_t h, int64_t i,
                             int64_t j, double abs_score, double mask_bias) {
  const double u = 0x1p-24;
  double e = 0.0, capped = abs_score, alibi = 0.0;
  if (p->softcap > 0.0f) {
    e += (double)p->softcap * (TANH_ERR_U + 2.0) * u;
    if (capped > (double)p->softcap) capped = (double)p->softcap;
  }
  if (p->alibi) {
    alibi = fabs((double)t->alibi_slopes[h] * (double)(j - (i + p->n_kv - p->n_q)));
    e += u * (3.0 * alibi + capped);
  }
  /* the mask tensor's bias (exact in fp32) added last: one rounding of the sum, at most u (|score|
     + |ALiBi term| + |bias|); a bias far above the scores moves the max with it, and the kernels
     subtract the max before scaling, so nothing else grows with it */
  if (mask_bias != 0.0) e += u * (capped + alibi + fabs(mask_bias));
  return e;
}

/* The largest sum_c |q_c k_c| over visible pairs, and in *extra the largest modifier_error.
   q: d_qk doubles of scratch for the query row. */
static double max_visible_abs_dot(const txattn_problem *p, const txattn_tensors *t, double *q,
                                  double *extra) {
  double m = 0.0, x = 0.0;
  int64_t group = p->heads_q / p->heads_kv;
  int modified = p->softcap > 0.0f || p->alibi || p->mask_tensor == TXATTN_MASK_TENSOR_ADDITIVE;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++) {
        int64_t range[4] = {0};
        txattn_visible_ranges(p, i, &range[1], &range[2], &range[3]);
        if (range[1] == 0 && range[2] >= range[3]) continue;
        const void *qi = txattn_row_of(t->q_data, p->q_type, &t->q_layout, b, h, i);
        for (int64_t c = 0; c < p->d_qk; c++) q[c] = txattn__load(qi, p->q_type, c);
        for (int part = 0; part < 2; part++)
          for (int64_t j = range[2 * part]; j < range[2 * part + 1]; j++) {
            double bias = txattn__mask_value(p, t, b, h, i, j);
            if (bias == -INFINITY) continue; /* hidden by the mask tensor */
            if (!isfinite(bias)) continue;   /* +inf or NaN: the row is NaN */
            double s = abs_dot(
                p, q, txattn_kv_row_of(p, t, t->k_data, p->k_type, &t->k_layout, b, h / group, j),
                txattn__kv_scale(t->k_scale, h / group));
            if (s > m) m = s; /* NaN compares false: left out */
            if (modified && isfinite(s)) {
              double e = modifier_error(p, t, h, i, j, fabs((double)p->scale) * s, bias);
              if (e > x) x = e;
            }
          }
      }
  *extra = x;
  return m;
}

/* The most keys any query row sees (txattn_visible_ranges), 0 if none sees a key. */
static int64_t widest_row(const txattn_problem *p) {
  int64_t w = 0;
  for (int64_t i = 0; i < p->n_q; i++) {
    int64_t sink_hi, lo, hi;
    txattn_visible_ranges(p, i, &sink_hi, &lo, &hi);
    if (sink_hi + hi - lo > w) w = sink_hi + hi - lo;
  }
  return w;
}

/* What both bounds are made of, after validating p and t as txattn_reference does (who names the
   caller in messages): L = |scale| max sum_c |q_c k_c| over the visible pairs, max|V| over the
   visible V rows (only if max_v is not NULL: it costs a pass over V) and the most keys a row sees,
   each over every sequence (one, unless ragged) with its own lengths. */
static txattn_status bound_terms(const char *who, const txattn_problem *p, const txattn_tensors *t,
                                 txattn_problem *r, double *max_v, double *l, double *mod,
                                 int64_t *keys) {
  txattn_tensors x = TXATTN_TENSORS_INIT;
  TXATTN_FORWARD_IF_ERROR(txattn__problem_resolve(p, r));
  TXATTN_FORWARD_IF_ERROR(txattn__tensors_check(r, t, &x));
  double *q = malloc((size_t)r->d_qk * sizeof *q);
  unsigned char *seen = max_v ? malloc((size_t)r->n_kv) : NULL;
  if (q == NULL || (max_v && seen == NULL)) {
    free(q);
    free(seen);
    return txattn__fail(TXATTN_E_NOMEM, "%s: cannot allocate %lld bytes of scratch", who,
                        (long long)r->n_kv + 8 * (long long)r->d_qk);
  }
  double v_max = 0.0, dot = 0.0, extra = 0.0;
  int64_t widest = 0, sequences = r->ragged ? r->batch : 1;
  for (int64_t b = 0; b < sequences; b++) {
    txattn_problem sub = *r;
    txattn_tensors st = x;
    if (r->ragged) txattn__sequence(r, &x, b, &sub, &st);
    if (max_v) {
      mark_visible_keys(&sub, seen);
      double v = max_abs_visible_v(&sub, &st, seen);
      if (v > v_max) v_max = v;
    }
    double e, d = max_visible_abs_dot(&sub, &st, q, &e);
    int64_t w = widest_row(&sub);
    if (d > dot) dot = d;
    if (e > extra) extra = e;
    if (w > widest) widest = w;
  }
  free(q);
  free(seen);
  if (max_v) *max_v = v_max;
  *l = fabs((double)r->scale) * dot;
  *mod = extra;
  *keys = widest;
  return txattn__ok();
}

/* Whether k or v (the type) is fp8, whose values times their scale a kernel may round to fp32
   once: 2^-24 relative to each (docs/error_bound.md, "8-bit K and V"). */
static int fp8(txattn_dtype type) {
  return type == TXATTN_DTYPE_E4M3 || type == TXATTN_DTYPE_E5M2;
}

/* c = 3 + sqrt(d_qk), 4 + sqrt(d_qk) for an fp8 k: each fp32 score is within c u L + mod of its
   exact value, mod the score modifiers' own error (docs/error_bound.md). */
static double score_term(const txattn_problem *r, double l, double mod) {
  return (3.0 + fp8(r->k_type) + sqrt((double)r->d_qk)) * 0x1p-24 * l + mod;
}

/* The bound on O from its terms (txattn_error_bound). A sink logit adds nothing: the kernels
   compute its term exp(t_h - m) in fp64 from their own row max, and a denominator that grows by
   it shrinks O and every error of O alike (docs/error_bound.md, "Score modifiers"). */
static double o_bound(const txattn_problem *r, double max_v, double l, double mod) {
  double rel = score_term(r, l, mod);
  double e = max_v * (rel > TXATTN_EXACT_TOLERANCE ? rel : TXATTN_EXACT_TOLERANCE);
  if (fp8(r->v_type)) e += 0x1p-24 * max_v; /* each V value, or the weighted sum, rounded once */
  if (r->o_type != TXATTN_DTYPE_F32) e += txattn__ulp(r->o_type, max_v + e);
  return e;
}

/* abs = (2 + a) u L + (3 + 3 ln n + b) u and rel = 2 u, with a = min(d_qk - 1, 6 sqrt(d_qk - 1)),
   b = min(4.6 (n - 1), 6 sqrt(8.76 (n - 1))) and n the most keys a row sees (docs/error_bound.md,
   "The bound on lse"): the scores, whose error lse takes in full where O sees only differences
   (the additions under Hoeffding's inequality at 6 standard bounds, 3e-8 a row under the model
   of independent rounding errors, else their worst case); exp's arguments (at most the weights'
   entropy, ln n) and values; the sum of the weights (additions, and an online softmax's
   rescalings, the same way); the roundings of the kernel's and the reference's lse to fp32. */
static void lse_bound(const txattn_problem *r, double l, double mod, int64_t keys, double out[2]) {
  const double u = 0x1p-24, d = (double)(r->d_qk - 1), n = keys > 1 ? (double)keys : 1.0;
  const double a = fmin(d, 6.0 * sqrt(d)), b = fmin(4.6 * (n - 1.0), 6.0 * sqrt(8.76 * (n - 1.0)));
  out[0] = (2.0 + fp8(r->k_type) + a) * u * l + (3.0 + 3.0 * log(n) + b) * u + mod;
  out[1] = 2.0 * u;
}

txattn_status txattn__error_bounds(const char *who, const txattn_problem *p,
                                   const txattn_tensors *t, double *bound, double *lse_abs_rel) {
  txattn_problem r = TXATTN_PROBLEM_INIT;
  double max_v, l, mod;
  int64_t keys;
  TXATTN_FORWARD_IF_ERROR(bound_terms(who, p, t, &r, bound ? &max_v : NULL, &l, &mod, &keys));
  if (bound) *bound = o_bound(&r, max_v, l, mod);
  if (lse_abs_rel) lse_bound(&r, l, mod, keys, lse_abs_rel);
  return txattn__ok();
}

txattn_status txattn_error_bound(const txattn_problem *p, const txattn_tensors *t, double *bound) {
  TXATTN_RETURN_IF(bound == NULL, TXATTN_E_INVALID, "txattn_error_bound: bound is NULL");
  return txattn__error_bounds("txattn_error_bound", p, t, bound, NULL);
}

txattn_status txattn_lse_error_bound(const txattn_problem *p, const txattn_tensors *t,
                                     double *abs_bound, double *rel_bound) {
  double b[2];
  TXATTN_RETURN_IF(abs_bound == NULL, TXATTN_E_INVALID,
                   "txattn_lse_error_bound: abs_bound is NULL");
  TXATTN_RETURN_IF(rel_bound == NULL, TXATTN_E_INVALID,
                   "txattn_lse_error_bound: rel_bound is NULL");
  TXATTN_FORWARD_IF_ERROR(txattn__error_bounds("txattn_lse_error_bound", p, t, NULL, b));
  *abs_bound = b[0];
  *rel_bound = b[1];
  return txattn__ok();
}
