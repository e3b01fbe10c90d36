/* SPDX-License-Identifier: MIT */
/* The loader's gate: a plugin file is dlopened only after the scanner (txattn-scan, in a process of
 * its own) loaded it and ran its kernels without a fault, once per file content. Verdicts are kept
 * in this process (so a program making many contexts scans a file once) and in the scan registry
 * (scan_registry.c), keyed by the file's content hash and size: a changed file is scanned again.
 * An "ok" holds for the ISAs whose kernels were run; a context that may run more is scanned again.
 *
 * Decisions: the library's own plugin directory is scanned too (a third-party .so may be dropped
 * there); a directory in TXATTN_TRUSTED_PLUGIN_DIRS (read with secure_getenv, so never in a setuid
 * program) is not scanned; a scanner that cannot be started (not installed, or a foreign binary
 * under qemu-user without binfmt_misc) leaves the file unscanned and loadable, with a
 * TXATTN_VERBOSE line: it says nothing about the file. The time limit is 10 s per file,
 * TXATTN_SCAN_TIMEOUT seconds if set. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_hash.h"
#include "log.h"
#include "scan/scan_admit.h"
#include "scan/scan_registry.h"
#include "scan/scan_spawn.h"

#define DEFAULT_TIMEOUT_S 10.0
#define MEMORY_SLOTS      256

typedef struct verdict {
  char key[TXATTN_BUILD_ID_LEN + 24];
  unsigned isa_mask;
  int quarantined;
  char reason[400];
} verdict;

static pthread_mutex_t memory_lock = PTHREAD_MUTEX_INITIALIZER;
static verdict memory[MEMORY_SLOTS];
static size_t n_memory;

static int remembered(const char *key, verdict *out) {
  int found = 0;
  pthread_mutex_lock(&memory_lock);
  for (size_t i = 0; i < n_memory && !found; i++)
    if (strcmp(memory[i].key, key) == 0) {
      *out = memory[i];
      found = 1;
    }
  pthread_mutex_unlock(&memory_lock);
  return found;
}

static void remember(const verdict *v) {
  pthread_mutex_lock(&memory_lock);
  size_t i = 0;
  while (i < n_memory && strcmp(memory[i].key, v->key) != 0) i++;
  if (i < MEMORY_SLOTS) {
    memory[i] = *v;
    if (i == n_memory) n_memory++;
  }
  pthread_mutex_unlock(&memory_lock);
}

/* The path's directory is one of TXATTN_TRUSTED_PLUGIN_DIRS (both resolved by realpath). */
static int trusted(const char *path) {
  const char *env = secure_getenv("TXATTN_TRUSTED_PLUGIN_DIRS");
  if (env == NULL || env[0] == '\0') return 0;
  char dir[PATH_MAX], real_dir[PATH_MAX], real_entry[PATH_MAX];
  const char *slash = strrchr(path, '/');
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
  if (dir[0] == '\0') snprintf(dir, sizeof dir, "/");
  if (realpath(dir, real_dir) == NULL) return 0;
  char *copy = strdup(env), *save = NULL;
  int yes = 0;
  for (char *e = copy ? strtok_r(copy, ":", &save) : NULL; e && !yes;
       e = strtok_r(NULL, ":", &save))
    yes = realpath(e, real_entry) != NULL && strcmp(real_entry, real_dir) == 0;
  free(copy);
  return yes;
}

static double timeout_s(void) {
  const char *env = secure_getenv("TXATTN_SCAN_TIMEOUT");
  char *end = NULL;
  double t = env ? strtod(env, &end) : 0;
  return env && end != env && *end == '\0' && t >= 0.1 && t <= 3600 ? t : DEFAULT_TIMEOUT_S;
}

/* 0, with why saying why the quarantined file v is not loaded */
static int refuse(const verdict *v, char *why, size_t size) {
  snprintf(why, size, "quarantined by the plugin scanner: %s", v->reason);
  return 0;
}

int txattn__scan_admit(const txattn__isa_state *isa, const char *path, const struct stat *st,
                       char *why, size_t size) {
  if (trusted(path)) {
    txattn__log("not scanning %s: its directory is in TXATTN_TRUSTED_PLUGIN_DIRS", path);
    return 1;
  }
  char id[TXATTN_BUILD_ID_LEN];
  if (!txattn__file_build_id(path, st, id, why, size)) return 0;
  unsigned mask = 0;
  for (int i = 0; i < TXATTN_ISA_COUNT_; i++)
    if (isa->usable[i]) mask |= 1u << i;
  verdict v;
  memset(&v, 0, sizeof v);
  snprintf(v.key, sizeof v.key, "%s-%lld", id, (long long)st->st_size);

  verdict known;
  if (remembered(v.key, &known)) {
    if (known.quarantined) return refuse(&known, why, size);
    if ((mask & ~known.isa_mask) == 0) return 1;
  }
  char dir[4096];
  int have_dir = txattn__scan_registry_dir(dir, sizeof dir);
  if (have_dir && txattn__scan_registry_get(dir, v.key, &known.isa_mask, &known.quarantined,
                                            known.reason, sizeof known.reason)) {
    snprintf(known.key, sizeof known.key, "%s", v.key);
    if (known.quarantined || (mask & ~known.isa_mask) == 0) {
      remember(&known);
      return known.quarantined ? refuse(&known, why, size) : 1;
    }
  }

  char reason[sizeof v.reason];
  txattn__scan_result r = txattn__scan_spawn(path, mask, timeout_s(), reason, sizeof reason);
  static const char *const said[] = {
      "ok", "quarantined: ", "left to the loader: ", "no scanner, loading it unscanned: "};
  txattn__log("plugin scan of %s: %s%s", path, said[r], r == TXATTN__SCAN_OK ? "" : reason);
  if (r == TXATTN__SCAN_DECLINED || r == TXATTN__SCAN_UNAVAILABLE) return 1;
  v.isa_mask = mask;
  v.quarantined = r == TXATTN__SCAN_FAULTY;
  snprintf(v.reason, sizeof v.reason, "%s", v.quarantined ? reason : "");
  remember(&v);
  if (have_dir) txattn__scan_registry_put(dir, v.key, mask, v.quarantined, v.reason);
  return v.quarantined ? refuse(&v, why, size) : 1;
}
