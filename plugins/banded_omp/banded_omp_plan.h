/* SPDX-License-Identifier: MIT */
/* How a banded_omp call splits its work across threads, and where each thread's scratch lives.
 *
 * The plan is a pure function of (problem, n_threads, kernel): workspace_size() and run() derive
 * the same one, so the workspace the host allocated always fits the plan run() executes.
 *
 *  - threads == 1 (n_threads == 1, or too little work to pay for a team): no parallel region, the
 *    banded kernel's own loop over whole heads (bit for bit banded.<isa>'s results).
 *  - else tasks of (batch, query head, chunk of chunk_rows query rows), chunk_rows a multiple of
 *    BANDED_MR, taken dynamically by a team of `threads`. Each task runs the banded head function
 *    over its rows in its thread's scratch; its first group packs the window's key panels again,
 *    which chunks of at least BOMP_MIN_CHUNK_ROWS rows keep small (banded_omp_plan.c).
 */
#ifndef BANDED_OMP_PLAN_H
#define BANDED_OMP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "banded.h"

/* One ISA's kernel: its head function, whether it keeps transposed K panels
   (banded_workspace_bytes) and its cost in pairs (banded.h; stops counting at `enough`). */
typedef struct bomp_kernel {
  banded_head_fn head;
  int panels;
  double (*cost_pairs)(const txattn_problem *p, double enough);
} bomp_kernel;

typedef struct bomp_plan {
  const txattn_problem *p;
  const bomp_kernel *kernel;
  int threads;          /* team size (1: no parallel region), <= n_threads */
  int rev;              /* later rows see more keys (causal): run the last chunks first */
  int64_t heads;        /* batch * heads_q */
  int64_t chunk_rows;   /* query rows per task, a multiple of BANDED_MR */
  int64_t chunks;       /* tasks per head */
  size_t scratch_bytes; /* one thread's, a multiple of 64 */
  size_t total;         /* workspace: threads scratches; == workspace_size() */
} bomp_plan;

/* Fills pl for problem p (resolved) on n_threads threads. Returns 0 if the sizes overflow. */
int bomp_plan_init(bomp_plan *pl, const bomp_kernel *k, const txattn_problem *p, int n_threads);

/* Executes the plan (banded_omp_run.c) for call, whose workspace holds pl->total bytes. */
txattn_status bomp_run(const bomp_plan *pl, const txattn_kernel_call *call);

#endif /* BANDED_OMP_PLAN_H */
