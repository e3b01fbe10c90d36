/* SPDX-License-Identifier: MIT */
/* What a dispatch table is tied to: this library's version, the machine's fingerprint and the
 * plugins with their builds. txattn_table_create writes them from a context; the stale check
 * compares a table's with a context's field by field and names every one that differs, with both
 * values, because "the table was rejected" alone leaves the user guessing (FFTW/fftw3 71). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context.h"
#include "error.h"
#include "table_bind.h"
#include "table_fingerprint.h"
#include "table_model.h"
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
    txattn__tm_free(t);
    return s;
  }
  *out = t;
  return txattn__ok();
}

/* ---- differences ---- */

typedef struct diffs {
  char *buf;
  size_t size, used;
  int n;
} diffs;

static void differ(diffs *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void differ(diffs *d, const char *fmt, ...) {
  d->n++;
  if (d->buf == NULL || d->used >= d->size) return;
  if (d->n > 1) d->used += (size_t)snprintf(d->buf + d->used, d->size - d->used, "; ");
  if (d->used >= d->size) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(d->buf + d->used, d->size - d->used, fmt, ap);
  va_end(ap);
  d->used += n > 0 ? (size_t)n : 0;
}

static void str_field(diffs *d, const char *name, const char *old, const char *now) {
  if (strcmp(old, now) != 0) differ(d, "%s is \"%s\" in the table, \"%s\" here", name, old, now);
}

static void int_field(diffs *d, const char *name, int64_t old, int64_t now) {
  if (old != now) differ(d, "%s is %" PRId64 " in the table, %" PRId64 " here", name, old, now);
}

static void isa_list(unsigned mask, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (unsigned b = 0; b < TXATTN_ISA_COUNT_ && used < size; b++)
    if (mask & (1u << b))
      used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "," : "",
                               txattn_isa_name((txattn_isa)b));
}

static void machine_fields(diffs *d, const txattn_machine_info *old, const txattn_machine_info *m) {
  str_field(d, "machine.vendor", old->vendor, m->vendor);
  str_field(d, "machine.brand", old->brand, m->brand);
  int_field(d, "machine.family", old->family, m->family);
  int_field(d, "machine.model", old->model, m->model);
  int_field(d, "machine.stepping", old->stepping, m->stepping);
  if (old->isa_mask != m->isa_mask) {
    char a[64], b[64];
    isa_list(old->isa_mask, a, sizeof a);
    isa_list(m->isa_mask, b, sizeof b);
    differ(d, "machine.isa is [%s] in the table, [%s] here", a, b);
  }
  int_field(d, "machine.caches.l1d", old->l1d_bytes, m->l1d_bytes);
  int_field(d, "machine.caches.l2", old->l2_bytes, m->l2_bytes);
  int_field(d, "machine.caches.l3", old->l3_bytes, m->l3_bytes);
  int_field(d, "machine.cores", old->n_cores, m->n_cores);
}

static const txattn__tplugin *table_plugin(const txattn_table *t, const char *name) {
  for (size_t i = 0; i < t->n_plugins; i++)
    if (strcmp(t->plugins[i].name, name) == 0) return &t->plugins[i];
  return NULL;
}

int txattn__table_plugin_measured(const txattn_table *t, const txattn__plugin *p) {
  const txattn__tplugin *old = table_plugin(t, p->desc->name);
  return old != NULL && strcmp(old->version, p->desc->version) == 0 &&
         strcmp(old->build, p->build) == 0;
}

/* " (its kernels a.x, a.y are not measured)": the kernels of ctx's plugin j; "" if it has none. */
static void kernels_of(const txattn_context *ctx, size_t j, char *buf, size_t size) {
  size_t n = 0, used;
  for (size_t i = 0; i < ctx->reg.n_kernels; i++) n += ctx->reg.kernels[i].plugin == j;
  buf[0] = '\0';
  if (n == 0) return;
  used = (size_t)snprintf(buf, size, " (its kernel%s ", n == 1 ? "" : "s");
  for (size_t i = 0, k = 0; i < ctx->reg.n_kernels && used < size; i++)
    if (ctx->reg.kernels[i].plugin == j)
      used += (size_t)snprintf(buf + used, size - used, "%s%s", k++ ? ", " : "",
                               ctx->reg.kernels[i].desc->name);
  if (used < size) snprintf(buf + used, size - used, " %s not measured)", n == 1 ? "is" : "are");
}

static void plugin_fields(diffs *d, const txattn_table *t, const txattn_context *ctx) {
  char ks[512];
  for (size_t i = 0; i < t->n_plugins; i++) {
    const txattn__tplugin *old = &t->plugins[i];
    size_t j = 0;
    while (j < ctx->reg.n_plugins && strcmp(ctx->reg.plugins[j].desc->name, old->name) != 0) j++;
    if (j == ctx->reg.n_plugins) {
      differ(d, "plugin %s %s (%s) is in the table, not loaded here", old->name, old->version,
             old->build);
      continue;
    }
    const txattn__plugin *now = &ctx->reg.plugins[j];
    if (txattn__table_plugin_measured(t, now)) continue;
    kernels_of(ctx, j, ks, sizeof ks);
    if (strcmp(old->version, now->desc->version) != 0)
      differ(d, "plugins[%s].version is \"%s\" in the table, \"%s\" here%s", old->name,
             old->version, now->desc->version, ks);
    else
      differ(d, "plugins[%s].build is \"%s\" in the table, \"%s\" here%s", old->name, old->build,
             now->build, ks);
  }
  for (size_t j = 0; j < ctx->reg.n_plugins; j++) {
    const txattn__plugin *now = &ctx->reg.plugins[j];
    if (table_plugin(t, now->desc->name) != NULL) continue;
    kernels_of(ctx, j, ks, sizeof ks);
    differ(d, "plugin %s %s (%s, %s) is loaded here, not in the table%s", now->desc->name,
           now->desc->version, now->build, now->path, ks);
  }
}

/* The differences of the header (library and machine) and of the plugins, as asked. */
static int differences(const txattn_table *t, const txattn_context *ctx, int header, int plugins,
                       char *why, size_t size) {
  diffs d = {why, size, 0, 0};
  if (why && size) why[0] = '\0';
  if (header) {
    str_field(&d, "library_version", t->library_version, txattn_version_string());
    machine_fields(&d, &t->machine, &ctx->machine_info);
  }
  if (plugins) plugin_fields(&d, t, ctx);
  return d.n;
}

int txattn__table_header_differences(const txattn_table *t, const txattn_context *ctx, char *why,
                                     size_t size) {
  return differences(t, ctx, 1, 0, why, size);
}

int txattn__table_plugin_differences(const txattn_table *t, const txattn_context *ctx, char *why,
                                     size_t size) {
  return differences(t, ctx, 0, 1, why, size);
}

int txattn__table_differences(const txattn_table *t, const txattn_context *ctx, char *why,
                              size_t size) {
  return differences(t, ctx, 1, 1, why, size);
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
  const txattn__tplugin *old = table_plugin(t, p->desc->name);
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
  if (txattn__table_differences(t, ctx, buf, n) > 0 || !txattn__table_fits(t, ctx, NULL, buf, n))
    return txattn__fail(TXATTN_E_TABLE, "the dispatch table does not fit this context: %s", buf);
  return txattn__ok();
}
