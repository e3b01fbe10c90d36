/* SPDX-License-Identifier: MIT */
/* txattn_reference: the oracle. Plain loops in double, one row at a time, no cleverness: every
 * kernel is measured against this. 16-bit and 8-bit inputs are read exactly (an fp8 value times
 * its head's scale, q8_0's q * d, both exact in double); the output is rounded once, from
 * double to o's type, and so is lse (p->lse) to fp32. A ragged batch is computed one sequence at a
 * time, each as a problem of its own lengths (txattn__sequence). */
#include <math.h>
#include <stdlib.h>

#include "dtype.h"
#include "error.h"
#include "problem.h"
#include "tensors.h"
#include "txattn/plugin.h"

/* Score of query row i (head h) and key j from d = q.k: scale d, then the modifiers, then the
   mask tensor's bias. */
static double score(const txattn_problem *p, const txattn_tensors *t, int64_t h, int64_t i,
                    int64_t j, double d, double bias) {
  double s = (double)p->scale * d;
  if (p->softcap > 0.0f) s = (double)p->softcap * tanh(s / (double)p->softcap);
  if (p->alibi) s += (double)t->alibi_slopes[h] * (double)(j - (i + p->n_kv - p->n_q));
  return s + bias;
}

/* Scores of row q (head h, row i) against the keys j of txattn_visible_ranges (range[0] to
   range[1], then range[2] to range[3]) into s[j], and hidden[j] = 1 where the mask tensor hides
   key j; returns their maximum over the keys not hidden (-inf if none), or NaN if any is NaN (fmax
   would drop it, and the contract says NaN must reach the output). *seen counts those keys. */
static double scores(const txattn_problem *p, const txattn_tensors *t, const double *q, int64_t b,
                     int64_t h, int64_t i, const int64_t range[4], double *s, unsigned char *hidden,
                     int64_t *seen) {
  int64_t hk = h / (p->heads_q / p->heads_kv);
  double m = -INFINITY;
  *seen = 0;
  for (int part = 0; part < 2; part++)
    for (int64_t j = range[2 * part]; j < range[2 * part + 1]; j++) {
      double bias = txattn__mask_value(p, t, b, h, i, j);
      hidden[j] = bias == -INFINITY;
      if (hidden[j]) continue;
      ++*seen;
      const void *kj = txattn_kv_row_of(p, t, t->k_data, p->k_type, &t->k_layout, b, hk, j);
      double dot = 0.0, ks = txattn__kv_scale(t->k_scale, hk);
      for (int64_t c = 0; c < p->d_qk; c++) dot += q[c] * (txattn__load(kj, p->k_type, c) * ks);
      s[j] = score(p, t, h, i, j, dot, bias);
      if (isnan(s[j]) || isnan(m))
        m = NAN;
      else if (s[j] > m)
        m = s[j];
    }
  return m;
}

static float *lse_at(const txattn_problem *p, const txattn_tensors *t, int64_t b, int64_t h,
                     int64_t i) {
  if (!p->lse) return NULL;
  return t->lse + b * t->lse_layout.batch + h * t->lse_layout.head + i * t->lse_layout.row;
}

/* s: n_kv scores; acc: d_v sums; q: d_qk values of the query row. With p->lse the row's
   log-sum-exp over its keys (a sink logit is not in it), m + log(sum exp(s - m)) in double,
   rounded once to fp32 (-inf for no key). A sink adds exp(t_h - m) to the denominator only. */
static void reference_row(const txattn_problem *p, const txattn_tensors *t, int64_t b, int64_t h,
                          int64_t i, double *s, double *acc, double *q, unsigned char *hidden) {
  int64_t hk = h / (p->heads_q / p->heads_kv), range[4], seen = 0;
  void *o = txattn_row_of_mut(t->o_data, p->o_type, &t->o_layout, b, h, i);
  float *lse = lse_at(p, t, b, h, i);
  double m = 0.0;
  range[0] = 0;
  txattn_visible_ranges(p, i, &range[1], &range[2], &range[3]);
  if (range[1] > 0 || range[2] < range[3]) {
    const void *qi = txattn_row_of(t->q_data, p->q_type, &t->q_layout, b, h, i);
    for (int64_t c = 0; c < p->d_qk; c++) q[c] = txattn__load(qi, p->q_type, c);
    m = scores(p, t, q, b, h, i, range, s, hidden, &seen);
  }
  if (seen == 0) { /* no visible key, by the ranges or the mask tensor */
    for (int64_t c = 0; c < p->d_v; c++) txattn__store(o, p->o_type, c, 0.0);
    if (lse) *lse = -INFINITY;
    return;
  }
  double sum = 0.0, vs = txattn__kv_scale(t->v_scale, hk);
  int nan = 0;
  for (int64_t c = 0; c < p->d_v; c++) acc[c] = 0.0;
  for (int part = 0; part < 2; part++)
    for (int64_t j = range[2 * part]; j < range[2 * part + 1]; j++) {
      if (hidden[j]) continue; /* a hidden key's V is never read */
      /* no skipping of zero weights: 0 * NaN must stay NaN */
      double w = exp(s[j] - m);
      const void *vj = txattn_kv_row_of(p, t, t->v_data, p->v_type, &t->v_layout, b, hk, j);
      sum += w;
      for (int64_t c = 0; c < p->d_v; c++) acc[c] += w * (txattn__load(vj, p->v_type, c) * vs);
    }
  double den = p->sinks ? sum + exp((double)t->sinks[h] - m) : sum;
  for (int64_t c = 0; c < p->d_v; c++) nan |= isnan(acc[c] / den);
  for (int64_t c = 0; c < p->d_v; c++) txattn__store(o, p->o_type, c, nan ? NAN : acc[c] / den);
  if (lse) *lse = (float)(m + log(sum));
}

txattn_status txattn_reference(const txattn_problem *p, const txattn_tensors *t) {
  txattn_problem r = TXATTN_PROBLEM_INIT;
  txattn_tensors x = TXATTN_TENSORS_INIT;
  TXATTN_FORWARD_IF_ERROR(txattn__problem_resolve(p, &r));
  TXATTN_FORWARD_IF_ERROR(txattn__tensors_check(&r, t, &x));
  size_t n = 2 * (size_t)r.n_kv + (size_t)r.d_v + (size_t)r.d_qk, bytes;
  TXATTN_RETURN_IF(__builtin_mul_overflow(n, sizeof(double), &bytes), TXATTN_E_NOMEM,
                   "txattn_reference: 2 n_kv + d_v + d_qk = %zu doubles of scratch do not fit in "
                   "memory",
                   n);
  double *s = malloc(bytes);
  TXATTN_RETURN_IF(s == NULL, TXATTN_E_NOMEM,
                   "txattn_reference: cannot allocate %zu bytes for one row's scores", bytes);
  for (int64_t b = 0; b < r.batch; b++) {
    /* each sequence on its own (its lengths when ragged), which also covers kv_len 0: no row of
       a problem without keys sees one */
    txattn_problem sub = TXATTN_PROBLEM_INIT;
    txattn_tensors st = TXATTN_TENSORS_INIT;
    txattn__sequence(&r, &x, b, &sub, &st);
    for (int64_t h = 0; h < sub.heads_q; h++)
      for (int64_t i = 0; i < sub.n_q; i++)
        reference_row(&sub, &st, 0, h, i, s, s + r.n_kv, s + r.n_kv + r.d_v,
                      (unsigned char *)(s + r.n_kv + r.d_v + r.d_qk));
  }
  free(s);
  return txattn__ok();
}
