/* SPDX-License-Identifier: MIT */
/* txtune profile: the reference on sampled rows of a timed point (prof_rows), against which every
   timed call is checked; their inputs change and their outputs are poisoned before each call. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "buffers.h"
#include "profile.h"
#include "txattn/plugin.h"

#define MAX_ROWS 32

struct prof_rows {
  txattn_problem p;
  int n;
  int64_t b[MAX_ROWS], h[MAX_ROWS], i[MAX_ROWS], lo[MAX_ROWS], hi[MAX_ROWS];
  /* the rows' queries as the point had them (n rows of d_qk values); their other values are the
     negation (exact in every type) */
  float *q;
  int turned;    /* the queries in the tensors now are the negated ones */
  float *ref[2]; /* per value of the queries: n rows of d_v values, as o's type holds them */
  double bound;
};

/* The contiguous layout of a tensor of `heads` heads of `rows` rows of `dim` values. */
static txattn_layout contiguous(int64_t heads, int64_t rows, int64_t dim) {
  return (txattn_layout){heads * rows * dim, rows * dim, dim};
}

/* The largest finite |v| of rows lo..hi of head (b, hk) of V. */
static double max_abs_v_rows(const txattn_problem *p, const txattn_tensors *t, int64_t b,
                             int64_t hk, int64_t lo, int64_t hi) {
  txattn_layout l = contiguous(p->heads_kv, p->n_kv, p->d_v);
  double m = 0;
  for (int64_t j = lo; j < hi; j++)
    for (int64_t x = 0; x < p->d_v; x++) {
      double a = fabs((double)tx_elem_at(t->v_data, p->v_type, &l, b, hk, j, x));
      if (isfinite(a) && a > m) m = a;
    }
  return m;
}

/* Sequence b's keys: its kv_len in a ragged point, else n_kv. */
static int64_t keys_of(const txattn_problem *p, const txattn_tensors *t, int64_t b) {
  return p->ragged && t->kv_lens ? t->kv_lens[b] : p->n_kv;
}

/* The largest finite |v| of the point's V (of each sequence's keys). */
static double max_abs_v(const txattn_problem *p, const txattn_tensors *t) {
  double m = 0;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t hk = 0; hk < p->heads_kv; hk++)
      m = fmax(m, max_abs_v_rows(p, t, b, hk, 0, keys_of(p, t, b)));
  return m;
}

/* Row k: row i of head h in batch b, spread over the point: the first row, the last, and the
   others at a stride prime to the rows (the boundaries of no tile in particular). */
static void pick_row(const txattn_problem *p, int k, int n, int64_t *b, int64_t *h, int64_t *i) {
  int64_t heads = p->batch * p->heads_q, rows = p->n_q;
  int64_t at = k == 0 ? 0 : k == n - 1 ? heads * rows - 1 : (int64_t)k * 7919 % (heads * rows);
  *b = at / rows / p->heads_q;
  *h = at / rows % p->heads_q;
  *i = k == 0 ? 0 : k == n - 1 ? rows - 1 : (k * 4001 + at) % rows;
}

/* Writes the sampled rows' queries into t: the point's (sign 1) or their negation (-1). */
static void set_queries(const prof_rows *r, const txattn_tensors *t, float sign) {
  const txattn_problem *p = &r->p;
  txattn_layout l = contiguous(p->heads_q, p->n_q, p->d_qk);
  for (int k = 0; k < r->n; k++)
    for (int64_t x = 0; x < p->d_qk; x++)
      tx_elem_put((void *)t->q_data, p->q_type, &l, r->b[k], r->h[k], r->i[k], x,
                  sign * r->q[(size_t)k * (size_t)p->d_qk + (size_t)x]);
}

/* The reference of sampled row k as the queries in t are now, into ref (d_v values as o's type
   holds them), and its bound over max|V| of its keys into *ratio (kept if larger); o is a row of
   scratch. Returns the reference's status. */
