/* SPDX-License-Identifier: MIT */
/* Elements of f32, f16 and bf16 tensors for the tests, written from the formats' definitions with
 * integer arithmetic: nothing here comes from the library or the plugins (plugins/common/half.h),
 * so the test oracle and the cases check those conversions rather than share them. Indexes count
 * elements of the tensor's type. */
#ifndef TXATTN_TEST_ELEMENTS_H
#define TXATTN_TEST_ELEMENTS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "txattn/txattn.h"

static inline size_t elem_size(txattn_dtype t) {
  return t == TXATTN_DTYPE_F32 ? 4 : 2;
}

/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits; exponent 0 is the subnormals
   m 2^-24. */
static inline double elem_f16_value(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double a = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -a : a;
}

/* bf16: the upper half of a binary32. */
static inline double elem_bf16_value(uint16_t h) {
  uint32_t wide = (uint32_t)h << 16;
  float f;
  memcpy(&f, &wide, sizeof f);
  return (double)f;
}

/* x rounded to nearest even in a binary format of `frac` fraction and `exp` exponent bits, as its
   bits: the integer significand of x on the grid of x's binade (the smallest normal binade for
   the subnormals), rounded by nearbyint, then carried into the exponent when it reaches the next
   power of two. Past the largest finite value: infinity. NaN: the quiet NaN. */
static inline uint16_t elem_narrow(double x, int frac, int exp) {
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  int bias = (1 << (exp - 1)) - 1, top = (1 << exp) - 1;
  uint16_t inf = (uint16_t)(top << frac);
  if (isnan(x)) return (uint16_t)(inf | (1 << (frac - 1)));
  double a = fabs(x);
  if (isinf(a)) return sign | inf;
  int e = 0;
  if (a > 0.0) {
    frexp(a, &e);
    e -= 1; /* a in [2^e, 2^(e+1)) */
  }
  if (e < 1 - bias) e = 1 - bias;
  if (e > bias + 1) return sign | inf;
  double m = nearbyint(ldexp(a, frac - e)); /* in [0, 2^(frac+1)]; the scaling is exact */
  if (m >= ldexp(1.0, frac + 1)) m /= 2, e += 1;
  if (m < ldexp(1.0, frac)) return (uint16_t)(sign | (uint16_t)m); /* subnormal or zero */
  if (e + bias >= top) return sign | inf;
  return (uint16_t)(sign | ((e + bias) << frac) | ((uint16_t)m - (1 << frac)));
}

static inline uint16_t elem_f16_of(double x) {
  return elem_narrow(x, 10, 5);
}

static inline uint16_t elem_bf16_of(double x) {
  return elem_narrow(x, 7, 8);
}

/* Element i of base as a double, exactly. */
static inline double elem_load(const void *base, txattn_dtype t, size_t i) {
  if (t == TXATTN_DTYPE_F32) return (double)((const float *)base)[i];
  uint16_t h;
  memcpy(&h, (const unsigned char *)base + 2 * i, 2);
  return t == TXATTN_DTYPE_F16 ? elem_f16_value(h) : elem_bf16_value(h);
}

/* Element i of base := x rounded once to t, to nearest even. */
static inline void elem_store(void *base, txattn_dtype t, size_t i, double x) {
  if (t == TXATTN_DTYPE_F32) {
    ((float *)base)[i] = (float)x;
    return;
  }
  uint16_t h = t == TXATTN_DTYPE_F16 ? elem_f16_of(x) : elem_bf16_of(x);
  memcpy((unsigned char *)base + 2 * i, &h, 2);
}

/* The bits of element i (the low 16 for a 16-bit type). */
static inline uint32_t elem_bits(const void *base, txattn_dtype t, size_t i) {
  if (t == TXATTN_DTYPE_F32) {
    uint32_t w;
    memcpy(&w, (const unsigned char *)base + 4 * i, 4);
    return w;
  }
  uint16_t h;
  memcpy(&h, (const unsigned char *)base + 2 * i, 2);
  return h;
}

static inline void elem_set_bits(void *base, txattn_dtype t, size_t i, uint32_t bits) {
  if (t == TXATTN_DTYPE_F32) {
    memcpy((unsigned char *)base + 4 * i, &bits, 4);
    return;
  }
  uint16_t h = (uint16_t)bits;
  memcpy((unsigned char *)base + 2 * i, &h, 2);
}

#endif
