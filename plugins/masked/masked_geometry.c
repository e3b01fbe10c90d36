/* SPDX-License-Identifier: MIT */
/* How the masked kernel cuts a problem into tasks, and how much scratch one task needs. */
#include <stdint.h>

#include "masked.h"

/* Floats of S (stacked rows x n_kv) one task aims for: 1 MiB keeps a block's S in L2 on current
   cores while leaving the S = Q K^T and O = P V products long enough to run near BLAS speed. */
#define MASKED_S_FLOATS  (INT64_C(1) << 18)
#define MASKED_MAX_BLOCK 256

int64_t masked_default_block(const txattn_problem *p) {
  int64_t block = MASKED_S_FLOATS / p->n_kv;
  if (block > MASKED_MAX_BLOCK) block = MASKED_MAX_BLOCK;
  return block < 1 ? 1 : block;
}

/* *acc += round_up(a * b, 16 floats); 0 on overflow. */
static int add_part(size_t *acc, int64_t a, int64_t b) {
  size_t part;
  if (__builtin_mul_overflow((size_t)a, (size_t)b, &part) || part > SIZE_MAX - 15) return 0;
  part = (part + 15) & ~(size_t)15;
  return !__builtin_add_overflow(*acc, part, acc);
}

int masked_geometry_init(masked_geometry *g, const txattn_problem *p, int64_t block) {
  g->group = p->heads_q / p->heads_kv;
  g->block_rows = block < p->n_q ? block : p->n_q;
  /* Short blocks (decode, few query rows) are filled with more heads of the same group. */
  int64_t heads = block / g->block_rows;
  g->block_heads = heads < 1 ? 1 : heads > g->group ? g->group : heads;
  g->row_blocks = (p->n_q + g->block_rows - 1) / g->block_rows;
  g->head_blocks = (g->group + g->block_heads - 1) / g->block_heads;
  g->tasks = p->batch * p->heads_kv * g->head_blocks * g->row_blocks;
  g->stacked = g->block_rows * g->block_heads;

  /* Layout of one thread's scratch: packed Q | S | packed O | P V of a span | O's Kahan terms |
     packed K | packed V. A 16-bit q, k or v is always packed (widened to fp32: whole K and V heads),
     a 16-bit o always computed in the packed O (masked_block.c), so these sizes hold for every
     type. */
  size_t floats = 0;
  if (!add_part(&floats, g->stacked, p->d_qk)) return 0;
  g->off_s = floats;
  if (!add_part(&floats, g->stacked, p->n_kv)) return 0;
  g->off_o = floats;
  if (!add_part(&floats, g->stacked, p->d_v)) return 0;
  g->off_pv = floats;
  if (!add_part(&floats, g->stacked, p->d_v)) return 0;
  g->off_c = floats;
  if (!add_part(&floats, g->stacked, p->d_v)) return 0;
  g->off_k = floats;
  if (!add_part(&floats, p->n_kv, p->d_qk)) return 0;
  g->off_v = floats;
  if (!add_part(&floats, p->n_kv, p->d_v)) return 0;
  g->scratch_floats = floats;
  return 1;
}

int masked_thread_count(const masked_geometry *g, int n_threads) {
  if (n_threads < 1) return 1;
  return g->tasks < n_threads ? (int)g->tasks : n_threads;
}

size_t masked_workspace_size(const txattn_problem *p, int n_threads, const int64_t *tunables) {
  masked_geometry g;
  size_t bytes;
  int64_t block = tunables ? tunables[0] : masked_default_block(p);
  if (!masked_geometry_init(&g, p, block) ||
      __builtin_mul_overflow(g.scratch_floats,
                             (size_t)masked_thread_count(&g, n_threads) * sizeof(float), &bytes))
    return SIZE_MAX; /* no allocation succeeds, so the host reports it as out of memory */
  return bytes;
}
