/* SPDX-License-Identifier: MIT */
/* The dispatch table of a context: which file (txattn_options.table_path, else $TXATTN_TABLE, else
 * the default location), reading it at txattn_context_create, checking it and binding it to the
 * context's kernels, and the state callers and `txtune show` read.
 *
 * A table is tied to this library's version, the machine's fingerprint and the plugins with their
 * builds. A table that is missing, malformed or of another machine or library never fails the
 * context: the built-in estimate chooses instead, and the state names every field that differs,
 * with both values, because "the table was rejected" alone leaves the user guessing. A table whose
 * machine and library match but whose plugins differ (one new, another build, one gone) is partly
 * valid: it stays followed for the kernels it measured as they are, since a new plugin must not
 * throw away the tuning of the others. A kernel whose build is unchanged declares the tunables it
 * declared when it was measured, so a table whose tunables it does not declare was edited or made
 * elsewhere, and is stale as a whole. Binding resolves each candidate's kernel and puts its tunables
 * in declared order once, so that a lookup compares pointers instead of strings. */
#define _GNU_SOURCE /* secure_getenv, as for the plugin path */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "log.h"
#include "plugin_check.h"
#include "table_context.h"
#include "txattn/plugin.h"

#define FIX                                                                                        \
  "run `txtune profile` to measure this machine (until then the built-in estimate chooses)"

/* ---- the fingerprint ---- */

typedef struct diff_list {
  char *buf;
  size_t size, used;
  int n;
} diff_list;

