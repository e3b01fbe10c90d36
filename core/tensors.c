/* SPDX-License-Identifier: MIT */
/* txattn_tensors: pointers, strides, address arithmetic and overlap, checked before any kernel
 * runs. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>

#include "dtype.h"
#include "error.h"
#include "problem.h"
#include "struct_size.h"
#include "tensors.h"
#include "txattn/plugin.h"

#define WHERE(t) ((t)->where != NULL ? (t)->where : "txattn_tensors.")

static const char *const stride_names[3] = {"batch", "head", "row"};

static int64_t *stride_of(txattn_layout *l, int i) {
  return i == 0 ? &l->batch : i == 1 ? &l->head : &l->row;
}

static txattn_status check_strides(txattn__tensor *t) {
  txattn_layout *l = t->layout;
  if (l->batch == 0 && l->head == 0 &&
      l->row == 0) { /* contiguous; sizes were checked by resolve */
    l->row = t->count[3];
    l->head = t->count[2] * l->row;
    l->batch = t->count[1] * l->head;
  }
  for (int i = 0; i < 3; i++) {
    TXATTN_RETURN_IF(*stride_of(l, i) < 0, TXATTN_E_INVALID,
                     "%s%s_layout.%s = %" PRId64 " must be >= 0", WHERE(t), t->name,
                     stride_names[i], *stride_of(l, i));
    /* the limit of problem.c: a stride of at most 2^56 bytes, so that index x stride fits */
    TXATTN_RETURN_IF(*stride_of(l, i) > TXATTN__MAX_TENSOR_BYTES / t->elem, TXATTN_E_INVALID,
                     "%s%s_layout.%s = %" PRId64 " is above the limit of 2^56 bytes (%" PRId64
                     " elements): the offsets would overflow",
                     WHERE(t), t->name, stride_names[i], *stride_of(l, i),
                     TXATTN__MAX_TENSOR_BYTES / t->elem);
  }
  return TXATTN_OK;
}

/* span = 1 + sum over dims of (count - 1) * stride, with every step checked, and the byte range
   must not wrap around the address space. */
static txattn_status compute_span(txattn__tensor *t) {
  int64_t span = t->count[3], term, bytes;
  int over = 0;
  for (int i = 0; i < 3; i++) {
    over |= __builtin_mul_overflow(t->count[i] - 1, *stride_of(t->layout, i), &term);
    over |= __builtin_add_overflow(span, term, &span);
  }
  over |= __builtin_mul_overflow(span, t->elem, &bytes);
  TXATTN_RETURN_IF(over || bytes > TXATTN__MAX_TENSOR_BYTES || (uint64_t)bytes > SIZE_MAX,
                   TXATTN_E_INVALID,
                   "%s%s_layout: the offset of the last element of %s overflows int64 "
                   "or exceeds the limit of 2^56 bytes (strides too large for the problem's sizes)",
                   WHERE(t), t->name, t->name);
  TXATTN_RETURN_IF((uintptr_t)t->base > UINTPTR_MAX - (uint64_t)bytes, TXATTN_E_INVALID,
                   "%s%s: its %" PRId64 " bytes would wrap around the address space", WHERE(t),
                   t->name, bytes);
  t->span = span;
  return TXATTN_OK;
}

txattn_status txattn__tensor_check(txattn__tensor *t) {
  TXATTN_RETURN_IF(t->base == NULL, TXATTN_E_INVALID, "%s%s is NULL", WHERE(t), t->name);
  TXATTN_RETURN_IF((uintptr_t)t->base % (uintptr_t)t->elem != 0, TXATTN_E_INVALID,
                   "%s%s = %p is not aligned to its %" PRId64 "-byte elements", WHERE(t), t->name,
                   t->base, t->elem);
  TXATTN_FORWARD_IF_ERROR(check_strides(t));
  return compute_span(t);
}

/* Sort an output's (o's, lse's) dimensions with more than one index by stride: each stride must reach past everything
   the dimensions with smaller strides span, or two (b, h, i, c) would share an address. */
