/* txattn_plan: the chosen kernel with its tunables, thread count and workspaces; describing and
 * running it. */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "error.h"
#include "log.h"
#include "plan.h"
#include "plan_tuned.h"
#include "plugin_check.h"
#include "problem.h"
#include "tensors.h"

void txattn__plan_retain(txattn_plan *plan) {
  atomic_fetch_add_explicit(&plan->refs, 1, memory_order_relaxed);
}

void txattn__plan_release(txattn_plan *plan) {
  if (atomic_fetch_sub_explicit(&plan->refs, 1, memory_order_acq_rel) != 1) return;
  txattn__workspace_pool_free(plan->pool);
  free(plan->tunables);
  txattn__context_release(plan->ctx);
  free(plan);
}

void txattn_plan_free(txattn_plan *plan) {
  if (plan != NULL) txattn__plan_release(plan);
}

static const char *kernel_file(const txattn_plan *plan) {
  return txattn__kernel_plugin(plan->ctx, plan->kernel)->path;
}

/* The values the kernel runs the plan's problem with (ABI 1.3 fit_tunables, if it has one): each
   within its declared range and no larger than given, or the plugin is at fault. */
static txattn_status fit_tunables(txattn_plan *plan) {
  const txattn_kernel_desc *d = plan->kernel->desc;
  if (!TXATTN_KERNEL_DESC_HAS(d, fit_tunables) || d->fit_tunables == NULL) return TXATTN_OK;
  int64_t given[TXATTN_MAX_TUNABLES]; /* the loader refused kernels with more */
  memcpy(given, plan->tunables, d->n_tunables * sizeof *given);
  d->fit_tunables(&plan->problem, plan->tunables);
  for (size_t i = 0; i < d->n_tunables; i++) {
    const txattn_tunable *t = &d->tunables[i];
    TXATTN_RETURN_IF(!txattn__tunable_value_ok(t, plan->tunables[i]) ||
                         plan->tunables[i] > given[i],
                     TXATTN_E_PLUGIN,
                     "kernel %s (%s): fit_tunables turned %s = %" PRId64 " into %" PRId64
                     " (a fitted value must be within [%" PRId64 ", %" PRId64
                     "] in steps of %" PRId64 " and no larger than given)",
                     d->name, kernel_file(plan), t->name, given[i], plan->tunables[i], t->min,
                     t->max, t->multiple_of);
  }
  return TXATTN_OK;
}

/* The dispatch table's values (chosen: checked against the kernel's declaration when the context
   loaded the table), else the kernel's defaults for this problem and machine; then the caller's
   (txattn_plan_create_tuned); last, fitted to the problem (fit_tunables). The defaults are checked
   against the declared ranges. */
static txattn_status set_tunables(txattn_plan *plan, const int64_t *chosen,
                                  const txattn__tunable_override *ov) {
  const txattn_kernel_desc *d = plan->kernel->desc;
  if (d->n_tunables == 0) return ov && ov->n ? txattn__tunables_override(d, NULL, ov) : TXATTN_OK;
  plan->tunables = calloc(d->n_tunables, sizeof *plan->tunables);
  TXATTN_RETURN_IF(plan->tunables == NULL, TXATTN_E_NOMEM, "txattn_plan_create: out of memory");
  if (chosen) {
    memcpy(plan->tunables, chosen, d->n_tunables * sizeof *plan->tunables);
  } else {
    d->default_tunables(&plan->problem, &plan->ctx->machine, plan->tunables);
    for (size_t i = 0; i < d->n_tunables; i++) {
      const txattn_tunable *t = &d->tunables[i];
      TXATTN_RETURN_IF(!txattn__tunable_value_ok(t, plan->tunables[i]), TXATTN_E_PLUGIN,
                       "kernel %s (%s): default_tunables gave %s = %" PRId64 ", outside [%" PRId64
                       ", %" PRId64 "] in steps of %" PRId64,
                       d->name, kernel_file(plan), t->name, plan->tunables[i], t->min, t->max,
                       t->multiple_of);
    }
  }
  if (ov) TXATTN_FORWARD_IF_ERROR(txattn__tunables_override(d, plan->tunables, ov));
  return fit_tunables(plan);
}

