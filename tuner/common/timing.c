/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L
#include "timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double tx_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

txattn_status tx_plan_call_run(void *arg) {
  const tx_plan_call *c = arg;
  return txattn_plan_execute(c->plan, c->t);
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

/* One entry of a timing. */
typedef struct entry {
  double *per_call; /* [want] */
  double spent, last;
  int64_t reps;
  int runs, done, checked;
} entry;

/* One run of e->reps calls of entry i after its warm-up, checked by o->check. */
static txattn_status run_once(tx_run_fn fn, void *arg, size_t i, const tx_timing_opts *o, entry *e,
                              int warm) {
  const tx_timing_check *ck = o->check;
  txattn_status s = warm ? fn(arg) : TXATTN_OK;
  if (s != TXATTN_OK) return s;
  if (ck && ck->before) ck->before(ck->arg, i);
  if ((s = timed_run(fn, arg, e->reps, &e->last)) != TXATTN_OK) return s;
  e->spent += e->last;
  if (ck && ck->after && ck->after(ck->arg, i, e->checked++ == 0, e->last / (double)e->reps)) {
    ck->refused[i] = 1;
    e->done = 1;
  }
  return TXATTN_OK;
}

/* Whether a run of e, starting now, would end after `end` (a tx_clock() time; 0: none). */
static int too_late(double end, const entry *e, double factor) {
  return end > 0 && tx_clock() + e->last * factor > end;
}

/* When the timed runs must stop for the checked call each entry makes after them (one call each)
   to end by o's deadline; 0 without a deadline. */
static double runs_end(const tx_timing_opts *o, const entry *e, size_t n,
                       const txattn_status *status) {
  if (o->deadline <= 0) return 0;
  double after = 0;
  for (size_t i = 0; o->check && i < n; i++)
    if (status[i] == TXATTN_OK && e[i].runs > 0) after += e[i].last / (double)e[i].reps;
  return o->deadline - after;
}

static double fastest(const entry *e) {
  double m = e->per_call[0];
  for (int k = 1; k < e->runs; k++) m = e->per_call[k] < m ? e->per_call[k] : m;
  return m;
}

static double median_of(const entry *e) {
  double v[1000];
  for (int k = 0; k < e->runs; k++) v[k] = e->per_call[k];
  return tx_sort_median(v, (size_t)e->runs);
}

/* After a round: entries with two runs or more whose fastest run is slower than drop_ratio x the
   leader's median stop (one run can be a stall of the host). */
static void drop_slow(entry *e, size_t n, const txattn_status *status, double ratio) {
  double lead = INFINITY;
  for (size_t i = 0; i < n; i++)
    if (status[i] == TXATTN_OK && e[i].runs > 0 && median_of(&e[i]) < lead) lead = median_of(&e[i]);
  for (size_t i = 0; i < n; i++)
    if (status[i] == TXATTN_OK && e[i].runs > 1 && fastest(&e[i]) > ratio * lead) e[i].done = 1;
}

void tx_time(tx_run_fn fn, void *const *args, size_t n, const tx_timing_opts *o, tx_timing *tm,
             txattn_status *status, double *runs_out) {
  int want = o->runs < 1 ? 1 : o->runs > 1000 ? 1000 : o->runs;
  entry *e = calloc(n + 1, sizeof *e);
  double *samples = calloc(n * (size_t)want + 1, sizeof *samples);
  for (size_t i = 0; i < n; i++) {
    tm[i] = (tx_timing){0};
    status[i] = e && samples ? TXATTN_OK : TXATTN_E_NOMEM;
    if (status[i] != TXATTN_OK || (o->deadline > 0 && tx_clock() >= o->deadline)) continue;
    status[i] = fn(args[i]);
    if (status[i] != TXATTN_OK) continue;
    e[i].per_call = samples + i * (size_t)want;
    /* calibration: the repetitions double until a run lasts min_run_s */
    for (e[i].reps = 1; status[i] == TXATTN_OK; e[i].reps *= 2) {
      status[i] = run_once(fn, args[i], i, o, &e[i], 0);
      if (status[i] != TXATTN_OK || e[i].done) break;
      if (e[i].last >= o->min_run_s || e[i].reps >= (INT64_C(1) << 40)) {
        e[i].per_call[e[i].runs++] = e[i].last / (double)e[i].reps;
        break;
      }
      if (too_late(o->deadline, &e[i], 2)) break; /* no sample: the deadline came first */
    }
  }
  for (int round = 1, more = 1; more; round++) {
    more = 0;
    if (o->drop_ratio > 0) drop_slow(e, n, status, o->drop_ratio);
    const double end = runs_end(o, e, n, status);
    for (size_t j = 0; j < n; j++) {
      size_t i = round % 2 ? n - 1 - j : j; /* backward in odd rounds: the first ran first */
      if (status[i] != TXATTN_OK || e[i].done || e[i].runs == 0 || e[i].runs >= want ||
          (o->limit_s > 0 && e[i].spent + e[i].last > o->limit_s) || too_late(end, &e[i], 1))
        continue;
      status[i] = run_once(fn, args[i], i, o, &e[i], o->warm_each_run);
      if (status[i] == TXATTN_OK && !e[i].done)
        e[i].per_call[e[i].runs++] = e[i].last / (double)e[i].reps;
      more = 1;
    }
  }
  /* one more checked call of each entry with a run, stopped early or not: after inputs it has not
     seen, so that no entry is exact only on the calls it could predict */
  for (size_t i = 0; i < n; i++) {
    if (status[i] != TXATTN_OK || !o->check || e[i].runs == 0 || o->check->refused[i]) continue;
    int64_t reps = e[i].reps;
    e[i].reps = 1;
    status[i] = run_once(fn, args[i], i, o, &e[i], 0);
    e[i].reps = reps;
  }
  for (size_t i = 0; i < n; i++) {
    if (status[i] != TXATTN_OK || e[i].runs == 0 || (o->check && o->check->refused[i])) continue;
    if (runs_out)
      memcpy(runs_out + i * (size_t)want, e[i].per_call, (size_t)e[i].runs * sizeof *runs_out);
    tm[i].median_s = tx_sort_median(e[i].per_call, (size_t)e[i].runs);
    tm[i].min_s = e[i].per_call[0];
    tm[i].max_s = e[i].per_call[e[i].runs - 1];
    tm[i].reps = e[i].reps;
    tm[i].runs = e[i].runs;
  }
  free(samples);
  free(e);
}
