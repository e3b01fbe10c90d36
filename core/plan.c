/* SPDX-License-Identifier: MIT */
/* txattn_plan: the chosen kernel with its tunables, thread count and workspaces; describing and
 * running it. */
#include <inttypes.h>
#include <math.h>
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

/* The values the kernel runs problem r with: given, fitted by the kernel (ABI 1.3 fit_tunables,
   if it has one) into out, each within its declared range and no larger than given, or the
   plugin is at fault. */
static txattn_status fit_tunables(const txattn_plan *plan, const txattn_problem *r,
                                  const int64_t *given, int64_t *out) {
  const txattn_kernel_desc *d = plan->kernel->desc;
  if (d->n_tunables == 0) return TXATTN_OK;
  if (out != given) memcpy(out, given, d->n_tunables * sizeof *out);
  if (!TXATTN_KERNEL_DESC_HAS(d, fit_tunables) || d->fit_tunables == NULL) return TXATTN_OK;
  d->fit_tunables(r, out);
  for (size_t i = 0; i < d->n_tunables; i++) {
    const txattn_tunable *t = &d->tunables[i];
    TXATTN_RETURN_IF(!txattn__tunable_value_ok(t, out[i]) || out[i] > given[i], TXATTN_E_PLUGIN,
                     "kernel %s (%s): fit_tunables turned %s = %" PRId64 " into %" PRId64
                     " (a fitted value must be within [%" PRId64 ", %" PRId64
                     "] in steps of %" PRId64 " and no larger than given)",
                     d->name, kernel_file(plan), t->name, given[i], out[i], t->min, t->max,
                     t->multiple_of);
  }
  return TXATTN_OK;
}

/* Checks ov against d's declared tunables (E_INVALID naming the bad one) and writes its values
   into values (d's declared order). */
/* "block_q, block_k", or "none" */
static void declared(const txattn_kernel_desc *d, char *buf, size_t size) {
  size_t used = 0;
  snprintf(buf, size, "none");
  for (size_t i = 0; i < d->n_tunables && used < size; i++) {
    int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", d->tunables[i].name);
    used += n > 0 ? (size_t)n : 0;
  }
}

