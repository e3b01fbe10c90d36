/* SPDX-License-Identifier: MIT */
/* txtune bench: what one measured problem holds, shared by the command (cmd_bench.c), its JSON
   (bench_json.c) and its sweeps over n and mask kinds (bench_sweep.c). */
#ifndef TXTUNE_BENCH_H
#define TXTUNE_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "buffers.h"
#include "json.h"
#include "kernels.h"
#include "problem_cli.h"
#include "roofline.h"
#include "serving_cli.h"
#include "timing.h"
#include "txattn/txattn.h"

typedef enum tx_bench_state {
  TX_BENCH_OK,
  TX_BENCH_UNUSABLE,
  TX_BENCH_NOT_APPLICABLE,
  TX_BENCH_FAILED,
  TX_BENCH_OVER_LIMIT /* not started: one call would take longer than --time-limit */
} tx_bench_state;

#define TX_BENCH_MAX_TUNABLES 8 /* per kernel */

/* With --kv-lens or --lse, what a kernel's serving call is compared with in the same run, each
   with the same kernel and tunables, all four timed interleaved (tx_bench_serving_compare):
   the call itself; with --kv-lens one batch-1 call per sequence (its kv_len; a sequence of none
   is no call) and the batch padded to the longest (every sequence at n_kv = the largest kv_len,
   not ragged); with --lse the same call without lse. Seconds per call, NaN where not measured. */
typedef struct tx_bench_compare {
  int measured;
  double call_s, per_sequence_s, padded_s, no_lse_s;
  /* with a mask tensor: one causal call per --doc-lens document (its rows and keys), and the same
     call without the tensor */
  double per_doc_s, no_mask_s;
  char why[200]; /* when a variant could not be measured */
} tx_bench_compare;

/* With --merge P, what the kernel's whole call (with lse) is compared with in the same run, with
   the same kernel and tunables, the three timed interleaved (tx_bench_merge_compare): the keys
   split into P contiguous parts as even as possible, each part a call with lse of its own n_kv
   (K and V offset, one plan per distinct part size), and txattn_merge of the P partials into the
   whole's o and lse, timed alone. The merged result is verified as a kernel's output is, against
   the whole problem's reference and bounds, lse's (txattn_lse_error_bound) plus the merge's own
   rounding (docs/error_bound.md, "Merging"). Seconds per call, NaN where not measured. */
typedef struct tx_bench_merge {
  int measured;
  int64_t parts, part_min, part_max;  /* P, and the shortest and longest part's keys */
  double call_s, partials_s, merge_s; /* partials_s: the P calls one after the other */
  int checked;         /* the merged result was made and checked (exact says how it fared) */
  int exact;           /* checked: the contract holds and, when verified, within the bound */
  double rel_error;    /* max|o - O_ref| / max|V|; NaN when not verified */
  double o_of_bound;   /* max|o - O_ref| / txattn_error_bound; NaN when not verified */
  double lse_error;    /* max|lse - lse_ref|; NaN when not verified */
  double lse_of_bound; /* the largest of a row's |lse - lse_ref| / the bound above; likewise */
  char why[320];       /* a variant that could not run, or why the merged result is not exact */
} tx_bench_merge;

/* A tunable of a plan by name, and its value. */
typedef struct tx_bench_tunable {
  char name[32];
  int64_t value;
} tx_bench_tunable;

typedef struct tx_bench_result {
  tx_bench_state state;
  char why[320];    /* for every state but OK; for OK a failed verification */
  tx_timing tm;     /* OK */
  double rel_error; /* NaN when not verified */
  int exact;        /* OK: the contract holds and (when verified) the error is within tolerance */
  double lse_error; /* with --lse and verified: max|lse - lse_ref|; else NaN */
  tx_bench_compare cmp;  /* with --kv-lens or --lse */
  tx_bench_merge merge;  /* with --merge */
  tx_roof_paired paired; /* with --roofline on a decode: its runs paired with read-bandwidth runs */
  /* what it ran with: the plan's tunables, or when it did not plan, those --tunable asked for */
  size_t n_ran;
  tx_bench_tunable ran[TX_BENCH_MAX_TUNABLES];
} tx_bench_result;

/* What one timed entry plans: its kernel (sel[i].info.name) with the --tunable values it
   declares, the others its defaults. With several settings of one kernel each is an entry,
   labelled with the values that differ: "tiled.avx512[block_q=102]". */
