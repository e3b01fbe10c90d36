/* SPDX-License-Identifier: MIT */
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
#include <string.h>

#include "banded.h"
#include "half.h"

int64_t banded_max_range(const txattn_problem *p) {
  /* [pos - left, pos + right] holds at most left + right + 1 keys, and never more than n_kv;
     other masks may need all n_kv. Compared without adding: huge windows cannot overflow. With K
     sink keys a row's range may merge with them into [0, hi): K keys more at most. */
  const int64_t k = txattn_sink_keys_of(p);
  if (p->mask != TXATTN_MASK_WINDOW || p->window_left == TXATTN_UNBOUNDED ||
      p->window_right == TXATTN_UNBOUNDED || p->window_left >= p->n_kv ||
      p->window_right >= p->n_kv - p->window_left ||
      p->window_left + p->window_right + 1 >= p->n_kv - k)
    return p->n_kv;
  return p->window_left + p->window_right + 1 + k;
}

size_t banded_workspace_bytes(const txattn_problem *p, int panels) {
  size_t rows = BANDED_MR, d_v = (size_t)p->d_v, chunk = BANDED_CHUNK;
  size_t bytes = banded_round64(rows * d_v * sizeof(double)) +
                 banded_round64(rows * d_v * sizeof(float)) +
                 banded_round64(rows * (size_t)banded_score_stride(p) * sizeof(float)) +
                 rows * (size_t)(banded_q_stride(p) + banded_o_stride(p)) * sizeof(float);
  if (panels) return bytes + (size_t)banded_panel_keys(p) * (size_t)p->d_qk * sizeof(float);
  if (p->k_type != TXATTN_DTYPE_F32)
    bytes += banded_round64(chunk * (size_t)p->d_qk * sizeof(float));
  if (p->v_type != TXATTN_DTYPE_F32) bytes += chunk * d_v * sizeof(float);
  return bytes;
}

/* banded.scalar's 16-bit rows: n (<= BANDED_CHUNK) rows of d elements of type t from `src`, row
   stride `row` elements, widened into dst (stride d floats). half.h's scalar conversions: this
   file has no vector ISA, and the rows land in L1 for the fp32 inner loops. */
static const float *widen_rows(const void *src, txattn_dtype t, int64_t row, int64_t n, int64_t d,
                               float *dst) {
  const uint16_t *s = src;
  for (int64_t j = 0; j < n; j++) {
    if (t == TXATTN_DTYPE_F16)
      txh_f16_row_to_f32(s + j * row, d, dst + j * d);
    else
      txh_bf16_row_to_f32(s + j * row, d, dst + j * d);
  }
  return dst;
}

/* Row i of q as fp32: in place, or widened into the workspace's first q row. */
static const float *q_row(const banded_head *hd, int64_t i) {
  const txattn_problem *p = hd->p;
  if (p->q_type == TXATTN_DTYPE_F32) return (const float *)hd->q + i * hd->q_row;
  return widen_rows((const uint16_t *)hd->q + i * hd->q_row, p->q_type, 0, 1, p->d_qk,
                    banded_ws_q_rows(hd));
}

/* Where row i of o is computed in fp32: in place, or the workspace's first o row (which o_store
   narrows into o). */
static float *o_row(const banded_head *hd, int64_t i) {
  if (hd->p->o_type == TXATTN_DTYPE_F32) return (float *)hd->o + i * hd->o_row;
  return banded_ws_o_rows(hd);
}

/* The fp32 row `out` of o_row(i) into o's row i, rounded to nearest even when o is 16-bit. */
static void o_store(const banded_head *hd, int64_t i, const float *out) {
  const txattn_problem *p = hd->p;
  uint16_t *dst = (uint16_t *)hd->o + i * hd->o_row;
  if (p->o_type == TXATTN_DTYPE_F16)
    txh_f32_row_to_f16(out, p->d_v, dst);
  else if (p->o_type == TXATTN_DTYPE_BF16)
    txh_f32_row_to_bf16(out, p->d_v, dst);
}

