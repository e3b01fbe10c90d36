/* The row loop of the banded kernels: for every (batch, head, query row), the visible key range
 * from txattn_visible_range, then only those scores, their softmax and the weighted sum of those
 * values, so the work is O(n_q * r * d) for a window of r keys. ISA-free: the inner loops come from
 * a banded_ops.
 *
 * Sums over keys run in two levels: float within a chunk of BANDED_CHUNK keys (the vectorised inner
 * loops), double across chunks. One float sum over a whole row drifts by about n/5 ulp when its
 * terms are nearly equal (5e-5 at n = 4096 with broadcast keys), over the tolerance; chunked, the
 * error is that of 64 float additions whatever the row length, for d_v double additions per 64
 * keys.
 */
#include "banded.h"

int64_t banded_max_range(const txattn_problem *p) {
  /* [pos - left, pos + right] holds at most left + right + 1 keys, and never more than n_kv;
     other masks may need all n_kv. Compared without adding: huge windows cannot overflow. */
  if (p->mask != TXATTN_MASK_WINDOW || p->window_left == TXATTN_UNBOUNDED ||
      p->window_right == TXATTN_UNBOUNDED || p->window_left >= p->n_kv ||
      p->window_right >= p->n_kv - p->window_left)
    return p->n_kv;
  return p->window_left + p->window_right + 1;
}

/* Scratch layout, every part on its own cache lines: double acc[d_v] | float part[d_v] | scores. */
static size_t round64(size_t bytes) {
  return (bytes + 63) & ~(size_t)63;
}

size_t banded_workspace_bytes(const txattn_problem *p) {
  return round64((size_t)p->d_v * sizeof(double)) + round64((size_t)p->d_v * sizeof(float)) +
         (size_t)banded_max_range(p) * sizeof(float);
}

/* One output row: softmax over the visible keys [lo, hi), lo < hi. */
static void banded_row(const txattn_kernel_call *call, const banded_ops *ops, int64_t b, int64_t h,
                       int64_t i, int64_t lo, int64_t hi) {
  const txattn_problem *p = call->problem;
  const txattn_tensors *t = call->tensors;
  int64_t h_kv = h / (p->heads_q / p->heads_kv), n = hi - lo;
  const float *q = txattn_row(t->q, &t->q_layout, b, h, i);
  const float *k = txattn_row(t->k, &t->k_layout, b, h_kv, lo);
  const float *v = txattn_row(t->v, &t->v_layout, b, h_kv, lo);
  double *acc = call->workspace;
  float *part = (float *)((char *)call->workspace + round64((size_t)p->d_v * sizeof(double)));
  float *scores = (float *)((char *)part + round64((size_t)p->d_v * sizeof(float)));

  ops->scores(q, k, t->k_layout.row, n, p->d_qk, p->scale, scores);
  /* A NaN score makes the max NaN and with it every weight, so the row comes out NaN. */
  float max = ops->max(scores, n);
  double sum = 0.0;
  for (int64_t c = 0; c < p->d_v; c++) acc[c] = 0.0;
  for (int64_t j = 0; j < n; j += BANDED_CHUNK) {
    int64_t len = n - j < BANDED_CHUNK ? n - j : BANDED_CHUNK;
    sum += ops->exp_sum(scores + j, len, max);
    ops->weighted_sum(scores + j, v + j * t->v_layout.row, t->v_layout.row, len, p->d_v, part);
    for (int64_t c = 0; c < p->d_v; c++) acc[c] += part[c];
  }
  float *out = txattn_row_mut(t->o, &t->o_layout, b, h, i);
  for (int64_t c = 0; c < p->d_v; c++) out[c] = (float)(acc[c] / sum);
}

txattn_status banded_run(const txattn_kernel_call *call, const banded_ops *ops) {
  const txattn_problem *p = call->problem;
  const txattn_tensors *t = call->tensors;
  if (call->workspace_size < banded_workspace_bytes(p)) return TXATTN_E_INTERNAL;

  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads_q; h++) {
      for (int64_t i = 0; i < p->n_q; i++) {
        int64_t lo, hi;
        txattn_visible_range(p, i, &lo, &hi);
        if (lo < hi) {
          banded_row(call, ops, b, h, i, lo, hi);
        } else { /* no visible key: exact zeros */
          float *out = txattn_row_mut(t->o, &t->o_layout, b, h, i);
          for (int64_t c = 0; c < p->d_v; c++) out[c] = 0.0f;
        }
      }
    }
  }
  return TXATTN_OK;
}
