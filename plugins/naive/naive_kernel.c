/* naive.scalar: attention written to be read, the spec the faster kernels are checked against.
 *
 * For each output row: the scores of the visible keys, their softmax, and the weighted sum of the
 * values, one plain loop each. Only visible keys are touched (txattn_visible_range), which is also
 * what keeps a NaN in a masked-out key out of the row. Scores are float; the two sums over keys are
 * double, because a float sum of n nearly equal terms drifts by about n/5 ulp, over the tolerance
 * at long rows (e.g. keys broadcast with stride 0; docs/measurements.md).
 */
#include <math.h>

#include "naive.h"

/* A max that keeps a NaN once it has seen one. fmaxf(m, a) and (a > m ? a : m) both skip a NaN
   score; making the max itself NaN turns every exp(s - m) of the row into NaN, so the row's output
   is NaN as the contract asks, whatever else the row holds. */
static float max_keep_nan(float m, float a) {
  return (a > m || isnan(a)) ? a : m;
}

static float dot(const float *a, const float *b, int64_t n) {
  float sum = 0.0f;
  for (int64_t c = 0; c < n; c++) sum += a[c] * b[c];
  return sum;
}

/* out = the softmax(scale * q . k_j)-weighted sum of v_j over j in [lo, hi), lo < hi, for one
   query row. `scores` holds hi - lo floats. */
static void attend_row(const txattn_kernel_call *call, int64_t b, int64_t h_kv, const float *q,
                       int64_t lo, int64_t hi, float *scores, float *out) {
  const txattn_problem *p = call->problem;
  const txattn_tensors *t = call->tensors;
  int64_t n = hi - lo;

  for (int64_t j = 0; j < n; j++) {
    const float *k = txattn_row(t->k, &t->k_layout, b, h_kv, lo + j);
    scores[j] = p->scale * dot(q, k, p->d_qk);
  }

  /* Subtracting the row max keeps every exp() <= 1, so large logits cannot overflow. */
  float max = -INFINITY;
  for (int64_t j = 0; j < n; j++) max = max_keep_nan(max, scores[j]);
  double sum = 0.0;
  for (int64_t j = 0; j < n; j++) {
    scores[j] = expf(scores[j] - max);
    sum += scores[j];
  }

  for (int64_t c = 0; c < p->d_v; c++) {
    double acc = 0.0;
    for (int64_t j = 0; j < n; j++)
      acc += (double)scores[j] * txattn_row(t->v, &t->v_layout, b, h_kv, lo + j)[c];
    out[c] = (float)(acc / sum);
  }
  txattn_row_spread_nan(out, p->d_v);
}

size_t naive_workspace_size(const txattn_problem *p, int n_threads, const int64_t *tunables) {
  (void)n_threads;
  (void)tunables;
  return (size_t)p->n_kv * sizeof(float); /* the scores of one row */
}

txattn_status naive_run(const txattn_kernel_call *call) {
  const txattn_problem *p = call->problem;
  const txattn_tensors *t = call->tensors;
  if (call->workspace_size < naive_workspace_size(p, 1, NULL)) return TXATTN_E_INTERNAL;
  float *scores = call->workspace;
  int64_t group = p->heads_q / p->heads_kv; /* query heads per key/value head */

  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads_q; h++) {
      for (int64_t i = 0; i < p->n_q; i++) {
        float *out = txattn_row_mut(t->o, &t->o_layout, b, h, i);
        int64_t lo, hi;
        txattn_visible_range(p, i, &lo, &hi);
        if (lo >= hi) { /* no visible key: exact zeros, decided by the range and never by a score */
          for (int64_t c = 0; c < p->d_v; c++) out[c] = 0.0f;
          continue;
        }
        const float *q = txattn_row(t->q, &t->q_layout, b, h, i);
        attend_row(call, b, h / group, q, lo, hi, scores, out);
      }
    }
  }
  return TXATTN_OK;
}
