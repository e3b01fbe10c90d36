/* SPDX-License-Identifier: MIT */
/* The dispatcher: a named kernel, else the dispatch table's choice (table_lookup.c), else the
 * cheapest by a documented estimate. Every choice comes with one line on why, which names the
 * table's region or interpolation, or why the table had no entry. When its choice cannot plan or
 * run, the next of the estimate's ranking stands in (the failed kernels left out); a named kernel
 * has no stand-in. When every candidate fails, the status is E_UNSUPPORTED only if each one
 * declined (E_UNSUPPORTED), else that of the first other failure: the first real error is the
 * most telling. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "error.h"
#include "log.h"
#include "problem.h"
#include "table/table_context.h"
#include "table/table_lookup.h"

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
  TXATTN_RETURN_IF(!txattn__kernel_applicable(k, r, &why), TXATTN_E_UNSUPPORTED,
                   "kernel %s (%s) does not handle this problem: %s", name, source, why);
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
    if (k->usable && txattn__kernel_applicable(k, r, &why)) why = "applicable";
    int n = snprintf(list + used, sizeof list - used, "%s%s: %s", i ? "; " : "", k->desc->name,
                     k->usable ? why : k->why_unusable);
    used += n > 0 ? (size_t)n : 0;
  }
  return txattn__fail(TXATTN_E_UNSUPPORTED, "no usable kernel handles this problem: %s", list);
}

void txattn__failures_init(txattn__failures *f) {
  f->n = 0;
  f->first = TXATTN_E_UNSUPPORTED;
  f->n_kernels = 0;
  f->list[0] = '\0';
}

int txattn__kernel_failure(txattn_status s) {
  return s == TXATTN_E_PLUGIN || s == TXATTN_E_NOMEM || s == TXATTN_E_UNSUPPORTED ||
         s == TXATTN_E_INTERNAL;
}

/* Appends sep and text to the list in buf (of size >= 4 bytes, "" at first); a list that no longer
   fits ends with "..." and takes nothing more. */
static void append(char *buf, size_t size, const char *sep, const char *text) {
  size_t used = strlen(buf);
  if (used >= 3 && strcmp(buf + used - 3, "...") == 0) return;
  int n = snprintf(buf + used, size - used, "%s%s", used ? sep : "", text);
  if (n < 0 || used + (size_t)n >= size) strcpy(buf + size - 4, "...");
}

#define MAX_REASON 200 /* characters of one kernel's reason in lists */

int txattn__failures_add(txattn__failures *f, const txattn_context *ctx, const txattn__kernel *k,
                         txattn_status s, const char *stage, const char *message) {
  if (f->n == TXATTN__MAX_FAILED) return 0;
  f->status[f->n] = s;
  f->k[f->n++] = k;
  f->n_kernels = ctx->reg.n_kernels;
  if (f->first == TXATTN_E_UNSUPPORTED) f->first = s;
  /* the host's messages start "kernel NAME (FILE)": the list names the kernel already */
  const char *name = k->desc->name, *file = txattn__kernel_plugin(ctx, k)->path;
  size_t nn = strlen(name), nf = strlen(file);
  if (strncmp(message, "kernel ", 7) == 0 && strncmp(message + 7, name, nn) == 0 &&
      strncmp(message + 7 + nn, " (", 2) == 0 && strncmp(message + 9 + nn, file, nf) == 0 &&
      message[9 + nn + nf] == ')') {
    message += 10 + nn + nf;
    message += strncmp(message, ": ", 2) == 0 ? 2 : message[0] == ' ';
  }
  char entry[MAX_REASON + 160];
  snprintf(entry, sizeof entry, "%.63s %s (%s: %.*s%s)", name, stage, txattn_status_name(s),
           MAX_REASON, message, strlen(message) > MAX_REASON ? "..." : "");
  append(f->list, sizeof f->list, "; ", entry);
  txattn__log("kernel %s %s: %s: %s; the dispatcher takes its next candidate", name, stage,
              txattn_status_name(s), message);
  return 1;
}

txattn_status txattn__failures_fail(const txattn__failures *f, const char *fn, const char *verb) {
  size_t others = f->n_kernels > f->n ? f->n_kernels - f->n : 0;
  char rest[96] = "";
  if (others > 0)
    snprintf(rest, sizeof rest, " (%zu other kernel%s cannot run here or decline%s it)", others,
             others == 1 ? "" : "s", others == 1 ? "s" : "");
  return txattn__fail(f->first, "%s: no kernel could %s this problem: %s%s", fn, verb, f->list,
                      rest);
}

/* The kernel's index in ctx's registry. */
static size_t index_of(const txattn_context *ctx, const txattn__kernel *k) {
  return (size_t)(k - ctx->reg.kernels);
}

static int skipped(const txattn__failures *skip, const txattn__kernel *k) {
  for (size_t i = 0; skip != NULL && i < skip->n; i++)
    if (skip->k[i] == k) return 1;
  return 0;
}

/* Estimates every candidate once (est[i] = -1 for the others) and marks the third-party ones the
   table did not measure as the winner around the problem, then rules out the kernels in skip: only the first call of a walk pays for the
   kernels' cost_pairs and the table scan. */