/* The machine's memory in bytes (0 if unknown): a kernel asking for a bigger workspace cannot
   have it, so it cannot plan. Only workspaces above BIG_WORKSPACE are compared with it. */
#define BIG_WORKSPACE ((size_t)1 << 30)
static pthread_once_t memory_once = PTHREAD_ONCE_INIT;
static size_t memory;

static void read_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && (unsigned long)pages <= SIZE_MAX / (unsigned long)page)
    memory = (size_t)pages * (size_t)page;
}

static txattn_status prepare(txattn_plan *plan, const int64_t *chosen,
                             const txattn__tunable_override *ov) {
  const txattn_kernel_desc *d = plan->kernel->desc;
  plan->n_threads = (d->flags & TXATTN_KERNEL_THREADED) ? plan->ctx->n_threads : 1;
  TXATTN_FORWARD_IF_ERROR(set_tunables(plan, chosen, ov));
  plan->workspace_size = d->workspace_size(&plan->problem, plan->n_threads, plan->tunables);
  if (plan->workspace_size == 0) return TXATTN_OK;
  if (plan->workspace_size > BIG_WORKSPACE) pthread_once(&memory_once, read_memory);
  TXATTN_RETURN_IF(plan->workspace_size > BIG_WORKSPACE && memory > 0 &&
                       plan->workspace_size > memory,
                   TXATTN_E_NOMEM,
                   "kernel %s (%s): workspace_size asks for %zu bytes, more than this machine's "
                   "memory (%zu bytes)",
                   d->name, kernel_file(plan), plan->workspace_size, memory);
  plan->pool = txattn__workspace_pool_create(plan->workspace_size);
  TXATTN_RETURN_IF(plan->pool == NULL, TXATTN_E_NOMEM,
                   "txattn_plan_create: out of memory for the workspace pool of %s (%zu bytes)",
                   d->name, plan->workspace_size);
  return TXATTN_OK;
}

static void log_plan(const txattn_plan *plan) {
  char line[512];
  if (!txattn__verbose()) return; /* describing costs more than the rest of planning */
  txattn_plan_describe(plan, line, sizeof line);
  txattn__log("plan %s: %s", line, plan->why);
}

/* A plan of kernel k for r with the table's tunables (chosen, or NULL) and the caller's (ov). */
static txattn_status plan_kernel(txattn_context *ctx, const txattn_problem *r,
                                 const txattn__kernel *k, const int64_t *chosen,
                                 const txattn__tunable_override *ov, txattn_plan **out) {
  txattn_plan *plan = calloc(1, sizeof *plan);
  TXATTN_RETURN_IF(plan == NULL, TXATTN_E_NOMEM, "txattn_plan_create: out of memory");
  atomic_init(&plan->refs, 1);
  txattn__context_retain(ctx);
  plan->ctx = ctx;
  plan->problem = *r;
  plan->kernel = k;
  txattn_status s = prepare(plan, chosen, ov);
  if (s != TXATTN_OK) {
    txattn__plan_release(plan);
    return s;
  }
  *out = plan;
  return TXATTN_OK;
}

/* The plan's reason: the kernels that failed before it (their list cut with "..." to leave the
   choice's line room), then why it was chosen. */
static void set_why(txattn_plan *plan, const txattn__failures *f, const char *why) {
  size_t w = strlen(why), l = strlen(f->list);
  if (w > sizeof plan->why / 2) w = sizeof plan->why / 2; /* not so: why has half the room */
  size_t room = sizeof plan->why - 3 - w;
  char *o = plan->why;
  if (f->n > 0) {
    if (l > room) {
      memcpy(o, f->list, room - 3);
      memcpy(o + room - 3, "...", 3);
      l = room;
    } else {
      memcpy(o, f->list, l);
    }
    memcpy(o + l, "; ", 2);
    o += l + 2;
  }
  memcpy(o, why, w);
  o[w] = '\0';
}

