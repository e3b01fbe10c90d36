/* SPDX-License-Identifier: MIT */
/* Internal: validation of the tensors of one call. */
#ifndef TXATTN_CORE_TENSORS_H
#define TXATTN_CORE_TENSORS_H

#include <stdint.h>

#include "txattn/txattn.h"

/* One tensor as the checks see it. */
typedef struct txattn__tensor {
  const char *name; /* "q" */
  const void *base;
  txattn_layout *layout; /* made explicit by txattn__tensor_check when all zero */
  int64_t count[4];      /* batch, heads, rows, elements per row */
  int64_t span;          /* elements from the first element to one past the last (set by check) */
  int64_t elem;          /* bytes of one element */
  const char *where;     /* what messages put before name; NULL: "txattn_tensors." */
} txattn__tensor;

/* base not NULL and aligned, strides within the limits, the span representable: E_INVALID naming
   the field otherwise. Sets t->span and makes an all-zero layout contiguous. */
txattn_status txattn__tensor_check(txattn__tensor *t);
/* An output's elements must not share addresses (after txattn__tensor_check). */
txattn_status txattn__tensor_no_self_alias(const txattn__tensor *t);
/* Whether the byte ranges of two checked tensors intersect. */
int txattn__tensors_overlap(const txattn__tensor *a, const txattn__tensor *b);
/* A ragged problem's lengths per sequence (txattn_tensors.<field>): NULL (every sequence has max),
   or batch values in 0..max; E_INVALID naming the sequence otherwise. */
txattn_status txattn__lens_check(const char *field, const int64_t *lens, int64_t batch, int64_t max,
                                 const char *max_name);

/* heads floats per query head at x (txattn_tensors.<field>): not NULL, each finite (or -inf where
   minus_inf is 1); E_INVALID naming the head otherwise. */
txattn_status txattn__head_floats_check(const char *field, const float *x, int64_t heads,
                                        int minus_inf);
/* q_offsets of a packed batch (r->packed): batch + 1 entries from 0, none decreasing, no sequence
   over n_q rows, q_lens NULL; *total = the last (the rows of q, o and lse). */
txattn_status txattn__q_offsets_check(const txattn_problem *r, const txattn_tensors *c,
                                      int64_t *total);
/* A packed tensor's layout: all-zero strides mean [rows][heads][d]; batch is set to 0. */
void txattn__packed_layout(txattn_layout *l, int64_t heads, int64_t d);
/* Checks t against the resolved problem r and writes *out: t with every all-zero layout made
   explicit. Inputs may alias each other or broadcast (stride 0); o must not alias itself nor
   overlap q, k or v. Fails with TXATTN_E_INVALID and a message naming the field; never touches the
   tensors' data. With r->lse, lse is checked as an output like o (and must overlap nothing);
   without, *out has lse NULL. With r->ragged, q_lens and kv_lens (NULL or each within 0..n_q,
   0..n_kv) are checked; without, *out has them NULL. With r->alibi (r->sinks) alibi_slopes (sinks)
   are checked by txattn__head_floats_check; without, *out has them NULL. A caller whose struct_size stops before a
   field gets it zero. */
txattn_status txattn__tensors_check(const txattn_problem *r, const txattn_tensors *t,
                                    txattn_tensors *out);
/* Sequence b of a checked call (x from txattn__tensors_check): *sub is r for that sequence alone
   (batch 1, n_q and n_kv its q_len and kv_len, ragged and packed 0; n_q or n_kv may be 0, which
   no public problem has) and *st is x offset to it (q_lens, kv_lens and q_offsets NULL; a paged
   problem keeps its pages and gets the block table's row b). */
void txattn__sequence(const txattn_problem *r, const txattn_tensors *x, int64_t b,
                      txattn_problem *sub, txattn_tensors *st);

#endif