/* Keys [key0, key0 + n) of row i: their scores into s (modified where the problem asks), their
   16-bit rows widened BANDED_CHUNK at a time into k_rows first. */
static void ops_scores(const banded_head *hd, const banded_ops *ops, const float *q, int64_t i,
                       int64_t key0, int64_t n, float *k_rows, float *s) {
  const txattn_problem *p = hd->p;
  const int64_t ks = (int64_t)banded_elem_size(p->k_type);
  const char *k = (const char *)hd->k + key0 * hd->k_row * ks;
  if (p->k_type == TXATTN_DTYPE_F32) {
    ops->scores(q, (const float *)k, hd->k_row, n, p->d_qk, banded_score_sign(p), s);
  } else {
    for (int64_t j = 0; j < n; j += BANDED_CHUNK) {
      int64_t len = n - j < BANDED_CHUNK ? n - j : BANDED_CHUNK;
      widen_rows(k + j * hd->k_row * ks, p->k_type, hd->k_row, len, p->d_qk, k_rows);
      ops->scores(q, k_rows, p->d_qk, len, p->d_qk, banded_score_sign(p), s + j);
    }
  }
  if (hd->modified)
    for (int64_t j = 0; j < n; j++) s[j] = banded_modify_one(hd, s[j], key0 + j, i);
}

/* The weights of keys [key0, key0 + n) from their scores s (in place), BANDED_CHUNK at a time,
   and their weighted value rows added to acc; returns the sum of the weights. */
static double ops_weigh(const banded_head *hd, const banded_ops *ops, int64_t key0, int64_t n,
                        float max, float *s, float *v_rows) {
  const txattn_problem *p = hd->p;
  const int64_t vs = (int64_t)banded_elem_size(p->v_type);
  const char *v = (const char *)hd->v + key0 * hd->v_row * vs;
  double *acc = banded_ws_acc(hd), sum = 0.0;
  float *part = banded_ws_part(hd);
  for (int64_t j = 0; j < n; j += BANDED_CHUNK) {
    int64_t len = n - j < BANDED_CHUNK ? n - j : BANDED_CHUNK;
    const char *vj = v + j * hd->v_row * vs;
    sum += ops->exp_sum(s + j, len, max, (float)hd->lse_scale);
    if (p->v_type == TXATTN_DTYPE_F32)
      ops->weighted_sum(s + j, (const float *)vj, hd->v_row, len, p->d_v, part);
    else
      ops->weighted_sum(s + j, widen_rows(vj, p->v_type, hd->v_row, len, p->d_v, v_rows), p->d_v,
                        len, p->d_v, part);
    for (int64_t c = 0; c < p->d_v; c++) acc[c] += part[c];
  }
  return sum;
}

/* One output row: softmax over its visible keys, the sink keys [0, sink_hi) and [lo, hi) (at least
   one key). 16-bit key and value rows are widened BANDED_CHUNK at a time into the workspace's
   tail, then go through the fp32 ops. */
static void ops_row(const banded_head *hd, const banded_ops *ops, int64_t i, int64_t sink_hi,
                    int64_t lo, int64_t hi) {
  const txattn_problem *p = hd->p;
  const float *q = q_row(hd, i);
  double *acc = banded_ws_acc(hd);
  float *sink_s = banded_ws_scores(hd), *scores = sink_s + hd->sink_stride, *out = o_row(hd, i);
  float *k_rows = banded_ws_tail(hd);
  float *v_rows = k_rows + (p->k_type == TXATTN_DTYPE_F32
                                ? 0
                                : banded_round64(BANDED_CHUNK * (size_t)p->d_qk * sizeof(float)) /
                                      sizeof(float));

  if (sink_hi > 0) ops_scores(hd, ops, q, i, 0, sink_hi, k_rows, sink_s);
  if (lo < hi) ops_scores(hd, ops, q, i, lo, hi - lo, k_rows, scores);
  /* A NaN score makes the max NaN and with it every weight, so the row comes out NaN. */
  float max = lo < hi ? ops->max(scores, hi - lo) : -INFINITY;
  if (sink_hi > 0) {
    float m = ops->max(sink_s, sink_hi);
    max = isnan(m) || m > max ? m : max;
  }
  for (int64_t c = 0; c < p->d_v; c++) acc[c] = 0.0;
  double sum = ops_weigh(hd, ops, 0, sink_hi, max, sink_s, v_rows) +
               ops_weigh(hd, ops, lo, hi - lo, max, scores, v_rows);
  double den = banded_denominator(hd, max, sum);
  for (int64_t c = 0; c < p->d_v; c++) out[c] = (float)(acc[c] / den);
  txattn_row_spread_nan(out, p->d_v);
  o_store(hd, i, out);
  banded_lse_put(hd, i, max, sum);
}

