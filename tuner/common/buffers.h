/* SPDX-License-Identifier: MIT */
/* Input and output buffers for one problem: allocated once, each tensor in the element type the
   problem gives it (txattn_problem.q_type ... o_type), filled once with deterministic
   standard-normal values rounded to that type (so every value is one the type holds), reused by
   every kernel that is run on them. */
#ifndef TXTUNE_BUFFERS_H
#define TXTUNE_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "txattn/txattn.h"

typedef enum tx_layout_kind {
  TX_LAYOUT_CONTIGUOUS,  /* [b][h][n][d], passed to the library as all-zero strides */
  TX_LAYOUT_INTERLEAVED, /* [b][n][h][d], as most frameworks store activations */
} tx_layout_kind;

typedef struct tx_buffers {
  txattn_problem p; /* resolved: its *_type fields are the tensors' element types */
  tx_layout_kind kind;
  void *q, *k, *v, *o, *o_ref;              /* o_ref (of o's type) is NULL unless asked for */
  size_t q_len, k_len, v_len, o_len;        /* elements */
  txattn_layout q_str, k_str, v_str, o_str; /* explicit strides, for walking the tensors here */
  txattn_tensors t;                         /* what kernels get */
  txattn_tensors t_ref;                     /* the same inputs with o_ref as output */
  double ref_bound; /* txattn_error_bound of the inputs, set with o_ref by tx_buffers_reference */
  /* The largest |V| over each sequence's keys, NaN skipped (what tx_verify scales errors by),
     set with o_ref by tx_buffers_reference: it depends on the inputs only, not on any kernel's
     output; NaN until then */
  double v_max_abs;
  /* With p.lse, txattn_lse_error_bound of the inputs (abs, rel), set with lse_ref by
     tx_buffers_reference; NaN without */
  double lse_ref_bound[2];
  /* Serving calls (tx_buffers_serving): with p.lse, lse (and lse_ref beside o_ref) of
     [batch][heads_q][n_q] floats, laid out by lse_str ([b][n][h] for an interleaved kind); with
     p.ragged, kv_lens[batch] (every q_len is n_q). NULL otherwise. */
  float *lse, *lse_ref;
  size_t lse_len;
  txattn_layout lse_str;
  int64_t *kv_lens;
  /* With --q-lens (tx_buffers_q_lens), q_lens[batch]: each sequence's query rows (t.q_lens, or
     with p.packed the q_offsets' prefix sums); NULL: n_q for every sequence */
  int64_t *q_lens;
  /* With p.alibi, the standard slopes (txattn_alibi_slopes, max_bias 8); with p.sinks, sink
     logits (tx_buffers_fill: 2 times standard normal); heads_q floats each, else NULL */
  float *slopes, *sinks;
  /* With p.mask_tensor, the tensor tx_mask_tensor_make made (t.mask, t.mask_layout), else NULL */
  void *mask;
  /* With p.page_size (tx_buffers_page): K and V copied into pools of p.n_pages pages in a shuffled
     order, heads-major, and the block table t and t_ref read them through; with p.packed,
     q_offsets (every sequence n_q rows of the interleaved q, o and lse). NULL otherwise. */
  void *k_pool, *v_pool;
  int32_t *table;
  int64_t *q_offsets;
  /* With an fp8 k or v, heads_kv scales of 1 (t.k_scale, t.v_scale): the values are the fp8
     values themselves, standard normal rounded to them */
  float *kv_scales;
} tx_buffers;

/* The mask tensor of resolved p, which tx_modifier_apply asked for: --doc-lens a boolean
   [n_q][n_kv] (block-diagonal causal: key j is visible to row i when both lie in one document,
   the lengths repeated to cover n_kv, and j <= pos(i)) shared by every batch and head; --bias
   relative T5's relative-position bias, [heads_q][n_q][n_kv] of p->mask_type shared by every
   batch: bucket(j - pos(i)) as T5 computes it (32 buckets, max distance 128, bidirectional
   unless p is causal) of a seeded standard-normal table per head. Sets *l; NULL if p has no
   mask tensor or the memory is lacking. */
