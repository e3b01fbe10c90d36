/* SPDX-License-Identifier: MIT */
/* txtune profile: the pieces shared by the command (cmd_profile.c), the measuring of one point
   (profile_measure.c), the exactness checks (profile_check.c), the summary (profile_summary.c) and
   the progress line (progress.c). The knobs and the winner's rule: profile_policy.h. */
#ifndef TXTUNE_PROFILE_H
#define TXTUNE_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile_policy.h"
#include "txattn/table.h"
#include "txattn/txattn.h"

#define PROF_MAX_TUNABLES 8
#define PROF_MAX_RUNS     16

/* One candidate (kernel x tunables) at one point. */
typedef struct prof_cand {
  size_t kernel; /* index for txattn_kernel_get */
  const char *name;
  int slot; /* 0: the kernel's default tunables; k > 0: its k-th variant (the same slot at every n) */
  int sparse;   /* its cost follows the visible pairs, not n_q x n_kv (TXATTN_KERNEL_SPARSE) */
  int parallel; /* its kernel may start threads (TXATTN_KERNEL_THREADED) */
  int threaded; /* it runs on more than one thread here (parallel, in a context of more) */
  size_t n_tun;
  const char *tun_names[PROF_MAX_TUNABLES];
  int64_t tun_values[PROF_MAX_TUNABLES];
  txattn_plan *plan;
  double max_error;
  int want;         /* timed runs planned for it (0: the settings' rounds) */
  int optional;     /* timed only because there was time to spare: a point stands without it */
  double predict_s; /* expected time of one call (0: unknown), so a deadline is not overrun */
  double expect_s;  /* the plan's prediction, which timing leaves alone (0: none) */
  int history;      /* expect_s follows its own times at smaller n (else the point's best's) */
  double first_s;   /* its first call, timed to predict the repetitions per run */
  int64_t reps;
  double runs[PROF_MAX_RUNS];
  int n_runs;   /* 0 after prof_time: the deadline came first, it was not timed */
  int rough;    /* pruned, or planned with one run: time_s is its fastest run, no spread */
  int keep;     /* never pruned: validate times the dispatcher's pick in full */
  int borrowed; /* the plan belongs to another copy (a visit's, profile_revisit.c): prof_time_until
                   never frees it, and its first call is not its first at the point */
  int refused;  /* a timed call of it failed its check (prof_run_check): it is dropped */
  double time_s, spread;
} prof_cand;

/* The seconds of a run of calls of t seconds, as the plan counts them: the repetitions that make it
   last run_margin x min_run_s, or one call, and its warm-up's one call (none past
   warm_up_max_call_s). */
double prof_run_len(const prof_settings *s, double t);

/* The ragged-decode classes (txattn_table_class.ragged): each point is one ragged decode call of
   a batch of sequences whose kv lengths are a fixed spread of its n, the longest: sequence b has
   max(1, n x num/den) keys for the b-th (mod PROF_RAGGED_SPREAD) fraction of 1/32, 1/16, 1/8, 1/4,
   1/2, 1, 3/32 and 5/8 (n = 32768 gives 1024, 2048, ..., 32768, 3072 and 20480: 2.69 n keys of
   the 8 n a padded batch reads). docs/dispatch_table.md says the same. */
#define PROF_RAGGED_SPREAD 8
void prof_ragged_lens(int64_t n, int64_t batch, int64_t *lens);

/* The index (for txattn_kernel_get) of ctx's kernel of that name, its info in *info; SIZE_MAX if
   there is none. */
size_t prof_kernel_find(txattn_context *ctx, const char *name, txattn_kernel_info *info);
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

/* The candidates of one point: every usable kernel that takes the problem (but one whose twin
   stands in for it, if s->one_loop_once), with its default tunables and the variants the settings
   ask for. Plans are made for p; names live as long as the plans. Returns the number of candidates
   written to out (at most cap). A kernel that fails to plan p otherwise than by declining it is
   left out. */
size_t prof_candidates(txattn_context *ctx, const txattn_problem *p, const prof_settings *s,
                       prof_cand *out, size_t cap);
/* The same, and the kernels that failed to plan p go to *failed. */
size_t prof_candidates_failed(txattn_context *ctx, const txattn_problem *p, const prof_settings *s,
                              prof_cand *out, size_t cap, prof_plan_failures *failed);
