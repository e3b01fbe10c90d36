/* SPDX-License-Identifier: MIT */
/* The dispatch table functions that take a context: a table's header from a context, its checks
 * against one, and the table a context loaded with its state. They stand above the context, which
 * hands the table code below it (table_context.c) only its registry and machine. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "context.h"
#include "error.h"
#include "table_context.h"
#include "txattn/plugin.h"

static void utc_now(char *buf, size_t size) {
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm) == NULL || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    snprintf(buf, size, "1970-01-01T00:00:00Z");
}

static txattn_status fill_header(txattn_table *t, const txattn_context *ctx) {
  char why[512], created[32];
  txattn_machine_info m = TXATTN_MACHINE_INFO_INIT;
  TXATTN_FORWARD_IF_ERROR(txattn_context_machine(ctx, &m));
  utc_now(created, sizeof created);
  txattn_status s = txattn__tm_set_header(t, txattn_version_string(), created, &m, why, sizeof why);
  for (size_t i = 0; s == TXATTN_OK && i < ctx->reg.n_plugins; i++) {
    const txattn__plugin *p = &ctx->reg.plugins[i];
    s = txattn__tm_add_plugin(t, p->desc->name, p->desc->version, p->build, why, sizeof why);
  }
  return s == TXATTN_OK ? TXATTN_OK : txattn__fail(s, "txattn_table_create: %s", why);
}

txattn_status txattn_table_create(const txattn_context *ctx, txattn_table **out) {
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_table_create: out is NULL");
  *out = NULL;
  TXATTN_RETURN_IF(ctx == NULL, TXATTN_E_INVALID, "txattn_table_create: ctx is NULL");
  txattn_table *t = txattn__tm_new();
  TXATTN_RETURN_IF(t == NULL, TXATTN_E_NOMEM, "txattn_table_create: out of memory");
  txattn_status s = fill_header(t, ctx);
  if (s != TXATTN_OK) {
    txattn_table_free(t);
    return s;
  }
  *out = t;
  return txattn__ok();
}

txattn_status txattn_table_kernel_measured(const txattn_table *t, const txattn_context *ctx,
                                           size_t kernel, int *measured, char *why, size_t size) {
  TXATTN_RETURN_IF(t == NULL || ctx == NULL || measured == NULL, TXATTN_E_INVALID,
                   "txattn_table_kernel_measured: %s is NULL",
                   t == NULL     ? "t"
                   : ctx == NULL ? "ctx"
                                 : "measured");
  TXATTN_RETURN_IF(kernel >= ctx->reg.n_kernels, TXATTN_E_INVALID,
                   "txattn_table_kernel_measured: kernel %zu >= txattn_kernel_count = %zu", kernel,
                   ctx->reg.n_kernels);
  const txattn__plugin *p = txattn__kernel_plugin(ctx, &ctx->reg.kernels[kernel]);
  const txattn__tplugin *old = txattn__table_plugin(t, p->desc->name);
  *measured = txattn__table_plugin_measured(t, p);
  if (why && size) {
    if (*measured)
      snprintf(why, size, "measured: the table lists plugin %s %s (%s)", old->name, old->version,
               old->build);
    else if (old == NULL)
      snprintf(why, size, "not measured: plugin %s is not in the table", p->desc->name);
    else if (strcmp(old->version, p->desc->version) != 0)
      snprintf(why, size, "not measured: the table measured plugin %s %s, this is %s", old->name,
               old->version, p->desc->version);
    else
      snprintf(why, size,
               "not measured: the table measured another build of plugin %s (%s; this is %s)",
               old->name, old->build, p->build);
  }
  return txattn__ok();
}

txattn_status txattn_table_check(const txattn_table *t, const txattn_context *ctx, char *why,
                                 size_t size) {
  TXATTN_RETURN_IF(t == NULL || ctx == NULL, TXATTN_E_INVALID, "txattn_table_check: %s is NULL",
                   t ? "ctx" : "t");
  char local[1024];
  char *buf = why && size ? why : local;
  size_t n = why && size ? size : sizeof local;
  if (txattn__table_differences(t, &ctx->reg, &ctx->machine_info, buf, n) > 0 ||
      !txattn__table_fits(t, &ctx->reg, NULL, buf, n))
    return txattn__fail(TXATTN_E_TABLE, "the dispatch table does not fit this context: %s", buf);
  return txattn__ok();
}

txattn_table_status txattn_context_table_status(const txattn_context *ctx) {
  if (ctx == NULL) txattn__fail(TXATTN_E_INVALID, "txattn_context_table_status: ctx is NULL");
  return ctx && ctx->table ? ctx->table->status : TXATTN_TABLE_NONE;
}

const char *txattn_context_table_state(const txattn_context *ctx) {
  if (ctx == NULL) {
    txattn__fail(TXATTN_E_INVALID, "txattn_context_table_state: ctx is NULL");
    return "";
  }
  return ctx->table && ctx->table->state ? ctx->table->state : "no table";
}

const char *txattn_context_table_path(const txattn_context *ctx) {
  if (ctx == NULL) {
    txattn__fail(TXATTN_E_INVALID, "txattn_context_table_path: ctx is NULL");
    return "";
  }
  return ctx->table && ctx->table->path ? ctx->table->path : "";
}

const txattn_table *txattn_context_table(const txattn_context *ctx) {
  if (ctx == NULL) txattn__fail(TXATTN_E_INVALID, "txattn_context_table: ctx is NULL");
  return ctx && txattn__table_followed(ctx->table) ? ctx->table->table : NULL;
}
