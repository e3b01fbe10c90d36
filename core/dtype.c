/* SPDX-License-Identifier: MIT */
/* Elements of every txattn_dtype, for the reference and the error bound. */
#include "dtype.h"

#include <float.h>
#include <math.h>
#include <string.h>

typedef struct format {
  int p;          /* significant bits */
  int emin, emax; /* exponents of the smallest and largest normal binades */
} format;

static format format_of(txattn_dtype t) {
  return t == TXATTN_DTYPE_F16    ? (format){11, -14, 15}
         : t == TXATTN_DTYPE_BF16 ? (format){8, -126, 127}
                                  : (format){24, -126, 127};
}

/* |x| (finite, >= 0) rounded to nearest even in format f; +Inf past its largest value. */
static double round_to(double a, format f) {
  if (a == 0.0) return 0.0;
  int e;
  frexp(a, &e);
  e -= 1; /* a is in [2^e, 2^(e+1)) */
  if (e < f.emin) e = f.emin;
  double r = ldexp(nearbyint(ldexp(a, f.p - 1 - e)), e - (f.p - 1)); /* scalings are exact */
  return r >= ldexp(1.0, f.emax + 1) ? INFINITY : r;
}

/* The f16 bits of a (>= 0) that f16 holds exactly. */
static uint16_t f16_bits(double a) {
  if (isinf(a)) return 0x7c00;
  if (a < 0x1p-14) return (uint16_t)ldexp(a, 24);
  int e;
  double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
  return (uint16_t)(((e - 1 + 15) << 10) | ((uint16_t)ldexp(m, 11) - 1024));
}

void txattn__store(void *row, txattn_dtype t, int64_t c, double x) {
  if (t == TXATTN_DTYPE_F32) {
    ((float *)row)[c] = (float)x;
    return;
  }
  uint16_t bits;
  if (isnan(x)) {
    bits = t == TXATTN_DTYPE_F16 ? 0x7e00 : 0x7fc0;
  } else {
    double r = round_to(fabs(x), format_of(t));
    if (t == TXATTN_DTYPE_F16) {
      bits = f16_bits(r);
    } else {
      float f = (float)r; /* exact: r has 8 significant bits in float's range */
      uint32_t wide;
      memcpy(&wide, &f, sizeof wide);
      bits = (uint16_t)(wide >> 16);
    }
  }
  if (signbit(x)) bits |= 0x8000;
  ((uint16_t *)row)[c] = bits;
}

double txattn__ulp(txattn_dtype t, double x) {
  format f = format_of(t);
  int e = f.emin;
  if (x > 0.0 && isfinite(x)) {
    frexp(x, &e);
    e = e - 1 < f.emin ? f.emin : e - 1;
  }
  return ldexp(1.0, e - f.p + 1);
}

void txattn__fp8_range(txattn_dtype t, double *lo, double *hi, double *largest) {
  const int e4m3 = t == TXATTN_DTYPE_E4M3;
  *largest = e4m3 ? 448.0 : 57344.0;
  *lo = e4m3 ? 0x1p-117 : 0x1p-110; /* the smallest subnormal (2^-9, 2^-16) times it is 2^-126 */
  *hi = FLT_MAX / *largest;
}

uint8_t txattn__fp8_bits(txattn_dtype t, float x) {
  const int e4m3 = t == TXATTN_DTYPE_E4M3, mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const format f = {mbits + 1, 1 - bias, e4m3 ? 8 : 15};
  const uint8_t sign = signbit(x) ? 0x80 : 0;
  if (isnan(x)) return sign | (e4m3 ? 0x7f : 0x7e);
  double lo, hi, largest;
  txattn__fp8_range(t, &lo, &hi, &largest);
  double a = isinf(x) ? largest : fmin(round_to(fabs((double)x), f), largest);
  if (a == 0.0) return sign;
  int e;
  frexp(a, &e);
  e -= 1;                                                          /* a in [2^e, 2^(e+1)) */
  if (e < f.emin) return sign | (uint8_t)ldexp(a, mbits - f.emin); /* subnormal: the mantissa */
  const int m = (int)ldexp(a, mbits - e) - (1 << mbits);
  return sign | (uint8_t)(((e + bias) << mbits) | m);
}
