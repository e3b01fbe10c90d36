/* SPDX-License-Identifier: MIT */
/* Internal to the masked plugin: how the problem is cut into tasks, and the scratch of one task. */
#ifndef TXATTN_MASKED_H
#define TXATTN_MASKED_H

#include "txattn/plugin.h"

/* A task is one (batch, kv head, chunk of its query heads, block of query rows): its rows,
   head-major, form one stacked matrix for a single S = Q K^T and a single O = P V, so the query
   heads sharing a K/V head (GQA) read it once. */
typedef struct masked_geometry {
  int64_t group;       /* query heads per kv head */
  int64_t block_rows;  /* query rows per task */
  int64_t block_heads; /* query heads of the group stacked per task */
  int64_t row_blocks, head_blocks, tasks;
  int64_t stacked;                   /* block_rows * block_heads: rows of S in one task */
  size_t scratch_floats;             /* one thread's scratch, each part rounded to 64 bytes */
  size_t off_s, off_o, off_k, off_v; /* where S, packed O, K, V start in it (packed Q: at 0) */
  size_t off_pv, off_c; /* stacked x d_v each: one key span's P V, and O's Kahan terms */
} masked_geometry;

/* The tunable "block_rows" default for p: S blocks of stacked x n_kv floats stay about 1 MiB. */
int64_t masked_default_block(const txattn_problem *p);
/* 0 if a scratch size overflows size_t. */
int masked_geometry_init(masked_geometry *g, const txattn_problem *p, int64_t block);
/* Threads that get a scratch of their own: never more than there are tasks. */
int masked_thread_count(const masked_geometry *g, int n_threads);
size_t masked_workspace_size(const txattn_problem *p, int n_threads, const int64_t *tunables);

/* Row s[0..n) of unscaled scores becomes the softmax of scale * s over the visible keys [lo, hi),
   lo < hi, scale > 0; 0 outside. If lse is not NULL, *lse = the row's log-sum-exp,
   log(sum over [lo, hi) of exp(scale * s)), from the same max and sum. */
void masked_softmax(float *s, int64_t n, int64_t lo, int64_t hi, float scale, float *lse);

/* tensors->lse if the call writes it, else NULL (txattn_lse_out). */
static inline float *masked_lse_tensor(const txattn_problem *p, const txattn_tensors *t) {
  return txattn_lse_out(p, t);
}

txattn_status masked_run(const txattn_kernel_call *call);
/* One task (0 <= task < g->tasks) with `scratch` of g->scratch_floats floats. */
void masked_block(const txattn_kernel_call *call, const masked_geometry *g, int64_t task,
                  float *scratch);

#endif
