/* SPDX-License-Identifier: MIT */
/* txattn_context: creation, lifetime, the kernel and rejected-plugin lists, and a kernel's trial in
 * the scanner's process (scan/scan_spawn.c). */
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "error.h"
#include "log.h"
#include "machine/machine.h"
#include "scan/scan_spawn.h"
#include "struct_size.h"
#include "table/table_context.h"

static void destroy(txattn_context *ctx) {
  pthread_mutex_destroy(&ctx->cache.lock);
  txattn__context_table_free(ctx->table); /* before the plugins: it points at their kernels */
  txattn__registry_free(&ctx->reg);
  free(ctx->table_path);
  free(ctx);
}

void txattn__context_retain(txattn_context *ctx) {
  atomic_fetch_add_explicit(&ctx->refs, 1, memory_order_relaxed);
}

void txattn__context_release(txattn_context *ctx) {
  if (atomic_fetch_sub_explicit(&ctx->refs, 1, memory_order_acq_rel) == 1) destroy(ctx);
}

static txattn_status init(txattn_context *ctx, const txattn_options *o) {
  ctx->n_threads = o->n_threads > 0 ? o->n_threads : txattn__online_cpus();
  TXATTN_FORWARD_IF_ERROR(txattn__machine_init(o->caches, &ctx->machine_info, &ctx->machine));
  if (o->table_path != NULL && (ctx->table_path = strdup(o->table_path)) == NULL)
    return txattn__fail(TXATTN_E_NOMEM, "txattn_context_create: out of memory");
  TXATTN_FORWARD_IF_ERROR(txattn__registry_load(&ctx->reg, o->plugin_path));
  txattn__log("context: %d threads, %zu kernels loaded, %zu entries skipped", ctx->n_threads,
              ctx->reg.n_kernels, ctx->reg.n_rejected);
  TXATTN_FORWARD_IF_ERROR(
      txattn__context_table_load(ctx->table_path, &ctx->reg, &ctx->machine_info, &ctx->table));
  return TXATTN_OK;
}

txattn_status txattn_context_create(const txattn_options *opts, txattn_context **out) {
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_context_create: out is NULL");
  *out = NULL;
  txattn_options copy = TXATTN_OPTIONS_INIT; /* every field NULL or 0 */
  if (opts) TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_IN(txattn_options, opts, &copy));
  const txattn_options *o = &copy;
  TXATTN_RETURN_IF(
      o->n_threads < 0, TXATTN_E_INVALID,
      "txattn_options.n_threads = %d must be >= 0 (0: every CPU this process may run on)",
      o->n_threads);
  txattn_context *ctx = calloc(1, sizeof *ctx);
  TXATTN_RETURN_IF(ctx == NULL, TXATTN_E_NOMEM, "txattn_context_create: out of memory");
  if (pthread_mutex_init(&ctx->cache.lock, NULL) != 0) {
    free(ctx);
    return txattn__fail(TXATTN_E_INTERNAL, "txattn_context_create: pthread_mutex_init failed");
  }
  atomic_init(&ctx->refs, 1);
  txattn_status s = init(ctx, o);
  if (s != TXATTN_OK) {
    destroy(ctx);
    return s;
  }
  *out = ctx;
  return txattn__ok();
}

/* 1 when ctx is there; else records that fn was given a NULL ctx. */
static int have_ctx(const txattn_context *ctx, const char *fn) {
  if (ctx == NULL) txattn__fail(TXATTN_E_INVALID, "%s: ctx is NULL", fn);
  return ctx != NULL;
}

txattn_status txattn_context_machine(const txattn_context *ctx, txattn_machine_info *out) {
  TXATTN_RETURN_IF(ctx == NULL || out == NULL, TXATTN_E_INVALID,
                   "txattn_context_machine: %s is NULL", ctx == NULL ? "ctx" : "out");
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_machine_info, out, &ctx->machine_info));
  return txattn__ok();
}

