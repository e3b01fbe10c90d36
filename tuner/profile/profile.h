/* SPDX-License-Identifier: MIT */
/* txtune profile, FFTW's planner for attention: for each class of shapes, from small n up, every
   candidate (kernel x tunables) exact on a small shape is timed at each point with the one
   interleaved timer (tx_time: repetitions doubled to a minimum run, K runs of each candidate in
   turn, the median), the rule prof_choose picks the winner, and a class stops when the budget
   left for it is spent. Every knob is here, with the measurement behind its value
   (docs/measurements.md, "Profiling method"); docs/profiling.md describes the loop. */
#ifndef TXTUNE_PROFILE_H
#define TXTUNE_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "txattn/table.h"
#include "txattn/txattn.h"

/* ---- the knobs ---- */
/* Within this fraction of the fastest is always a tie: the spread of back-to-back medians of one
   kernel on a quiet VM ("Tie limits"). */
#define PROF_TIE_MIN 0.03
/* Beyond this never, on one thread: two tiles of one kernel a few percent apart flipped between
   profiles up to it ("Tie limits"). */
#define PROF_TIE_MAX 0.06
/* ... and where either runs on several threads, whose speed drifts far more ("Threaded drift"). */
#define PROF_TIE_MAX_THREADED 0.15
/* After each round from the second, a candidate whose fastest run is slower than this x the
   leader's median stops ("Two runs before a drop", docs/measurements.md). */
#define PROF_DROP_RATIO 1.5
/* A candidate whose fastest run lost by this x to the winner's median at a point of its series is
   not timed at its later points ("Losers stay out", docs/measurements.md). */
#define PROF_LOSER_RATIO 3.0
/* No run may be predicted to end within this many seconds of the budget's end: at 0.5 s a loaded
   VM's --quick profile ended 0.8 s past its 30 s ("The planner loop", docs/measurements.md). */
#define PROF_END_RESERVE_S 1.0
/* n of the small shape a third-party candidate must be exact on: a multiple of no block. */
#define PROF_CHECK_N 193
/* Rows of every timed point the checked calls are compared on, fewer (2 at least) where they hold
   more than PROF_CHECK_ROW_WORK keys x (d_qk + d_v): 8 rows at n = 4096, d = 128 cost the fp64
   reference milliseconds ("Accuracy"). */
#define PROF_CHECK_ROWS     8
#define PROF_CHECK_ROW_WORK (8.0 * 4096 * 256)
/* A trial in the scanner (txattn_kernel_trial) waits a tenth of the budget within 1 .. 60 s: a
   hung kernel costs that once (the slowest honest check took 0.2 s). */
#define PROF_CHECK_TIMEOUT_S 60.0
/* A timed call is refused as impossible when its time implies this x the machine's roofs: the
   fastest honest kernel stayed 5.4x above the floor ("The floor", docs/measurements.md). */
#define PROF_FLOOR_SLACK 4.0

typedef enum prof_mode { PROF_QUICK, PROF_DEFAULT, PROF_PATIENT } prof_mode;
/* What a mode sets: its budget (a hard cap, unless --budget says), the shortest timed run, the
   runs per candidate (K), and the tile variants (0: the default tunables; 1: one more; 2: a grid);
   "Profile time" and "Stability and regret" have the figures. */
typedef struct prof_mode_knobs {
  double budget_s, min_run_s;
  int runs, variants;
} prof_mode_knobs;
extern const prof_mode_knobs prof_modes[3];

#define PROF_MAX_TUNABLES 8
#define PROF_MAX_CANDS    128 /* candidates of one point */
/* The most spread the table takes (docs/dispatch_table.md): a run that a loaded machine stalled
   for a hundred times its length says no more than that. */
#define PROF_MAX_SPREAD 100.0

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

/* The ragged-decode classes (txattn_table_class.ragged): each point is one ragged decode call of
   a batch of sequences whose kv lengths are a fixed spread of its n, the longest: sequence b has
   max(1, n x num/den) keys for the b-th (mod PROF_RAGGED_SPREAD) fraction of 1/32, 1/16, 1/8, 1/4,
   1/2, 1, 3/32 and 5/8 (n = 32768 gives 1024, 2048, ..., 32768, 3072 and 20480: 2.69 n keys of
   the 8 n a padded batch reads). docs/dispatch_table.md says the same. */