typedef struct tx_bench_tuning {
  size_t n_set;
  tx_bench_tunable set[TX_BENCH_MAX_TUNABLES];
  char label[160]; /* the kernel's name when it has one entry */
} tx_bench_tuning;

/* One problem, every selected kernel measured on it. */
typedef struct tx_bench_point {
  txattn_problem p; /* resolved */
  double pairs, flops, ref_seconds;
  int verified;
  int has_pick;
  char pick[64], pick_why[320]; /* the dispatcher's choice, or why it has none */
  tx_bench_result *res;         /* one per selected kernel, in selection order */
  long fastest, masked;         /* indices into the selection; -1 if none */
} tx_bench_point;

/* What every point of one run shares. */
typedef struct tx_bench_setup {
  const tx_kernel_sel *sel;      /* an entry per kernel, or per setting of its tunables */
  const tx_bench_tuning *tuning; /* one per entry of sel */
  size_t n_sel;
  int tunables_given; /* --tunable: the text shows what each entry ran with */
  int threads;
  const tx_roofline *roofline; /* NULL without --roofline */
  int64_t reps, min_time_ms;
  double limit_s;
  double load_before;        /* the 1-minute load average when the run started; NaN if unknown */
  const tx_serving *serving; /* --kv-lens and --lse: never NULL */
} tx_bench_setup;

/* The name entry i is shown by: its label. */
const char *tx_bench_label(const tx_bench_setup *s, size_t i);
/* Kernel i failed at pt: it crashed, was not exact, or was named by --kernel and could not run. */
int tx_bench_kernel_failed(const tx_bench_setup *s, const tx_bench_point *pt, size_t i);
/* TX_EXIT_OK, or TX_EXIT_FAIL when nothing was measured or a kernel failed. */
int tx_bench_point_status(const tx_bench_setup *s, const tx_bench_point *pt);
/* The kernel's roofline input at pt. */
tx_roof_kernel tx_bench_roof_kernel(const tx_bench_setup *s, const tx_bench_point *pt, size_t i);

/* Environment variables that change what runs or is picked: `always` ones are always reported,
   the others only when set. */
typedef struct tx_bench_env_var {
  const char *name;
  int always;
} tx_bench_env_var;
#define TX_BENCH_N_ENV 6
extern const tx_bench_env_var tx_bench_env[TX_BENCH_N_ENV];

/* ---- --tunable (bench_tunables.c) ---- */
#define TX_BENCH_MAX_ENTRIES 256 /* settings of one kernel, and more entries than kernels */

/* --tunable NAME=VALUE items, each pair once, in the order given. */
typedef struct tx_bench_tunable_args {
  tx_bench_tunable pairs[TX_LIST_MAX];
  size_t n;
} tx_bench_tunable_args;

/* Returns 0, or prints a usage error and returns TX_EXIT_USAGE. */
int tx_bench_parse_tunables(const tx_cmd_spec *spec, const tx_strlist *items,
                            tx_bench_tunable_args *out);
/* The entries to time: per kernel of sel, one per combination of the values given for the
   tunables it declares (one with its defaults when it declares none of them). Returns 0 with
   *sel_out and *tuning_out (free() both) and *n_out, or prints a usage error (a name no kernel
   declares, too many entries) and returns TX_EXIT_USAGE. */
int tx_bench_expand_tunables(const tx_cmd_spec *spec, const txattn_context *ctx,
                             const tx_bench_tunable_args *a, const tx_kernel_sel *sel, size_t n_sel,
                             tx_kernel_sel **sel_out, tx_bench_tuning **tuning_out, size_t *n_out);
/* "block_q=12<sep>block_k=64", "-" when n is 0. */
void tx_bench_tunables_text(const tx_bench_tunable *t, size_t n, const char *sep, char *buf,
                            size_t size);

/* ---- serving calls: --kv-lens and --lse (bench_serving.c) ---- */
/* The visible (query, key) pairs of p (every head), each ragged sequence with its own kv_len. */
double tx_bench_pairs(const txattn_problem *p, const tx_serving *s);
/* "b=8 h=32/8 n_q=1 n_kv=32768 d=128 none kv_lens=1024,2048 lse": the problem line. */
void tx_bench_shape(const txattn_problem *p, const tx_serving *s, char *buf, size_t size);
/* Plans the entry being compared for problem p (its kernel, its tunables). */
typedef txattn_status (*tx_bench_planner)(void *arg, const txattn_problem *p, txattn_plan **out);
/* Fills out (tx_bench_compare) for the call of b->p on b's tensors, planned by plan(arg, ...).
   Overwrites b's outputs. */
