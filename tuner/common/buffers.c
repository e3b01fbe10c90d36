/* SPDX-License-Identifier: MIT */
#include "buffers.h"
#include "big_alloc.h"
#include "problem_cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h" /* plugins/common: the kernels' own scalar f16 and bf16 conversions */
#include "txattn/plugin.h"

float tx_elem_get(const void *base, txattn_dtype t, size_t i) {
  switch (t) {
  case TXATTN_DTYPE_F16:
    return txh_f16_to_f32(((const uint16_t *)base)[i]);
  case TXATTN_DTYPE_BF16:
    return txh_bf16_to_f32(((const uint16_t *)base)[i]);
  case TXATTN_DTYPE_Q8_0: {
    const txattn_block_q8_0 *blk = (const txattn_block_q8_0 *)base + i / 32;
    return (float)blk->qs[i % 32] * txattn_f16_value(blk->d);
  }
  case TXATTN_DTYPE_Q4_0: {
    const txattn_block_q4_0 *blk = (const txattn_block_q4_0 *)base + i / 32;
    return (float)txattn_q4_0_int(blk, (int64_t)(i % 32)) * txattn_f16_value(blk->d);
  }
  case TXATTN_DTYPE_E4M3:
    return txattn_e4m3_value(((const uint8_t *)base)[i]); /* txtune's fp8 scales are 1 */
  case TXATTN_DTYPE_E5M2:
    return txattn_e5m2_value(((const uint8_t *)base)[i]);
  default:
    return ((const float *)base)[i];
  }
}

/* A q8_0 or q4_0 value cannot be set alone: its block (blk, of type t) is quantised again with x
   in it (ggml's rounding), and a NaN makes the block's scale, and so the whole block, NaN. */
static void block_set(void *blk, txattn_dtype t, size_t c, float x) {
  float row[32];
  uint16_t *d = blk; /* both blocks start with their f16 scale */
  if (x != x) {
    *d = 0x7e00;
    return;
  }
  txattn_convert(blk, t, row, TXATTN_DTYPE_F32, 32, 1.0f);
  row[c] = x;
  if (txattn_convert(row, TXATTN_DTYPE_F32, blk, t, 32, 1.0f) != TXATTN_OK)
    *d = 0x7c00; /* beyond the type's range: Inf, as a 16-bit type overflows */
}

/* x stored at element i rounded to t (to nearest, ties to even; beyond the type's range +-Inf; fp8
   saturates, and a q8_0 or q4_0 element's block is quantised again with it, NaN making the block
   NaN). */
static void tx_elem_set(void *base, txattn_dtype t, size_t i, float x) {
  switch (t) {
  case TXATTN_DTYPE_Q8_0:
  case TXATTN_DTYPE_Q4_0:
    block_set((char *)base + txattn_elem_offset(t, (int64_t)(i / 32 * 32)), t, i % 32, x);
    break;
  case TXATTN_DTYPE_E4M3:
  case TXATTN_DTYPE_E5M2: /* nearest even, saturating (scale 1) */
    txattn_convert(&x, TXATTN_DTYPE_F32, (uint8_t *)base + i, t, 1, 1.0f);
    break;
  case TXATTN_DTYPE_F16:
    ((uint16_t *)base)[i] = txh_f32_to_f16(x);
    break;
  case TXATTN_DTYPE_BF16:
    ((uint16_t *)base)[i] = txh_f32_to_bf16(x);
    break;
  default:
    ((float *)base)[i] = x;
  }
}

static size_t elem_index(const txattn_layout *l, int64_t b, int64_t h, int64_t i, int64_t c) {
  return (size_t)(b * l->batch + h * l->head + i * l->row + c);
}

float tx_elem_at(const void *base, txattn_dtype t, const txattn_layout *l, int64_t b, int64_t h,
                 int64_t i, int64_t c) {
  return tx_elem_get(base, t, elem_index(l, b, h, i, c));
}

void tx_elem_put(void *base, txattn_dtype t, const txattn_layout *l, int64_t b, int64_t h,
                 int64_t i, int64_t c, float x) {
  tx_elem_set(base, t, elem_index(l, b, h, i, c), x);
}