#define PROF_RAGGED_SPREAD 8
/* The softcap class's cap (Gemma 2's) and the document-mask class's documents: a point of n keys
   packs documents of n / PROF_DOC_PARTS keys (as --doc-lens builds its mask tensor). */
#define PROF_SOFTCAP   50.0f
#define PROF_DOC_PARTS 4
/* The paged class, a server's decode: pages of vLLM's default block size in a shuffled order
   (tx_buffers_page), Llama 3 8B's heads (32 query heads over 8 K/V heads, d 128, whatever --d
   says) and 8-bit K/V (llama.cpp's q8_0). */
#define PROF_PAGE_SIZE   16
#define PROF_PAGED_HEADS 32
#define PROF_PAGED_D     128
void prof_ragged_lens(int64_t n, int64_t batch, int64_t *lens);

/* The index (for txattn_kernel_get) of ctx's kernel of that name, its info in *info; SIZE_MAX if
   there is none. */
size_t prof_kernel_find(txattn_context *ctx, const char *name, txattn_kernel_info *info);
/* 1 if k comes with libtxattn: a shipped plugin's kernel whose file lies in the library's own
   plugin directory (docs/dispatch_table.md); else third-party, which the profile tries in the
   scanner's process first. */
int prof_kernel_shipped(const txattn_kernel_info *k);
/* Whether, on one thread, the kernel `info` describes is left to its one-thread twin at p: ctx
   runs one thread, the kernel names a twin (one_thread_same_as) and the twin makes a plan for p
   (it is loaded, usable and applicable). */
int prof_twin_stands_in(txattn_context *ctx, const txattn_problem *p,
                        const txattn_kernel_info *info);
/* A kernel that failed to plan a problem with its default tunables, with a status other than
   TXATTN_E_UNSUPPORTED (which only says the kernel declines the problem): a broken kernel, which
   the profile leaves out of that point and reports. */
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

/* The candidates of one point: every usable kernel that takes the problem, but, where `twins`,
   one whose one-thread twin (txattn/plugin.h: one_thread_same_as) stands in for it, with its
   default tunables and the variants of prof_modes[].variants. Plans are made for p; names live as
   long as the plans. Returns the number written to out (at most cap); the kernels that failed to
   plan p otherwise than by declining it go to *failed (NULL: not wanted). */
size_t prof_candidates(txattn_context *ctx, const txattn_problem *p, int variants, int twins,
                       prof_cand *out, size_t cap, prof_plan_failures *failed);
void prof_candidates_free(prof_cand *c, size_t n);
/* Appends kernel with the given tunables (the others at their defaults) unless it is there already
   or the kernel declines; returns the new count. */
size_t prof_candidate_add(txattn_context *ctx, const txattn_problem *p, const char *kernel,
                          const char *const *names, const int64_t *values, size_t n_tun,
                          prof_cand *out, size_t n, size_t cap);

/* How a candidate failed its check: its answer (inexact), or what it did in the scanner's process
   (txattn_kernel_trial): crashed (a signal, or it ended the process), hung, printed on stdout or
   wrote outside its output; or, timed, answered wrong on a later call than its first at a point, or
   took less time than the machine can compute its call in. */
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

/* The reference on sampled rows of one timed point (profile_rows.c): rows spread over the
   point's heads and rows (the first and last row among them), each computed by txattn_reference
   as a one-row problem that sees the same keys, and the point's bound (txattn_error_bound's, with
   max|V| over the point's V). Each candidate's first call there is compared with them, so that
   the table's max_error at every point is measured there, and a kernel wrong only at large n is
   caught where it is wrong. */
typedef struct prof_rows prof_rows;
/* p resolved, t its tensors (contiguous, all-zero layouts). NULL when the reference cannot be
   made (why says so). */
prof_rows *prof_rows_new(const txattn_problem *p, const txattn_tensors *t, int rows, char *why,
                         size_t why_size);