void tx_bench_serving_compare(const tx_buffers *b, const tx_serving *s, tx_bench_planner plan,
                              void *arg, const tx_timing_opts *to, tx_bench_compare *out);
/* The comparisons of every kernel at pt as a table, and the dispatcher's pick's (else the
   fastest's) ratios in words. Nothing without --kv-lens or --lse. */
void tx_bench_serving_print(const tx_bench_setup *s, const tx_bench_point *pt, FILE *f);
/* The kernel's "serving" object (null when not compared). */
void tx_bench_serving_json(tx_json *j, const tx_bench_result *k);

/* b's tensors with explicit strides, no lengths (a part of them is then still laid out as the
   whole). */
txattn_tensors tx_bench_explicit_tensors(const tx_buffers *b);

/* ---- --merge (bench_merge.c) ---- */
/* Fills out for b->p (lse, not ragged, mask none, n_kv >= parts) split into s->merge parts,
   planned by plan(arg, ...). Overwrites b's outputs with the merged result; verifies it against
   b->o_ref where there is one. */
void tx_bench_merge_compare(const tx_buffers *b, const tx_serving *s, tx_bench_planner plan,
                            void *arg, const tx_timing_opts *to, tx_bench_merge *out);
/* The merge of every kernel at pt as a table, and the dispatcher's pick's (else the fastest's) in
   words. Nothing without --merge. */
void tx_bench_merge_print(const tx_bench_setup *s, const tx_bench_point *pt, FILE *f);
/* The kernel's "merge" object (null when not compared). */
void tx_bench_merge_json(tx_json *j, const tx_bench_result *k);
/* Kernel i's merged result at pt was checked and is not exact. */
int tx_bench_merge_failed(const tx_bench_result *k);

/* ---- JSON (bench_json.c) ---- */
#define TX_SWEEP_FORMAT         "txtune-bench-sweep"
#define TX_SWEEP_FORMAT_VERSION 1

/* The object `txtune bench --json` prints for a single problem. */
void tx_bench_json_single(tx_json *j, const tx_bench_setup *s, const tx_bench_point *pt);
/* The sweep document (docs/bench_sweep.md): machine, settings, and every point. */
void tx_bench_json_sweep(tx_json *j, const tx_bench_setup *s, const txattn_context *ctx,
                         const tx_bench_point *pts, size_t n_pts);

/* ---- sweeps (bench_sweep.c) ---- */
#define TX_SWEEP_MAX_N     64
#define TX_SWEEP_MAX_MASKS 8

/* The swept values of --n and --mask: each --n item is N or A..B (A, 2A, 4A ... while <= B). */
typedef struct tx_sweep_axes {
  int64_t n[TX_SWEEP_MAX_N];
  size_t n_n;
  int mask[TX_SWEEP_MAX_MASKS]; /* txattn_mask values, in the order given; none given: -1 */
  size_t n_mask;
} tx_sweep_axes;

/* Returns 0, or prints a usage error and returns TX_EXIT_USAGE. No --n leaves axes->n_n 0. */
int tx_sweep_parse_n(const tx_cmd_spec *spec, const tx_strlist *items, tx_sweep_axes *axes);
int tx_sweep_parse_mask(const tx_cmd_spec *spec, const tx_strlist *items, tx_sweep_axes *axes);
/* The problems of the sweep, masks outer, n inner. a holds every other problem option; window
   options apply to the window points only. Returns 0 with *out (free()) and *n_out, or prints a
   usage error and returns TX_EXIT_USAGE. */
int tx_sweep_problems(const tx_cmd_spec *spec, const tx_problem_args *a, const tx_sweep_axes *axes,
                      txattn_problem **out, size_t *n_out);
/* Two problems of one curve: they differ at most in n (n_q, and n_kv when it follows n_q). */
int tx_sweep_same_class(const txattn_problem *a, const txattn_problem *b);
/* The problem without its n: "d=64 window(8,8)", "h=4/2 n_kv=1000 d=64 causal". */
void tx_sweep_class_label(const txattn_problem *p, char *buf, size_t size);
/* Per mask kind: each kernel's fitted log-log slope of time against n, and where the fastest
   kernel changes. */
void tx_sweep_print_summary(const tx_bench_setup *s, const tx_bench_point *pts, size_t n_pts,
                            FILE *f);

#endif
