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
/* The median of n > 0 values sorted ascending (the mean of the middle two when n is even) */
double tx_sorted_median(const double *v, size_t n);

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
