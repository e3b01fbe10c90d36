/* Input and output buffers for one problem: allocated once, filled once with deterministic
   standard-normal values, reused by every kernel that is run on them. */
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
  txattn_problem p; /* resolved */
  tx_layout_kind kind;
  float *q, *k, *v, *o, *o_ref; /* o_ref is NULL unless asked for */
  size_t q_len, k_len, v_len, o_len;
  txattn_layout q_str, k_str, v_str, o_str; /* explicit strides, for walking the tensors here */
  txattn_tensors t;                         /* what kernels get */
  txattn_tensors t_ref;                     /* the same inputs with o_ref as output */
  double ref_bound; /* txattn_error_bound of the inputs, set with o_ref by tx_buffers_reference */
} tx_buffers;

/* p must be resolved. Returns 0, or -1 with the reason in err. */
int tx_buffers_alloc(tx_buffers *b, const txattn_problem *p, tx_layout_kind kind, int with_ref,
                     char *err, size_t err_size);
/* q, k and v get scale times standard-normal values from a generator seeded with seed. */
void tx_buffers_fill(tx_buffers *b, uint64_t seed, float scale);
void tx_buffers_free(tx_buffers *b);
/* o_ref = txattn_reference of the inputs as they are now, and ref_bound = their
   txattn_error_bound, which every kernel's output is held to (tx_verify). */
txattn_status tx_buffers_reference(tx_buffers *b);
void tx_fill_value(float *x, size_t n, float value);

#endif
