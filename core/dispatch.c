/* The dispatcher: a named kernel, else the dispatch table's choice (table_lookup.c), else the
 * cheapest by a documented estimate. Every choice comes with one line on why, which names the
 * table's region or interpolation, or why the table had no entry. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "error.h"
#include "problem.h"
#include "table_context.h"

static const txattn__kernel *find(const txattn_context *ctx, const char *name) {
  for (size_t i = 0; i < ctx->reg.n_kernels; i++)
    if (strcmp(ctx->reg.kernels[i].desc->name, name) == 0) return &ctx->reg.kernels[i];
  return NULL;
}

/* "a.b, c.d, ..." into buf, cut short with "..." when it does not fit. */
static void kernel_names(const txattn_context *ctx, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < ctx->reg.n_kernels && used < size; i++) {
    int n =
        snprintf(buf + used, size - used, "%s%s", i ? ", " : "", ctx->reg.kernels[i].desc->name);
    used += n > 0 ? (size_t)n : 0;
  }
  if (used >= size && size > 4) strcpy(buf + size - 4, "...");
}

static txattn_status none_loaded(const txattn_context *ctx) {
  return txattn__fail(TXATTN_E_NOT_FOUND,
                      "no kernel was loaded from the plugin path \"%s\" (txattn_rejected_get, or "
                      "`txtune list`, shows what was skipped and why)",
                      ctx->reg.search_path);
}

static txattn_status named(const txattn_context *ctx, const txattn_problem *r, const char *name,
                           const char *source, const txattn__kernel **out) {
  char names[512];
  if (ctx->reg.n_kernels == 0) return none_loaded(ctx);
  const txattn__kernel *k = find(ctx, name);
  if (k == NULL) {
    kernel_names(ctx, names, sizeof names);
    return txattn__fail(TXATTN_E_NOT_FOUND, "no kernel named \"%.63s\" (%s); loaded: %s", name,
                        source, names);
  }
  TXATTN_RETURN_IF(!k->usable, TXATTN_E_UNSUPPORTED, "kernel %s (%s) cannot run here: %s", name,
                   source, k->why_unusable);
  const char *why = NULL;
  TXATTN_RETURN_IF(!k->desc->applicable(r, &why), TXATTN_E_UNSUPPORTED,
                   "kernel %s (%s) does not handle this problem: %s", name, source,
                   why ? why : "(the kernel gave no reason)");
  *out = k;
  return TXATTN_OK;
}

#define MAX_ESTIMATE_TUNABLES 64

/* The score pairs k computes for r: what the kernel says (ABI 1.1 cost_pairs, with its default
   tunables), else the visible pairs for sparse kernels and all of them for dense ones. */
static double cost_pairs(const txattn_context *ctx, const txattn__kernel *k,
                         const txattn_problem *r, double visible) {
  const txattn_kernel_desc *d = k->desc;
  if (TXATTN_KERNEL_DESC_HAS(d, cost_pairs) && d->cost_pairs != NULL &&
      d->n_tunables <= MAX_ESTIMATE_TUNABLES) {
    int64_t tun[MAX_ESTIMATE_TUNABLES];
    if (d->n_tunables > 0) d->default_tunables(r, &ctx->machine, tun);
    double v = d->cost_pairs(r, d->n_tunables > 0 ? tun : NULL);
    if (isfinite(v) && v >= 0) return v; /* else the kernel's count is unusable: ours */
  }
  if (d->flags & TXATTN_KERNEL_SPARSE) return visible;
  return (double)r->batch * (double)r->heads_q * (double)r->n_q * (double)r->n_kv;
}

static double estimate(const txattn_context *ctx, const txattn__kernel *k, const txattn_problem *r,
                       double visible) {
  double flops = 2.0 * (double)(r->d_qk + r->d_v) * cost_pairs(ctx, k, r, visible);
  int used = (k->desc->flags & TXATTN_KERNEL_THREADED) ? ctx->n_threads : 1;
  return flops / ((double)k->desc->speed_hint * 1e9 * used);
}

/* Lists why each kernel was not a candidate, for the "nothing can do this" message. */
static txattn_status no_candidate(const txattn_context *ctx, const txattn_problem *r) {
  char list[768];
  size_t used = 0;
  list[0] = '\0';
  for (size_t i = 0; i < ctx->reg.n_kernels && used < sizeof list; i++) {
    const txattn__kernel *k = &ctx->reg.kernels[i];
    const char *why = NULL;
    if (k->usable && !k->desc->applicable(r, &why) && why == NULL) why = "(no reason given)";
    int n = snprintf(list + used, sizeof list - used, "%s%s: %s", i ? "; " : "", k->desc->name,
                     k->usable ? why : k->why_unusable);
    used += n > 0 ? (size_t)n : 0;
  }
  return txattn__fail(TXATTN_E_UNSUPPORTED, "no usable kernel handles this problem: %s", list);
}

typedef struct ranked {
  const txattn__kernel *k;
  double t;
} ranked;

static int better(ranked a, ranked b) {
  return b.k == NULL || a.t < b.t || (a.t == b.t && strcmp(a.k->desc->name, b.k->desc->name) < 0);
}

/* no_entry: why the dispatch table had no say, for the reason line. */
static txattn_status by_estimate(const txattn_context *ctx, const txattn_problem *r,
                                 const char *no_entry, const txattn__kernel **out, char *why,
                                 size_t size) {
  double pairs = txattn__visible_pairs(r);
  ranked best = {NULL, 0}, second = {NULL, 0};
  for (size_t i = 0; i < ctx->reg.n_kernels; i++) {
    const txattn__kernel *k = &ctx->reg.kernels[i];
    const char *ignored = NULL;
    if (!k->usable || !k->desc->applicable(r, &ignored)) continue;
    ranked c = {k, estimate(ctx, k, r, pairs)};
    if (better(c, best)) {
      second = best;
      best = c;
    } else if (better(c, second))
      second = c;
  }
  if (best.k == NULL) return no_candidate(ctx, r);
  char t1[32], t2[32];
  if (second.k == NULL)
    snprintf(why, size, "estimate (%s): %s %s (the only usable kernel that handles this problem)",
             no_entry, best.k->desc->name, txattn__fmt_time(best.t, t1, sizeof t1));
  else
    snprintf(why, size, "estimate (%s): %s %s < %s %s (runner-up)", no_entry, best.k->desc->name,
             txattn__fmt_time(best.t, t1, sizeof t1), second.k->desc->name,
             txattn__fmt_time(second.t, t2, sizeof t2));
  *out = best.k;
  return TXATTN_OK;
}

txattn_status txattn__dispatch(const txattn_context *ctx, const txattn_problem *r,
                               const char *explicit_name, const txattn__kernel **out,
                               const int64_t **tunables, char *why, size_t size) {
  const char *forced = getenv("TXATTN_FORCE_KERNEL");
  char no_entry[320];
  *tunables = NULL;
  if (explicit_name != NULL) {
    snprintf(why, size, "requested by the caller");
    return named(ctx, r, explicit_name, "requested by the caller", out);
  }
  if (forced != NULL && forced[0] != '\0') {
    snprintf(why, size, "forced by TXATTN_FORCE_KERNEL");
    return named(ctx, r, forced, "forced by TXATTN_FORCE_KERNEL", out);
  }
  if (ctx->reg.n_kernels == 0) return none_loaded(ctx);
  if (txattn__table_choose(ctx, r, out, tunables, why, size)) return TXATTN_OK;
  snprintf(no_entry, sizeof no_entry, "%s", why);
  return by_estimate(ctx, r, no_entry, out, why, size);
}
