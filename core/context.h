/* SPDX-License-Identifier: MIT */
/* Internal: the context. Immutable after txattn_context_create except for the plan cache (own
 * mutex) and the reference count. Plans hold a reference, so a context freed before its plans lives
 * on until the last plan is freed: only the last release unloads the plugins. */
#ifndef TXATTN_CORE_CONTEXT_H
#define TXATTN_CORE_CONTEXT_H

#include <stdatomic.h>

#include "loader.h"
#include "plan_cache.h"

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
  return &ctx->reg.plugins[k->plugin];
}

#endif
