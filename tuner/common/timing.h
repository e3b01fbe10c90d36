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

/* One call of a plan on its tensors, as a tx_run_fn: tx_plan_call_run(arg) with a tx_plan_call. */
typedef struct tx_plan_call {
  const txattn_plan *plan;
  const txattn_tensors *t;
} tx_plan_call;
txattn_status tx_plan_call_run(void *arg);

/* The check of timed calls (txtune profile's): before every timed run of entry i, before(arg, i)
   may change its inputs and poison its output; after it, after(arg, i, first, per_call) judges the
   output of the run's last call and its seconds per call (first: i's first checked run) and returns
   nonzero to refuse i, which then stops (status TXATTN_OK, refused[i] set). One more call of each
   entry after its last run is checked the same way, so that a kernel cannot be exact on the calls
   it can predict only. */
typedef struct tx_timing_check {
  void (*before)(void *arg, size_t i);
  int (*after)(void *arg, size_t i, int first, double per_call_s);
  void *arg;
  unsigned char *refused; /* [n], set by the timer */
} tx_timing_check;

typedef struct tx_timing_opts {
  double min_run_s;  /* one timed run lasts at least this long (repetitions are doubled until it
                       does) */
  int runs;          /* timed runs per entry (1..1000), interleaved; the median is reported */
  double limit_s;    /* stop adding runs to an entry once it spent this much (0: no limit) */
  double deadline;   /* a tx_clock() time no run may be predicted to end after, nor an entry start
                        after (0: none); with a check, the timed runs stop early enough for each
                        entry's checked call after them to end by it too */
  double drop_ratio; /* after each round an entry with two runs or more whose fastest run is
                        slower than this x the leader's median stops (0: never) */
  int warm_each_run; /* one untimed call before every run, not only before the first */
  const tx_timing_check *check; /* NULL: outputs not checked */
} tx_timing_opts;

typedef struct tx_timing {
  double median_s, min_s, max_s; /* per call */
  int64_t reps;                  /* calls per timed run */
  int runs; /* timed runs made (fewer than asked: limit_s, the deadline or drop_ratio; 0: none) */
} tx_timing;

/* The one timer of txtune (bench, profile, validate), FFTW's: each of the n entries fn(args[i]) is
   called once untimed, then its repetitions are doubled until one run lasts min_run_s (that run is
   its first sample); then rounds of one run of each entry in turn, forward and backward in
   alternate rounds, so that the machine's drift moves them alike and neither of two always runs
   first, until each has `runs` runs. status[i] is i's first failure (its timing then unset), else
   TXATTN_OK with tm[i]. runs_out (NULL: not wanted) gets each entry's seconds per call of every
   run in the order made: runs_out[i * o->runs + k] for k < tm[i].runs. */
void tx_time(tx_run_fn fn, void *const *args, size_t n, const tx_timing_opts *o, tx_timing *tm,
             txattn_status *status, double *runs_out);

#endif
