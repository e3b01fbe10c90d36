/* SPDX-License-Identifier: MIT */
#include "oracle.h"

#include <math.h>
#include <stdlib.h>

#include "elements.h"

int oracle_visible(const txattn_problem *p, int64_t i, int64_t j) {
  int64_t pos = i + (p->n_kv - p->n_q);
  switch (p->mask) {
  case TXATTN_MASK_NONE:
    return 1;
  case TXATTN_MASK_CAUSAL:
    return j <= pos;
  case TXATTN_MASK_WINDOW:
    /* compared as distances so that windows up to INT64_MAX cannot overflow */
    return (p->window_left == TXATTN_UNBOUNDED || pos - j <= p->window_left) &&
           (p->window_right == TXATTN_UNBOUNDED || j - pos <= p->window_right);
  }
  return 0;
}

int64_t oracle_visible_count(const txattn_problem *p, int64_t i) {
  int64_t count = 0;
  for (int64_t j = 0; j < p->n_kv; j++) count += oracle_visible(p, i, j);
  return count;
}

/* Element c of row (b, h, i) of a tensor of type t, widened exactly (elements.h, not the
   library's conversions). */
static double at(const void *base, txattn_dtype t, const txattn_layout *l, int64_t b, int64_t h,
                 int64_t i, int64_t c) {
  return elem_load(base, t, (size_t)(b * l->batch + h * l->head + i * l->row + c));
}

/* scores[j] = scale q_i . k_j in double for the visible keys j of row (b, h, i); *m = their max
   (`s > m` skips NaN scores), *nan (if nan) whether one is NaN. Returns how many keys the row sees. */
static int64_t oracle_scores(const txattn_problem *p, const txattn_tensors *t, int64_t b, int64_t h,
                             int64_t i, double *scores, double *m, int *nan) {
  const int64_t g = h / (p->heads_q / p->heads_kv);
  int64_t seen = 0;
  int any_nan = 0;
  *m = -INFINITY;
  for (int64_t j = 0; j < p->n_kv; j++) {
    if (!oracle_visible(p, i, j)) continue;
    double dot = 0.0;
    for (int64_t c = 0; c < p->d_qk; c++)
      dot += at(t->q_data, p->q_type, &t->q_layout, b, h, i, c) *
             at(t->k_data, p->k_type, &t->k_layout, b, g, j, c);
    scores[j] = (double)p->scale * dot;
    any_nan |= isnan(scores[j]);
    if (scores[j] > *m) *m = scores[j];
    seen++;
  }
  if (nan) *nan = any_nan;
  return seen;
}

/* One output row. A NaN score or value poisons the sums it enters (`s > m` skips NaN scores, so the
   max stays finite whenever one visible score is); a NaN in one V column is then spread to the row.
   The row is rounded once from double to o's type. */
static void oracle_row(const txattn_problem *p, const txattn_tensors *t, int64_t b, int64_t h,
                       int64_t i, double *scores, double *acc) {
  int64_t g = h / (p->heads_q / p->heads_kv);
  size_t o = (size_t)(b * t->o_layout.batch + h * t->o_layout.head + i * t->o_layout.row);
  double m, sum = 0.0;
  if (oracle_scores(p, t, b, h, i, scores, &m, NULL) == 0) {
    for (int64_t c = 0; c < p->d_v; c++) elem_store(t->o_data, p->o_type, o + (size_t)c, 0.0);
    return;
  }
  for (int64_t c = 0; c < p->d_v; c++) acc[c] = 0.0;
  for (int64_t j = 0; j < p->n_kv; j++) {
    if (!oracle_visible(p, i, j)) continue;
    double w = exp(scores[j] - m);
    sum += w;
    for (int64_t c = 0; c < p->d_v; c++)
      acc[c] += w * at(t->v_data, p->v_type, &t->v_layout, b, g, j, c);
  }
  int nan = 0;
  for (int64_t c = 0; c < p->d_v; c++) nan |= isnan(acc[c] / sum);
  /* the contract: a NaN read through a visible key makes the whole row NaN */
  for (int64_t c = 0; c < p->d_v; c++)
    elem_store(t->o_data, p->o_type, o + (size_t)c, nan ? NAN : acc[c] / sum);
}

int oracle_attention(const txattn_problem *p, const txattn_tensors *t) {
  double *scores = malloc((size_t)p->n_kv * sizeof *scores);
  double *acc = malloc((size_t)p->d_v * sizeof *acc);
  int ok = scores && acc;
  if (ok) {
    for (int64_t b = 0; b < p->batch; b++)
      for (int64_t h = 0; h < p->heads_q; h++)
        for (int64_t i = 0; i < p->n_q; i++) oracle_row(p, t, b, h, i, scores, acc);
  }
  free(scores);
  free(acc);
  return ok ? 0 : -1;
}

/* Row (b, h, i)'s log-sum-exp, from the same double scores as oracle_row: -inf when the row sees
   no key, NaN when a visible score is NaN. */
static double oracle_lse_row(const txattn_problem *p, const txattn_tensors *t, int64_t b, int64_t h,
                             int64_t i, double *scores) {
  double m, sum = 0.0;
  int nan;
  oracle_scores(p, t, b, h, i, scores, &m, &nan);
  if (nan) return NAN;
  if (m == -INFINITY) return -INFINITY;
  for (int64_t j = 0; j < p->n_kv; j++)
    if (oracle_visible(p, i, j)) sum += exp(scores[j] - m);
  return m + log(sum);
}

int oracle_lse(const txattn_problem *p, const txattn_tensors *t, double *lse) {
  double *scores = malloc((size_t)p->n_kv * sizeof *scores);
  if (scores == NULL) return -1;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++)
        lse[(b * p->heads_q + h) * p->n_q + i] = oracle_lse_row(p, t, b, h, i, scores);
  free(scores);
  return 0;
}
