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

/* Element c of a row, exactly (inline: the reference reads every element this way): a q8_0
   value q * d, a q4_0 value (q - 8) * d (the row starts at a block), an fp8 value before its
   scale (txattn__kv_scale). */
static inline double txattn__load(const void *row, txattn_dtype t, int64_t c) {
  if (t == TXATTN_DTYPE_F32) return (double)((const float *)row)[c];
  if (t == TXATTN_DTYPE_Q8_0) {
    const txattn_block_q8_0 *blk = (const txattn_block_q8_0 *)row + c / 32;
    return (double)blk->qs[c % 32] * txattn__f16_value(blk->d);
  }
  if (t == TXATTN_DTYPE_Q4_0) {
    const txattn_block_q4_0 *blk = (const txattn_block_q4_0 *)row + c / 32;
    return (double)txattn_q4_0_int(blk, c % 32) * txattn__f16_value(blk->d);
  }
  if (t == TXATTN_DTYPE_E4M3) return (double)txattn_e4m3_value(((const uint8_t *)row)[c]);
  if (t == TXATTN_DTYPE_E5M2) return (double)txattn_e5m2_value(((const uint8_t *)row)[c]);
  uint16_t bits = ((const uint16_t *)row)[c];
  if (t == TXATTN_DTYPE_F16) return txattn__f16_value(bits);
  uint32_t wide = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &wide, sizeof f);
  return (double)f;
}
/* The scale of K/V head h: scales[h] for an fp8 k or v (the checked tensors keep k_scale and
   v_scale only then), else 1. An fp8 value times it is exact in double (4 + 24 bits). */
static inline double txattn__kv_scale(const float *scales, int64_t h) {
  return scales != NULL ? (double)scales[h] : 1.0;
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

/* The scales an fp8 type takes (txattn_tensors.k_scale, txattn_convert): every value of the type
   times one in [*lo, *hi] is a normal fp32 or 0. *largest: the type's largest finite value. */
void txattn__fp8_range(txattn_dtype t, double *lo, double *hi, double *largest);
/* x (finite or not) rounded to nearest even in fp8 type t, saturating at its largest value (Inf
   included); NaN gives a NaN's bits. */
uint8_t txattn__fp8_bits(txattn_dtype t, float x);

/* x rounded to nearest even in type t (overflow to +-Inf, NaN stays NaN) into element c. */
void txattn__store(void *row, txattn_dtype t, int64_t c, double x);
/* The spacing of the values of type t around magnitude x (x >= 0): 2^(floor(log2 x) - p + 1)
   for t's p significant bits, no less than the spacing of its subnormals. */
double txattn__ulp(txattn_dtype t, double x);

#endif