static txattn_status tunables_override(const txattn_kernel_desc *d, int64_t *values,
                                       const txattn__tunable_override *ov) {
  char names[256];
  for (size_t i = 0; i < ov->n; i++) {
    const char *name = ov->names[i];
    TXATTN_RETURN_IF(name == NULL, TXATTN_E_INVALID, "txattn_plan_create_tuned: names[%zu] is NULL",
                     i);
    for (size_t j = 0; j < i; j++)
      TXATTN_RETURN_IF(strcmp(ov->names[j], name) == 0, TXATTN_E_INVALID,
                       "txattn_plan_create_tuned: tunable %s is given twice", name);
    size_t k = 0;
    while (k < d->n_tunables && strcmp(d->tunables[k].name, name) != 0) k++;
    if (k == d->n_tunables) {
      declared(d, names, sizeof names);
      return txattn__fail(TXATTN_E_INVALID,
                          "txattn_plan_create_tuned: kernel %s has no tunable \"%.63s\" (it "
                          "declares: %s)",
                          d->name, name, names);
    }
    const txattn_tunable *t = &d->tunables[k];
    TXATTN_RETURN_IF(!txattn__tunable_value_ok(t, ov->values[i]), TXATTN_E_INVALID,
                     "txattn_plan_create_tuned: %s %s = %" PRId64 " is outside %" PRId64
                     "..%" PRId64 " in steps of %" PRId64,
                     d->name, name, ov->values[i], t->min, t->max, t->multiple_of);
    values[k] = ov->values[i];
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
  if (d->n_tunables == 0) return ov && ov->n ? tunables_override(d, NULL, ov) : TXATTN_OK;
  plan->tunables = calloc(2 * d->n_tunables, sizeof *plan->tunables);
  TXATTN_RETURN_IF(plan->tunables == NULL, TXATTN_E_NOMEM, "txattn_plan_create: out of memory");
  plan->given = plan->tunables + d->n_tunables;
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
  if (ov) TXATTN_FORWARD_IF_ERROR(tunables_override(d, plan->tunables, ov));
  memcpy(plan->given, plan->tunables, d->n_tunables * sizeof *plan->given);
  return fit_tunables(plan, &plan->problem, plan->given, plan->tunables);
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
  plan->per_sequence = txattn__per_sequence(&plan->problem, d->flags);
  TXATTN_FORWARD_IF_ERROR(set_tunables(plan, chosen, ov));
  if (plan->per_sequence) {
    /* the largest sequence (batch 1 at full capacity, the tunables fitted to it), or one of 1 to
       4 queries if that asks for more (a kernel may take another path for a few rows: tiled's
       direct decode path does); a sequence that still asks for more gets a buffer of its own at
       run time (run_per_sequence) */
    static const int64_t few[] = {0, 1, 2, 3, 4};
    plan->workspace_size = 0;
    for (size_t i = 0; i < sizeof few / sizeof few[0]; i++) {
      txattn_problem one = plan->problem;
      int64_t fitted[TXATTN_MAX_TUNABLES];
      one.batch = 1;
      one.ragged = 0;
      one.packed = 0;
      if (few[i] > 0) {
        if (few[i] >= one.n_q) break;
        one.n_q = few[i];
      }
      TXATTN_FORWARD_IF_ERROR(fit_tunables(plan, &one, plan->given, fitted));
      const size_t need = d->workspace_size(&one, plan->n_threads, d->n_tunables ? fitted : NULL);
      if (need > plan->workspace_size) plan->workspace_size = need;
    }
  } else {
    plan->workspace_size = d->workspace_size(&plan->problem, plan->n_threads, plan->tunables);
  }
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
  for (size_t i = 0; i < failed->n && plan->n_failed < sizeof plan->failed / sizeof plan->failed[0];
       i++) {
    plan->failed_status[plan->n_failed] = failed->status[i];
    plan->failed[plan->n_failed++] = failed->k[i];
  }
  log_plan(plan);
  *out = plan;
  return txattn__ok();
}

txattn_status txattn__plan_new(txattn_context *ctx, const txattn_problem *p, const char *kernel,
                               const txattn__tunable_override *ov, txattn_plan **out) {
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_plan_create: out is NULL");
  *out = NULL;
  TXATTN_RETURN_IF(ctx == NULL, TXATTN_E_INVALID, "txattn_plan_create: ctx is NULL");
  txattn_problem r = TXATTN_PROBLEM_INIT;
  TXATTN_FORWARD_IF_ERROR(txattn__problem_resolve(p, &r));
  txattn__failures failed;
  txattn__failures_init(&failed);
  return txattn__plan_make(ctx, &r, kernel, ov, &failed, "txattn_plan_create", "plan", out);
}

txattn_status txattn_plan_create(txattn_context *ctx, const txattn_problem *p, const char *kernel,
                                 txattn_plan **out) {
  return txattn__plan_new(ctx, p, kernel, NULL, out);
}

static txattn_status run(const txattn_plan *plan, const txattn_problem *r, const txattn_tensors *t,
                         const int64_t *tunables, void *ws, size_t ws_size) {
  txattn_kernel_call call = {
      .struct_size = sizeof call,
      .problem = r,
      .tensors = t,
      .workspace = ws,
      .workspace_size = ws_size,
      .n_threads = plan->n_threads,
      .tunables = tunables,
  };
  txattn_status s = plan->kernel->desc->run(&call);
  if (s == TXATTN_OK) return txattn__ok();
  txattn_status reported = (unsigned)s <= TXATTN_E_INTERNAL ? s : TXATTN_E_PLUGIN;
  return txattn__fail(reported, "kernel %s (%s) failed with %s (%d)", plan->kernel->desc->name,
                      kernel_file(plan), txattn_status_name(s), (int)s);
}

/* A sequence without keys (kv_len 0): its q_len rows get o = +0 (all bits zero in every type) and
   lse -inf, as the contract says, written by the host. */
static void write_empty(const txattn_problem *sub, const txattn_tensors *st) {
  size_t row = (size_t)sub->d_v * txattn_dtype_size(sub->o_type);
  for (int64_t h = 0; h < sub->heads_q; h++)
    for (int64_t i = 0; i < sub->n_q; i++) {
      memset(txattn_row_of_mut(st->o_data, sub->o_type, &st->o_layout, 0, h, i), 0, row);
      if (st->lse != NULL) st->lse[h * st->lse_layout.head + i * st->lse_layout.row] = -INFINITY;
    }
}

/* One kernel call per sequence of a ragged problem, for a kernel without TXATTN_KERNEL_RAGGED:
   batch 1, the sequence's lengths, the tensors offset to it (explicit layouts, lse's too), the
   tunables fitted to it; sequences without queries are skipped. */
static txattn_status run_per_sequence(const txattn_plan *plan, const txattn_tensors *x, void *ws) {
  const txattn_kernel_desc *d = plan->kernel->desc;
  int64_t fitted[TXATTN_MAX_TUNABLES];
  for (int64_t b = 0; b < plan->problem.batch; b++) {
    txattn_problem sub = TXATTN_PROBLEM_INIT;
    txattn_tensors st = TXATTN_TENSORS_INIT;
    txattn__sequence(&plan->problem, x, b, &sub, &st);
    if (sub.n_q == 0) continue;
    if (sub.n_kv == 0) {
      write_empty(&sub, &st);
      continue;
    }
    const char *why = NULL;
    TXATTN_RETURN_IF(!txattn__kernel_applicable(plan->kernel, &sub, &why), TXATTN_E_UNSUPPORTED,
                     "kernel %s (%s) does not handle sequence %" PRId64 " (n_q %" PRId64
                     ", n_kv %" PRId64 ") of this ragged problem: %s",
                     d->name, kernel_file(plan), b, sub.n_q, sub.n_kv, why);
    TXATTN_FORWARD_IF_ERROR(fit_tunables(plan, &sub, plan->given, fitted));
    const int64_t *tun = d->n_tunables ? fitted : NULL;
    size_t need = d->workspace_size(&sub, plan->n_threads, tun);
    void *own = NULL; /* where this sequence asks for more than the plan's workspace (prepare) */
    if (need > plan->workspace_size) {
      own = aligned_alloc(64, (need + 63) / 64 * 64);
      TXATTN_RETURN_IF(own == NULL, TXATTN_E_NOMEM,
                       "kernel %s (%s): out of memory for the %zu-byte workspace of sequence "
                       "%" PRId64 " of a ragged problem",
                       d->name, kernel_file(plan), need, b);
    }
    txattn_status s = run(plan, &sub, &st, tun, need ? (own ? own : ws) : NULL, need);
    free(own);
    TXATTN_FORWARD_IF_ERROR(s);
  }
  return txattn__ok();
}

/* A ragged call for a kernel with TXATTN_KERNEL_RAGGED: lengths it can read (NULL stands for
   n_q or n_kv everywhere, which such a kernel never sees). */
static txattn_status run_ragged(const txattn_plan *plan, const txattn_tensors *x, void *ws) {
  const txattn_problem *r = &plan->problem;
  txattn_tensors t = *x;
  int64_t *lens = NULL;
  if (x->q_lens == NULL || x->kv_lens == NULL) {
    lens = malloc(2 * (size_t)r->batch * sizeof *lens);
    TXATTN_RETURN_IF(lens == NULL, TXATTN_E_NOMEM,
                     "txattn_plan_execute: out of memory for the lengths of %" PRId64 " sequences",
                     r->batch);
    for (int64_t b = 0; b < r->batch; b++) {
      lens[b] = x->q_offsets ? x->q_offsets[b + 1] - x->q_offsets[b]
                : x->q_lens  ? x->q_lens[b]
                             : r->n_q;
      lens[r->batch + b] = x->kv_lens ? x->kv_lens[b] : r->n_kv;
    }
    t.q_lens = lens;
    t.kv_lens = lens + r->batch;
  }
  txattn_status s = run(plan, r, &t, plan->tunables, ws, plan->workspace_size);
  free(lens);
  return s;
}

static txattn_status run_any(const txattn_plan *plan, const txattn_tensors *x, void *ws) {
  if (plan->per_sequence) return run_per_sequence(plan, x, ws);
  if (plan->problem.ragged) return run_ragged(plan, x, ws);
  return run(plan, &plan->problem, x, plan->tunables, ws, plan->workspace_size);
}

txattn_status txattn__plan_run(const txattn_plan *plan, const txattn_tensors *x) {
  if (plan->pool == NULL) return run_any(plan, x, NULL);
  void *ws = txattn__workspace_take(plan->pool);
  TXATTN_RETURN_IF(ws == NULL, TXATTN_E_NOMEM,
                   "txattn_plan_execute: cannot allocate the %zu-byte workspace of kernel %s",
                   plan->workspace_size, plan->kernel->desc->name);
  txattn_status s = run_any(plan, x, ws);
  txattn__workspace_give(plan->pool, ws);
  return s;
}

txattn_status txattn_plan_execute(const txattn_plan *plan, const txattn_tensors *t) {
  TXATTN_RETURN_IF(plan == NULL, TXATTN_E_INVALID, "txattn_plan_execute: plan is NULL");
  txattn_tensors x = TXATTN_TENSORS_INIT;
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

size_t txattn_plan_failed_count(const txattn_plan *plan) {
  return plan ? plan->n_failed : 0;
}

txattn_status txattn_plan_failed_get(const txattn_plan *plan, size_t i, const char **kernel,
                                     txattn_status *status) {
  TXATTN_RETURN_IF(plan == NULL || kernel == NULL || status == NULL, TXATTN_E_INVALID,
                   "txattn_plan_failed_get: plan, kernel or status is NULL");
  TXATTN_RETURN_IF(i >= plan->n_failed, TXATTN_E_INVALID,
                   "txattn_plan_failed_get: index %zu, but %zu kernels failed before this plan's",
                   i, plan->n_failed);
  *kernel = plan->failed[i]->desc->name;
  *status = plan->failed_status[i];
  return txattn__ok();
}

const char *txattn_plan_why(const txattn_plan *plan) {
  if (plan == NULL) {
    txattn__fail(TXATTN_E_INVALID, "txattn_plan_why: plan is NULL");
    return NULL;
  }
  return plan->why;
}