static void differ(diff_list *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void differ(diff_list *d, const char *fmt, ...) {
  if (d->n++ > 0 && d->buf && d->used < d->size)
    d->used += (size_t)snprintf(d->buf + d->used, d->size - d->used, "; ");
  if (d->buf == NULL || d->used >= d->size) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(d->buf + d->used, d->size - d->used, fmt, ap);
  va_end(ap);
  d->used += n > 0 ? (size_t)n : 0;
}

static void str_field(diff_list *d, const char *name, const char *old, const char *now) {
  if (strcmp(old, now) != 0) differ(d, "%s is \"%s\" in the table, \"%s\" here", name, old, now);
}

static void int_field(diff_list *d, const char *name, int64_t old, int64_t now) {
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

static void machine_fields(diff_list *d, const txattn_machine_info *old,
                           const txattn_machine_info *m) {
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

const txattn__tplugin *txattn__table_plugin(const txattn_table *t, const char *name) {
  for (size_t i = 0; i < t->n_plugins; i++)
    if (strcmp(t->plugins[i].name, name) == 0) return &t->plugins[i];
  return NULL;
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

static void plugin_fields(diff_list *d, const txattn_table *t, const txattn__registry *reg) {
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

int txattn__table_differences(const txattn_table *t, const txattn__registry *reg,
                              const txattn_machine_info *m, char *why, size_t size) {
  diff_list d = {why, size, 0, 0};
  if (why && size) why[0] = '\0';
  if (m) {
    str_field(&d, "library_version", t->library_version, txattn_version_string());
    machine_fields(&d, &t->machine, m);
  }
  if (reg) plugin_fields(&d, t, reg);
  return d.n;
}

/* ---- the tunables, and binding ---- */

/* reg's kernel of that name, NULL if none; *other_build is set when it has one the table did not
   measure (unmeasured, may be NULL) and NULL is returned. */
static const txattn__kernel *kernel_named(const txattn__registry *reg, const char *name,
                                          const unsigned char *unmeasured, int *other_build) {
  *other_build = 0;
  for (size_t i = 0; i < reg->n_kernels; i++)
    if (strcmp(reg->kernels[i].desc->name, name) == 0) {
      *other_build = unmeasured != NULL && unmeasured[i];
      return *other_build ? NULL : &reg->kernels[i];
    }
  return NULL;
}

/* The value c gives for the kernel's tunable t, or 0 when c lacks it. */
static int value_of(const txattn__cand *c, const char *t, int64_t *v) {
  for (size_t i = 0; i < c->tun.n; i++)
    if (strcmp(c->tun.names[i], t) == 0) {
      *v = c->tun.values[i];
      return 1;
    }
  return 0;
}

/* 1 if c's tunables are exactly k's declared ones, each allowed; else why says which is not. */
static int cand_fits(const txattn__kernel *k, const txattn__cand *c, char *why, size_t size) {
  const txattn_kernel_desc *d = k->desc;
  int64_t v;
  if (c->tun.n != d->n_tunables)
    return txattn__why_not(why, size, "%s has %zu tunables in the table, the kernel declares %zu",
                           d->name, c->tun.n, d->n_tunables);
  for (size_t i = 0; i < d->n_tunables; i++) {
    const txattn_tunable *t = &d->tunables[i];
    if (!value_of(c, t->name, &v))
      return txattn__why_not(why, size, "%s: the table lacks its tunable %s", d->name, t->name);
    if (!txattn__tunable_value_ok(t, v))
      return txattn__why_not(why, size,
                             "%s %s = %" PRId64 " is not allowed (the kernel declares %" PRId64
                             "..%" PRId64 " in steps of %" PRId64 ")",
                             d->name, t->name, v, t->min, t->max, t->multiple_of);
  }
  return 1;
}

int txattn__table_fits(const txattn_table *t, const txattn__registry *reg,
                       const unsigned char *unmeasured, char *why, size_t size) {
  char inner[384], cls[96];
  int other_build;
  for (size_t i = 0; i < t->n_classes; i++) {
    const txattn__class *c = &t->classes[i];
    for (size_t j = 0; j < c->n_points; j++)
      for (size_t k = 0; k < c->points[j].n_cands; k++) {
        const txattn__cand *x = &c->points[j].cands[k];
        const txattn__kernel *kk = kernel_named(reg, x->kernel, unmeasured, &other_build);
        if (kk == NULL || cand_fits(kk, x, inner, sizeof inner)) continue;
        txattn_table_class_describe(&c->key, cls, sizeof cls);
        return txattn__why_not(why, size, "classes[%zu] (%s) n=%" PRId64 " r=%" PRId64 ": %s", i,
                               cls, c->points[j].n, c->points[j].r, inner);
      }
  }
  return 1;
}

/* Points every candidate at reg's kernel of its name (NULL if none, or if unmeasured says the
   table measured another build of it) with its tunables in the kernel's declared order. The table
   must fit reg. 0 if out of memory. */
static int bind(txattn_table *t, const txattn__registry *reg, const unsigned char *unmeasured) {
  int other_build;
  for (size_t i = 0; i < t->n_classes; i++)
    for (size_t j = 0; j < t->classes[i].n_points; j++)
      for (size_t k = 0; k < t->classes[i].points[j].n_cands; k++) {
        txattn__cand *x = &t->classes[i].points[j].cands[k];
        x->k = kernel_named(reg, x->kernel, unmeasured, &other_build);
        x->other_build = (unsigned char)other_build;
        free(x->kvals);
        x->kvals = NULL;
        if (x->k == NULL || x->k->desc->n_tunables == 0) continue;
        const txattn_kernel_desc *d = x->k->desc;
        if ((x->kvals = malloc(d->n_tunables * sizeof *x->kvals)) == NULL) return 0;
        for (size_t v = 0; v < d->n_tunables; v++) value_of(x, d->tunables[v].name, &x->kvals[v]);
      }
  return 1;
}

/* ---- the context's table ---- */

txattn_status txattn_table_default_path(char *buf, size_t size) {
  TXATTN_RETURN_IF(buf == NULL || size == 0, TXATTN_E_INVALID,
                   "txattn_table_default_path: buf is NULL or size is 0");
  const char *env = secure_getenv("TXATTN_TABLE"), *xdg = secure_getenv("XDG_CACHE_HOME"),
             *home = secure_getenv("HOME");
  int n;
  if (env && *env)
    n = snprintf(buf, size, "%s", env);
  else if (xdg && xdg[0] == '/') /* the XDG spec: a relative path is invalid and ignored */
    n = snprintf(buf, size, "%s/txtune/dispatch.json", xdg);
  else if (home && *home)
    n = snprintf(buf, size, "%s/.cache/txtune/dispatch.json", home);
  else
    return txattn__fail(TXATTN_E_NOT_FOUND,
                        "no dispatch table location: TXATTN_TABLE, XDG_CACHE_HOME (absolute) "
                        "and HOME are all unset or empty");
  TXATTN_RETURN_IF(n < 0 || (size_t)n >= size, TXATTN_E_INVALID,
                   "txattn_table_default_path: the path needs %d bytes, the buffer has %zu", n,
                   size);
  return txattn__ok();
}

/* Sets the state; TXATTN_OK, or E_NOMEM. */
static txattn_status set_state(txattn__ctx_table *ct, txattn_table_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static txattn_status set_state(txattn__ctx_table *ct, txattn_table_status st, const char *fmt,
                               ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  free(ct->state);
  if (n < 0 || (ct->state = malloc((size_t)n + 1)) == NULL) return TXATTN_E_NOMEM;
  va_start(ap, fmt);
  vsnprintf(ct->state, (size_t)n + 1, fmt, ap);
  va_end(ap);
  ct->status = st;
  txattn__log("dispatch table: %s", ct->state);
  return TXATTN_OK;
}

/* Where the table is and where that came from; path "" when there is none to look for. */
static txattn_status locate(txattn__ctx_table *ct, const char *option, const char **source) {
  char buf[4096];
  const char *env = secure_getenv("TXATTN_TABLE");
  *source = option ? "txattn_options.table_path" : env && *env ? "$TXATTN_TABLE" : "default";
  const char *path = option;
  if (option == NULL) {
    txattn_status s = txattn_table_default_path(buf, sizeof buf);
    if (s == TXATTN_E_NOT_FOUND) {
      ct->path = strdup("");
      return ct->path ? set_state(ct, TXATTN_TABLE_NONE, "no table: %s", txattn_last_error())
                      : TXATTN_E_NOMEM;
    }
    if (s != TXATTN_OK) return s;
    path = buf;
  }
  if ((ct->path = strdup(path)) == NULL) return TXATTN_E_NOMEM;
  if (*path == '\0')
    return set_state(ct, TXATTN_TABLE_NONE,
                     "no table: txattn_options.table_path is \"\" (tables are off)");
  return TXATTN_OK;
}

/* Reads, checks and binds the table at ct->path. Fails only when out of memory. */
static txattn_status load(txattn__ctx_table *ct, const txattn__registry *reg,
                          const txattn_machine_info *m, const char *source) {
  char from[64] = "", diffs[2048];
  if (strcmp(source, "default") != 0) snprintf(from, sizeof from, " (from %s)", source);
  struct stat st;
  if (stat(ct->path, &st) != 0 && errno == ENOENT)
    return set_state(ct, TXATTN_TABLE_NONE, "no table at %s%s: " FIX, ct->path, from);
  txattn_table *t;
  txattn_status s = txattn_table_load(ct->path, &t);
  if (s == TXATTN_E_NOMEM) return s;
  if (s != TXATTN_OK)
    return set_state(ct, TXATTN_TABLE_MALFORMED,
                     "%s%s: run `txtune profile` to write a new one "
                     "(until then the built-in estimate chooses)",
                     txattn_last_error(), from);
  unsigned char *unmeasured = NULL;
  size_t n_unmeasured = 0, n_same = 0;
  if (txattn__table_differences(t, NULL, m, NULL, 0) == 0) {
    if ((unmeasured = calloc(reg->n_kernels + 1, 1)) == NULL) {
      txattn_table_free(t);
      return TXATTN_E_NOMEM;
    }
    for (size_t j = 0; j < reg->n_plugins; j++)
      n_same += (size_t)txattn__table_plugin_measured(t, &reg->plugins[j]);
    for (size_t i = 0; i < reg->n_kernels; i++) {
      unmeasured[i] =
          !txattn__table_plugin_measured(t, txattn__registry_plugin(reg, &reg->kernels[i]));
      n_unmeasured += unmeasured[i];
    }
  }
  /* stale: another machine or library, no plugin it measured is here as it measured it, or
     tunables a kernel it measured does not declare */
  if (unmeasured == NULL || n_same == 0 ||
      !txattn__table_fits(t, reg, unmeasured, diffs, sizeof diffs)) {
    if (unmeasured == NULL || n_same == 0)
      txattn__table_differences(t, reg, m, diffs, sizeof diffs);
    free(unmeasured);
    txattn_table_free(t);
    return set_state(ct, TXATTN_TABLE_STALE, "stale table %s%s: %s: " FIX, ct->path, from, diffs);
  }
  size_t points = 0;
  for (size_t i = 0; i < t->n_classes; i++) points += t->classes[i].n_points;
  int partial = txattn__table_differences(t, reg, NULL, diffs, sizeof diffs) > 0;
  s = bind(t, reg, unmeasured) ? TXATTN_OK : TXATTN_E_NOMEM;
  if (s == TXATTN_OK && partial)
    s = set_state(ct, TXATTN_TABLE_PARTIAL,
                  "partly valid table %s%s: %zu classes, %zu points, made %s, followed for "
                  "the kernels it measured; %s: %s",
                  ct->path, from, t->n_classes, points, t->created, diffs,
                  n_unmeasured > 0
                      ? "the estimate ranks the kernels it did not measure beside the table's "
                        "choice (a third-party kernel never displaces it); `txtune profile "
                        "--update` measures them"
                      : "`txtune profile --update` rewrites it for the plugins loaded here");
  else if (s == TXATTN_OK)
    s = set_state(ct, TXATTN_TABLE_LOADED, "loaded %s%s: %zu classes, %zu points, made %s",
                  ct->path, from, t->n_classes, points, t->created);
  if (s != TXATTN_OK || !partial) free(unmeasured);
  if (s != TXATTN_OK) {
    txattn_table_free(t);
    return s;
  }
  ct->table = t;
  if (partial) ct->unmeasured = unmeasured, ct->n_unmeasured = n_unmeasured;
  return TXATTN_OK;
}

txattn_status txattn__context_table_load(const char *option, const txattn__registry *reg,
                                         const txattn_machine_info *m, txattn__ctx_table **out) {
  txattn__ctx_table *ct = calloc(1, sizeof *ct);
  TXATTN_RETURN_IF(ct == NULL, TXATTN_E_NOMEM, "txattn_context_create: out of memory");
  *out = ct;
  const char *source;
  txattn_status s = locate(ct, option, &source);
  if (s == TXATTN_OK && ct->state == NULL) s = load(ct, reg, m, source);
  TXATTN_RETURN_IF(s == TXATTN_E_NOMEM, s,
                   "txattn_context_create: out of memory reading the dispatch table");
  return s;
}

void txattn__context_table_free(txattn__ctx_table *ct) {
  if (ct == NULL) return;
  txattn_table_free(ct->table);
  free(ct->unmeasured);
  free(ct->path);
  free(ct->state);
  free(ct);
}
