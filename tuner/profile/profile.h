/* SPDX-License-Identifier: MIT */
/* txtune profile, FFTW's planner for attention (docs/profiling.md, "The loop"): for each class of
   shapes, from small n up, each candidate (kernel x tunables) is timed at each point with the one
   interleaved timer (tx_time), prof_choose picks the winner, and a class stops when the budget
   left for it is spent. The knobs, each with the measurement in docs/measurements.md that chose
   its value ("Profiling method" unless said): */
#ifndef TXTUNE_PROFILE_H
#define TXTUNE_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "txattn/table.h"
#include "txattn/txattn.h"

#define PROF_TIE_MIN          0.03 /* always a tie within it: "Tie limits" */
#define PROF_TIE_MAX          0.06 /* never a tie beyond it, one thread: "Tie limits" */
#define PROF_TIE_MAX_THREADED 0.15 /* ... where either is threaded: "Threaded drift" */
#define PROF_DROP_RATIO       1.5  /* a candidate this far behind stops: "Two runs before a drop" */
#define PROF_LOSER_RATIO      3.0  /* lost by this, out of its series: "Losers stay out" */
#define PROF_END_RESERVE_S    1.0 /* no run ends within it of the budget's end: "The planner loop" */
#define PROF_CHECK_N          193 /* third-party kernels' check shape, a multiple of no block */
#define PROF_CHECK_ROWS       8   /* rows checked at a timed point: "Accuracy" */
#define PROF_CHECK_ROW_WORK   (8.0 * 4096 * 256) /* fewer where rows are longer: "Accuracy" */
#define PROF_CHECK_TIMEOUT_S  60.0 /* a trial's wait at most; the slowest honest check took 0.2 s */
#define PROF_FLOOR_SLACK      4.0  /* no call faster than the roofs / this: "The floor" */

/* The modes' budget (a hard cap unless --budget says), shortest timed run, runs per candidate (K)
   and tile variants (0: defaults; 1: one more; 2: a grid): "Profile time", "Stability and regret". */
typedef enum prof_mode { PROF_QUICK, PROF_DEFAULT, PROF_PATIENT } prof_mode;
typedef struct prof_mode_knobs {
  double budget_s, min_run_s;
  int runs, variants;
} prof_mode_knobs;
extern const prof_mode_knobs prof_modes[3];

#define PROF_MAX_TUNABLES 8
#define PROF_MAX_CANDS    128   /* candidates of one point */
#define PROF_MAX_SPREAD   100.0 /* the most the table takes (docs/dispatch_table.md) */

/* One candidate (kernel x tunables) at one point. */
typedef struct prof_cand {
  size_t kernel; /* index for txattn_kernel_get */
  const char *name;
  int slot;     /* 0: the kernel's default tunables; k > 0: its k-th variant */
  int parallel; /* its kernel may start threads (TXATTN_KERNEL_THREADED) */
  int threaded; /* it runs on more than one thread here (parallel, in a context of more) */
  size_t n_tun;
  const char *tun_names[PROF_MAX_TUNABLES];
  int64_t tun_values[PROF_MAX_TUNABLES];
  txattn_plan *plan;
  double max_error;
  int n_runs;       /* timed runs (0: not timed) */
  double time_s;    /* the median of its runs */
  double fastest_s; /* the fastest of them */
  double spread;    /* their (max - min) / median (tx_sorted_spread); -1 with one run */
} prof_cand;

/* The classes' shapes (docs/dispatch_table.md): a ragged point's batch, sequence b of max(1, n x
   num/den) keys for the (b mod 8)-th of 1/32, 1/16, 1/8, 1/4, 1/2, 1, 3/32, 5/8 (prof_ragged_lens);
   Gemma 2's softcap; documents of n / PROF_DOC_PARTS keys; the paged class as a server's decode:
   vLLM's block size in a shuffled order, Llama 3 8B's heads (32 over 8, d 128) and q8_0 K/V. */
#define PROF_RAGGED_SPREAD 8
#define PROF_SOFTCAP       50.0f
#define PROF_DOC_PARTS     4
#define PROF_PAGE_SIZE     16
#define PROF_PAGED_HEADS   32
#define PROF_PAGED_D       128
void prof_ragged_lens(int64_t n, int64_t batch, int64_t *lens);

/* The index (for txattn_kernel_get) of ctx's kernel of that name, its info in *info; SIZE_MAX if
   there is none. */
size_t prof_kernel_find(txattn_context *ctx, const char *name, txattn_kernel_info *info);
/* 1 if k comes with libtxattn (a shipped plugin in the library's own plugin directory); else
   third-party, which the profile tries in the scanner's process first. */
int prof_kernel_shipped(const txattn_kernel_info *k);
/* Whether, ctx running one thread, the kernel is left to its one-thread twin (one_thread_same_as),
   which plans p. */
int prof_twin_stands_in(txattn_context *ctx, const txattn_problem *p,
                        const txattn_kernel_info *info);
/* A kernel that failed to plan a problem otherwise than by declining it (TXATTN_E_UNSUPPORTED):
   broken, left out of that point and reported. */
#define PROF_MAX_PLAN_FAILURES 32
typedef struct prof_plan_failure {
  size_t kernel;    /* index for txattn_kernel_get */
  const char *name; /* lives as long as the context */
  txattn_status status;
  char why[384]; /* "TXATTN_E_PLUGIN: <the library's message>" */
} prof_plan_failure;
typedef struct prof_plan_failures {
  size_t n;
  prof_plan_failure f[PROF_MAX_PLAN_FAILURES];
} prof_plan_failures;

