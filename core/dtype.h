/* SPDX-License-Identifier: MIT */
/* Internal: elements of the tensors' types (txattn_dtype), as the reference and the error bound
 * read and write them: every 16-bit value is exact in double, and a double is rounded to a type
 * once, to nearest even. */
#ifndef TXATTN_CORE_DTYPE_H
#define TXATTN_CORE_DTYPE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "txattn/plugin.h"

static inline double txattn__f16_value(uint16_t bits) {
  int e = (bits >> 10) & 0x1f;
  double m = bits & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m != 0 ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return bits & 0x8000 ? -v : v;
}

/* Element c of a row, exactly (inline: the reference reads every element this way). */
static inline double txattn__load(const void *row, txattn_dtype t, int64_t c) {
  if (t == TXATTN_DTYPE_F32) return (double)((const float *)row)[c];
  uint16_t bits = ((const uint16_t *)row)[c];
  if (t == TXATTN_DTYPE_F16) return txattn__f16_value(bits);
  uint32_t wide = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &wide, sizeof f);
  return (double)f;
}
/* What the mask tensor adds to the score of row i (head h, sequence b) and key j: 0 without one;
   for BOOL 0 (visible) or -inf (hidden); for ADDITIVE its element, exactly (-inf hides). */
static inline double txattn__mask_value(const txattn_problem *p, const txattn_tensors *t, int64_t b,
                                        int64_t h, int64_t i, int64_t j) {
  if (p->mask_tensor == TXATTN_MASK_TENSOR_NONE) return 0.0;
  const unsigned char *row = txattn_mask_row(p, t, b, h, i);
  if (p->mask_tensor == TXATTN_MASK_TENSOR_BOOL)
    return row[j * t->mask_layout.key] ? 0.0 : -INFINITY;
  return txattn__load(row, p->mask_type, j * t->mask_layout.key);
}

/* x rounded to nearest even in type t (overflow to +-Inf, NaN stays NaN) into element c. */
void txattn__store(void *row, txattn_dtype t, int64_t c, double x);
/* The spacing of the values of type t around magnitude x (x >= 0): 2^(floor(log2 x) - p + 1)
   for t's p significant bits, no less than the spacing of its subnormals. */
double txattn__ulp(txattn_dtype t, double x);

#endif
