/* SPDX-License-Identifier: MIT */
/* One task of the masked kernel, written the dense way numpy/PyTorch users write attention:
 *
 *   S = sign(scale) Q_blk K^T   over ALL n_kv keys (cblas_sgemm; no block skipping, deliberately),
 *   the mask applied to S, row softmax of |scale| S (scaled after subtracting the row max, so that
 *   no finite score overflows: docs/error_bound.md, "Finite inputs"); with a mask tensor the row's
 *   scores become fl(|scale| S) plus its values first (-inf where it hides a key), and the softmax
 *   takes them at scale 1,
 *   O_blk = P V             (cblas_sgemm).
 *
 * Q_blk stacks the task's query heads (all reading one K/V head) head-major, then rows. BLAS reads
 * and writes the tensors in place when their rows are a constant distance >= the row length apart;
 * other layouts (stride 0, rows that overlap, heads that do not continue the rows) go through
 * scratch.
 *
 * 16-bit tensors: a 16-bit q, k or v always goes through scratch, widened to fp32 as it is packed
 * (whole K and V heads, as for a layout BLAS cannot take); a 16-bit o is computed in the packed O
 * scratch, finished there (empty rows, NaN rows) and rounded to nearest even into o at the end.
 * The arithmetic is the f32 path's.
 */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "half.h"
#include "mask_value.h"
#include "masked.h"

/* The distance between consecutive rows of the stacked matrix (heads h.., then rows i..) when one
   constant describes it and BLAS takes it as leading dimension; 0 when the rows must be packed. */
static blasint stacked_ld(const txattn_layout *l, int64_t heads, int64_t rows, int64_t dim) {
  int64_t ld, span;
  if (heads * rows == 1) return (blasint)dim; /* one row: any ld >= dim is right */
  if (heads == 1) {
    ld = l->row;
  } else if (rows == 1) {
    ld = l->head;
  } else {
    /* the next head's first row must follow the last row as the rows follow each other */
    if (__builtin_mul_overflow(rows, l->row, &span) || span != l->head) return 0;
    ld = l->row;
  }
  return ld >= dim && (int64_t)(blasint)ld == ld ? (blasint)ld : 0;
}

/* Row `src` of dim elements of type t into the fp32 row dst: copied, or widened exactly. */
static void row_to_f32(const void *src, txattn_dtype t, int64_t dim, float *dst) {
  if (t == TXATTN_DTYPE_F32)
    memcpy(dst, src, (size_t)dim * sizeof(float));
  else if (t == TXATTN_DTYPE_F16)
    txh_f16_row_to_f32(src, dim, dst);
  else
    txh_bf16_row_to_f32(src, dim, dst);
}

static void pack_rows(const void *base, txattn_dtype t, const txattn_layout *l, int64_t b,
                      int64_t h0, int64_t heads, int64_t i0, int64_t rows, int64_t dim,
                      float *dst) {
  for (int64_t h = 0; h < heads; h++)
    for (int64_t i = 0; i < rows; i++)
      row_to_f32(txattn_row_of(base, t, l, b, h0 + h, i0 + i), t, dim, dst + (h * rows + i) * dim);
}

/* A tensor's stacked rows as an fp32 BLAS operand: an f32 tensor in place where BLAS can take its
   layout, else packed (and widened) into `scratch`. */
static const float *operand(const void *base, txattn_dtype t, const txattn_layout *l, int64_t b,
                            int64_t h0, int64_t heads, int64_t i0, int64_t rows, int64_t dim,
                            float *scratch, blasint *ld) {
  *ld = t == TXATTN_DTYPE_F32 ? stacked_ld(l, heads, rows, dim) : 0;
  if (*ld) return txattn_row_of(base, t, l, b, h0, i0);
  pack_rows(base, t, l, b, h0, heads, i0, rows, dim, scratch);
  *ld = (blasint)dim;
  return scratch;
}

