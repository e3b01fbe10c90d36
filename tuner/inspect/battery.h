/* SPDX-License-Identifier: MIT */
/* The shapes `txtune check` runs every kernel on: a curated list that covers every rule of the
   contract (lengths, head sizes, masks and windows, GQA, strides, scale, large inputs and large
   logits, rows with no visible key, NaN propagation) rather than a cross product. */
#ifndef TXTUNE_BATTERY_H
#define TXTUNE_BATTERY_H

#include <stddef.h>

#include "buffers.h"
#include "problem_cli.h"
#include "serving_cli.h"
#include "verify.h"

typedef struct tx_case {
  txattn_problem p; /* as a caller would write it: zero fields take the defaults */
  tx_layout_kind layout;
  float input_scale; /* q, k and v are this times standard normal; 0 means 1 */
  tx_nan_site nan;   /* where a NaN is planted, if anywhere */
  int quick;         /* part of `txtune check --quick` */
  /* not 0: channel 0 of every q and k row is this value, as in models with an outlier channel;
     every score then carries a large common term that fp32 must round */
  float outlier;
} tx_case;

size_t tx_battery_size(void);
const tx_case *tx_battery_get(size_t i);

/* Allocates the case's tensors in the element types `types` (b->p: the case resolved, in them),
   fills them (seeded by the case's index, so every run sees the same data, rounded to the types)
   and plants the NaN. With sv (NULL: none) the call has sv->lse and, with kv lengths, is ragged:
   a batch of one sequence per length with the case's n_q queries each, n_kv the longest, the keys
   past each kv_len NaN (so that reading one fails), a NaN site outside the batch dropped. With
   mods (NULL: none) the case gets those score modifiers. Returns 0, or -1 with the reason in
   err. */
int tx_case_prepare(const tx_case *c, size_t index, const tx_dtypes *types, const tx_serving *sv,
                    const tx_modifier_args *mods, tx_buffers *b, char *err, size_t err_size);
/* The NaN the case plants in b (prepared by tx_case_prepare): its site, or none when a ragged
   batch left it out. */
tx_nan_site tx_case_nan(const tx_case *c, const tx_buffers *b);
/* The problem's text plus what else the case varies: "n=65 d=64 causal [b,n,h,d] x100". */
#define TX_CASE_TEXT_MAX 160
void tx_case_format(const tx_case *c, char *buf, size_t size);

#endif
