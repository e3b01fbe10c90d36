/* The row loop of the banded kernels: for every (batch, head), the base rows of its tensors; inside
 * a head, for every query row, the visible key range from txattn_visible_range, then only those
 * scores, their softmax and the weighted sum of those values, so the work is O(n_q * r * d) for a
 * window of r keys. ISA-free: a head goes to the kernel's banded_head_fn, and banded_ops_head is
 * the row loop of the kernels built from a banded_ops (banded.scalar).
 *
 * Sums over keys run in two levels: float within a chunk of BANDED_CHUNK keys (the vectorised inner
 * loops), double across chunks. One float sum over a whole row drifts by about n/5 ulp when its
 * terms are nearly equal, over the tolerance at long rows (docs/measurements.md); chunked, the
 * error is that of 64 float additions whatever the row length, for d_v double additions per 64
 * keys. The vector kernels (banded_algo.h) keep the same scheme with longer float runs
 * (BANDED_VEC_CHUNK, banded.h).
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

size_t banded_workspace_bytes(const txattn_problem *p, int panels) {
  size_t rows = BANDED_MR, d_v = (size_t)p->d_v;
  return banded_round64(rows * d_v * sizeof(double)) + banded_round64(rows * d_v * sizeof(float)) +
         banded_round64(rows * (size_t)banded_score_stride(p) * sizeof(float)) +
         (panels ? (size_t)banded_panel_keys(p) * (size_t)p->d_qk * sizeof(float) : 0);
}

/* One output row: softmax over the visible keys [lo, hi), lo < hi. */
static void ops_row(const banded_head *hd, const banded_ops *ops, int64_t i, int64_t lo,
                    int64_t hi) {
  const txattn_problem *p = hd->p;
  int64_t n = hi - lo;
  const float *q = hd->q + i * hd->q_row;
  const float *k = hd->k + lo * hd->k_row;
  const float *v = hd->v + lo * hd->v_row;
  double *acc = banded_ws_acc(hd);
  float *part = banded_ws_part(hd), *scores = banded_ws_scores(hd);

  ops->scores(q, k, hd->k_row, n, p->d_qk, p->scale, scores);
  /* A NaN score makes the max NaN and with it every weight, so the row comes out NaN. */
  float max = ops->max(scores, n);
  double sum = 0.0;
  for (int64_t c = 0; c < p->d_v; c++) acc[c] = 0.0;
  for (int64_t j = 0; j < n; j += BANDED_CHUNK) {
    int64_t len = n - j < BANDED_CHUNK ? n - j : BANDED_CHUNK;
    sum += ops->exp_sum(scores + j, len, max);
    ops->weighted_sum(scores + j, v + j * hd->v_row, hd->v_row, len, p->d_v, part);
    for (int64_t c = 0; c < p->d_v; c++) acc[c] += part[c];
  }
  float *out = hd->o + i * hd->o_row;
  for (int64_t c = 0; c < p->d_v; c++) out[c] = (float)(acc[c] / sum);
  txattn_row_spread_nan(out, p->d_v);
}

void banded_ops_head(const banded_head *hd, const banded_ops *ops) {
  const txattn_problem *p = hd->p;
  for (int64_t i = hd->row0; i < hd->row1; i++) {
    int64_t lo, hi;
    txattn_visible_range(p, i, &lo, &hi);
    if (lo < hi) {
      ops_row(hd, ops, i, lo, hi);
    } else { /* no visible key: exact zeros */
      float *out = hd->o + i * hd->o_row;
      for (int64_t c = 0; c < p->d_v; c++) out[c] = 0.0f;
    }
  }
}

void banded_head_init(banded_head *hd, const txattn_kernel_call *call, void *workspace) {
  const txattn_tensors *t = call->tensors;
  *hd = (banded_head){.p = call->problem,
                      .q_row = t->q_layout.row,
                      .k_row = t->k_layout.row,
                      .v_row = t->v_layout.row,
                      .o_row = t->o_layout.row,
                      .row0 = 0,
                      .row1 = call->problem->n_q,
                      .workspace = workspace};
}

void banded_head_at(banded_head *hd, const txattn_tensors *t, int64_t b, int64_t h) {
  const txattn_problem *p = hd->p;
  const int64_t h_kv = h / (p->heads_q / p->heads_kv);
  hd->q = txattn_row(t->q, &t->q_layout, b, h, 0);
  hd->k = txattn_row(t->k, &t->k_layout, b, h_kv, 0);
  hd->v = txattn_row(t->v, &t->v_layout, b, h_kv, 0);
  hd->o = txattn_row_mut(t->o, &t->o_layout, b, h, 0);
}

txattn_status banded_run(const txattn_kernel_call *call, banded_head_fn head, int panels) {
  const txattn_problem *p = call->problem;
  if (call->workspace_size < banded_workspace_bytes(p, panels)) return TXATTN_E_INTERNAL;
  banded_head hd;
  banded_head_init(&hd, call, call->workspace);
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads_q; h++) {
      banded_head_at(&hd, call->tensors, b, h);
      head(&hd);
    }
  }
  return TXATTN_OK;
}
