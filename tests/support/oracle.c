#include "oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static const float *at(const float *base, const txattn_layout *l, int64_t b, int64_t h, int64_t i) {
  return base + b * l->batch + h * l->head + i * l->row;
}

/* One output row. A NaN score or value poisons the sums it enters (`s > m` skips NaN scores, so the
   max stays finite whenever one visible score is); a NaN in one V column is then spread to the row. */
static void oracle_row(const txattn_problem *p, const txattn_tensors *t, int64_t b, int64_t h,
                       int64_t i, double *scores, double *acc) {
  int64_t g = h / (p->heads_q / p->heads_kv);
  const float *q = at(t->q, &t->q_layout, b, h, i);
  float *o = t->o + b * t->o_layout.batch + h * t->o_layout.head + i * t->o_layout.row;
  double m = -INFINITY, sum = 0.0;
  int64_t seen = 0;
  for (int64_t j = 0; j < p->n_kv; j++) {
    if (!oracle_visible(p, i, j)) continue;
    const float *k = at(t->k, &t->k_layout, b, g, j);
    double dot = 0.0;
    for (int64_t c = 0; c < p->d_qk; c++) dot += (double)q[c] * (double)k[c];
    scores[j] = (double)p->scale * dot;
    if (scores[j] > m) m = scores[j];
    seen++;
  }
  if (seen == 0) {
    memset(o, 0, (size_t)p->d_v * sizeof *o);
    return;
  }
  for (int64_t c = 0; c < p->d_v; c++) acc[c] = 0.0;
  for (int64_t j = 0; j < p->n_kv; j++) {
    if (!oracle_visible(p, i, j)) continue;
    const float *v = at(t->v, &t->v_layout, b, g, j);
    double w = exp(scores[j] - m);
    sum += w;
    for (int64_t c = 0; c < p->d_v; c++) acc[c] += w * (double)v[c];
  }
  int nan = 0;
  for (int64_t c = 0; c < p->d_v; c++) nan |= isnan(o[c] = (float)(acc[c] / sum));
  if (nan) /* the contract: a NaN read through a visible key makes the whole row NaN */
    for (int64_t c = 0; c < p->d_v; c++) o[c] = NAN;
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