void banded_ops_head(const banded_head *hd, const banded_ops *ops) {
  const txattn_problem *p = hd->p;
  for (int64_t i = hd->row0; i < hd->row1; i++) {
    int64_t sink_hi, lo, hi;
    txattn_visible_ranges(p, i, &sink_hi, &lo, &hi);
    if (lo < hi || sink_hi > 0) {
      ops_row(hd, ops, i, sink_hi, lo, hi);
    } else { /* no visible key: exact zeros (+0 in every type) */
      memset((char *)hd->o + i * hd->o_row * (int64_t)banded_elem_size(p->o_type), 0,
             (size_t)p->d_v * banded_elem_size(p->o_type));
      banded_lse_empty(hd, i);
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
  const txattn_problem *p = call->problem;
  hd->softcap = txattn_softcap_of(p);
  hd->inv_softcap = hd->softcap > 0.0f ? 1.0f / hd->softcap : 0.0f;
  hd->alibi = txattn_alibi_slopes_of(p, t) != NULL;
  hd->mask = (int)txattn_mask_tensor_of(p, t);
  hd->t = t;
  hd->modified = hd->softcap > 0.0f || hd->alibi || hd->mask == TXATTN_MASK_TENSOR_ADDITIVE;
  hd->abs_scale = fabsf(p->scale);
  hd->exp2_scale = hd->modified ? (float)1.4426950408889634 : banded_exp2_scale(p);
  hd->lse_scale = hd->modified ? 1.0 : fabs((double)p->scale);
  hd->sink = -INFINITY;
  hd->pos_shift = p->n_kv - p->n_q;
  hd->sink_keys = txattn_sink_keys_of(p);
  hd->sink_stride = banded_sink_stride(p);
}

void banded_head_at(banded_head *hd, const txattn_tensors *t, int64_t b, int64_t h) {
  const txattn_problem *p = hd->p;
  const int64_t h_kv = h / (p->heads_q / p->heads_kv);
  hd->q = txattn_row_of(t->q_data, p->q_type, &t->q_layout, b, h, 0);
  hd->k = txattn_row_of(t->k_data, p->k_type, &t->k_layout, b, h_kv, 0);
  hd->v = txattn_row_of(t->v_data, p->v_type, &t->v_layout, b, h_kv, 0);
  hd->o = txattn_row_of_mut(t->o_data, p->o_type, &t->o_layout, b, h, 0);
  float *lse = banded_lse_tensor(p, t);
  hd->lse = lse ? lse + b * t->lse_layout.batch + h * t->lse_layout.head : NULL;
  hd->lse_row = lse ? t->lse_layout.row : 0;
  const float *slopes = txattn_alibi_slopes_of(p, t), *sinks = txattn_sinks_of(p, t);
  hd->slope = slopes ? slopes[h] : 0.0f;
  hd->sink = sinks ? (double)sinks[h] : -INFINITY;
  if (hd->mask) {
    hd->mask0 = txattn_mask_row(p, t, b, h, 0);
    hd->mask_row = t->mask_layout.row * txattn_mask_elem_size(p);
  }
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