void tx_fill_value(void *x, txattn_dtype t, size_t n, float value) {
  for (size_t i = 0; i < n; i++) tx_elem_set(x, t, i, value);
}

double tx_buffers_bytes(const txattn_problem *p) {
  double q_rows = (double)p->batch * (double)p->heads_q * (double)p->n_q;
  double kv_rows = (double)p->batch * (double)p->heads_kv * (double)p->n_kv;
  return q_rows * (double)(txattn_dtype_bytes(p->q_type, p->d_qk) +
                           txattn_dtype_bytes(p->o_type, p->d_v)) +
         kv_rows * (double)(txattn_dtype_bytes(p->k_type, p->d_qk) +
                            txattn_dtype_bytes(p->v_type, p->d_v));
}

static txattn_layout strides(tx_layout_kind kind, int64_t heads, int64_t rows, int64_t dim) {
  txattn_layout l;
  if (kind == TX_LAYOUT_INTERLEAVED) {
    l.row = heads * dim;
    l.head = dim;
  } else {
    l.row = dim;
    l.head = rows * dim;
  }
  l.batch = heads * rows * dim;
  return l;
}

/* Sizes in double first: a shape a user typed must not wrap around in size_t. */
static void *alloc_tensor(int64_t batch, int64_t heads, int64_t rows, int64_t dim, txattn_dtype t,
                          size_t *len) {
  double n = (double)batch * (double)heads * (double)rows * (double)dim;
  if (n > (double)(SIZE_MAX / 8)) return NULL;
  *len = (size_t)n;
  return tx_alloc_big((size_t)txattn_dtype_bytes(t, (int64_t)*len));
}

/* T5's relative_position_bucket (transformers' modeling_t5), for relative = key - query. */
static int64_t t5_bucket(int64_t relative, int bidirectional) {
  int64_t buckets = 32, ret = 0, n = -relative;
  const int64_t max_distance = 128;
  if (bidirectional) {
    buckets /= 2;
    if (n < 0) ret += buckets;
    n = n < 0 ? -n : n;
  } else if (n < 0) {
    n = 0;
  }
  const int64_t exact = buckets / 2;
  if (n < exact) return ret + n;
  int64_t large =
      exact + (int64_t)(log((double)n / (double)exact) / log((double)max_distance / (double)exact) *
                        (double)(buckets - exact));
  return ret + (large < buckets - 1 ? large : buckets - 1);
}