static txattn_status rank(txattn__dispatcher *d) {
  const txattn_context *ctx = d->ctx;
  size_t n = ctx->reg.n_kernels;
  if (d->est == NULL) {
    int local = n <= sizeof d->est_local / sizeof d->est_local[0];
    d->est = local ? d->est_local : malloc(n * sizeof *d->est);
    d->demoted = local ? d->demoted_local : malloc(n);
    if (d->est == NULL || d->demoted == NULL) {
      txattn__dispatch_end(d);
      return txattn__fail(TXATTN_E_NOMEM, "txattn_plan_create: out of memory");
    }
    double pairs = txattn__visible_pairs(d->r);
    int any_demoted = 0;
    for (size_t i = 0; i < n; i++) {
      const txattn__kernel *k = &ctx->reg.kernels[i];
      const char *ignored = NULL;
      d->est[i] = k->usable && txattn__kernel_applicable(k, d->r, &ignored) && !skipped(d->skip, k)
                      ? estimate(ctx, k, d->r, pairs)
                      : -1;
      d->demoted[i] = d->est[i] >= 0 && !txattn__kernel_plugin(ctx, k)->shipped;
      any_demoted |= d->demoted[i];
    }
    /* a table lifts the demotion only where it measured the kernel the winner: its times there,
       on this very build of its file (a candidate of another build is left unbound), are
       evidence; its word elsewhere is not */
    if (any_demoted)
      txattn__table_won_around(ctx->table, &ctx->reg, ctx->n_threads, d->r, d->demoted);
  }
  for (size_t i = 0; d->skip != NULL && i < d->skip->n; i++)
    d->est[index_of(ctx, d->skip->k[i])] = -1;
  return TXATTN_OK;
}

typedef struct ranked {
  const txattn__kernel *k;
  double t;
  int demoted;
} ranked;

static int better(ranked a, ranked b) {
  if (b.k == NULL) return 1;
  if (a.demoted != b.demoted) return a.demoted < b.demoted;
  return a.t < b.t || (a.t == b.t && strcmp(a.k->desc->name, b.k->desc->name) < 0);
}

#define UNMEASURED "third-party, not measured by a table"

/* Appends to why the demoted candidates that claim to be faster than the choice best, which they
   would have been on their own word. */
static void note_demoted(const txattn__dispatcher *d, ranked best, char *why, size_t size) {
  size_t used = strlen(why), listed = 0;
  for (size_t i = 0; i < d->ctx->reg.n_kernels && used < size; i++) {
    if (!(d->est[i] >= 0 && d->demoted[i] && d->est[i] < best.t)) continue;
    char t[32];
    int n =
        listed == 3
            ? snprintf(why + used, size - used, ", ...")
            : snprintf(why + used, size - used, "%s%s (claims %s)",
                       listed ? ", " : "; ranked after the shipped kernels: " UNMEASURED ": ",
                       d->ctx->reg.kernels[i].desc->name, txattn__fmt_time(d->est[i], t, sizeof t));
    used += n > 0 ? (size_t)n : 0;
    if (++listed > 3) break;
  }
}

/* The estimate's best candidate left, with the runner-up in the reason line. */
static txattn_status by_estimate(txattn__dispatcher *d, const txattn__kernel **out, char *why,
                                 size_t size) {
  const txattn_context *ctx = d->ctx;
  TXATTN_FORWARD_IF_ERROR(rank(d));
  ranked best = {NULL, 0, 0}, second = {NULL, 0, 0};
  for (size_t i = 0; i < ctx->reg.n_kernels; i++) {
    if (!(d->est[i] >= 0)) continue;
    ranked c = {&ctx->reg.kernels[i], d->est[i], d->demoted[i]};
    if (better(c, best)) {
      second = best;
      best = c;
    } else if (better(c, second))
      second = c;
  }
  if (best.k == NULL && (d->skip == NULL || d->skip->n == 0)) return no_candidate(ctx, d->r);
  *out = best.k;
  if (best.k == NULL) return TXATTN_OK; /* every candidate failed */
  char t1[32], t2[32];
  const char *own = best.demoted ? " (" UNMEASURED ")" : "";
  if (second.k == NULL)
    snprintf(why, size, "estimate (%s): %s %s%s (the only %s kernel that handles this problem)",
             d->context, best.k->desc->name, txattn__fmt_time(best.t, t1, sizeof t1), own,
             d->skip && d->skip->n ? "other usable" : "usable");
  else
    snprintf(why, size, "estimate (%s): %s %s%s %s %s %s%s (runner-up)", d->context,
             best.k->desc->name, txattn__fmt_time(best.t, t1, sizeof t1), own,
             second.demoted && !best.demoted ? "before" : "<", second.k->desc->name,
             txattn__fmt_time(second.t, t2, sizeof t2), second.demoted ? " (" UNMEASURED ")" : "");
  if (!best.demoted) note_demoted(d, best, why, size);
  return TXATTN_OK;
}