static int all_finite(const float *v, blasint ld, int64_t rows, int64_t dim) {
  for (int64_t j = 0; j < rows; j++) {
    int bad = 0;
    for (int64_t c = 0; c < dim; c++) bad |= !isfinite(v[j * ld + c]);
    if (bad) return 0;
  }
  return 1;
}

/* out = sum over the visible keys only of p_j v_j (those of [lo, hi) the mask tensor's row mrow
   shows, every one if mrow is NULL). Used when V holds an Inf or NaN: in the dense product a
   masked key's 0 * NaN would make a row NaN that never sees that key. Summed in double for the
   reason given in masked_softmax. */
static void visible_weighted_sum(const txattn_kernel_call *call, const void *mrow, const float *p,
                                 const float *v, blasint ld, int64_t lo, int64_t hi, int64_t dim,
                                 float *out) {
  for (int64_t c = 0; c < dim; c++) {
    double acc = 0.0;
    for (int64_t j = lo; j < hi; j++)
      if (!mrow || txm_mask_value(call->problem, call->tensors, mrow, j) != -INFINITY)
        acc += (double)p[j] * v[j * ld + c];
    out[c] = (float)acc;
  }
}

/* With a mask tensor: the unscaled scores s[lo, hi) of row (b, h, i) become the scores themselves,
   fl(|scale| s) + the mask's value (-inf where it hides the key); returns how many keys it shows. */
static int64_t mask_scores(const txattn_kernel_call *call, int64_t b, int64_t h, int64_t i,
                           float *s, int64_t lo, int64_t hi) {
  const txattn_problem *p = call->problem;
  const void *mrow = txattn_mask_row(p, call->tensors, b, h, i);
  const float mag = fabsf(p->scale);
  int64_t seen = 0;
  for (int64_t j = lo; j < hi; j++) {
    const float bias = txm_mask_value(p, call->tensors, mrow, j);
    seen += bias != -INFINITY;
    s[j] = bias == -INFINITY ? -INFINITY : s[j] * mag + bias;
  }
  return seen;
}

/* Whether row (b, h, i) sees a key: its range is not empty and the mask tensor (if any) shows one
   of it. */
static int row_sees(const txattn_kernel_call *call, int64_t b, int64_t h, int64_t i) {
  const txattn_problem *p = call->problem;
  int64_t lo, hi;
  txattn_visible_range(p, i, &lo, &hi);
  if (lo >= hi || txattn_mask_tensor_of(p, call->tensors) == TXATTN_MASK_TENSOR_NONE)
    return lo < hi;
  const void *mrow = txattn_mask_row(p, call->tensors, b, h, i);
  for (int64_t j = lo; j < hi; j++)
    if (txm_mask_value(p, call->tensors, mrow, j) != -INFINITY) return 1;
  return 0;
}

/* One task: batch b, kv head h_kv, query heads [h0, h0 + heads), rows [i0, i0 + rows). */
typedef struct masked_task {
  int64_t b, h_kv, h0, heads, i0, rows;
} masked_task;

/* Row blocks vary fastest, so tasks taken one after another share the same K and V. */
static masked_task task_at(const txattn_problem *p, const masked_geometry *g, int64_t index) {
  masked_task t;
  int64_t row_block = index % g->row_blocks;
  index /= g->row_blocks;
  int64_t head_block = index % g->head_blocks;
  index /= g->head_blocks;
  t.h_kv = index % p->heads_kv;
  t.b = index / p->heads_kv;
  t.i0 = row_block * g->block_rows;
  t.rows = p->n_q - t.i0 < g->block_rows ? p->n_q - t.i0 : g->block_rows;
  t.h0 = t.h_kv * g->group + head_block * g->block_heads;
  t.heads = g->group - head_block * g->block_heads;
  if (t.heads > g->block_heads) t.heads = g->block_heads;
  return t;
}

