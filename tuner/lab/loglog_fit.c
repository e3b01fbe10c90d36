/* SPDX-License-Identifier: MIT */
#include "loglog_fit.h"

#include <math.h>

double tx_loglog_slope(const double *n, const double *t, size_t count) {
  double sx = 0, sy = 0, m = 0;
  for (size_t i = 0; i < count; i++)
    if (n[i] > 0 && t[i] > 0) {
      sx += log(n[i]);
      sy += log(t[i]);
      m += 1;
    }
  if (m < 3) return NAN;
  double mx = sx / m, my = sy / m, sxx = 0, sxy = 0;
  for (size_t i = 0; i < count; i++)
    if (n[i] > 0 && t[i] > 0) {
      double dx = log(n[i]) - mx;
      sxx += dx * dx;
      sxy += dx * (log(t[i]) - my);
    }
  return sxx > 0 ? sxy / sxx : NAN;
}