void *tx_mask_tensor_make(const txattn_problem *p, txattn_mask_layout *l) {
  size_t n_docs;
  const int64_t *doc_lens = tx_doc_lens(&n_docs);
  const int64_t nq = p->n_q, nkv = p->n_kv, shift = nkv - nq;
  if (p->mask_tensor == TXATTN_MASK_TENSOR_BOOL && n_docs > 0) {
    unsigned char *m = malloc((size_t)(nq * nkv));
    int64_t *doc = malloc((size_t)nkv * sizeof *doc);
    if (!m || !doc) {
      free(m);
      free(doc);
      return NULL;
    }
    for (int64_t j = 0, d = 0, left = doc_lens[0]; j < nkv; j++, left--) {
      if (left == 0) left = doc_lens[++d % (int64_t)n_docs];
      doc[j] = d;
    }
    for (int64_t i = 0; i < nq; i++)
      for (int64_t j = 0, pos = i + shift; j < nkv; j++)
        m[i * nkv + j] = pos >= 0 && j <= pos && doc[j] == doc[pos < nkv ? pos : nkv - 1];
    free(doc);
    *l = (txattn_mask_layout){0, 0, nkv, 1};
    return m;
  }
  if (p->mask_tensor != TXATTN_MASK_TENSOR_ADDITIVE) return NULL;
  const size_t esz = txattn_dtype_size(p->mask_type);
  unsigned char *m = malloc((size_t)(p->heads_q * nq * nkv) * esz);
  if (!m) return NULL;
  float table[32];
  uint64_t state = UINT64_C(0x7435);
  for (int64_t h = 0; h < p->heads_q; h++) {
    for (int k = 0; k < 32; k++) { /* Box-Muller from splitmix64, one value per pair */
      uint64_t z = (state += UINT64_C(0x9E3779B97F4A7C15));
      z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
      z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
      z ^= z >> 31;
      double u1 = ((double)(z >> 11) + 1.0) * 0x1p-53, u2 = (double)(z & 0x7FF) / 2048.0;
      table[k] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    for (int64_t i = 0; i < nq; i++)
      for (int64_t j = 0; j < nkv; j++)
        tx_elem_set(m, p->mask_type, (size_t)((h * nq + i) * nkv + j),
                    table[t5_bucket(j - (i + shift), p->mask != TXATTN_MASK_CAUSAL)]);
  }
  *l = (txattn_mask_layout){0, nq * nkv, nkv, 1};
  return m;
}

int tx_buffers_alloc(tx_buffers *b, const txattn_problem *p, tx_layout_kind kind, int with_ref,
                     char *err, size_t err_size) {
  memset(b, 0, sizeof *b);
  b->p = *p;
  b->kind = kind;
  b->lse_ref_bound[0] = b->lse_ref_bound[1] = b->v_max_abs = NAN; /* until tx_buffers_reference */
  b->q = alloc_tensor(p->batch, p->heads_q, p->n_q, p->d_qk, p->q_type, &b->q_len);
  b->k = alloc_tensor(p->batch, p->heads_kv, p->n_kv, p->d_qk, p->k_type, &b->k_len);
  b->v = alloc_tensor(p->batch, p->heads_kv, p->n_kv, p->d_v, p->v_type, &b->v_len);
  b->o = alloc_tensor(p->batch, p->heads_q, p->n_q, p->d_v, p->o_type, &b->o_len);
  size_t ref_len = 0;
  if (with_ref) b->o_ref = alloc_tensor(p->batch, p->heads_q, p->n_q, p->d_v, p->o_type, &ref_len);
  if (!b->q || !b->k || !b->v || !b->o || (with_ref && !b->o_ref)) {
    double o_bytes = (double)b->o_len * (double)txattn_dtype_size(p->o_type);
    double mb = 1e-6 * (tx_buffers_bytes(p) + (with_ref ? o_bytes : 0));
    snprintf(err, err_size, "cannot allocate the tensors (about %.0f MB)", mb);
    tx_buffers_free(b);
    return -1;
  }
  b->q_str = strides(kind, p->heads_q, p->n_q, p->d_qk);
  b->k_str = strides(kind, p->heads_kv, p->n_kv, p->d_qk);
  b->v_str = strides(kind, p->heads_kv, p->n_kv, p->d_v);
  b->o_str = strides(kind, p->heads_q, p->n_q, p->d_v);
  if (p->alibi || p->sinks) {
    b->slopes = calloc((size_t)p->heads_q, sizeof *b->slopes);
    b->sinks = calloc((size_t)p->heads_q, sizeof *b->sinks);
    if (!b->slopes || !b->sinks || txattn_alibi_slopes(p->heads_q, 8.0f, b->slopes) != TXATTN_OK) {
      snprintf(err, err_size, "cannot allocate the slopes and sink logits of %lld heads",
               (long long)p->heads_q);
      tx_buffers_free(b);
      return -1;
    }
  }
  txattn_mask_layout ml = {0, 0, 0, 0};
  if (p->mask_tensor != TXATTN_MASK_TENSOR_NONE && !(b->mask = tx_mask_tensor_make(p, &ml))) {
    snprintf(err, err_size, "cannot make the mask tensor (%lld x %lld elements)", (long long)p->n_q,
             (long long)p->n_kv);
    tx_buffers_free(b);
    return -1;
  }
  const int fp8k = p->k_type == TXATTN_DTYPE_E4M3 || p->k_type == TXATTN_DTYPE_E5M2,
            fp8v = p->v_type == TXATTN_DTYPE_E4M3 || p->v_type == TXATTN_DTYPE_E5M2;
  if ((fp8k || fp8v) && !(b->kv_scales = malloc((size_t)p->heads_kv * sizeof *b->kv_scales))) {
    snprintf(err, err_size, "cannot allocate the fp8 scales");
    tx_buffers_free(b);
    return -1;
  }
  for (int64_t h = 0; (fp8k || fp8v) && h < p->heads_kv; h++) b->kv_scales[h] = 1.0f;
  b->t = (txattn_tensors){.q_data = b->q,
                          .k_data = b->k,
                          .v_data = b->v,
                          .o_data = b->o,
                          .struct_size = sizeof b->t,
                          .alibi_slopes = p->alibi ? b->slopes : NULL,
                          .sinks = p->sinks ? b->sinks : NULL,
                          .mask = b->mask,
                          .mask_layout = ml,
                          .k_scale = fp8k ? b->kv_scales : NULL,
                          .v_scale = fp8v ? b->kv_scales : NULL};
  if (kind != TX_LAYOUT_CONTIGUOUS) { /* contiguous stays all-zero: the default users rely on */
    b->t.q_layout = b->q_str;
    b->t.k_layout = b->k_str;
    b->t.v_layout = b->v_str;
    b->t.o_layout = b->o_str;
  }
  b->t_ref = b->t;
  b->t_ref.o_data = b->o_ref;
  return 0;
}

/* splitmix64: tiny, and the same sequence on every platform, so a failing shape can be re-run. */
static uint64_t next_u64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static double uniform_open0(uint64_t *state) { /* in (0, 1], so log() below is finite */
  return ((double)(next_u64(state) >> 11) + 1.0) * 0x1p-53;
}

/* The fp32 sequence is the same for every type (the 16-bit tensors hold its values rounded), so
   a shape gives the same inputs, as nearly as the type allows, whatever the types. */
static void fill_normal(void *x, txattn_dtype t, size_t n, uint64_t *state, float scale) {
  const double two_pi = 6.283185307179586;
  float *f = txattn_dtype_block(t) == 32 ? malloc(n * sizeof *f) : NULL;
  if (f) { /* whole blocks, quantised as ggml does */
    fill_normal(f, TXATTN_DTYPE_F32, n, state, scale);
    txattn_convert(f, TXATTN_DTYPE_F32, x, t, (int64_t)n, 1.0f);
    free(f);
    return;
  }
  for (size_t i = 0; i < n; i += 2) { /* Box-Muller gives two values per pair of uniforms */
    double r = sqrt(-2.0 * log(uniform_open0(state))), a = two_pi * uniform_open0(state);
    tx_elem_set(x, t, i, scale * (float)(r * cos(a)));
    if (i + 1 < n) tx_elem_set(x, t, i + 1, scale * (float)(r * sin(a)));
  }
}

void tx_buffers_fill(tx_buffers *b, uint64_t seed, float scale) {
  uint64_t state = seed;
  fill_normal(b->q, b->p.q_type, b->q_len, &state, scale);
  fill_normal(b->k, b->p.k_type, b->k_len, &state, scale);
  fill_normal(b->v, b->p.v_type, b->v_len, &state, scale);
  if (b->p.sinks) fill_normal(b->sinks, TXATTN_DTYPE_F32, (size_t)b->p.heads_q, &state, 2.0f);
}

void tx_buffers_free(tx_buffers *b) {
  free(b->lse);
  free(b->lse_ref);
  free(b->kv_lens);
  free(b->q_lens);
  free(b->q);
  free(b->k);
  free(b->v);
  free(b->o);
  free(b->o_ref);
  free(b->slopes);
  free(b->sinks);
  free(b->mask);
  free(b->kv_scales);
  free(b->k_pool);
  free(b->v_pool);
  free(b->table);
  free(b->q_offsets);
  memset(b, 0, sizeof *b);
}

int tx_buffers_page(tx_buffers *b, uint64_t seed, char *err, size_t err_size) {
  const txattn_problem *p = &b->p;
  if (p->packed) {
    if (b->kind != TX_LAYOUT_INTERLEAVED) {
      snprintf(err, err_size, "packed rows need the interleaved [b,n,h,d] buffers");
      return -1;
    }
    if (!(b->q_offsets = malloc((size_t)(p->batch + 1) * sizeof *b->q_offsets))) {
      snprintf(err, err_size, "cannot allocate q_offsets");
      return -1;
    }
    b->q_offsets[0] = 0; /* each sequence's rows (q_lens, else n_q) one after another */
    for (int64_t i = 0; i < p->batch; i++)
      b->q_offsets[i + 1] = b->q_offsets[i] + (b->q_lens ? b->q_lens[i] : p->n_q);
    b->t.q_offsets = b->t_ref.q_offsets = b->q_offsets;
  }
  if (!p->page_size) return 0;
  const int64_t P = p->page_size, per = p->max_pages, n = p->n_pages;
  size_t kl = 0, vl = 0;
  b->k_pool = alloc_tensor(n, p->heads_kv, P, p->d_qk, p->k_type, &kl);
  b->v_pool = alloc_tensor(n, p->heads_kv, P, p->d_v, p->v_type, &vl);
  b->table = malloc((size_t)n * sizeof *b->table);
  if (!b->k_pool || !b->v_pool || !b->table || n != p->batch * per) {
    snprintf(err, err_size, "cannot allocate the page pools of %lld pages", (long long)n);
    return -1;
  }
  for (int64_t i = 0; i < n; i++) b->table[i] = (int32_t)i;
  uint64_t st = seed;
  for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = (int64_t)(next_u64(&st) % (uint64_t)(i + 1));
    int32_t x = b->table[i];
    b->table[i] = b->table[j];
    b->table[j] = x;
  }
  const txattn_dtype kt = p->k_type, vt = p->v_type;
  for (int64_t bb = 0; bb < p->batch; bb++)
    for (int64_t h = 0; h < p->heads_kv; h++)
      for (int64_t j = 0; j < p->n_kv; j++) { /* offsets in bytes: every row starts a block */
        const int64_t page = b->table[bb * per + j / P], r = j % P;
        memcpy((char *)b->k_pool +
                   txattn_dtype_bytes(kt, ((page * p->heads_kv + h) * P + r) * p->d_qk),
               (const char *)b->k +
                   txattn_dtype_bytes(kt, (int64_t)elem_index(&b->k_str, bb, h, j, 0)),
               (size_t)txattn_dtype_bytes(kt, p->d_qk));
        memcpy((char *)b->v_pool +
                   txattn_dtype_bytes(vt, ((page * p->heads_kv + h) * P + r) * p->d_v),
               (const char *)b->v +
                   txattn_dtype_bytes(vt, (int64_t)elem_index(&b->v_str, bb, h, j, 0)),
               (size_t)txattn_dtype_bytes(vt, p->d_v));
      }
  b->t.k_data = b->t_ref.k_data = b->k_pool;
  b->t.v_data = b->t_ref.v_data = b->v_pool;
  b->t.k_layout = b->t.v_layout = (txattn_layout){0, 0, 0};
  b->t_ref.k_layout = b->t_ref.v_layout = (txattn_layout){0, 0, 0};
  b->t.block_table = b->t_ref.block_table = b->table;
  return 0;
}