/* Stacked row r of the task in o (of o's type). */
static void *out_row(const txattn_kernel_call *call, const masked_task *t, int64_t r) {
  return txattn_row_of_mut(call->tensors->o_data, call->problem->o_type, &call->tensors->o_layout,
                           t->b, t->h0 + r / t->rows, t->i0 + r % t->rows);
}

/* Where stacked row r is computed in fp32: o's row for an f32 o, else row r of the packed O
   scratch. */
static float *result_row(const txattn_kernel_call *call, const masked_geometry *g,
                         const masked_task *t, int64_t r, float *scratch) {
  if (call->problem->o_type == TXATTN_DTYPE_F32) return out_row(call, t, r);
  return scratch + g->off_o + r * call->problem->d_v;
}

/* Keys per P V product. A product over all n_kv keys rounds each output element once per key: where
   the weights are nearly equal and V has a mean far from 0 those roundings drift one way, by about
   n_kv u relative (2.5 times the error bound at 16384 keys). Each span of MASKED_PV_SPAN keys is
   summed fresh and added into O with Kahan's compensation, as the tiled kernels do (TILED_PV_SPAN,
   docs/error_bound.md, the bound on O): the drift stays that of one span. */
#define MASKED_PV_SPAN 256

/* acc + x with Kahan's compensation cmp (the true sum is acc - cmp) for n elements. cmp is kept
   finite: where acc becomes infinite (an infinite V, an fp32 overflow) Kahan's (t - s) - y is
   Inf - Inf, and that NaN would turn the infinite acc NaN at the next span, unlike the reference;
   a term that is not finite is dropped (c - c is 0 exactly when c is finite). */
static void kahan_add(float *acc, float *cmp, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    const float s = acc[i], y = x[i] - cmp[i], t = s + y, c = (t - s) - y;
    cmp[i] = c - c == 0.0f ? c : 0.0f;
    acc[i] = t;
  }
}

/* O rows = P V over spans of keys (MASKED_PV_SPAN) when V is finite or every key is visible, else
   per row over its visible keys only. */
static void weighted_values(const txattn_kernel_call *call, const masked_geometry *g,
                            const masked_task *t, const float *s, float *scratch) {
  const txattn_problem *p = call->problem;
  const txattn_tensors *x = call->tensors;
  int64_t m = t->heads * t->rows, lo, hi;
  const int o32 = p->o_type == TXATTN_DTYPE_F32;
  blasint ldv, ldo;
  const float *v = operand(x->v_data, p->v_type, &x->v_layout, t->b, t->h_kv, 1, 0, p->n_kv, p->d_v,
                           scratch + g->off_v, &ldv);
  const int tensor = txattn_mask_tensor_of(p, x) != TXATTN_MASK_TENSOR_NONE;
  if ((p->mask != TXATTN_MASK_NONE || tensor) && !all_finite(v, ldv, p->n_kv, p->d_v)) {
    for (int64_t r = 0; r < m; r++) {
      const int64_t h = t->h0 + r / t->rows, i = t->i0 + r % t->rows;
      txattn_visible_range(p, i, &lo, &hi);
      visible_weighted_sum(call, tensor ? txattn_mask_row(p, x, t->b, h, i) : NULL, s + r * p->n_kv,
                           v, ldv, lo, hi, p->d_v, result_row(call, g, t, r, scratch));
    }
    return;
  }
  if (p->n_kv > MASKED_PV_SPAN) {
    const int64_t n = m * p->d_v;
    float *acc = scratch + g->off_o, *pv = scratch + g->off_pv, *cmp = scratch + g->off_c;
    memset(cmp, 0, (size_t)n * sizeof(float));
    for (int64_t j = 0; j < p->n_kv; j += MASKED_PV_SPAN) {
      const int64_t kn = p->n_kv - j < MASKED_PV_SPAN ? p->n_kv - j : MASKED_PV_SPAN;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)p->d_v,
                  (blasint)kn, 1.0f, s + j, (blasint)p->n_kv, v + j * ldv, ldv, 0.0f, j ? pv : acc,
                  (blasint)p->d_v);
      if (j) kahan_add(acc, cmp, pv, n);
    }
    for (int64_t r = 0; r < m; r++) { /* into o, or in place for a 16-bit o (result_row) */
      float *out = result_row(call, g, t, r, scratch);
      for (int64_t c = 0; c < p->d_v; c++) out[c] = acc[r * p->d_v + c] - cmp[r * p->d_v + c];
    }
    return;
  }
  ldo = o32 ? stacked_ld(&x->o_layout, t->heads, t->rows, p->d_v) : 0;
  float *o = ldo ? out_row(call, t, 0) : scratch + g->off_o;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)p->d_v,
              (blasint)p->n_kv, 1.0f, s, (blasint)p->n_kv, v, ldv, 0.0f, o,
              ldo ? ldo : (blasint)p->d_v);
  if (!ldo && o32)
    for (int64_t r = 0; r < m; r++)
      memcpy(out_row(call, t, r), o + r * p->d_v, (size_t)p->d_v * sizeof(float));
}

