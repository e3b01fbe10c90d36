/* SPDX-License-Identifier: MIT */
/* The dispatch table of a context: which file (txattn_options.table_path, else $TXATTN_TABLE,
 * else the default location), loading it at txattn_context_create, and the state callers and
 * `txtune show` read. A table that is missing, malformed or stale never fails the context: the
 * built-in estimate chooses instead, and the state says exactly why and what fixes it. A table
 * whose machine and library match but whose plugins differ (one new, another build, one gone) is
 * partly valid: it stays followed for the kernels it measured as they are, since a new plugin
 * must not throw away the tuning of the others. */
#define _GNU_SOURCE /* secure_getenv, as for the plugin path */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "log.h"
#include "table_bind.h"
#include "table_context.h"
#include "table_fingerprint.h"
#include "table_model.h"

#define FIX                                                                                        \
  "run `txtune profile` to measure this machine (until then the built-in estimate chooses)"

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

static int set_state(txattn__ctx_table *ct, txattn_table_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int set_state(txattn__ctx_table *ct, txattn_table_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  free(ct->state);
  if (n < 0 || (ct->state = malloc((size_t)n + 1)) == NULL) return 0;
  va_start(ap, fmt);
  vsnprintf(ct->state, (size_t)n + 1, fmt, ap);
  va_end(ap);
  ct->status = st;
  txattn__log("dispatch table: %s", ct->state);
  return 1;
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
      return ct->path && set_state(ct, TXATTN_TABLE_NONE, "no table: %s", txattn_last_error())
                 ? TXATTN_OK
                 : TXATTN_E_NOMEM;
    }
    if (s != TXATTN_OK) return s;
    path = buf;
  }
  if ((ct->path = strdup(path)) == NULL) return TXATTN_E_NOMEM;
  if (*path == '\0' && !set_state(ct, TXATTN_TABLE_NONE,
                                  "no table: txattn_options.table_path is \"\" (tables are off)"))
    return TXATTN_E_NOMEM;
  return TXATTN_OK;
}

/* Reads, checks and binds the table at ct->path. Fails only when out of memory. */
static txattn_status load(txattn__ctx_table *ct, const txattn__registry *reg,
                          const txattn_machine_info *m, const char *source) {
  const char *from = strcmp(source, "default") == 0 ? "" : " (from ";
  const char *from_end = *from ? ")" : "";
  const char *src = *from ? source : "";
  struct stat st;
  if (stat(ct->path, &st) != 0 && errno == ENOENT)
    return set_state(ct, TXATTN_TABLE_NONE, "no table at %s%s%s%s: " FIX, ct->path, from, src,
                     from_end)
               ? TXATTN_OK
               : TXATTN_E_NOMEM;
  txattn_table *t;
  txattn_status s = txattn_table_load(ct->path, &t);
  if (s == TXATTN_E_NOMEM) return s;
  if (s != TXATTN_OK)
    return set_state(ct, TXATTN_TABLE_MALFORMED,
                     "%s%s%s%s: run `txtune profile` to write a new one "
                     "(until then the built-in estimate chooses)",
                     txattn_last_error(), from, src, from_end)
               ? TXATTN_OK
               : TXATTN_E_NOMEM;
  char diffs[2048];
  unsigned char *unmeasured = NULL;
  size_t n_unmeasured = 0, n_same = 0;
  if (txattn__table_header_differences(t, m, NULL, 0) == 0) {
    unmeasured = calloc(reg->n_kernels + 1, 1);
    if (unmeasured == NULL) {
      txattn__tm_free(t);
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
    txattn__tm_free(t);
    return set_state(ct, TXATTN_TABLE_STALE, "stale table %s%s%s%s: %s: " FIX, ct->path, from, src,
                     from_end, diffs)
               ? TXATTN_OK
               : TXATTN_E_NOMEM;
  }
  size_t points = 0;
  for (size_t i = 0; i < t->n_classes; i++) points += t->classes[i].n_points;
  int partial = txattn__table_plugin_differences(t, reg, diffs, sizeof diffs) > 0;
  int ok = txattn__table_bind(t, reg, unmeasured);
  if (ok && partial)
    ok = set_state(ct, TXATTN_TABLE_PARTIAL,
                   "partly valid table %s%s%s%s: %zu classes, %zu points, made %s, followed for "
                   "the kernels it measured; %s: %s",
                   ct->path, from, src, from_end, t->n_classes, points, t->created, diffs,
                   n_unmeasured > 0
                       ? "the estimate ranks the kernels it did not measure beside the table's "
                         "choice (a third-party kernel never displaces it); `txtune profile "
                         "--update` measures them"
                       : "`txtune profile --update` rewrites it for the plugins loaded here");
  else if (ok)
    ok = set_state(ct, TXATTN_TABLE_LOADED, "loaded %s%s%s%s: %zu classes, %zu points, made %s",
                   ct->path, from, src, from_end, t->n_classes, points, t->created);
  if (!ok) {
    free(unmeasured);
    txattn__tm_free(t);
    return TXATTN_E_NOMEM;
  }
  ct->table = t;
  if (partial) {
    ct->unmeasured = unmeasured;
    ct->n_unmeasured = n_unmeasured;
  } else {
    free(unmeasured);
  }
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
  txattn__tm_free(ct->table);
  free(ct->unmeasured);
  free(ct->path);
  free(ct->state);
  free(ct);
}
