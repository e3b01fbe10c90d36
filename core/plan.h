/* SPDX-License-Identifier: MIT */
/* Internal: the plan. Immutable after creation except for its workspace pool (own mutex) and
 * reference count, which is what makes txattn_plan_execute safe to call from many threads at once.
 */
#ifndef TXATTN_CORE_PLAN_H
#define TXATTN_CORE_PLAN_H

#include <stdatomic.h>

#include "context.h"
#include "dispatch.h"
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
  int64_t *given;         /* the same before fit_tunables (refitted per sequence), or NULL */
  /* a ragged problem and a kernel without TXATTN_KERNEL_RAGGED: the host runs one kernel call per
     sequence, each with the tunables fitted to it, in a workspace sized for the largest */
  int per_sequence;
  size_t workspace_size;
  txattn__workspace_pool *pool; /* NULL when workspace_size is 0 */
  int fixed; /* the caller or TXATTN_FORCE_KERNEL named the kernel: no other may stand in */
  char why[768];
  /* the kernels the dispatcher tried before this one that failed to plan, in order, as data
     (txattn_plan_failed_get): what `why` says in words */
  size_t n_failed;
  const txattn__kernel *failed[8];
  txattn_status failed_status[8];
};

void txattn__plan_retain(txattn_plan *plan);
void txattn__plan_release(txattn_plan *plan);

/* Tunables a caller sets by name (txattn_plan_create_tuned); the others keep their values. */
typedef struct txattn__tunable_override {
  const char *const *names;
  const int64_t *values;
  size_t n;
} txattn__tunable_override;
/* txattn_plan_create, with the caller's tunables applied last when ov is not NULL. */
txattn_status txattn__plan_new(txattn_context *ctx, const txattn_problem *p, const char *kernel,
                               const txattn__tunable_override *ov, txattn_plan **out);
/* Plans the resolved problem r as txattn_plan_create does: when a kernel the dispatcher chose
   cannot plan r (txattn__kernel_failure), the next candidate is tried, and so on; failed records
   each failure and holds the kernels not to try (a caller retrying after a run failure adds that
   kernel first). When none is left: txattn__failures_fail(failed, fn, verb). A named kernel's own
   failure is returned as it is. */
txattn_status txattn__plan_make(txattn_context *ctx, const txattn_problem *r, const char *kernel,
                                const txattn__tunable_override *ov, txattn__failures *failed,
                                const char *fn, const char *verb, txattn_plan **out);
/* Runs plan on tensors checked against its problem (txattn__tensors_check): every failure is the
   kernel's (its run() or its workspace). */
txattn_status txattn__plan_run(const txattn_plan *plan, const txattn_tensors *x);
#endif
