/* SPDX-License-Identifier: MIT */
/* How a tiled_omp call splits its work across threads, and where each piece lives in the workspace.
 *
 * The plan is a pure function of (problem, n_threads, block sizes): workspace_size() and run() derive
 * the same one, so the workspace the host allocated always fits the plan run() executes. Modes:
 *
 *  SERIAL   one thread (n_threads == 1, or too little work to pay for a team), no parallel
 *           region: the single-thread tiled kernel's loop (bit for bit its results).
 *  QBLOCKS  tasks are (batch, kv head, query block), taken dynamically: causal and window blocks
 *           differ a lot in cost. Several query blocks per head: the heads of a phase are packed
 *           once by all threads (one task per key block), then their query blocks run against the
 *           shared packed heads; two phases' buffers alternate, so a thread that runs out of query
 *           blocks packs the next phase instead of waiting. One query block per head (decode, short
 *           prompts): each task streams its head's K/V through the thread's scratch, as the single-
 *           thread kernel does, with no packing phase; or, with few rows, copies them chunk by
 *           chunk (the tiled ops' direct path).
 *  KSPLIT   too few query-block tasks to keep the threads evenly busy (decode with few kv heads,
 *           or a head count that does not divide by the threads; tiled_omp_plan.c): each
 *           query block's keys are cut into `chunks` ranges of whole key blocks; a task runs one
 *           range (run_krange, streaming, or run_direct) into its own partial (m, l, acc), then
 *           the partials of each query block are merged (tiled_merge_partials).
 *
 * The direct path (run_direct) serves every mode (SERIAL included) when g.direct: each (batch, kv
 * head) has at most TILED_DIRECT_ROWS rows.
 */
#ifndef TILED_OMP_PLAN_H
#define TILED_OMP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "tiled_internal.h"

typedef enum tomp_mode { TOMP_SERIAL, TOMP_QBLOCKS, TOMP_KSPLIT } tomp_mode;

typedef struct tomp_plan {
  tiled_geom g;
  const tiled_ops *ops;
  tomp_mode mode;
  int threads;          /* team size (1: no parallel region), <= n_threads */
  int stream;           /* no packed heads: K/V go through each thread's scratch */
  int64_t heads;        /* batch * heads_kv */
  int64_t units;        /* query-block tasks: heads * n_qblocks */
  int64_t kb0, kb1;     /* the key blocks some row sees */
  int64_t phase_heads;  /* QBLOCKS, packed: heads packed per phase */
  int64_t head_buffers; /* packed heads in the workspace */
  int64_t chunks;       /* KSPLIT: key ranges per query block */
  size_t head_bytes, scratch_bytes, part_bytes;
  /* workspace: head_buffers packed heads, threads scratches, then (KSPLIT) units * chunks
     tiled_partial descriptors and their arrays, then the call's mask summary (off_vis,
     tiled_mask_summary_bytes); total == workspace_size() */
  size_t off_scratch, off_descs, off_parts, off_vis, total;
} tomp_plan;

/* Fills pl for problem p (resolved) on n_threads threads with block sizes br, bc; t may be NULL when
   only sizing. Returns 0 if the sizes overflow. */
int tomp_plan_init(tomp_plan *pl, const tiled_ops *ops, const txattn_problem *p,
                   const txattn_tensors *t, int n_threads, int64_t br, int64_t bc);

/* Executes the plan (tiled_omp_run.c): the workspace is pl->total bytes, 64-byte aligned. */
void tomp_run(const tomp_plan *pl, void *workspace);

#endif /* TILED_OMP_PLAN_H */