txattn_status txattn__tensor_no_self_alias(const txattn__tensor *o) {
  int64_t stride[4] = {o->layout->batch, o->layout->head, o->layout->row, 1};
  int order[4], n = 0;
  for (int d = 3; d >= 0; d--) { /* element dim first, so it wins ties */
    if (o->count[d] < 2) continue;
    int k = n++;
    for (; k > 0 && stride[order[k - 1]] > stride[d]; k--) order[k] = order[k - 1];
    order[k] = d;
  }
  int64_t extent = 1; /* cannot overflow: it is bounded by the span computed before */
  for (int k = 0; k < n; k++) {
    int d = order[k];
    TXATTN_RETURN_IF(stride[d] < extent, TXATTN_E_INVALID,
                     "%s%s_layout.%s = %" PRId64 " is smaller than %" PRId64
                     ", the span of %s's dimensions with smaller strides: elements of %s would "
                     "overlap (only inputs may alias)",
                     WHERE(o), o->name, stride_names[d], stride[d], extent, o->name, o->name);
    extent += (o->count[d] - 1) * stride[d];
  }
  return TXATTN_OK;
}

int txattn__tensors_overlap(const txattn__tensor *a, const txattn__tensor *b) {
  uintptr_t a0 = (uintptr_t)a->base, b0 = (uintptr_t)b->base;
  uintptr_t a1 = a0 + (uintptr_t)a->span * (uintptr_t)a->elem,
            b1 = b0 + (uintptr_t)b->span * (uintptr_t)b->elem;
  return a0 < b1 && b0 < a1;
}

txattn_status txattn__lens_check(const char *field, const int64_t *lens, int64_t batch, int64_t max,
                                 const char *max_name) {
  for (int64_t b = 0; lens != NULL && b < batch; b++)
    TXATTN_RETURN_IF(lens[b] < 0 || lens[b] > max, TXATTN_E_INVALID,
                     "txattn_tensors.%s[%" PRId64 "] = %" PRId64 " is outside 0..%s = %" PRId64
                     " (sequence %" PRId64 ")",
                     field, b, lens[b], max_name, max, b);
  return TXATTN_OK;
}

txattn_status txattn__head_floats_check(const char *field, const float *x, int64_t heads,
                                        int minus_inf) {
  TXATTN_RETURN_IF(x == NULL, TXATTN_E_INVALID,
                   "txattn_tensors.%s is NULL, but txattn_problem.%s is 1 (a txattn_tensors "
                   "whose struct_size stops before %s has none)",
                   field, minus_inf ? "sinks" : "alibi", field);
  for (int64_t h = 0; h < heads; h++)
    TXATTN_RETURN_IF(!(isfinite(x[h]) || (minus_inf && x[h] == -INFINITY)), TXATTN_E_INVALID,
                     "txattn_tensors.%s[%" PRId64 "] = %g must be finite%s", field, h, (double)x[h],
                     minus_inf ? " or -inf (no sink)" : "");
  return TXATTN_OK;
}

/* The mask tensor: not NULL, aligned, its four strides >= 0 (0 broadcasts) within the limits, its
   span representable, and apart from o and lse (the outputs). Its values are not read here. */
