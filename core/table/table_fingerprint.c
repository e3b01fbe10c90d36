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

static void plugin_fields(diffs *d, const txattn_table *t, const txattn_context *ctx) {
  char name[96];
  for (size_t i = 0; i < t->n_plugins; i++) {
    const txattn__tplugin *old = &t->plugins[i];
    const txattn__plugin *now = NULL;
    for (size_t j = 0; j < ctx->reg.n_plugins && now == NULL; j++)
      if (strcmp(ctx->reg.plugins[j].desc->name, old->name) == 0) now = &ctx->reg.plugins[j];
    if (now == NULL) {
      differ(d, "plugin %s %s (%s) is in the table, not loaded here", old->name, old->version,
             old->build);
      continue;
    }
    snprintf(name, sizeof name, "plugins[%s].version", old->name);
    str_field(d, name, old->version, now->desc->version);
    snprintf(name, sizeof name, "plugins[%s].build", old->name);
    str_field(d, name, old->build, now->build);
  }
  for (size_t j = 0; j < ctx->reg.n_plugins; j++) {
    const txattn__plugin *now = &ctx->reg.plugins[j];
    size_t i = 0;
    while (i < t->n_plugins && strcmp(t->plugins[i].name, now->desc->name) != 0) i++;
    if (i == t->n_plugins)
      differ(d, "plugin %s %s (%s, %s) is loaded here, not in the table", now->desc->name,
             now->desc->version, now->build, now->path);
  }
}

int txattn__table_differences(const txattn_table *t, const txattn_context *ctx, char *why,
                              size_t size) {
  diffs d = {why, size, 0, 0};
  if (why && size) why[0] = '\0';
  str_field(&d, "library_version", t->library_version, txattn_version_string());
  machine_fields(&d, &t->machine, &ctx->machine_info);
  plugin_fields(&d, t, ctx);
  return d.n;
}

txattn_status txattn_table_check(const txattn_table *t, const txattn_context *ctx, char *why,
                                 size_t size) {
  TXATTN_RETURN_IF(t == NULL || ctx == NULL, TXATTN_E_INVALID, "txattn_table_check: %s is NULL",
                   t ? "ctx" : "t");
  char local[1024];
  char *buf = why && size ? why : local;
  size_t n = why && size ? size : sizeof local;
  if (txattn__table_differences(t, ctx, buf, n) > 0 || !txattn__table_fits(t, ctx, buf, n))
    return txattn__fail(TXATTN_E_TABLE, "the dispatch table does not fit this context: %s", buf);
  return txattn__ok();
}
