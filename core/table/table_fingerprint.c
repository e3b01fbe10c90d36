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

#include "error.h"
#include "table_fingerprint.h"
#include "table_model.h"
#include "txattn/plugin.h"

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

int txattn__table_plugin_measured(const txattn_table *t, const txattn__plugin *p) {
  const txattn__tplugin *old = txattn__table_plugin(t, p->desc->name);
  return old != NULL && strcmp(old->version, p->desc->version) == 0 &&
         strcmp(old->build, p->build) == 0;
}

/* " (its kernels a.x, a.y are not measured)": the kernels of reg's plugin j; "" if it has none. */
static void kernels_of(const txattn__registry *reg, size_t j, char *buf, size_t size) {
  size_t n = 0, used;
  for (size_t i = 0; i < reg->n_kernels; i++) n += reg->kernels[i].plugin == j;
  buf[0] = '\0';
  if (n == 0) return;
  used = (size_t)snprintf(buf, size, " (its kernel%s ", n == 1 ? "" : "s");
  for (size_t i = 0, k = 0; i < reg->n_kernels && used < size; i++)
    if (reg->kernels[i].plugin == j)
      used += (size_t)snprintf(buf + used, size - used, "%s%s", k++ ? ", " : "",
                               reg->kernels[i].desc->name);
  if (used < size) snprintf(buf + used, size - used, " %s not measured)", n == 1 ? "is" : "are");
}

static void plugin_fields(diffs *d, const txattn_table *t, const txattn__registry *reg) {
  char ks[512];
  for (size_t i = 0; i < t->n_plugins; i++) {
    const txattn__tplugin *old = &t->plugins[i];
    size_t j = 0;
    while (j < reg->n_plugins && strcmp(reg->plugins[j].desc->name, old->name) != 0) j++;
    if (j == reg->n_plugins) {
      differ(d, "plugin %s %s (%s) is in the table, not loaded here", old->name, old->version,
             old->build);
      continue;
    }
    const txattn__plugin *now = &reg->plugins[j];
    if (txattn__table_plugin_measured(t, now)) continue;
    kernels_of(reg, j, ks, sizeof ks);
    if (strcmp(old->version, now->desc->version) != 0)
      differ(d, "plugins[%s].version is \"%s\" in the table, \"%s\" here%s", old->name,
             old->version, now->desc->version, ks);
    else
      differ(d, "plugins[%s].build is \"%s\" in the table, \"%s\" here%s", old->name, old->build,
             now->build, ks);
  }
  for (size_t j = 0; j < reg->n_plugins; j++) {
    const txattn__plugin *now = &reg->plugins[j];
    if (txattn__table_plugin(t, now->desc->name) != NULL) continue;
    kernels_of(reg, j, ks, sizeof ks);
    differ(d, "plugin %s %s (%s, %s) is loaded here, not in the table%s", now->desc->name,
           now->desc->version, now->build, now->path, ks);
  }
}

/* The differences of the header (library and machine) and of the plugins, as asked. */
static int differences(const txattn_table *t, const txattn__registry *reg,
                       const txattn_machine_info *m, char *why, size_t size) {
  diffs d = {why, size, 0, 0};
  if (why && size) why[0] = '\0';
  if (m) {
    str_field(&d, "library_version", t->library_version, txattn_version_string());
    machine_fields(&d, &t->machine, m);
  }
  if (reg) plugin_fields(&d, t, reg);
  return d.n;
}

int txattn__table_header_differences(const txattn_table *t, const txattn_machine_info *m, char *why,
                                     size_t size) {
  return differences(t, NULL, m, why, size);
}

int txattn__table_plugin_differences(const txattn_table *t, const txattn__registry *reg, char *why,
                                     size_t size) {
  return differences(t, reg, NULL, why, size);
}

int txattn__table_differences(const txattn_table *t, const txattn__registry *reg,
                              const txattn_machine_info *m, char *why, size_t size) {
  return differences(t, reg, m, why, size);
}

const txattn__tplugin *txattn__table_plugin(const txattn_table *t, const char *name) {
  for (size_t i = 0; i < t->n_plugins; i++)
    if (strcmp(t->plugins[i].name, name) == 0) return &t->plugins[i];
  return NULL;
}