static txattn_status mask_check(const txattn_problem *r, const txattn_tensors *c,
                                const txattn__tensor *o, const txattn__tensor *lse) {
  TXATTN_RETURN_IF(c->mask == NULL, TXATTN_E_INVALID,
                   "txattn_tensors.mask is NULL, but txattn_problem.mask_tensor is %d (a "
                   "txattn_tensors whose struct_size stops before mask has none)",
                   (int)r->mask_tensor);
  int64_t elem =
      r->mask_tensor == TXATTN_MASK_TENSOR_BOOL ? 1 : (int64_t)txattn_dtype_size(r->mask_type);
  TXATTN_RETURN_IF((uintptr_t)c->mask % (uintptr_t)elem != 0, TXATTN_E_INVALID,
                   "txattn_tensors.mask = %p is not aligned to its %" PRId64 "-byte elements",
                   c->mask, elem);
  const txattn_mask_layout *l = &c->mask_layout;
  const int64_t stride[4] = {l->batch, l->head, l->row, l->key};
  const int64_t count[4] = {r->batch, r->heads_q, r->n_q, r->n_kv};
  static const char *const names[4] = {"batch", "head", "row", "key"};
  int64_t span = 1, term, bytes;
  int over = 0;
  for (int i = 0; i < 4; i++) {
    TXATTN_RETURN_IF(stride[i] < 0 || stride[i] > TXATTN__MAX_TENSOR_BYTES / elem, TXATTN_E_INVALID,
                     "txattn_tensors.mask_layout.%s = %" PRId64
                     " must be >= 0 (0 broadcasts) and at most 2^56 bytes",
                     names[i], stride[i]);
    over |= __builtin_mul_overflow(count[i] - 1, stride[i], &term);
    over |= __builtin_add_overflow(span, term, &span);
  }
  over |= __builtin_mul_overflow(span, elem, &bytes);
  TXATTN_RETURN_IF(
      over || bytes > TXATTN__MAX_TENSOR_BYTES ||
          (uintptr_t)c->mask > UINTPTR_MAX - (uint64_t)bytes,
      TXATTN_E_INVALID,
      "txattn_tensors.mask_layout: the offset of the mask's last element overflows "
      "or exceeds the limit of 2^56 bytes (strides too large for the problem's sizes)");
  txattn_layout none = {0, 0, 0};
  txattn__tensor m = {"mask", c->mask, &none, {1, 1, 1, 1}, span, elem, NULL};
  TXATTN_RETURN_IF(txattn__tensors_overlap(o, &m), TXATTN_E_INVALID,
                   "txattn_tensors.o overlaps mask");
  TXATTN_RETURN_IF(lse != NULL && txattn__tensors_overlap(lse, &m), TXATTN_E_INVALID,
                   "txattn_tensors.lse overlaps mask");
  return TXATTN_OK;
}

txattn_status txattn__q_offsets_check(const txattn_problem *r, const txattn_tensors *c,
                                      int64_t *total) {
  const int64_t *off = c->q_offsets;
  TXATTN_RETURN_IF(off == NULL, TXATTN_E_INVALID,
                   "txattn_tensors.q_offsets is NULL, but txattn_problem.packed is 1 (a "
                   "txattn_tensors whose struct_size stops before q_offsets has none)");
  TXATTN_RETURN_IF(c->q_lens != NULL, TXATTN_E_INVALID,
                   "txattn_tensors.q_lens must be NULL when txattn_problem.packed is 1 (q_offsets "
                   "gives each sequence's rows)");
  TXATTN_RETURN_IF(off[0] != 0, TXATTN_E_INVALID,
                   "txattn_tensors.q_offsets[0] = %" PRId64 " must be 0 (a prefix sum, cu_seqlens)",
                   off[0]);
  for (int64_t b = 0; b < r->batch; b++) {
    TXATTN_RETURN_IF(off[b + 1] < off[b], TXATTN_E_INVALID,
                     "txattn_tensors.q_offsets[%" PRId64 "] = %" PRId64
                     " is below q_offsets[%" PRId64 "] = %" PRId64
                     ": the offsets must not decrease (sequence %" PRId64 ")",
                     b + 1, off[b + 1], b, off[b], b);
    TXATTN_RETURN_IF(off[b + 1] - off[b] > r->n_q, TXATTN_E_INVALID,
                     "txattn_tensors.q_offsets[%" PRId64 "] - q_offsets[%" PRId64 "] = %" PRId64
                     " rows of sequence %" PRId64 " exceed txattn_problem.n_q = %" PRId64,
                     b + 1, b, off[b + 1] - off[b], b, r->n_q);
  }
  TXATTN_RETURN_IF(off[r->batch] > TXATTN__MAX_ROWS, TXATTN_E_INVALID,
                   "txattn_tensors.q_offsets[%" PRId64 "] = %" PRId64
                   " rows exceed the limit %" PRId64,
                   r->batch, off[r->batch], TXATTN__MAX_ROWS);
  *total = off[r->batch];
  return TXATTN_OK;
}

/* The block table of a paged problem: each sequence's kv_len fits in max_pages pages, and every
   entry it reads names a page of the pool. */