void *tx_mask_tensor_make(const txattn_problem *p, txattn_mask_layout *l);
/* p must be resolved. Returns 0, or -1 with the reason in err. */
int tx_buffers_alloc(tx_buffers *b, const txattn_problem *p, tx_layout_kind kind, int with_ref,
                     char *err, size_t err_size);
/* q, k and v get scale times standard-normal values from a generator seeded with seed, each
   rounded to its tensor's type (to nearest, ties to even); then the sink logits, if any. */
void tx_buffers_fill(tx_buffers *b, uint64_t seed, float scale);
void tx_buffers_free(tx_buffers *b);
/* After tx_buffers_alloc: sets b->p.lse (and allocates lse, and lse_ref where there is o_ref) and,
   with kv_lens (n_seq of them, n_seq = the batch, each 0..n_kv), b->p.ragged with a copy of them;
   t and t_ref point at them. Returns 0, or -1 with the reason in err. */
int tx_buffers_serving(tx_buffers *b, int lse, const int64_t *kv_lens, size_t n_seq, char *err,
                       size_t err_size);
/* After the inputs are final (tx_buffers_fill, any planted values): with b->p.page_size, K and V
   copied into their page pools (every key of each sequence, padding included) in a shuffled order
   from seed, so the pages are not secretly contiguous; with b->p.packed (interleaved buffers only:
   their rows are the packed rows), the q_offsets. t and t_ref then read them; k and v keep the
   dense inputs (tx_elem_at). Returns 0, or -1 with the reason in err. */
int tx_buffers_page(tx_buffers *b, uint64_t seed, char *err, size_t err_size);
/* After tx_buffers_serving with kv_lens: each sequence's query rows (n_seq = the batch, each
   0..n_q), which t and t_ref read (packed: tx_buffers_page makes them the q_offsets). Returns 0, or
   -1 with the reason in err. */
int tx_buffers_q_lens(tx_buffers *b, const int64_t *q_lens, size_t n_seq, char *err,
                      size_t err_size);
/* Where row i of sequence bb lies in q, o and lse (their strides): (bb, i), or with packed rows
   (0, q_offsets[bb] + i). */
void tx_buffers_row_at(const tx_buffers *b, int64_t bb, int64_t i, int64_t *batch, int64_t *row);
/* Sequence b's own problem: n_kv its kv_len when ragged and n_q its q_len with q_lens, else the
   problem. */
txattn_problem tx_buffers_sequence(const tx_buffers *b, int64_t batch);
/* Every element of the K and V rows past each sequence's kv_len set to value (a NaN there makes
   a kernel that reads keys it must not read fail). */
void tx_buffers_fill_padding(tx_buffers *b, float value);
/* o_ref = txattn_reference of the inputs as they are now (rounded once to o's type), and ref_bound
   = their txattn_error_bound, which every kernel's output is held to (tx_verify); with p.lse also
   lse_ref and lse_ref_bound = their txattn_lse_error_bound, which every lse is held to. Also
   v_max_abs. The two bounds are two public calls, each a pass over the visible (row, key) pairs:
   the library's one-pass txattn__error_bounds is hidden, and txtune uses only the public API. */
txattn_status tx_buffers_reference(tx_buffers *b);

/* Element i of a tensor of type t widened to float (exact for every type). */
float tx_elem_get(const void *base, txattn_dtype t, size_t i);
/* Element c of row (b, h, i) of a tensor of type t laid out by l. */
float tx_elem_at(const void *base, txattn_dtype t, const txattn_layout *l, int64_t b, int64_t h,
                 int64_t i, int64_t c);
void tx_elem_put(void *base, txattn_dtype t, const txattn_layout *l, int64_t b, int64_t h,
                 int64_t i, int64_t c, float x);
/* n elements of type t set to value (rounded to t). */
void tx_fill_value(void *x, txattn_dtype t, size_t n, float value);
/* What an output holds before a checked call (bench, check, profile): a kernel that leaves a value
   unwritten cannot pass for exact. */
#define TX_POISON 1.0e30f
/* The tensors' bytes (input and output once each, as a problem's tensors hold them). */
double tx_buffers_bytes(const txattn_problem *p);

#endif
