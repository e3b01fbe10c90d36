/* txattn_tensors: pointers, strides, address arithmetic and overlap, checked before any kernel
 * runs. */
#include <inttypes.h>
#include <stdint.h>

#include "error.h"
#include "problem.h"
#include "struct_size.h"
#include "tensors.h"

typedef struct tensor {
  const char *name; /* "q" */
  const void *base;
  txattn_layout *layout;
  int64_t count[4]; /* batch, heads, rows, elements per row */
  int64_t span;     /* elements from the first element to one past the last */
  int64_t elem;     /* bytes of one element */
} tensor;

static const char *const stride_names[3] = {"batch", "head", "row"};

static int64_t *stride_of(txattn_layout *l, int i) {
  return i == 0 ? &l->batch : i == 1 ? &l->head : &l->row;
}

static txattn_status check_strides(tensor *t) {
  txattn_layout *l = t->layout;
  if (l->batch == 0 && l->head == 0 &&
      l->row == 0) { /* contiguous; sizes were checked by resolve */
    l->row = t->count[3];
    l->head = t->count[2] * l->row;
    l->batch = t->count[1] * l->head;
  }
  for (int i = 0; i < 3; i++) {
    TXATTN_RETURN_IF(*stride_of(l, i) < 0, TXATTN_E_INVALID,
                     "txattn_tensors.%s_layout.%s = %" PRId64 " must be >= 0", t->name,
                     stride_names[i], *stride_of(l, i));
    /* the limit of problem.c: a stride of at most 2^56 bytes, so that index x stride fits */
    TXATTN_RETURN_IF(
        *stride_of(l, i) > TXATTN__MAX_TENSOR_BYTES / t->elem, TXATTN_E_INVALID,
        "txattn_tensors.%s_layout.%s = %" PRId64 " is above the limit of 2^56 bytes (%" PRId64
        " elements): the offsets would overflow",
        t->name, stride_names[i], *stride_of(l, i), TXATTN__MAX_TENSOR_BYTES / t->elem);
  }
  return TXATTN_OK;
}

/* span = 1 + sum over dims of (count - 1) * stride, with every step checked, and the byte range
   must not wrap around the address space. */
static txattn_status compute_span(tensor *t) {
  int64_t span = t->count[3], term, bytes;
  int over = 0;
  for (int i = 0; i < 3; i++) {
    over |= __builtin_mul_overflow(t->count[i] - 1, *stride_of(t->layout, i), &term);
    over |= __builtin_add_overflow(span, term, &span);
  }
  over |= __builtin_mul_overflow(span, t->elem, &bytes);
  TXATTN_RETURN_IF(over || bytes > TXATTN__MAX_TENSOR_BYTES || (uint64_t)bytes > SIZE_MAX,
                   TXATTN_E_INVALID,
                   "txattn_tensors.%s_layout: the offset of the last element of %s overflows int64 "
                   "or exceeds the limit of 2^56 bytes (strides too large for the problem's sizes)",
                   t->name, t->name);
  TXATTN_RETURN_IF((uintptr_t)t->base > UINTPTR_MAX - (uint64_t)bytes, TXATTN_E_INVALID,
                   "txattn_tensors.%s: its %" PRId64 " bytes would wrap around the address space",
                   t->name, bytes);
  t->span = span;
  return TXATTN_OK;
}

static txattn_status check_tensor(tensor *t) {
  TXATTN_RETURN_IF(t->base == NULL, TXATTN_E_INVALID, "txattn_tensors.%s is NULL", t->name);
  TXATTN_RETURN_IF((uintptr_t)t->base % (uintptr_t)t->elem != 0, TXATTN_E_INVALID,
                   "txattn_tensors.%s = %p is not aligned to its %" PRId64 "-byte elements",
                   t->name, t->base, t->elem);
  TXATTN_FORWARD_IF_ERROR(check_strides(t));
  return compute_span(t);
}

/* Sort o's dimensions with more than one index by stride: each stride must reach past everything
   the dimensions with smaller strides span, or two (b, h, i, c) would share an address. */
static txattn_status check_no_self_alias(const tensor *o) {
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
                     "txattn_tensors.o_layout.%s = %" PRId64 " is smaller than %" PRId64
                     ", the span of o's dimensions with smaller strides: elements of o would "
                     "overlap (only inputs may alias)",
                     stride_names[d], stride[d], extent);
    extent += (o->count[d] - 1) * stride[d];
  }
  return TXATTN_OK;
}

static int overlaps(const tensor *a, const tensor *b) {
  uintptr_t a0 = (uintptr_t)a->base, b0 = (uintptr_t)b->base;
  uintptr_t a1 = a0 + (uintptr_t)a->span * (uintptr_t)a->elem,
            b1 = b0 + (uintptr_t)b->span * (uintptr_t)b->elem;
  return a0 < b1 && b0 < a1;
}

txattn_status txattn__tensors_check(const txattn_problem *r, const txattn_tensors *t,
                                    txattn_tensors *out) {
  TXATTN_RETURN_IF(t == NULL, TXATTN_E_INVALID, "txattn_tensors is NULL");
  txattn_tensors c;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_IN(txattn_tensors, TXATTN_TENSORS_SIZE_0_2, t, &c));
  tensor ts[4] = {
      {"q",
       c.q,
       &c.q_layout,
       {r->batch, r->heads_q, r->n_q, r->d_qk},
       0,
       (int64_t)txattn_dtype_size(r->q_type)},
      {"k",
       c.k,
       &c.k_layout,
       {r->batch, r->heads_kv, r->n_kv, r->d_qk},
       0,
       (int64_t)txattn_dtype_size(r->k_type)},
      {"v",
       c.v,
       &c.v_layout,
       {r->batch, r->heads_kv, r->n_kv, r->d_v},
       0,
       (int64_t)txattn_dtype_size(r->v_type)},
      {"o",
       c.o,
       &c.o_layout,
       {r->batch, r->heads_q, r->n_q, r->d_v},
       0,
       (int64_t)txattn_dtype_size(r->o_type)},
  };
  for (int i = 0; i < 4; i++) TXATTN_FORWARD_IF_ERROR(check_tensor(&ts[i]));
  TXATTN_FORWARD_IF_ERROR(check_no_self_alias(&ts[3]));
  for (int i = 0; i < 3; i++)
    TXATTN_RETURN_IF(overlaps(&ts[3], &ts[i]), TXATTN_E_INVALID, "txattn_tensors.o overlaps %s",
                     ts[i].name);
  *out = c;
  return TXATTN_OK;
}
