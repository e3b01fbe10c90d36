/* SPDX-License-Identifier: MIT */
/* Is an output exact? max|O - O_ref| against txattn_error_bound (txattn.h) plus the contract's hard
   rules: rows with no visible key are exact zeros, a NaN read through a visible key makes the row
   NaN, and every other row is finite. */
#ifndef TXTUNE_VERIFY_H
#define TXTUNE_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "buffers.h"

typedef enum tx_nan_where { TX_NAN_NONE, TX_NAN_IN_K, TX_NAN_IN_V } tx_nan_where;

/* One NaN planted in K or V at (batch, kv head, key row, column). */
typedef struct tx_nan_site {
  tx_nan_where where;
  int64_t batch, head_kv, key, col;
} tx_nan_site;

void tx_plant_nan(tx_buffers *b, const tx_nan_site *site);

typedef struct tx_verdict {
  double rel_error;    /* max|O - O_ref| / max|V| where both are finite; NaN when not compared */
  double tolerance;    /* txattn_error_bound / max|V|: rel_error must not exceed it; NaN likewise */
  double error, bound; /* max|O - O_ref| and txattn_error_bound, absolute; NaN when not compared */
  /* error / bound * TXATTN_EXACT_TOLERANCE: rel_error wherever the bound is the tolerance (inputs
     of magnitude about 1), and <= TXATTN_EXACT_TOLERANCE exactly when the output is within the
     bound. What the dispatch table's max_error holds. NaN when not compared. */
  double scaled_error;
  int64_t violations; /* rows that break the contract or the reference's NaN pattern */
  int64_t worst[4];   /* batch, head, row, column of the largest difference */
  char first[256];    /* the first violation in words; "" if none */
  /* With b->p.lse: max|lse - lse_ref| over rows both hold finite, and the largest ratio of a row's
     difference to its bound (txattn_lse_error_bound; above 1 fails), at worst_lse (batch, head,
     row). NaN when not compared. */
  double lse_error, lse_ratio, lse_bound;
  int64_t worst_lse[3];
} tx_verdict;

/* Checks o (laid out like b->o, of o's type) against the contract and, if ref is not NULL, against
   ref (b->o_ref after tx_buffers_reference, whose b->ref_bound is the bound), both compared as the
   values of o's type they hold. site may be NULL (nothing planted). With b->p.ragged each sequence
   is judged by its own kv_len; with b->p.lse the lse written beside o (b->lse_ref when o is
   b->o_ref, else b->lse) is checked too: -inf on rows with no visible key, finite elsewhere (a
   row that reads a NaN planted in K may hold anything), and within b->lse_ref_bound (the
   txattn_lse_error_bound tx_buffers_reference computed) of b->lse_ref. */
void tx_verify(const tx_buffers *b, const void *o, const void *ref, const tx_nan_site *site,
               tx_verdict *out);
int tx_verdict_pass(const tx_verdict *v);
/* Why v fails, in words: its first violation, or where the error exceeds the bound. */
void tx_verdict_explain(const tx_verdict *v, char *buf, size_t size);

#endif
