/* SPDX-License-Identifier: MIT */
/* naive.scalar: attention written to be read, the spec the faster kernels are checked against.
 *
 * For each output row: the scores of the visible keys, their softmax, and the weighted sum of the
 * values, one plain loop each; with problem->lse, also the row's log-sum-exp from the softmax's max
 * and sum. Every score modifier (softcap, ALiBi, sink logits, sink keys) and a mask tensor are
 * taken (a key the tensor hides is skipped as a key outside the range is). Only visible keys are touched (txattn_visible_range), which is also what keeps a NaN in a
 * masked-out key out of the row. Scores are float; the two sums over keys are double, because a
 * float sum of n nearly equal terms drifts by about n/5 ulp, over the tolerance at long rows (e.g.
 * keys broadcast with stride 0; docs/measurements.md).
 *
 * 16-bit tensors: every element is widened to float as it is read (exactly) and the output row is
 * rounded to o's type at the end (half.h), so the arithmetic is the fp32 path's. 8-bit K and V
 * the same way: q8_0's q * d and q4_0's (q - 8) * d exactly, an fp8 value times its head's scale
 * rounded to fp32.
 */
#include <math.h>

#include "half.h"
#include "mask_value.h"
#include "naive.h"

/* Element c of a row of type t as the float every kernel computes on: exact for the 16-bit
   types, q8_0 (q * d) and q4_0 ((q - 8) * d), an fp8 value times its head's scale rounded once
   (txattn_row_to_f32). */
static float elem(const void *row, txattn_dtype t, float scale, int64_t c) {
  switch (t) {
  case TXATTN_DTYPE_F32:
    return ((const float *)row)[c];
  case TXATTN_DTYPE_F16:
    return txh_f16_to_f32(((const uint16_t *)row)[c]);
  case TXATTN_DTYPE_BF16:
    return txh_bf16_to_f32(((const uint16_t *)row)[c]);
  case TXATTN_DTYPE_Q8_0: {
    const txattn_block_q8_0 *blk = (const txattn_block_q8_0 *)row + c / 32;
    return (float)blk->qs[c % 32] * txattn_f16_value(blk->d);
  }
  case TXATTN_DTYPE_Q4_0: {
    const txattn_block_q4_0 *blk = (const txattn_block_q4_0 *)row + c / 32;
    return (float)txattn_q4_0_int(blk, c % 32) * txattn_f16_value(blk->d);
  }
  case TXATTN_DTYPE_E4M3:
    return txattn_e4m3_value(((const uint8_t *)row)[c]) * scale;
  default:
    return txattn_e5m2_value(((const uint8_t *)row)[c]) * scale;
  }
}

/* A max that keeps a NaN once it has seen one. fmaxf(m, a) and (a > m ? a : m) both skip a NaN
   score; making the max itself NaN turns every exp(s - m) of the row into NaN, so the row's output
   is NaN as the contract asks, whatever else the row holds. */
static float max_keep_nan(float m, float a) {
  return (a > m || isnan(a)) ? a : m;
}

static float dot(const float *a, const void *b, txattn_dtype b_type, float b_scale, int64_t n) {
  float sum = 0.0f;
  for (int64_t c = 0; c < n; c++) sum += a[c] * elem(b, b_type, b_scale, c);
  return sum;
}

/* Score of key j from its dot product with the modifiers applied (the "modified" path): scale d
   in fp32, then c tanh(x / c) (as fl(x fl(1/c))) and + m_h (j - pos), each rounded to fp32. */
static float modified_score(const txattn_problem *p, float slope, int64_t pos, int64_t j, float d) {
  float x = p->scale * d, c = txattn_softcap_of(p);
  if (c > 0.0f) x = c * tanhf(x * (1.0f / c));
  if (p->alibi) x += slope * (float)(j - pos);
  return x;
}

/* out = the softmax-weighted sum of v_j over the visible keys j of one query row (head h, row i):
   [0, sink_hi) and [lo, hi), not both empty, less those the mask tensor hides; returns the row's
   log-sum-exp over those keys. `scores` holds n_kv floats, `hidden` n_kv bytes. */
