/* SPDX-License-Identifier: MIT */
/* txtune bench's serving calls against what a caller without the feature runs, same kernel,
   same run (bench_serving.c). */
#ifndef TXTUNE_BENCH_SERVING_H
#define TXTUNE_BENCH_SERVING_H

#include <stdio.h>

#include "bench.h"
#include "json.h"

/* ---- --kv-lens, --lse and mask tensors ---- */
/* Fills out (tx_bench_compare) for the call of b->p on b's tensors, planned by plan(arg, ...).
   Overwrites b's outputs. */
void tx_bench_serving_compare(const tx_buffers *b, const tx_serving *s, tx_bench_planner plan,
                              void *arg, const tx_timing_opts *to, tx_bench_compare *out);
/* The comparisons of every kernel at pt as a table, and the dispatcher's pick's (else the
   fastest's) ratios in words. Nothing without --kv-lens or --lse. */
void tx_bench_serving_print(const tx_bench_setup *s, const tx_bench_point *pt, FILE *f);
/* The kernel's "serving" object (null when not compared). */
void tx_bench_serving_json(tx_json *j, const tx_bench_result *k);

/* ---- --merge P ---- */
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

#endif
