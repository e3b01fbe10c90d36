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

int txattn__plan_cache_init(txattn__plan_cache *c) {
  memset(c->entries, 0, sizeof c->entries);
  c->clock = 0;
  return pthread_mutex_init(&c->lock, NULL) == 0;
}

void txattn__plan_cache_clear(txattn__plan_cache *c) {
  txattn_plan *drop[TXATTN_PLAN_CACHE_SIZE];
  pthread_mutex_lock(&c->lock);
  for (int i = 0; i < TXATTN_PLAN_CACHE_SIZE; i++) {
    drop[i] = c->entries[i].plan;
    c->entries[i].plan = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  for (int i = 0; i < TXATTN_PLAN_CACHE_SIZE; i++)
    if (drop[i] != NULL) txattn__plan_release(drop[i]);
}

void txattn__plan_cache_destroy(txattn__plan_cache *c) {
  pthread_mutex_destroy(&c->lock);
}

static int same_problem(const txattn_problem *a, const txattn_problem *b) {
  return a->batch == b->batch && a->heads_q == b->heads_q && a->heads_kv == b->heads_kv &&
         a->n_q == b->n_q && a->n_kv == b->n_kv && a->d_qk == b->d_qk && a->d_v == b->d_v &&
         a->mask == b->mask && a->window_left == b->window_left &&
         a->window_right == b->window_right && a->scale == b->scale;
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

/* A plan for r with a reference for the caller. Plans are made under the lock: creation is cheap
   next to an execution, and it keeps two threads from making the same plan. */
static txattn_status cached_plan(txattn_context *ctx, const txattn_problem *r, txattn_plan **out) {
  txattn__plan_cache *c = &ctx->cache;
  const char *forced = getenv("TXATTN_FORCE_KERNEL");
  forced = forced ? forced : "";
  pthread_mutex_lock(&c->lock);
  txattn__cache_entry *e = lookup(c, r, forced);
  txattn_status s = TXATTN_OK;
  if (e == NULL) {
    txattn_plan *plan;
    s = txattn_plan_create(ctx, r, NULL, &plan);
    if (s == TXATTN_OK && strlen(forced) >= sizeof e->forced)
      *out = plan; /* not a kernel name: no caching */
    else if (s == TXATTN_OK) {
      e = victim(c);
      if (e->plan != NULL) txattn__plan_release(e->plan);
      *e = (txattn__cache_entry){*r, "", plan, 0};
      strcpy(e->forced, forced);
    }
  }
  if (e != NULL) {
    e->last_used = ++c->clock;
    txattn__plan_retain(e->plan);
    *out = e->plan;
  }
  pthread_mutex_unlock(&c->lock);
  return s;
}

txattn_status txattn_attention(txattn_context *ctx, const txattn_problem *p,
                               const txattn_tensors *t) {
  TXATTN_RETURN_IF(ctx == NULL, TXATTN_E_INVALID, "txattn_attention: ctx is NULL");
  txattn_problem r;
  txattn_plan *plan;
  TXATTN_FORWARD_IF_ERROR(txattn__problem_resolve(p, &r));
  TXATTN_FORWARD_IF_ERROR(cached_plan(ctx, &r, &plan));
  txattn_status s = txattn_plan_execute(plan, t);
  txattn__plan_release(plan);
  return s;
}
