/* SPDX-License-Identifier: MIT */
/* txattn_attention: plan + execute through a small LRU cache of plans per context. Plans are shared
 * by every thread that hits them, which is safe because txattn_plan_execute is; each user holds a
 * reference, so evicting a plan that another thread is still running only drops the cache's
 * reference. */
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "error.h"
#include "plan.h"
#include "problem.h"
#include "tensors.h"

/* Drops the cache's references to its plans (which hold references to the context), then the
   caller's reference: the context lives on until its last plan is freed. */
void txattn_context_free(txattn_context *ctx) {
  if (ctx == NULL) return;
  txattn__plan_cache *c = &ctx->cache;
  txattn_plan *drop[TXATTN_PLAN_CACHE_SIZE];
  pthread_mutex_lock(&c->lock);
  for (int i = 0; i < TXATTN_PLAN_CACHE_SIZE; i++) {
    drop[i] = c->entries[i].plan;
    c->entries[i].plan = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  for (int i = 0; i < TXATTN_PLAN_CACHE_SIZE; i++)
    if (drop[i] != NULL) txattn__plan_release(drop[i]);
  txattn__context_release(ctx);
}

/* Every resolved field that changes what a kernel computes. */
static int same_problem(const txattn_problem *a, const txattn_problem *b) {
  return a->batch == b->batch && a->heads_q == b->heads_q && a->heads_kv == b->heads_kv &&
         a->n_q == b->n_q && a->n_kv == b->n_kv && a->d_qk == b->d_qk && a->d_v == b->d_v &&
         a->mask == b->mask && a->window_left == b->window_left &&
         a->window_right == b->window_right && a->scale == b->scale && a->q_type == b->q_type &&
         a->k_type == b->k_type && a->v_type == b->v_type && a->o_type == b->o_type &&
         a->lse == b->lse && a->ragged == b->ragged && a->softcap == b->softcap &&
         a->alibi == b->alibi && a->sinks == b->sinks && a->sink_keys == b->sink_keys &&
         a->mask_tensor == b->mask_tensor && a->mask_type == b->mask_type &&
         a->page_size == b->page_size && a->max_pages == b->max_pages && a->n_pages == b->n_pages &&
         a->packed == b->packed;
}

/* The slot to fill: a free one, else the least recently used. */
static txattn__cache_entry *victim(txattn__plan_cache *c) {
  txattn__cache_entry *v = &c->entries[0];
  for (int i = 0; i < TXATTN_PLAN_CACHE_SIZE; i++) {
    txattn__cache_entry *e = &c->entries[i];
    if (e->plan == NULL) return e;
    if (e->last_used < v->last_used) v = e;
  }
  return v;
}

static txattn__cache_entry *lookup(txattn__plan_cache *c, const txattn_problem *r,
                                   const char *forced) {
  for (int i = 0; i < TXATTN_PLAN_CACHE_SIZE; i++) {
    txattn__cache_entry *e = &c->entries[i];
    if (e->plan != NULL && same_problem(&e->key, r) && strcmp(e->forced, forced) == 0) return e;
  }
  return NULL;
}

/* Puts plan in slot e (the cache's reference), or in a free or least recently used one. */
static txattn__cache_entry *keep(txattn__plan_cache *c, txattn__cache_entry *e,
                                 const txattn_problem *r, const char *forced, txattn_plan *plan) {
  if (e == NULL) e = victim(c);
  if (e->plan != NULL) txattn__plan_release(e->plan);
  *e = (txattn__cache_entry){*r, "", plan, ++c->clock};
  strcpy(e->forced, forced);
  return e;
}

static const char *forced_kernel(void) {
  const char *forced = getenv("TXATTN_FORCE_KERNEL");
  return forced ? forced : "";
}

/* A plan for r with a reference for the caller. Plans are made under the lock: creation is cheap
   next to an execution, and it keeps two threads from making the same plan. */
static txattn_status cached_plan(txattn_context *ctx, const txattn_problem *r, txattn_plan **out) {
  txattn__plan_cache *c = &ctx->cache;
  const char *forced = forced_kernel();
  pthread_mutex_lock(&c->lock);
  txattn__cache_entry *e = lookup(c, r, forced);
  txattn_status s = TXATTN_OK;
  if (e == NULL) {
    txattn_plan *plan = NULL;
    txattn__failures failed;
    txattn__failures_init(&failed);
    s = txattn__plan_make(ctx, r, NULL, NULL, &failed, "txattn_attention", "plan", &plan);
    if (s == TXATTN_OK && strlen(forced) >= sizeof e->forced)
      *out = plan; /* not a kernel name: no caching */
    else if (s == TXATTN_OK)
      e = keep(c, NULL, r, forced, plan);
  }
  if (e != NULL) {
    e->last_used = ++c->clock;
    txattn__plan_retain(e->plan);
    *out = e->plan;
  }
  pthread_mutex_unlock(&c->lock);
  return s;
}

/* After plan's kernel failed to run with status s: the dispatcher's next candidates, each planned
   and run in turn until one computes the output (which it rewrites whole); the cache then keeps
   that plan for r instead of the failed one. When every kernel fails, the error lists them. */
static txattn_status retry(txattn_context *ctx, const txattn_problem *r, const txattn_tensors *x,
                           const txattn_plan *plan, txattn_status s) {
  txattn__failures failed;
  txattn__failures_init(&failed);
  txattn__failures_add(&failed, ctx, plan->kernel, s, "failed at run time", txattn_last_error());
  for (;;) {
    txattn_plan *next;
    TXATTN_FORWARD_IF_ERROR(
        txattn__plan_make(ctx, r, NULL, NULL, &failed, "txattn_attention", "compute", &next));
    s = txattn__plan_run(next, x);
    if (s == TXATTN_OK) {
      txattn__plan_cache *c = &ctx->cache;
      const char *forced = forced_kernel();
      pthread_mutex_lock(&c->lock);
      txattn__cache_entry *e = lookup(c, r, forced);
      if (strlen(forced) < sizeof e->forced && (e == NULL || e->plan == plan))
        keep(c, e, r, forced, next); /* else another thread replaced it already */
      else
        txattn__plan_release(next);
      pthread_mutex_unlock(&c->lock);
      return txattn__ok();
    }
    int again = !next->fixed && txattn__kernel_failure(s) &&
                txattn__failures_add(&failed, ctx, next->kernel, s, "failed at run time",
                                     txattn_last_error());
    txattn__plan_release(next);
    if (!again) return s;
  }
}

txattn_status txattn_attention(txattn_context *ctx, const txattn_problem *p,
                               const txattn_tensors *t) {
  TXATTN_RETURN_IF(ctx == NULL, TXATTN_E_INVALID, "txattn_attention: ctx is NULL");
  txattn_problem r = TXATTN_PROBLEM_INIT;
  txattn_plan *plan = NULL;
  txattn_tensors x = TXATTN_TENSORS_INIT;
  TXATTN_FORWARD_IF_ERROR(txattn__problem_resolve(p, &r));
  TXATTN_FORWARD_IF_ERROR(cached_plan(ctx, &r, &plan));
  txattn_status s = txattn__tensors_check(&plan->problem, t, &x);
  if (s == TXATTN_OK) {
    s = txattn__plan_run(plan, &x);
    if (s != TXATTN_OK && !plan->fixed && txattn__kernel_failure(s))
      s = retry(ctx, &r, &x, plan, s);
  }
  txattn__plan_release(plan);
  return s;
}