void masked_block(const txattn_kernel_call *call, const masked_geometry *g, int64_t index,
                  float *scratch) {
  const txattn_problem *p = call->problem;
  const txattn_tensors *x = call->tensors;
  masked_task t = task_at(p, g, index);
  int64_t m = t.heads * t.rows, lo, hi;
  float *s = scratch + g->off_s;
  blasint ldq, ldk;
  const float *q = operand(x->q_data, p->q_type, &x->q_layout, t.b, t.h0, t.heads, t.i0, t.rows,
                           p->d_qk, scratch, &ldq);
  const float *k = operand(x->k_data, p->k_type, &x->k_layout, t.b, t.h_kv, 1, 0, p->n_kv, p->d_qk,
                           scratch + g->off_k, &ldk);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)p->n_kv,
              (blasint)p->d_qk, p->scale < 0.0f ? -1.0f : 1.0f, q, ldq, k, ldk, 0.0f, s,
              (blasint)p->n_kv);

  float *lse = masked_lse_tensor(p, x);
  const int tensor = txattn_mask_tensor_of(p, x) != TXATTN_MASK_TENSOR_NONE;
  for (int64_t r = 0; r < m; r++) {
    const int64_t h = t.h0 + r / t.rows, i = t.i0 + r % t.rows;
    float *lse_r =
        lse ? lse + t.b * x->lse_layout.batch + h * x->lse_layout.head + i * x->lse_layout.row
            : NULL;
    txattn_visible_range(p, i, &lo, &hi);
    if (lo < hi && tensor) /* the scores themselves, then a softmax of scale 1 */
      lo = mask_scores(call, t.b, h, i, s + r * p->n_kv, lo, hi) > 0 ? lo : hi;
    if (lo < hi) {
      masked_softmax(s + r * p->n_kv, p->n_kv, lo, hi, tensor ? 1.0f : fabsf(p->scale), lse_r);
    } else {
      memset(s + r * p->n_kv, 0, (size_t)p->n_kv * sizeof(float));
      if (lse_r) *lse_r = -INFINITY; /* no visible key */
    }
  }
  weighted_values(call, g, &t, s, scratch);

  /* Rows with no visible key: exact zeros (the product would give -0.0 for negative values). */
  for (int64_t r = 0; r < m; r++) {
    float *out = result_row(call, g, &t, r, scratch);
    if (!row_sees(call, t.b, t.h0 + r / t.rows, t.i0 + r % t.rows))
      memset(out, 0, (size_t)p->d_v * sizeof(float));
    else
      txattn_row_spread_nan(out, p->d_v);
    if (p->o_type == TXATTN_DTYPE_F16)
      txh_f32_row_to_f16(out, p->d_v, out_row(call, &t, r));
    else if (p->o_type == TXATTN_DTYPE_BF16)
      txh_f32_row_to_bf16(out, p->d_v, out_row(call, &t, r));
  }
}
