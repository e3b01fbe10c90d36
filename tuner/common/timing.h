/* SPDX-License-Identifier: MIT */
/* Timing the way FFTW does it: warm up, double the repetitions until one timed run is long enough
   for the clock, then take the median of several such runs. */
#ifndef TXTUNE_TIMING_H
#define TXTUNE_TIMING_H

#include <stddef.h>
#include <stdint.h>

#include "txattn/txattn.h"

double tx_clock(void); /* seconds on the monotonic clock */
/* qsort comparator of doubles, ascending (medians of timings) */
int tx_cmp_double(const void *a, const void *b);
/* Sorts n > 0 values ascending in place and returns their median (the mean of the middle two
   when n is even); v stays sorted, for tx_sorted_spread. */
double tx_sort_median(double *v, size_t n);
/* The relative spread of n >= 2 timings sorted ascending: their range over their median,
   (max - min) / median. The range is what a median of a few runs is known to: the smallest and
   the largest of k runs bound the median of the runs' distribution with probability 1 - 2^(1-k)
   (75% with 3, 94% with 5, 98% with 7), where the middle half of 5 (second to fourth) bound it
   with 62.5% only. A narrower spread understated how far two profiles differ ("Spread as the
   range of the runs", docs/measurements.md). */
double tx_sorted_spread(const double *v, size_t n);

typedef txattn_status (*tx_run_fn)(void *arg);

typedef struct tx_timing_opts {
  double min_run_s; /* one timed run lasts at least this long (repetitions are doubled until it
                       does) */
  int runs;         /* timed runs; the median is reported */
  double
      limit_s; /* stop adding runs once this much time has been spent (at least one run is made) */
} tx_timing_opts;

typedef struct tx_timing {
  double median_s, min_s, max_s; /* per call */
  int64_t reps;                  /* calls per timed run */
  int runs;                      /* timed runs made (fewer than asked when limit_s was reached) */
} tx_timing;

/* Returns the first status other than TXATTN_OK that fn returns, with *out unset. */
txattn_status tx_measure(tx_run_fn fn, void *arg, const tx_timing_opts *opts, tx_timing *out);

#endif