/* The largest |V| over the keys of each sequence (NaN skipped), 0 if none. */
static double max_abs_v(const tx_buffers *b) {
  const txattn_problem *p = &b->p;
  double m = 0;
  for (int64_t bb = 0; bb < p->batch; bb++)
    for (int64_t h = 0, n_kv = tx_buffers_sequence(b, bb).n_kv; h < p->heads_kv; h++)
      for (int64_t j = 0; j < n_kv; j++)
        for (int64_t c = 0; c < p->d_v; c++) {
          double x = fabs((double)tx_elem_at(b->v, p->v_type, &b->v_str, bb, h, j, c));
          if (x > m) m = x; /* NaN compares false: skipped */
        }
  return m;
}

txattn_status tx_buffers_reference(tx_buffers *b) {
  if (b->lse_ref) /* a value no row's lse has: one the reference leaves unwritten fails */
    tx_fill_value(b->lse_ref, TXATTN_DTYPE_F32, b->lse_len, 1.0e30f);
  b->lse_ref_bound[0] = b->lse_ref_bound[1] = NAN;
  b->v_max_abs = max_abs_v(b);
  txattn_status s = txattn_reference(&b->p, &b->t_ref);
  if (s == TXATTN_OK) s = txattn_error_bound(&b->p, &b->t_ref, &b->ref_bound);
  if (s == TXATTN_OK && b->p.lse)
    s = txattn_lse_error_bound(&b->p, &b->t_ref, &b->lse_ref_bound[0], &b->lse_ref_bound[1]);
  return s;
}

