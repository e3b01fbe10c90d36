/* SPDX-License-Identifier: MIT */
/* Internal: the context. Immutable after txattn_context_create except for the plan cache (own
 * mutex) and the reference count. Plans hold a reference, so a context freed before its plans lives
 * on until the last plan is freed: only the last release unloads the plugins. */
#ifndef TXATTN_CORE_CONTEXT_H
#define TXATTN_CORE_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "loader.h"

/* The per-context cache of plans behind txattn_attention(); plan_cache.c uses it, the context
   only creates and destroys its mutex. */
#define TXATTN_PLAN_CACHE_SIZE 16

typedef struct txattn__cache_entry {
  txattn_problem key; /* resolved */
  char forced[64];    /* TXATTN_FORCE_KERNEL when the plan was made: it changes the choice */
  txattn_plan *plan;  /* the cache holds one reference; NULL when the slot is free */
  uint64_t last_used;
} txattn__cache_entry;

typedef struct txattn__plan_cache {
  pthread_mutex_t lock;
  txattn__cache_entry entries[TXATTN_PLAN_CACHE_SIZE];
  uint64_t clock;
} txattn__plan_cache;

struct txattn_context {
  atomic_int refs;
  int n_threads;          /* resolved, >= 1 */
  txattn_machine machine; /* for kernels' default tunables */
  char *table_path;       /* as given in txattn_options (the table itself: `table` below) */
  txattn__registry reg;
  txattn__plan_cache cache;
  txattn_machine_info machine_info; /* what `machine` was made from, for txattn_context_machine */
  struct txattn__ctx_table *table;  /* the dispatch table and its state (table_context.c) */
};

void txattn__context_retain(txattn_context *ctx);
void txattn__context_release(txattn_context *ctx);

static inline const txattn__plugin *txattn__kernel_plugin(const txattn_context *ctx,
                                                          const txattn__kernel *k) {
  return txattn__registry_plugin(&ctx->reg, k);
}

#endif