void prof_rows_free(prof_rows *r);
/* 1 if t's output (a candidate's, just computed) is within the bound on every sampled row, else 0;
   *err its error as the table counts it (verify.h: scaled_error; NaN where a row that should be
   finite is not), why the first fault in words. */
int prof_rows_check(const prof_rows *r, const txattn_tensors *t, double *err, char *why,
                    size_t why_size);
/* Before a checked call: the sampled rows' queries in t take their other values (each has two, the
   point's and their negation, and the reference knows the output of both) and their output rows
   are poisoned. A kernel that leaves a row unwritten, or writes what it computed for other inputs,
   fails prof_rows_check after the call. */
void prof_rows_turn(prof_rows *r, const txattn_tensors *t);
/* The check of a point's timed calls (tx_timing_check's): turn(arg, t) changes the sampled rows'
   inputs and poisons their outputs (prof_rows_turn), exact(arg, t, &err, why, size) judges the
   output (prof_rows_check), and a run's time per call must be floor_s at least (what the machine
   can compute the call in; floor_why says how). A candidate that fails is refused: refused(arg, c,
   fault, err, why) is told (PROF_FAULT_INEXACT on its first run, PROF_FAULT_LATER on a later one,
   PROF_FAULT_TOO_FAST) and it is dropped. turn and exact may be NULL (outputs not checked). */
typedef struct prof_run_check {
  void (*turn)(void *arg, const txattn_tensors *t);
  int (*exact)(void *arg, const txattn_tensors *t, double *err, char *why, size_t size);
  double floor_s;
  const char *floor_why;
  void (*refused)(void *arg, prof_cand *c, prof_fault fault, double err, const char *why);
  void *arg;
} prof_run_check;
/* Times the candidates of one point on the tensors t with tx_time (the candidates on one thread
   first; min_run_s and `runs` as the mode's; one untimed call before every run; no run predicted
   to end after `deadline`, a tx_clock() time, 0: none), each timed call checked by chk (NULL:
   none). time_s is the median of a candidate's runs and spread their range over it (-1 with one
   run); one that failed, was refused or got no run is dropped (n updated, its plan freed).
   *untimed counts those the deadline left without a run. Returns TXATTN_OK or the first failure. */
txattn_status prof_time(prof_cand *c, size_t *n, const txattn_tensors *t, double min_run_s,
                        int runs, double deadline, const prof_run_check *chk, size_t *untimed);
/* The winner of a point: the fastest timed candidate, unless others are within the noise of it:
   within (1 + tol) x its time, tol the larger spread of the two kept within PROF_TIE_MIN ..
   PROF_TIE_MAX (PROF_TIE_MAX_THREADED where either runs on several threads). Among those the
   preferred one wins: one with a spread (timed more than once); then, where neither runs on
   several threads, a kernel that starts no threads; then the kernel's default tunables; then the
   faster; then by name and slot ("Tie limits", docs/measurements.md). n if none was timed. */
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

/* Per class, which kernel wins where, and the speedup of the winner over the dense masked.*
   kernel where it was measured. */
void prof_summary(const txattn_table *t, FILE *f);

/* ---- the table (profile_table.c) ---- */
/* c as the table records it: its time and error, its spread (none with one run, at most
   PROF_MAX_SPREAD); the names and tunables stay c's. */
txattn_table_candidate prof_table_candidate(const prof_cand *c);
/* Records the point (n, r) of class cls: the candidates of c that were timed, c[winner] the
   winner (prof_choose). The class joins t with its first point (*in_table, *index: its index). */
txattn_status prof_table_add_point(txattn_table *t, const txattn_table_class *cls, int *in_table,
                                   size_t *index, int64_t n, int64_t r, const prof_cand *c,
                                   size_t nc, size_t winner);
/* Records that kernel (with those tunables; n_tun 0: its defaults) is excluded at (cls, n, r):
   err its error (NaN: none measured), reason why. */
txattn_status prof_table_exclude(txattn_table *t, const txattn_table_class *cls, const char *kernel,
                                 size_t n_tun, const char *const *names, const int64_t *values,
                                 int64_t n, int64_t r, double err, const char *reason);
#endif