int tx_buffers_serving(tx_buffers *b, int lse, const int64_t *kv_lens, size_t n_seq, char *err,
                       size_t err_size) {
  const txattn_problem *p = &b->p;
  b->p.struct_size = sizeof b->p;
  b->t.struct_size = b->t_ref.struct_size = sizeof b->t;
  b->p.lse = lse;
  b->p.ragged = kv_lens != NULL;
  if (kv_lens) {
    if ((int64_t)n_seq != p->batch || !(b->kv_lens = malloc(n_seq * sizeof *b->kv_lens))) {
      snprintf(err, err_size, "cannot hold %zu kv lengths for a batch of %lld", n_seq,
               (long long)p->batch);
      return -1;
    }
    memcpy(b->kv_lens, kv_lens, n_seq * sizeof *kv_lens);
    b->t.kv_lens = b->t_ref.kv_lens = b->kv_lens;
  }
  if (!lse) return 0;
  b->lse = alloc_tensor(p->batch, p->heads_q, p->n_q, 1, TXATTN_DTYPE_F32, &b->lse_len);
  size_t len = 0;
  if (b->o_ref) b->lse_ref = alloc_tensor(p->batch, p->heads_q, p->n_q, 1, TXATTN_DTYPE_F32, &len);
  if (!b->lse || (b->o_ref && !b->lse_ref)) {
    snprintf(err, err_size, "cannot allocate the log-sum-exp (%zu floats)", b->lse_len);
    return -1;
  }
  b->lse_str = strides(b->kind, p->heads_q, p->n_q, 1);
  b->t.lse = b->lse;
  b->t_ref.lse = b->lse_ref;
  if (b->kind != TX_LAYOUT_CONTIGUOUS) b->t.lse_layout = b->t_ref.lse_layout = b->lse_str;
  return 0;
}