void prof_candidates_free(prof_cand *c, size_t n);
/* Appends kernel with the given tunables (the others at their defaults) unless it is there already
   or the kernel declines; returns the new count. */
size_t prof_candidate_add(txattn_context *ctx, const txattn_problem *p, const char *kernel,
                          const char *const *names, const int64_t *values, size_t n_tun,
                          prof_cand *out, size_t n, size_t cap);

/* How a candidate failed its check: its answer (inexact), or what it did: crashed (a signal, or
   it ended the check process), hung (no answer within the timeout), printed on stdout or wrote
   outside its output; or, timed, answered wrong on a later call than its first at a point, or took
   less time than the machine can compute its call in. A kernel that hung, printed or did one of the
   last two is left out of the rest of the profile (prof_check). */
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

/* Exactness of candidates on a small shape of the class; results are remembered per class, r,
   kernel and tunables so each is checked once. */
typedef struct prof_checks prof_checks;
prof_checks *prof_checks_new(void);
void prof_checks_free(prof_checks *c);
/* The seconds the next isolated checks may wait for an answer (default check_timeout_s); cut: the
   budget's end cut it short, so that no answer within it is no hang (the candidate is dropped
   there, as one that cannot run, and its kernel is not left out). */
void prof_checks_timeout(prof_checks *c, double timeout_s, int cut);
/* small: the class's problem shrunk to a size the fp64 reference does quickly. Returns 1 if exact
   (error in *err), 0 if not (err: NaN if not finite; why gets the reason, *fault how it failed),
   -1 if the kernel cannot run the small shape (then it is not measured either). *fresh: 1 if it
   was checked now, 0 if the answer was remembered. A kernel that hung or printed on one check
   fails every later one at once, with that reason (*fresh 1 the first time per class, r and
   tunables, so that the table's exclusions name it in each class). fault may be NULL. */
int prof_check(prof_checks *c, txattn_context *ctx, size_t cls, const txattn_problem *small,
               const prof_cand *cand, double *err, char *why, size_t why_size, int *fresh);
int prof_check_fault(prof_checks *c, txattn_context *ctx, size_t cls, const txattn_problem *small,
                     const prof_cand *cand, double *err, prof_fault *fault, char *why,
                     size_t why_size, int *fresh);
/* A third-party candidate (prof_kernel_shipped) before it is timed at the point p of class cls: its
   first call there in the check process (prof_isolated_run), waiting timeout_s (the timeout of
   prof_checks_timeout says whether the budget's end cut it). 1: time it here (it ran there, its
   call failed, or no check process runs); 0: it crashed, hung or printed there (*fault, why), and
   its kernel is left out of the rest of the profile; -1: no answer before the budget's end (drop
   it here, no fault); -2: its kernel was left out before (*fault, why). */
int prof_trial_run(prof_checks *c, txattn_context *ctx, size_t cls, const txattn_problem *p,
                   const prof_cand *cand, double timeout_s, prof_fault *fault, char *why,
                   size_t why_size);
/* Records that cand, exact on its check, was found inexact at a larger point of its class (the
   sampled rows below): its later checks in the class and r of `small` fail with `why`. */
void prof_check_mark_inexact(prof_checks *c, size_t cls, const txattn_problem *small,
                             const prof_cand *cand, double err, const char *why);
/* Leaves the kernel of a candidate refused at a timed point (PROF_FAULT_LATER, TOO_FAST) out of the
   rest of the profile: its later checks fail with `why`. */
void prof_check_ban(prof_checks *c, const char *kernel, prof_fault fault, const char *why);

/* The reference on sampled rows of one timed point (profile_check.c): rows spread over the
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
/* From now on c's checks run in iso's child process (profile_isolate.h), where one can be started;
   NULL: in this process. */
struct prof_isolation;
void prof_checks_isolate(prof_checks *c, struct prof_isolation *iso);

/* Times the candidates at one point on the tensors t: a timed first call each (first_s), which
   sets the repetitions per run; then runs, each after its warm-up, round-robin (the candidates on
   one thread first) until each has `want` (else the settings' rounds), pruning after each round
   (rough; `keep` ones never are); last, the rough ones close to the leader are confirmed run for
   run and count as timed in full (profile_measure.c; the knobs: profile_policy.h). The candidates
   may be reordered. time_s is the median of the runs (a rough candidate's: the fastest; a
   confirmed one's: the leader's time times the median ratio of its pairs), spread their (max -
   min) / median (tx_sorted_spread), -1 with fewer than two runs. Returns TXATTN_OK, or the first
   failure (the candidate is then dropped: n is updated; its plan freed unless borrowed). */
