/* SPDX-License-Identifier: MIT */
/* txtune bench: what one measured problem holds, shared by the command (lab.c), its serving
   comparisons (bench_serving.c), its JSON (bench_json.c) and its sweeps (bench_sweep.c); and the
   helpers they share (bench.c). */
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

/* The threads entry i runs on: the context's if its kernel is threaded, else 1. */
int tx_bench_entry_threads(const tx_bench_setup *s, size_t i);
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

/* ---- --tunable ---- */
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

/* ---- the problem ---- */
/* The visible (query, key) pairs of p (every head), each ragged sequence with its own kv_len. */
double tx_bench_pairs(const txattn_problem *p, const tx_serving *s);
/* "b=8 h=32/8 n_q=1 n_kv=32768 d=128 none kv_lens=1024,2048 lse": the problem line. */
void tx_bench_shape(const txattn_problem *p, const tx_serving *s, char *buf, size_t size);
/* Plans the entry being compared for problem p (its kernel, its tunables). */
typedef txattn_status (*tx_bench_planner)(void *arg, const txattn_problem *p, txattn_plan **out);
/* b's tensors with explicit strides, no lengths (a part of them is then still laid out as the
   whole). */
txattn_tensors tx_bench_explicit_tensors(const tx_buffers *b);

#endif