static txattn_status reference_row(const prof_rows *r, const txattn_tensors *t, int k, float *ref,
                                   void *o, double *ratio) {
  const txattn_problem *p = &r->p;
  const int64_t b = r->b[k], h = r->h[k], i = r->i[k], hk = h / (p->heads_q / p->heads_kv);
  if (r->hi[k] <= r->lo[k]) { /* no key: exact zeros */
    for (int64_t x = 0; x < p->d_v; x++) ref[x] = 0.0f;
    return TXATTN_OK;
  }
  /* one query row seeing keys lo..hi-1, as the last row of a window problem of hi keys */
  txattn_problem one = *p;
  one.ragged = one.lse = 0;
  one.batch = one.heads_q = one.heads_kv = one.n_q = 1;
  one.n_kv = r->hi[k];
  one.mask = TXATTN_MASK_WINDOW;
  one.window_left = r->hi[k] - 1 - r->lo[k];
  one.window_right = 0;
  txattn_tensors ot = TXATTN_TENSORS_INIT;
  ot.q_data = (const char *)t->q_data +
              txattn_dtype_bytes(p->q_type, ((b * p->heads_q + h) * p->n_q + i) * p->d_qk);
  ot.k_data = (const char *)t->k_data +
              txattn_dtype_bytes(p->k_type, (b * p->heads_kv + hk) * p->n_kv * p->d_qk);
  ot.v_data = (const char *)t->v_data +
              txattn_dtype_bytes(p->v_type, (b * p->heads_kv + hk) * p->n_kv * p->d_v);
  ot.o_data = o;
  if (p->mask_tensor) { /* the row's mask elements, key j at j x key */
    const txattn_mask_layout *l = &t->mask_layout;
    size_t esz = p->mask_tensor == TXATTN_MASK_TENSOR_BOOL ? 1 : txattn_dtype_size(p->mask_type);
    ot.struct_size = sizeof ot;
    ot.mask = (const char *)t->mask + esz * (size_t)(b * l->batch + h * l->head + i * l->row);
    ot.mask_layout = (txattn_mask_layout){0, 0, 0, l->key};
  }
  double bound = 0;
  txattn_status s = txattn_reference(&one, &ot);
  if (s == TXATTN_OK) s = txattn_error_bound(&one, &ot, &bound);
  if (s != TXATTN_OK) return s;
  for (int64_t x = 0; x < p->d_v; x++) ref[x] = tx_elem_get(o, p->o_type, (size_t)x);
  double v = max_abs_v_rows(p, t, b, hk, r->lo[k], r->hi[k]);
  if (v > 0 && bound / v > *ratio) *ratio = bound / v;
  return TXATTN_OK;
}

prof_rows *prof_rows_new(const txattn_problem *p, const txattn_tensors *t, int rows, char *why,
                         size_t why_size) {
  prof_rows *r = calloc(1, sizeof *r);
  if (rows > MAX_ROWS) rows = MAX_ROWS;
  size_t n_ref = (size_t)(rows > 0 ? rows : 0) * (size_t)p->d_v;
  void *o = malloc((size_t)p->d_v * 4);
  if (!r || rows < 1 || !o || !(r->ref[0] = malloc(2 * n_ref * sizeof(float))) ||
      !(r->q = malloc((size_t)rows * (size_t)p->d_qk * sizeof(float)))) {
    snprintf(why, why_size, "out of memory");
    free(o);
    prof_rows_free(r);
    return NULL;
  }
  r->ref[1] = r->ref[0] + n_ref;
  r->p = *p;
  r->n = rows;
  const txattn_layout ql = contiguous(p->heads_q, p->n_q, p->d_qk);
  for (int k = 0; k < rows; k++) {
    pick_row(p, k, rows, &r->b[k], &r->h[k], &r->i[k]);
    txattn_problem seq = *p; /* a ragged point's sequence as a problem of its own keys */
    seq.n_kv = keys_of(p, t, r->b[k]);
    seq.ragged = 0;
    txattn_visible_range(&seq, r->i[k], &r->lo[k], &r->hi[k]);
    for (int64_t x = 0; x < p->d_qk; x++)
      r->q[(size_t)k * (size_t)p->d_qk + (size_t)x] =
          tx_elem_at(t->q_data, p->q_type, &ql, r->b[k], r->h[k], r->i[k], x);
  }
  double ratio = 0; /* the largest bound over max|V| of a row, of either queries */
  txattn_status s = TXATTN_OK;
  for (int v = 0; v < 2 && s == TXATTN_OK; v++) {
    set_queries(r, t, v ? -1.0f : 1.0f);
    for (int k = 0; k < rows && s == TXATTN_OK; k++)
      s = reference_row(r, t, k, r->ref[v] + (size_t)k * (size_t)p->d_v, o, &ratio);
  }
  set_queries(r, t, 1.0f);
  free(o);
  if (s != TXATTN_OK) {
    snprintf(why, why_size, "the reference of a sampled row failed: %s: %s", txattn_status_name(s),
             txattn_last_error());
    prof_rows_free(r);
    return NULL;
  }
  /* the bound holds the whole output to max|V| of the point (txattn.h), not of one row's keys */
  r->bound = ratio * max_abs_v(p, t);
  return r;
}

