/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L
#include "timing.h"

#include <stdlib.h>
#include <time.h>

double tx_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static txattn_status timed_run(tx_run_fn fn, void *arg, int64_t reps, double *seconds) {
  double t0 = tx_clock();
  for (int64_t r = 0; r < reps; r++) {
    txattn_status s = fn(arg);
    if (s != TXATTN_OK) return s;
  }
  *seconds = tx_clock() - t0;
  return TXATTN_OK;
}

int tx_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double sorted_median(const double *v, size_t n) {
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double tx_sort_median(double *v, size_t n) {
  qsort(v, n, sizeof v[0], tx_cmp_double);
  return sorted_median(v, n);
}

double tx_sorted_spread(const double *v, size_t n) {
  return (v[n - 1] - v[0]) / sorted_median(v, n);
}

enum { MAX_RUNS = 1000 };

txattn_status tx_measure(tx_run_fn fn, void *arg, const tx_timing_opts *opts, tx_timing *out) {
  double start = tx_clock(), t;
  txattn_status s = fn(arg); /* warm-up: first touch of the output and of the kernel's workspace */
  if (s != TXATTN_OK) return s;

  /* The run that first lasts long enough is already a valid sample: keep it as run 1. */
  int64_t reps = 1;
  for (;;) {
    if ((s = timed_run(fn, arg, reps, &t)) != TXATTN_OK) return s;
    if (t >= opts->min_run_s || reps >= (INT64_C(1) << 40)) break;
    reps *= 2;
  }
  double per_call[MAX_RUNS];
  int runs = 0, want = opts->runs < 1 ? 1 : opts->runs > MAX_RUNS ? MAX_RUNS : opts->runs;
  per_call[runs++] = t / (double)reps;
  while (runs < want && tx_clock() - start + t <= opts->limit_s) {
    if ((s = timed_run(fn, arg, reps, &t)) != TXATTN_OK) return s;
    per_call[runs++] = t / (double)reps;
  }

  out->median_s = tx_sort_median(per_call, (size_t)runs);
  out->min_s = per_call[0];
  out->max_s = per_call[runs - 1];
  out->reps = reps;
  out->runs = runs;
  return TXATTN_OK;
}
