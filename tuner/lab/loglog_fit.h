/* SPDX-License-Identifier: MIT */
/* The power law t ~ n^k that measured times follow, for sweeps and plots: dense attention tends
   to k = 2, a fixed window to k = 1. */
#ifndef TXTUNE_LOGLOG_FIT_H
#define TXTUNE_LOGLOG_FIT_H

#include <stddef.h>

/* The least-squares slope of log t against log n over the pairs with n > 0 and t > 0; NaN when
   fewer than three remain, or fewer than two distinct n (a line through two points fits anything
   and says nothing of how t grows). */
double tx_loglog_slope(const double *n, const double *t, size_t count);

#endif
