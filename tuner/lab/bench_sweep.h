/* SPDX-License-Identifier: MIT */
/* txtune bench sweeps (bench_sweep.c): the problems of --n A..B --mask LIST, how a curve's
   problems are told apart, and the summary of slopes and crossovers. */
#ifndef TXTUNE_BENCH_SWEEP_H
#define TXTUNE_BENCH_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "args.h"
#include "bench.h"
#include "problem_cli.h"

/* The sweep document's format (docs/bench_sweep.md), which txtune plot reads. */
#define TX_SWEEP_FORMAT         "txtune-bench-sweep"
#define TX_SWEEP_FORMAT_VERSION 1

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