int txattn_context_threads(const txattn_context *ctx) {
  return have_ctx(ctx, "txattn_context_threads") ? ctx->n_threads : 0;
}

size_t txattn_kernel_count(const txattn_context *ctx) {
  return have_ctx(ctx, "txattn_kernel_count") ? ctx->reg.n_kernels : 0;
}

size_t txattn_rejected_count(const txattn_context *ctx) {
  return have_ctx(ctx, "txattn_rejected_count") ? ctx->reg.n_rejected : 0;
}

/* The arguments of a list getter: ctx and out given, i below the list's length n. */
static txattn_status get_args(const char *fn, const txattn_context *ctx, const void *out, size_t i,
                              const size_t *n, const char *what) {
  TXATTN_RETURN_IF(ctx == NULL || out == NULL, TXATTN_E_INVALID, "%s: %s is NULL", fn,
                   ctx == NULL ? "ctx" : "out");
  TXATTN_RETURN_IF(i >= *n, TXATTN_E_INVALID,
                   "%s: index %zu is out of range (the context has %zu %s)", fn, i, *n, what);
  return TXATTN_OK;
}

txattn_status txattn_kernel_get(const txattn_context *ctx, size_t i, txattn_kernel_info *out) {
  TXATTN_FORWARD_IF_ERROR(
      get_args("txattn_kernel_get", ctx, out, i, ctx ? &ctx->reg.n_kernels : NULL, "kernels"));
  const txattn__kernel *k = &ctx->reg.kernels[i];
  const txattn__plugin *pl = txattn__kernel_plugin(ctx, k);
  txattn_kernel_info info;
  memset(&info, 0, sizeof info); /* padding too: callers may compare */
  info.struct_size = sizeof info;
  info.name = k->desc->name;
  info.summary = k->desc->summary;
  info.plugin = pl->desc->name;
  info.path = pl->path;
  info.usable = k->usable;
  info.why_unusable = k->why_unusable;
  info.isa = txattn_isa_name(k->desc->isa);
  info.flags = k->desc->flags;
  info.plugin_version = pl->desc->version;
  info.plugin_build = pl->build;
  info.one_thread_same_as =
      TXATTN_KERNEL_DESC_HAS(k->desc, one_thread_same_as) ? k->desc->one_thread_same_as : NULL;
  for (int t = 0; t < 4; t++) info.dtypes[t] = txattn__kernel_dtypes(k, t);
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_kernel_info, out, &info));
  return txattn__ok();
}

txattn_status txattn_rejected_get(const txattn_context *ctx, size_t i, txattn_rejected_info *out) {
  TXATTN_FORWARD_IF_ERROR(get_args("txattn_rejected_get", ctx, out, i,
                                   ctx ? &ctx->reg.n_rejected : NULL, "skipped entries"));
  txattn_rejected_info info;
  memset(&info, 0, sizeof info); /* padding too: callers may compare */
  info.struct_size = sizeof info;
  info.path = ctx->reg.rejected[i].path;
  info.reason = ctx->reg.rejected[i].reason;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_rejected_info, out, &info));
  return txattn__ok();
}

txattn_status txattn_kernel_trial(const txattn_context *ctx, size_t kernel, const txattn_problem *p,
                                  const char *const *names, const int64_t *values, size_t n,
                                  int n_threads, txattn_trial *t) {
  TXATTN_RETURN_IF(!ctx || !p || !t || (n && (!names || !values)), TXATTN_E_INVALID,
                   "txattn_kernel_trial: an argument is NULL");
  TXATTN_RETURN_IF(t->struct_size != sizeof *t, TXATTN_E_INVALID,
                   "txattn_kernel_trial: struct_size %zu is not sizeof(txattn_trial), %zu",
                   t->struct_size, sizeof *t);
  txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
  TXATTN_FORWARD_IF_ERROR(txattn_kernel_get(ctx, kernel, &k));
  return txattn__scan_trial(&k, p, names, values, n, n_threads, t);
}