static float attend_row(const txattn_kernel_call *call, int64_t b, int64_t h, int64_t i,
                        const float *q, const int64_t range[4], float *scores,
                        unsigned char *hidden, float *out) {
  const txattn_problem *p = call->problem;
  const txattn_tensors *t = call->tensors;
  int64_t h_kv = h / (p->heads_q / p->heads_kv);
  const float *slopes = txattn_alibi_slopes_of(p, t), *sinks = txattn_sinks_of(p, t);
  const txattn_mask_tensor mt = txattn_mask_tensor_of(p, t);
  const void *mrow = mt != TXATTN_MASK_TENSOR_NONE ? txattn_mask_row(p, t, b, h, i) : NULL;
  int modified = txattn_softcap_of(p) > 0.0f || slopes != NULL || mrow != NULL;

  /* Plain scores carry the scale's sign only: its magnitude multiplies s - max below, which is <=
     0, so no finite dot product overflows however large the scale (docs/error_bound.md). A
     modified score is the score itself, and its magnitude 1. */
  const float sign = !modified && p->scale < 0.0f ? -1.0f : 1.0f,
              mag = modified ? 1.0f : fabsf(p->scale);
  const float slope = slopes ? slopes[h] : 0.0f;
  const float *ks = txattn_k_scale_of(p, t), *vs = txattn_v_scale_of(p, t);
  const float k_scale = ks ? ks[h_kv] : 1.0f, v_scale = vs ? vs[h_kv] : 1.0f;
  const int64_t pos = i + (p->n_kv - p->n_q);
  float max = -INFINITY;
  int64_t seen = 0;
  for (int part = 0; part < 2; part++)
    for (int64_t j = range[2 * part]; j < range[2 * part + 1]; j++) {
      float bias = mrow ? txm_mask_value(p, t, mrow, j) : 0.0f;
      hidden[j] = bias == -INFINITY;
      if (hidden[j]) continue;
      seen++;
      const void *k = txattn_kv_row_of(p, t, t->k_data, p->k_type, &t->k_layout, b, h_kv, j);
      float d = dot(q, k, p->k_type, k_scale, p->d_qk);
      scores[j] = modified ? modified_score(p, slope, pos, j, d) + bias : sign * d;
      /* Subtracting the row max keeps every exp() <= 1, so large logits cannot overflow. */
      max = max_keep_nan(max, scores[j]);
    }
  if (seen == 0) { /* the mask tensor hides every key of the ranges: exact zeros */
    for (int64_t c = 0; c < p->d_v; c++) out[c] = 0.0f;
    return -INFINITY;
  }
  double sum = 0.0;
  for (int part = 0; part < 2; part++)
    for (int64_t j = range[2 * part]; j < range[2 * part + 1]; j++) {
      if (hidden[j]) continue;
      scores[j] = expf((scores[j] - max) * mag);
      sum += scores[j];
    }
  /* the sink's exp(t - scale max) in fp64, exact next to the fp32 weights */
  double den = sinks ? sum + exp((double)sinks[h] - (double)mag * (double)max) : sum;

  for (int64_t c = 0; c < p->d_v; c++) {
    double acc = 0.0;
    for (int part = 0; part < 2; part++)
      for (int64_t j = range[2 * part]; j < range[2 * part + 1]; j++)
        if (!hidden[j]) /* a hidden key's V is never read */
          acc += (double)scores[j] *
                 elem(txattn_kv_row_of(p, t, t->v_data, p->v_type, &t->v_layout, b, h_kv, j),
                      p->v_type, v_scale, c);
    out[c] = (float)(acc / den);
  }
  txattn_row_spread_nan(out, p->d_v);
  /* sum = sum over j of exp(mag (scores_j - max)), and mag * scores_j is the score */
  return (float)(mag * (double)max + log(sum));
}

/* The float row out to o's row of type t, rounded to nearest even. */
static void store_row(const float *out, void *o, txattn_dtype t, int64_t n) {
  if (t == TXATTN_DTYPE_F32)
    for (int64_t c = 0; c < n; c++) ((float *)o)[c] = out[c];
  else if (t == TXATTN_DTYPE_F16)
    txh_f32_row_to_f16(out, n, o);
  else
    txh_f32_row_to_bf16(out, n, o);
}

size_t naive_workspace_size(const txattn_problem *p, int n_threads, const int64_t *tunables) {
  (void)n_threads;
  (void)tunables;
  /* the scores of one row, and its q and o rows as floats; which keys the mask tensor hides */
  return (size_t)(p->n_kv + p->d_qk + p->d_v) * sizeof(float) + (size_t)p->n_kv;
}

txattn_status naive_run(const txattn_kernel_call *call) {
  const txattn_problem *p = call->problem;
  const txattn_tensors *t = call->tensors;
  if (call->workspace_size < naive_workspace_size(p, 1, NULL)) return TXATTN_E_INTERNAL;
  float *scores = call->workspace, *q = scores + p->n_kv, *out = q + p->d_qk;
  unsigned char *hidden = (unsigned char *)(out + p->d_v);
  float *lse = txattn_lse_out(p, t);

  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t h = 0; h < p->heads_q; h++) {
      for (int64_t i = 0; i < p->n_q; i++) {
        int64_t range[4] = {0};
        float row_lse;
        txattn_visible_ranges(p, i, &range[1], &range[2], &range[3]);
        if (range[1] == 0 && range[2] >= range[3]) {
          /* no visible key: exact zeros, decided by the range and never by a score */
          for (int64_t c = 0; c < p->d_v; c++) out[c] = 0.0f;
          row_lse = -INFINITY; /* log of an empty sum */
        } else {
          const void *qi = txattn_row_of(t->q_data, p->q_type, &t->q_layout, b, h, i);
          for (int64_t c = 0; c < p->d_qk; c++) q[c] = elem(qi, p->q_type, 1.0f, c);
          row_lse = attend_row(call, b, h, i, q, range, scores, hidden, out);
        }
        store_row(out, txattn_row_of_mut(t->o_data, p->o_type, &t->o_layout, b, h, i), p->o_type,
                  p->d_v);
        if (lse) *txattn_row_mut(lse, &t->lse_layout, b, h, i) = row_lse;
      }
    }
  }
  return TXATTN_OK;
}
