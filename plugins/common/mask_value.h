/* SPDX-License-Identifier: MIT */
/* The mask tensor's element j of a row (txattn_mask_row), as a float added to the score: for a
 * boolean mask 0 (visible) or -inf (hidden); for an additive one its value, widened exactly
 * (-inf hides the key). */
#ifndef TXATTN_PLUGINS_MASK_VALUE_H
#define TXATTN_PLUGINS_MASK_VALUE_H

#include <math.h>

#include "half.h"
#include "txattn/plugin.h"

static inline float txm_mask_value(const txattn_problem *p, const txattn_tensors *t,
                                   const void *row, int64_t j) {
  const int64_t at = j * t->mask_layout.key;
  if (p->mask_tensor == TXATTN_MASK_TENSOR_BOOL)
    return ((const unsigned char *)row)[at] ? 0.0f : -INFINITY;
  if (p->mask_type == TXATTN_DTYPE_F32) return ((const float *)row)[at];
  const uint16_t x = ((const uint16_t *)row)[at];
  return p->mask_type == TXATTN_DTYPE_F16 ? txh_f16_to_f32(x) : txh_bf16_to_f32(x);
}

#endif