txattn_status prof_time(prof_cand *c, size_t *n, const txattn_tensors *t, const prof_settings *s);
/* The same, but no call starts that is predicted (predict_s, then the calls made) to end after
   `deadline` (a tx_clock() time): a candidate left without a run has n_runs == 0. */
txattn_status prof_time_until(prof_cand *c, size_t *n, const txattn_tensors *t,
                              const prof_settings *s, double deadline);
/* The check of a candidate's timed calls: its first call, each of its timed runs (the paired runs
   that confirm it included), and one more call after its last run. Before each, turn(arg, t)
   changes inputs and poisons outputs (as prof_rows_turn); after it, exact(arg, t, &err, why, size)
   says whether t's output (of the run's last call) is exact (err its error, as prof_rows_check;
   the first call's becomes the candidate's max_error, later ones raise it), and the run's time per
   call must be floor_s at least: what the machine can compute the call in (0: no floor; floor_why
   says how it follows from the machine's roofs). A candidate that fails is refused: refused(arg,
   c, fault, err, why) is told (PROF_FAULT_INEXACT at its first call, PROF_FAULT_LATER at a later
   one, PROF_FAULT_TOO_FAST) and it is dropped, which is no failure. turn and exact may be NULL
   (outputs not checked). A kernel that is exact on the calls it can predict and not after cannot
   pass: the last call comes after inputs it has not seen, on an output it did not write. */
typedef struct prof_run_check {
  void (*turn)(void *arg, const txattn_tensors *t);
  int (*exact)(void *arg, const txattn_tensors *t, double *err, char *why, size_t size);
  double floor_s;
  const char *floor_why;
  void (*refused)(void *arg, prof_cand *c, prof_fault fault, double err, const char *why);
  void *arg;
} prof_run_check;
/* The same, each timed call checked by chk (NULL: none). */
txattn_status prof_time_checked(prof_cand *c, size_t *n, const txattn_tensors *t,
                                const prof_settings *s, double deadline, const prof_run_check *chk);
/* The ratio of a's time to b's, run for run: `pairs` times one run of each, after its warm-up, b
   first in even pairs and a first in odd ones, so that neither always follows the other (the
   repetitions prof_time set for each; no run is recorded), ratios[k] the k-th pair's a / b. Both
   must have been timed by prof_time. The host's speed drifts between the runs of one candidate; a
   pair's two runs mostly share it. A failed call returns its status and leaves *failed (if not
   NULL) at its candidate. */
txattn_status prof_paired_runs(prof_cand *a, prof_cand *b, const txattn_tensors *t, int pairs,
                               double *ratios, prof_cand **failed);

/* The progress line on stderr (only when it is a terminal). */
typedef struct prof_progress {
  int on;
  size_t done, total;
  double start, budget_s;
  double predicted_end; /* tx_clock() time the plan expects to finish at (0: no plan yet) */
} prof_progress;
void prof_progress_init(prof_progress *p, size_t total, double budget_s);
void prof_progress_show(prof_progress *p, const char *what);
void prof_progress_end(prof_progress *p);

/* Per class, which kernel wins where, and the speedup of the winner over the dense masked.*
   kernel where it was measured. */
void prof_summary(const txattn_table *t, FILE *f);

/* ---- the table (profile_table.c) ---- */
/* The most spread the table takes (docs/dispatch_table.md); a run that a loaded machine stalled for
   a hundred times its length gives more, which is recorded as this: the point stands. */
#define PROF_MAX_SPREAD 100.0
/* c as the table records it: its time and error, its spread (none if rough, at most
   PROF_MAX_SPREAD); the names and tunables stay c's. */
txattn_table_candidate prof_table_candidate(const prof_cand *c);
/* The classes of t that have no point. A class joins the table before its first point is recorded
   (so that classes keep the grid's order), and the table can refuse that point: the format wants
   at least one point per class, so such a class must not be written. */
size_t prof_table_empty_classes(const txattn_table *t);
/* A copy of t (its header made again from ctx, the machine and plugins t was made for) without
   the classes that have no point: the profile object, the other classes in their order with their
   points (winners and ties) and every exclusion as they are. *out is NULL on failure. */
txattn_status prof_table_drop_empty(const txattn_context *ctx, const txattn_table *t,
                                    txattn_table **out);

#endif
