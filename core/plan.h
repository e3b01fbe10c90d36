/* Internal: the plan. Immutable after creation except for its workspace pool (own mutex) and
 * reference count, which is what makes txattn_plan_execute safe to call from many threads at once.
 */
#ifndef TXATTN_CORE_PLAN_H
#define TXATTN_CORE_PLAN_H

#include <stdatomic.h>

#include "context.h"
#include "workspace.h"

struct txattn_plan {
  atomic_int
      refs; /* the caller's, plus one per plan-cache slot or txattn_attention call using it */
  txattn_context
      *ctx; /* holds a reference: the kernel's code and descriptor live in ctx's plugins */
  const txattn__kernel *kernel;
  txattn_problem problem; /* resolved */
  int n_threads;          /* 1 unless the kernel is TXATTN_KERNEL_THREADED */
  int64_t *tunables;      /* kernel->desc->n_tunables values, NULL if none */
  size_t workspace_size;
  txattn__workspace_pool *pool; /* NULL when workspace_size is 0 */
  char why[384];
};

void txattn__plan_retain(txattn_plan *plan);
void txattn__plan_release(txattn_plan *plan);

#endif