txattn_problem tx_buffers_sequence(const tx_buffers *b, int64_t batch) {
  txattn_problem s = b->p;
  if (b->p.ragged && b->kv_lens) s.n_kv = b->kv_lens[batch];
  if (b->q_lens) s.n_q = b->q_lens[batch];
  return s;
}

int tx_buffers_q_lens(tx_buffers *b, const int64_t *q_lens, size_t n_seq, char *err,
                      size_t err_size) {
  if (!b->p.ragged || (int64_t)n_seq != b->p.batch ||
      !(b->q_lens = malloc(n_seq * sizeof *b->q_lens))) {
    snprintf(err, err_size, "cannot hold %zu query lengths for a ragged batch of %lld", n_seq,
             (long long)b->p.batch);
    return -1;
  }
  memcpy(b->q_lens, q_lens, n_seq * sizeof *q_lens);
  if (!b->p.packed) b->t.q_lens = b->t_ref.q_lens = b->q_lens; /* packed: q_offsets say it */
  return 0;
}

void tx_buffers_row_at(const tx_buffers *b, int64_t bb, int64_t i, int64_t *batch, int64_t *row) {
  const int packed = b->p.packed && b->q_offsets;
  *batch = packed ? 0 : bb;
  *row = packed ? b->q_offsets[bb] + i : i;
}

void tx_buffers_fill_padding(tx_buffers *b, float value) {
  const txattn_problem *p = &b->p;
  for (int64_t bb = 0; b->kv_lens && bb < p->batch; bb++)
    for (int64_t h = 0; h < p->heads_kv; h++)
      for (int64_t j = b->kv_lens[bb]; j < p->n_kv; j++) {
        for (int64_t c = 0; c < p->d_qk; c++)
          tx_elem_put(b->k, p->k_type, &b->k_str, bb, h, j, c, value);
        for (int64_t c = 0; c < p->d_v; c++)
          tx_elem_put(b->v, p->v_type, &b->v_str, bb, h, j, c, value);
      }
}
