/* The shapes `txtune check` runs every kernel on: a curated list that covers every rule of the
   contract (lengths, head sizes, masks and windows, GQA, strides, scale, large inputs and large
   logits, rows with no visible key, NaN propagation) rather than a cross product. */
#ifndef TXTUNE_BATTERY_H
#define TXTUNE_BATTERY_H

#include <stddef.h>

#include "buffers.h"
#include "problem_cli.h"
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
   and plants the NaN. Returns 0, or -1 with the reason in err. */
int tx_case_prepare(const tx_case *c, size_t index, const tx_dtypes *types, tx_buffers *b,
                    char *err, size_t err_size);
/* The problem's text plus what else the case varies: "n=65 d=64 causal [b,n,h,d] x100". */
#define TX_CASE_TEXT_MAX 160
void tx_case_format(const tx_case *c, char *buf, size_t size);

#endif
