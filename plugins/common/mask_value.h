/* SPDX-License-Identifier: MIT */
/* The mask tensor's element j of a row (txattn_mask_row), as a float added to the score: for a
 * boolean mask 0 (visible) or -inf (hidden); for an additive one its value, widened exactly
 * (-inf hides the key). */
#ifndef TXATTN_PLUGINS_MASK_VALUE_H
#define TXATTN_PLUGINS_MASK_VALUE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

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

/* s[j] += txm_mask_value of key key0 + j, for j < n, at any key stride: the scalar way. Returns
   whether one of the values was not finite (may hide the key: -inf; +inf and NaN make a NaN row). */
static inline int txm_mask_add_keys(const txattn_problem *p, const txattn_tensors *t,
                                    const void *row, float *s, int64_t n, int64_t key0) {
  int hides = 0;
  for (int64_t j = 0; j < n; j++) {
    const float x = txm_mask_value(p, t, row, key0 + j);
    hides |= !isfinite(x);
    s[j] += x;
  }
  return hides;
}

/* s[j] = -inf where the boolean byte m[j] is 0, for j < n (key stride 1); returns whether one was.
   8 keys a step: all shown (most often), all hidden, or mixed. */
static inline int txm_mask_bool_keys(float *s, const unsigned char *m, int64_t n) {
  const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
  int hides = 0;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    uint64_t w;
    memcpy(&w, m + j, 8);
    if (((w - ones) & ~w & highs) == 0) continue; /* no zero byte: every key shown */
    hides = 1;
    for (int u = 0; u < 8; u++) s[j + u] = m[j + u] ? s[j + u] : -INFINITY;
  }
  for (; j < n; j++) {
    hides |= !m[j];
    s[j] = m[j] ? s[j] : -INFINITY;
  }
  return hides;
}

#endif