/* Where a partly valid table chose W, the kernels it did not measure (a new plugin, another build)
   are ranked by the estimate beside W: the one it predicts fastest takes the shape when the same
   estimate predicts it faster than W. A third-party one is ranked after W, as after every measured
   kernel, whatever it claims (demoted): measured times are not displaced on a kernel's own word.
   Such kernels that claim to be faster than W are named in the reason. */
static txattn_status beside_table(txattn__dispatcher *d, const txattn__kernel **out,
                                  const int64_t **tunables, char *why, size_t size) {
  const txattn_context *ctx = d->ctx;
  const unsigned char *unmeasured = ctx->table->unmeasured;
  if (ctx->table->n_unmeasured == 0) return TXATTN_OK;
  TXATTN_FORWARD_IF_ERROR(rank(d));
  const double tw = d->est[index_of(ctx, *out)];
  size_t best = ctx->reg.n_kernels, claims = 0;
  for (size_t i = 0; i < ctx->reg.n_kernels; i++) {
    if (!unmeasured[i] || !(d->est[i] >= 0) || !(d->est[i] < tw)) continue;
    if (d->demoted[i])
      claims++;
    else if (best == ctx->reg.n_kernels || d->est[i] < d->est[best])
      best = i;
  }
  if (best == ctx->reg.n_kernels) {
    size_t used = strlen(why);
    for (size_t i = 0, listed = 0; claims > 0 && i < ctx->reg.n_kernels && used < size; i++) {
      if (!(unmeasured[i] && d->demoted[i] && d->est[i] >= 0 && d->est[i] < tw)) continue;
      char t[32];
      int n = snprintf(why + used, size - used, "%s%s (claims %s)",
                       listed++ ? ", " : "; not measured by the table, third-party, ranked after: ",
                       ctx->reg.kernels[i].desc->name, txattn__fmt_time(d->est[i], t, sizeof t));
      used += n > 0 ? (size_t)n : 0;
    }
    return TXATTN_OK;
  }
  char t1[32], t2[32], table_why[384];
  snprintf(table_why, sizeof table_why, "%s", why);
  const txattn__kernel *w = *out;
  *out = &ctx->reg.kernels[best];
  *tunables = NULL;
  snprintf(why, size,
           "estimate beside the table: %s %s < the table's choice %s %s (%s is not measured by "
           "the table: a new plugin or another build); %s",
           (*out)->desc->name, txattn__fmt_time(d->est[best], t1, sizeof t1), w->desc->name,
           txattn__fmt_time(tw, t2, sizeof t2), (*out)->desc->name, table_why);
  snprintf(d->context, sizeof d->context, "the estimate's choice beside the table, %s, failed",
           (*out)->desc->name);
  return TXATTN_OK;
}

txattn_status txattn__dispatch_first(txattn__dispatcher *d, const txattn_context *ctx,
                                     const txattn_problem *r, const char *explicit_name,
                                     const txattn__failures *skip, const txattn__kernel **out,
                                     const int64_t **tunables, char *why, size_t size) {
  const char *forced = getenv("TXATTN_FORCE_KERNEL");
  d->ctx = ctx;
  d->r = r;
  d->skip = skip;
  d->fixed = 0;
  d->table_choice = NULL;
  d->est = NULL;
  d->demoted = NULL;
  d->context[0] = '\0';
  *tunables = NULL;
  *out = NULL;
  if (explicit_name != NULL) {
    d->fixed = 1;
    snprintf(why, size, "requested by the caller");
    return named(ctx, r, explicit_name, "requested by the caller", out);
  }
  if (forced != NULL && forced[0] != '\0') {
    d->fixed = 1;
    snprintf(why, size, "forced by TXATTN_FORCE_KERNEL");
    return named(ctx, r, forced, "forced by TXATTN_FORCE_KERNEL", out);
  }
  if (ctx->reg.n_kernels == 0) return none_loaded(ctx);
  if (txattn__table_choose(ctx->table, ctx->n_threads, r, out, tunables, why, size)) {
    d->table_choice = *out;
    if (!skipped(skip, *out)) return beside_table(d, out, tunables, why, size);
    snprintf(d->context, sizeof d->context, "the table's choice %s failed", (*out)->desc->name);
    *out = NULL;
    *tunables = NULL;
  } else {
    snprintf(d->context, sizeof d->context, "%s", why);
  }
  return by_estimate(d, out, why, size);
}

txattn_status txattn__dispatch_next(txattn__dispatcher *d, const txattn__kernel **out,
                                    const int64_t **tunables, char *why, size_t size) {
  *out = NULL;
  *tunables = NULL;
  if (d->fixed) return TXATTN_OK;
  if (d->context[0] == '\0' && d->table_choice != NULL) /* the table's choice failed to plan */
    snprintf(d->context, sizeof d->context, "the table's choice %s failed",
             d->table_choice->desc->name);
  return by_estimate(d, out, why, size);
}

void txattn__dispatch_end(txattn__dispatcher *d) {
  if (d->est != NULL && d->est != d->est_local) free(d->est);
  if (d->demoted != NULL && d->demoted != d->demoted_local) free(d->demoted);
  d->est = NULL;
  d->demoted = NULL;
}