/* The candidates of one point: every usable kernel that plans p (where `twins`, not one its twin
   stands in for) with its default tunables and `variants` (prof_modes[]). Names live as long as
   the plans. Returns the number written to out (at most cap); failures go to *failed (or NULL). */
size_t prof_candidates(txattn_context *ctx, const txattn_problem *p, int variants, int twins,
                       prof_cand *out, size_t cap, prof_plan_failures *failed);
void prof_candidates_free(prof_cand *c, size_t n);
/* Appends kernel with the given tunables (the others at their defaults) unless it is there already
   or the kernel declines; returns the new count. */
size_t prof_candidate_add(txattn_context *ctx, const txattn_problem *p, const char *kernel,
                          const char *const *names, const int64_t *values, size_t n_tun,
                          prof_cand *out, size_t n, size_t cap);

/* How a candidate failed its check: its answer, what it did in the scanner's process
   (txattn_kernel_trial), or, timed, a wrong later call or an impossible time. */
typedef enum prof_fault {
  PROF_FAULT_NONE,
  PROF_FAULT_INEXACT,
  PROF_FAULT_CRASHED,
  PROF_FAULT_HUNG,
  PROF_FAULT_PRINTS,
  PROF_FAULT_OVERRUN,  /* wrote outside its output */
  PROF_FAULT_LATER,    /* exact on its first call at a timed point, not on a later one there */
  PROF_FAULT_TOO_FAST, /* a timed run faster per call than the machine's roofs allow */
  PROF_FAULT_COUNT_
} prof_fault;

/* The reference on sampled rows of one timed point (profile_rows.c): rows spread over its heads
   and rows (the first and last among them), each by txattn_reference as a one-row problem that
   sees the same keys, within txattn_error_bound's bound with max|V| over the point's V. Every timed
   call is compared with them: max_error is measured at every point, a kernel wrong only at large
   n is caught there. p resolved, t its contiguous tensors; NULL (why) when it cannot be made. */
typedef struct prof_rows prof_rows;
prof_rows *prof_rows_new(const txattn_problem *p, const txattn_tensors *t, int rows, char *why,
                         size_t why_size);
void prof_rows_free(prof_rows *r);
/* 1 if t's output is within the bound on every sampled row; *err the error as the table counts
   it (NaN where a row that should be finite is not), why the first fault. */
int prof_rows_check(const prof_rows *r, const txattn_tensors *t, double *err, char *why,
                    size_t why_size);
/* Before a checked call: the sampled rows' queries flip sign (the reference knows both outputs)
   and their output rows are poisoned, so that a kernel that leaves a row unwritten, or writes
   what it computed for other inputs, fails prof_rows_check. */
void prof_rows_turn(prof_rows *r, const txattn_tensors *t);
/* The check of a point's timed calls (on tx_timing_check): turn before each run (prof_rows_turn),
   exact after it (prof_rows_check; both may be NULL), and no call faster than floor_s. One that
   fails is told to refused (INEXACT on its first run, LATER after, TOO_FAST) and dropped. */
typedef struct prof_run_check {
  void (*turn)(void *arg, const txattn_tensors *t);
  int (*exact)(void *arg, const txattn_tensors *t, double *err, char *why, size_t size);
  double floor_s;
  const char *floor_why;
  void (*refused)(void *arg, prof_cand *c, prof_fault fault, double err, const char *why);
  void *arg;
} prof_run_check;
/* Times the candidates of one point on t with tx_time (one-thread candidates first, an untimed
   call before every run, none predicted to end after `deadline`, 0: none), checked by chk (or
   NULL): time_s the median, spread the range over it (-1 with one run). One that failed, was
   refused or got no run is dropped (n updated, plan freed); *untimed counts those the deadline
   left without a run. Returns TXATTN_OK or the first failure. */
txattn_status prof_time(prof_cand *c, size_t *n, const txattn_tensors *t, double min_run_s,
                        int runs, double deadline, const prof_run_check *chk, size_t *untimed);
/* The winner of a point: among the candidates within (1 + tol) of the fastest (tol the larger
   spread of the two, within PROF_TIE_MIN .. PROF_TIE_MAX, or PROF_TIE_MAX_THREADED), one timed
   more than once; then, neither threaded, one that starts no threads; then default tunables; then
   the faster; then by name and slot. n if none was timed. */
size_t prof_choose(const prof_cand *c, size_t n);

/* The progress line on stderr (only when it is a terminal). */
typedef struct prof_progress {
  int on;
  size_t done, total;
  double start, budget_s;
} prof_progress;
void prof_progress_init(prof_progress *p, size_t total, double budget_s);
void prof_progress_show(prof_progress *p, const char *what);
void prof_progress_end(prof_progress *p);

/* Per class, which kernel wins where, and its speedup over the dense masked.* kernel. */
void prof_summary(const txattn_table *t, FILE *f);

/* ---- the table (profile_table.c) ---- */
/* c as the table records it (its spread at most PROF_MAX_SPREAD; names stay c's). */
txattn_table_candidate prof_table_candidate(const prof_cand *c);
/* Records the point (n, r) of class cls: c's timed candidates, c[winner] the winner. The class
   joins t with its first point (*in_table, *index). */
txattn_status prof_table_add_point(txattn_table *t, const txattn_table_class *cls, int *in_table,
                                   size_t *index, int64_t n, int64_t r, const prof_cand *c,
                                   size_t nc, size_t winner);
/* Records that kernel (with those tunables; n_tun 0: its defaults) is excluded at (cls, n, r):
   err its error (NaN: none measured), reason why. */
txattn_status prof_table_exclude(txattn_table *t, const txattn_table_class *cls, const char *kernel,
                                 size_t n_tun, const char *const *names, const int64_t *values,
                                 int64_t n, int64_t r, double err, const char *reason);
#endif