void prof_rows_free(prof_rows *r) {
  if (!r) return;
  free(r->ref[0]);
  free(r->q);
  free(r);
}

void prof_rows_turn(prof_rows *r, const txattn_tensors *t) {
  const txattn_problem *p = &r->p;
  txattn_layout l = contiguous(p->heads_q, p->n_q, p->d_v);
  r->turned = !r->turned;
  set_queries(r, t, r->turned ? -1.0f : 1.0f);
  for (int k = 0; k < r->n; k++)
    for (int64_t x = 0; x < p->d_v; x++)
      tx_elem_put(t->o_data, p->o_type, &l, r->b[k], r->h[k], r->i[k], x, TX_POISON);
}

int prof_rows_check(const prof_rows *r, const txattn_tensors *t, double *err, char *why,
                    size_t why_size) {
  const txattn_problem *p = &r->p;
  txattn_layout l = contiguous(p->heads_q, p->n_q, p->d_v);
  double worst = 0;
  int bad_k = -1;
  int64_t bad_x = 0;
  why[0] = '\0';
  const float *refs = r->ref[r->turned];
  for (int k = 0; k < r->n; k++) {
    const float *ref = refs + (size_t)k * (size_t)p->d_v;
    for (int64_t x = 0; x < p->d_v; x++) {
      float o = tx_elem_at(t->o_data, p->o_type, &l, r->b[k], r->h[k], r->i[k], x);
      double d = fabs((double)o - (double)ref[x]);
      if (r->hi[k] <= r->lo[k] && !(o == 0.0f && !signbit(o))) d = NAN; /* must be +0.0 */
      if (!isfinite(ref[x]) && isnan(ref[x]) == isnan(o) && ref[x] == o) d = 0;
      if (!(d <= worst)) { /* NaN included */
        worst = d;
        bad_k = k;
        bad_x = x;
        if (isnan(d)) break;
      }
    }
    if (isnan(worst)) break;
  }
  *err = isnan(worst)   ? NAN
         : r->bound > 0 ? worst / r->bound * TXATTN_EXACT_TOLERANCE
                        : (worst > 0 ? INFINITY : 0);
  int pass = !isnan(worst) && worst <= r->bound;
  if (!pass && bad_k >= 0)
    snprintf(
        why, why_size,
        "%s at n = %lld (%d sampled rows), batch %lld head %lld row %lld column %lld: %.9g "
        "where the reference has %.9g",
        isnan(worst) ? "not finite or not +0" : "error above the bound", (long long)p->n_kv, r->n,
        (long long)r->b[bad_k], (long long)r->h[bad_k], (long long)r->i[bad_k], (long long)bad_x,
        (double)tx_elem_at(t->o_data, p->o_type, &l, r->b[bad_k], r->h[bad_k], r->i[bad_k], bad_x),
        (double)refs[(size_t)bad_k * (size_t)p->d_v + (size_t)bad_x]);
  return pass;
}