txattn_status txattn__plan_make(txattn_context *ctx, const txattn_problem *r, const char *kernel,
                                const txattn__tunable_override *ov, txattn__failures *failed,
                                const char *fn, const char *verb, txattn_plan **out) {
  txattn__dispatcher d;
  const txattn__kernel *k;
  const int64_t *chosen;
  char why[sizeof((txattn_plan *)0)->why / 2];
  txattn_plan *plan = NULL;
  txattn_status s =
      txattn__dispatch_first(&d, ctx, r, kernel, failed, &k, &chosen, why, sizeof why);
  while (s == TXATTN_OK && k != NULL) {
    s = plan_kernel(ctx, r, k, chosen, ov, &plan);
    if (s == TXATTN_OK || d.fixed || !txattn__kernel_failure(s) ||
        !txattn__failures_add(failed, ctx, k, s, "could not plan", txattn_last_error()))
      break;
    s = txattn__dispatch_next(&d, &k, &chosen, why, sizeof why);
  }
  txattn__dispatch_end(&d);
  if (s == TXATTN_OK && plan == NULL) return txattn__failures_fail(failed, fn, verb);
  if (s != TXATTN_OK) return s;
  plan->fixed = d.fixed;
  set_why(plan, failed, why);
  log_plan(plan);
  *out = plan;
  return txattn__ok();
}

txattn_status txattn__plan_new(txattn_context *ctx, const txattn_problem *p, const char *kernel,
                               const txattn__tunable_override *ov, txattn_plan **out) {
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_plan_create: out is NULL");
  *out = NULL;
  TXATTN_RETURN_IF(ctx == NULL, TXATTN_E_INVALID, "txattn_plan_create: ctx is NULL");
  txattn_problem r;
  TXATTN_FORWARD_IF_ERROR(txattn__problem_resolve(p, &r));
  txattn__failures failed;
  txattn__failures_init(&failed);
  return txattn__plan_make(ctx, &r, kernel, ov, &failed, "txattn_plan_create", "plan", out);
}

txattn_status txattn_plan_create(txattn_context *ctx, const txattn_problem *p, const char *kernel,
                                 txattn_plan **out) {
  return txattn__plan_new(ctx, p, kernel, NULL, out);
}

static txattn_status run(const txattn_plan *plan, const txattn_tensors *t, void *ws) {
  txattn_kernel_call call = {
      .struct_size = sizeof call,
      .problem = &plan->problem,
      .tensors = t,
      .workspace = ws,
      .workspace_size = plan->workspace_size,
      .n_threads = plan->n_threads,
      .tunables = plan->tunables,
  };
  txattn_status s = plan->kernel->desc->run(&call);
  if (s == TXATTN_OK) return txattn__ok();
  txattn_status reported = (unsigned)s <= TXATTN_E_INTERNAL ? s : TXATTN_E_PLUGIN;
  return txattn__fail(reported, "kernel %s (%s) failed with %s (%d)", plan->kernel->desc->name,
                      kernel_file(plan), txattn_status_name(s), (int)s);
}

txattn_status txattn__plan_run(const txattn_plan *plan, const txattn_tensors *x) {
  if (plan->pool == NULL) return run(plan, x, NULL);
  void *ws = txattn__workspace_take(plan->pool);
  TXATTN_RETURN_IF(ws == NULL, TXATTN_E_NOMEM,
                   "txattn_plan_execute: cannot allocate the %zu-byte workspace of kernel %s",
                   plan->workspace_size, plan->kernel->desc->name);
  txattn_status s = run(plan, x, ws);
  txattn__workspace_give(plan->pool, ws);
  return s;
}

txattn_status txattn_plan_execute(const txattn_plan *plan, const txattn_tensors *t) {
  TXATTN_RETURN_IF(plan == NULL, TXATTN_E_INVALID, "txattn_plan_execute: plan is NULL");
  txattn_tensors x;
  TXATTN_FORWARD_IF_ERROR(txattn__tensors_check(&plan->problem, t, &x));
  return txattn__plan_run(plan, &x);
}

const char *txattn_plan_kernel(const txattn_plan *plan) {
  if (plan == NULL) {
    txattn__fail(TXATTN_E_INVALID, "txattn_plan_kernel: plan is NULL");
    return NULL;
  }
  return plan->kernel->desc->name;
}

const char *txattn_plan_why(const txattn_plan *plan) {
  if (plan == NULL) {
    txattn__fail(TXATTN_E_INVALID, "txattn_plan_why: plan is NULL");
    return NULL;
  }
  return plan->why;
}