static txattn_status block_table_check(const txattn_problem *r, const txattn_tensors *c) {
  TXATTN_RETURN_IF(c->block_table == NULL, TXATTN_E_INVALID,
                   "txattn_tensors.block_table is NULL, but txattn_problem.page_size is %" PRId64
                   " (a txattn_tensors whose struct_size stops before block_table has none)",
                   r->page_size);
  for (int64_t b = 0; b < r->batch; b++) {
    const int64_t kv = c->kv_lens ? c->kv_lens[b] : r->n_kv;
    const int64_t need = (kv + r->page_size - 1) / r->page_size;
    TXATTN_RETURN_IF(need > r->max_pages, TXATTN_E_INVALID,
                     "txattn_tensors.block_table: sequence %" PRId64 " has %" PRId64
                     " keys, which need %" PRId64 " pages of %" PRId64
                     ", but its row holds txattn_problem.max_pages = %" PRId64,
                     b, kv, need, r->page_size, r->max_pages);
    const int32_t *row = c->block_table + b * r->max_pages;
    for (int64_t i = 0; i < need; i++)
      TXATTN_RETURN_IF(row[i] < 0 || row[i] >= r->n_pages, TXATTN_E_INVALID,
                       "txattn_tensors.block_table[%" PRId64 " * max_pages + %" PRId64
                       "] = %" PRId32 " is not a page of the pool: 0..n_pages - 1 = %" PRId64
                       " (sequence %" PRId64 ", keys from %" PRId64 ")",
                       b, i, row[i], r->n_pages - 1, b, i * r->page_size);
  }
  return TXATTN_OK;
}

void txattn__packed_layout(txattn_layout *l, int64_t heads, int64_t d) {
  if (l->batch == 0 && l->head == 0 && l->row == 0) {
    l->head = d;
    l->row = heads * d;
  }
  l->batch = 0; /* unused: q_offsets place the sequences */
}

/* A packed tensor's rows as one batch of `rows` (at least one, for the span). */
static void packed_tensor(txattn__tensor *x, int64_t rows) {
  txattn__packed_layout(x->layout, x->count[1], x->count[3]);
  x->count[0] = 1;
  x->count[2] = rows > 0 ? rows : 1;
}

/* A q8_0 or q4_0 tensor (its layout in values, made explicit here when all zero) as the checks see
   it: strides that are multiples of 32 (so every row starts at a block) and, for the checks of
   alignment, span and overlap, a tensor of 2-byte units, 17 to a 34-byte q8_0 block and 9 to an
   18-byte q4_0 one (its f16 scale needs 2-byte alignment). `units` receives the layout in units. */
static txattn_status block_tensor(txattn__tensor *x, txattn_dtype type, txattn_layout *units) {
  const int64_t per_block = (int64_t)txattn_dtype_size(type) / 2;
  txattn_layout *l = x->layout;
  if (l->batch == 0 && l->head == 0 && l->row == 0) {
    l->row = x->count[3];
    l->head = x->count[2] * l->row;
    l->batch = x->count[1] * l->head;
  }
  int64_t *const v[3] = {&l->batch, &l->head, &l->row};
  int64_t *const u[3] = {&units->batch, &units->head, &units->row};
  for (int i = 0; i < 3; i++) {
    TXATTN_RETURN_IF(*v[i] < 0 || *v[i] % 32 != 0, TXATTN_E_INVALID,
                     "txattn_tensors.%s_layout.%s = %" PRId64
                     " must be >= 0 and a multiple of 32, which %s_type %s needs (strides "
                     "count values; every row starts at a block of 32)",
                     x->name, stride_names[i], *v[i], x->name, txattn_dtype_name(type));
    *u[i] = *v[i] / 32 * per_block;
  }
  x->layout = units;
  x->count[3] = x->count[3] / 32 * per_block;
  x->elem = 2;
  return TXATTN_OK;
}

/* The fp8 scales of k or v: heads_kv floats, each one whose product with every value of the
   type is a normal fp32 or 0 (txattn/txattn.h); NULL for the other types. */
