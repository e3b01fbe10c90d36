#include "buffers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static float *alloc_tensor(int64_t batch, int64_t heads, int64_t rows, int64_t dim, size_t *len) {
  double n = (double)batch * (double)heads * (double)rows * (double)dim;
  if (n > (double)(SIZE_MAX / 8)) return NULL;
  *len = (size_t)n;
  size_t bytes = (*len * sizeof(float) + 63) / 64 * 64;
  return aligned_alloc(64, bytes ? bytes : 64);
}

int tx_buffers_alloc(tx_buffers *b, const txattn_problem *p, tx_layout_kind kind, int with_ref,
                     char *err, size_t err_size) {
  memset(b, 0, sizeof *b);
  b->p = *p;
  b->kind = kind;
  b->q = alloc_tensor(p->batch, p->heads_q, p->n_q, p->d_qk, &b->q_len);
  b->k = alloc_tensor(p->batch, p->heads_kv, p->n_kv, p->d_qk, &b->k_len);
  b->v = alloc_tensor(p->batch, p->heads_kv, p->n_kv, p->d_v, &b->v_len);
  b->o = alloc_tensor(p->batch, p->heads_q, p->n_q, p->d_v, &b->o_len);
  size_t ref_len = 0;
  if (with_ref) b->o_ref = alloc_tensor(p->batch, p->heads_q, p->n_q, p->d_v, &ref_len);
  if (!b->q || !b->k || !b->v || !b->o || (with_ref && !b->o_ref)) {
    double mb = 4e-6 * (double)(b->q_len + b->k_len + b->v_len + (with_ref ? 2 : 1) * b->o_len);
    snprintf(err, err_size, "cannot allocate the tensors (about %.0f MB)", mb);
    tx_buffers_free(b);
    return -1;
  }
  b->q_str = strides(kind, p->heads_q, p->n_q, p->d_qk);
  b->k_str = strides(kind, p->heads_kv, p->n_kv, p->d_qk);
  b->v_str = strides(kind, p->heads_kv, p->n_kv, p->d_v);
  b->o_str = strides(kind, p->heads_q, p->n_q, p->d_v);
  b->t = (txattn_tensors){.q = b->q, .k = b->k, .v = b->v, .o = b->o};
  if (kind != TX_LAYOUT_CONTIGUOUS) { /* contiguous stays all-zero: the default users rely on */
    b->t.q_layout = b->q_str;
    b->t.k_layout = b->k_str;
    b->t.v_layout = b->v_str;
    b->t.o_layout = b->o_str;
  }
  b->t_ref = b->t;
  b->t_ref.o = b->o_ref;
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

static void fill_normal(float *x, size_t n, uint64_t *state, float scale) {
  const double two_pi = 6.283185307179586;
  for (size_t i = 0; i < n; i += 2) { /* Box-Muller gives two values per pair of uniforms */
    double r = sqrt(-2.0 * log(uniform_open0(state))), a = two_pi * uniform_open0(state);
    x[i] = scale * (float)(r * cos(a));
    if (i + 1 < n) x[i + 1] = scale * (float)(r * sin(a));
  }
}

void tx_buffers_fill(tx_buffers *b, uint64_t seed, float scale) {
  uint64_t state = seed;
  fill_normal(b->q, b->q_len, &state, scale);
  fill_normal(b->k, b->k_len, &state, scale);
  fill_normal(b->v, b->v_len, &state, scale);
}

void tx_fill_value(float *x, size_t n, float value) {
  for (size_t i = 0; i < n; i++) x[i] = value;
}

void tx_buffers_free(tx_buffers *b) {
  free(b->q);
  free(b->k);
  free(b->v);
  free(b->o);
  free(b->o_ref);
  memset(b, 0, sizeof *b);
}

txattn_status tx_buffers_reference(tx_buffers *b) {
  txattn_status s = txattn_reference(&b->p, &b->t_ref);
  return s == TXATTN_OK ? txattn_error_bound(&b->p, &b->t_ref, &b->ref_bound) : s;
}