static txattn_status kv_scale_check(const char *field, const float *s, txattn_dtype type,
                                    const char *type_field, int64_t heads_kv) {
  const int fp8 = type == TXATTN_DTYPE_E4M3 || type == TXATTN_DTYPE_E5M2;
  if (!fp8) {
    TXATTN_RETURN_IF(s != NULL, TXATTN_E_INVALID,
                     "txattn_tensors.%s is set, but txattn_problem.%s is %s: only e4m3 and e5m2 "
                     "take a scale (set it to NULL)",
                     field, type_field, txattn_dtype_name(type));
    return TXATTN_OK;
  }
  TXATTN_RETURN_IF(s == NULL, TXATTN_E_INVALID,
                   "txattn_tensors.%s is NULL, but txattn_problem.%s is %s (heads_kv fp32 scales; "
                   "a txattn_tensors whose struct_size stops before %s has none)",
                   field, type_field, txattn_dtype_name(type), field);
  double lo, hi, largest;
  txattn__fp8_range(type, &lo, &hi, &largest);
  for (int64_t h = 0; h < heads_kv; h++)
    TXATTN_RETURN_IF(!(s[h] >= lo && s[h] <= hi), TXATTN_E_INVALID,
                     "txattn_tensors.%s[%" PRId64 "] = %g must be finite and within %g .. %g "
                     "(> 0, and every %s value times it a normal fp32)",
                     field, h, (double)s[h], lo, hi, txattn_dtype_name(type));
  return TXATTN_OK;
}

txattn_status txattn__tensors_check(const txattn_problem *r, const txattn_tensors *t,
                                    txattn_tensors *out) {
  TXATTN_RETURN_IF(t == NULL, TXATTN_E_INVALID, "txattn_tensors is NULL");
  txattn_tensors c = TXATTN_TENSORS_INIT;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_IN(txattn_tensors, t, &c));
  const int paged = r->page_size > 0;
  const int64_t kv_outer = paged ? r->n_pages : r->batch, kv_rows = paged ? r->page_size : r->n_kv;
  int64_t total = 0;
  if (r->packed) TXATTN_FORWARD_IF_ERROR(txattn__q_offsets_check(r, &c, &total));
  txattn__tensor ts[4] = {
      {"q",
       c.q,
       &c.q_layout,
       {r->batch, r->heads_q, r->n_q, r->d_qk},
       0,
       (int64_t)txattn_dtype_size(r->q_type),
       NULL},
      {"k",
       c.k,
       &c.k_layout,
       {kv_outer, r->heads_kv, kv_rows, r->d_qk},
       0,
       (int64_t)txattn_dtype_size(r->k_type),
       NULL},
      {"v",
       c.v,
       &c.v_layout,
       {kv_outer, r->heads_kv, kv_rows, r->d_v},
       0,
       (int64_t)txattn_dtype_size(r->v_type),
       NULL},
      {"o",
       c.o,
       &c.o_layout,
       {r->batch, r->heads_q, r->n_q, r->d_v},
       0,
       (int64_t)txattn_dtype_size(r->o_type),
       NULL},
  };
  if (r->packed) {
    packed_tensor(&ts[0], total);
    packed_tensor(&ts[3], total);
  }
  txattn_layout units[2];
  for (int i = 1; i < 3; i++) {
    const txattn_dtype type = i == 1 ? r->k_type : r->v_type;
    if (txattn_dtype_block(type) == 32)
      TXATTN_FORWARD_IF_ERROR(block_tensor(&ts[i], type, &units[i - 1]));
  }
  for (int i = 0; i < 4; i++) TXATTN_FORWARD_IF_ERROR(txattn__tensor_check(&ts[i]));
  TXATTN_FORWARD_IF_ERROR(txattn__tensor_no_self_alias(&ts[3]));
  for (int i = 0; i < 3; i++)
    TXATTN_RETURN_IF(txattn__tensors_overlap(&ts[3], &ts[i]), TXATTN_E_INVALID,
                     "txattn_tensors.o overlaps %s", ts[i].name);
  txattn__tensor l, *lse = NULL; /* the checked lse, when the problem asks for it */
  if (r->lse) {
    TXATTN_RETURN_IF(c.lse == NULL, TXATTN_E_INVALID,
                     "txattn_tensors.lse is NULL, but txattn_problem.lse is 1 (a txattn_tensors "
                     "whose struct_size stops before lse has none)");
    l = (txattn__tensor){"lse", c.lse, &c.lse_layout, {r->batch, r->heads_q, r->n_q, 1},
                         0,     4,     NULL};
    if (r->packed) packed_tensor(&l, total);
    lse = &l;
    TXATTN_FORWARD_IF_ERROR(txattn__tensor_check(&l));
    TXATTN_FORWARD_IF_ERROR(txattn__tensor_no_self_alias(&l));
    for (int i = 0; i < 4; i++)
      TXATTN_RETURN_IF(txattn__tensors_overlap(&l, &ts[i]), TXATTN_E_INVALID,
                       "txattn_tensors.lse overlaps %s", ts[i].name);
  } else { /* what the problem does not ask for, no kernel reads */
    c.lse = NULL;
    c.lse_layout = (txattn_layout){0, 0, 0};
  }
  if (r->ragged) {
    TXATTN_FORWARD_IF_ERROR(txattn__lens_check("q_lens", c.q_lens, r->batch, r->n_q, "n_q"));
    TXATTN_FORWARD_IF_ERROR(txattn__lens_check("kv_lens", c.kv_lens, r->batch, r->n_kv, "n_kv"));
  } else {
    c.q_lens = c.kv_lens = NULL;
  }
  if (!r->packed) c.q_offsets = NULL;
  if (paged)
    TXATTN_FORWARD_IF_ERROR(block_table_check(r, &c));
  else
    c.block_table = NULL;
  TXATTN_FORWARD_IF_ERROR(kv_scale_check("k_scale", c.k_scale, r->k_type, "k_type", r->heads_kv));
  TXATTN_FORWARD_IF_ERROR(kv_scale_check("v_scale", c.v_scale, r->v_type, "v_type", r->heads_kv));
  if (r->alibi)
    TXATTN_FORWARD_IF_ERROR(
        txattn__head_floats_check("alibi_slopes", c.alibi_slopes, r->heads_q, 0));
  else
    c.alibi_slopes = NULL;
  if (r->sinks)
    TXATTN_FORWARD_IF_ERROR(txattn__head_floats_check("sinks", c.sinks, r->heads_q, 1));
  else
    c.sinks = NULL;
  if (r->mask_tensor != TXATTN_MASK_TENSOR_NONE)
    TXATTN_FORWARD_IF_ERROR(mask_check(r, &c, &ts[3], lse));
  else {
    c.mask = NULL;
    c.mask_layout = (txattn_mask_layout){0, 0, 0, 0};
  }
  *out = c;
  return TXATTN_OK;
}

static const void *advance(const void *base, int64_t elements, txattn_dtype type) {
  return (const unsigned char *)base + txattn_elem_offset(type, elements);
}

void txattn__sequence(const txattn_problem *r, const txattn_tensors *x, int64_t b,
                      txattn_problem *sub, txattn_tensors *st) {
  *sub = *r;
  sub->batch = 1;
  sub->ragged = 0;
  sub->packed = 0;
  sub->n_q = x->q_lens ? x->q_lens[b] : r->n_q;
  sub->n_kv = x->kv_lens ? x->kv_lens[b] : r->n_kv;
  *st = *x;
  st->q_lens = st->kv_lens = NULL;
  st->q_offsets = NULL;
  /* packed: rows from q_offsets[b] (the layouts' batch strides are 0); else batch b */
  int64_t q = b * x->q_layout.batch, o = b * x->o_layout.batch,
          l = x->lse ? b * x->lse_layout.batch : 0;
  if (r->packed) {
    sub->n_q = x->q_offsets[b + 1] - x->q_offsets[b];
    q = x->q_offsets[b] * x->q_layout.row;
    o = x->q_offsets[b] * x->o_layout.row;
    l = x->q_offsets[b] * x->lse_layout.row;
  }
  st->q_data = advance(x->q_data, q, r->q_type);
  st->o_data = (void *)advance(x->o_data, o, r->o_type);
  if (x->lse != NULL) st->lse = x->lse + l;
  if (x->mask != NULL) /* sequence b's own rows and keys, from 0 */
    st->mask =
        (const unsigned char *)x->mask + b * x->mask_layout.batch *
                                             (r->mask_tensor == TXATTN_MASK_TENSOR_BOOL
                                                  ? 1
                                                  : (int64_t)txattn_dtype_size(r->mask_type));
  if (r->page_size > 0) { /* the pages stay where they are: the table's row b is the sequence's */
    st->block_table = x->block_table + b * r->max_pages;
    return;
  }
  st->k_data = advance(x->k_data, b * x->k_layout.batch, r->k_type);
  st->v_data = advance(x->v_data, b * x->v_layout.batch, r->v_type);
}
