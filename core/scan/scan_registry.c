/* SPDX-License-Identifier: MIT */
/* The scan registry: one file per plugin content, "$XDG_CACHE_HOME/txtune/plugin-scan/KEY" (else
 * ~/.cache/..., or $TXATTN_SCAN_REGISTRY/KEY when that names a directory), holding
 *
 *     txattn-scan 1 libtxattn MAJOR.MINOR.PATCH
 *     isa 0x7
 *     ok                                  (or "quarantined: REASON")
 *
 * A record is trusted only when it is the real user's regular file that nobody else can write, in
 * directories the real user owns and nobody else can write, below directories that pass the
 * loader's own checks (plugin_path.h), and its first line names this scanner and library; anything
 * else reads as "not scanned yet". A setuid program (AT_SECURE) never uses the registry. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin_path.h"
#include "scan/scan_protocol.h"
#include "scan/scan_registry.h"

/* getauxval, unless a test compiles this file with a stand-in (tests/test_scan_secure.c): the only
   way to test the AT_SECURE rule without a setuid binary. */
#ifdef TXATTN_SCAN_GETAUXVAL
unsigned long TXATTN_SCAN_GETAUXVAL(unsigned long type);
#else
#define TXATTN_SCAN_GETAUXVAL getauxval
#endif

#define RECORD_MAX 4096
#define STR_(x)    #x
#define STR(x)     STR_(x)
#define HEADER                                                                                     \
  TXATTN_SCAN_READY " libtxattn " STR(TXATTN_PROJECT_VERSION_MAJOR) "." STR(                       \
      TXATTN_PROJECT_VERSION_MINOR) "." STR(TXATTN_PROJECT_VERSION_PATCH)

/* dir exists (created 0700 if it did not), is a directory of the real user, and only that user
   can write it. */
static int own_dir(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    if (errno != ENOENT || mkdir(dir, 0700) != 0 || stat(dir, &st) != 0) return 0;
  }
  return S_ISDIR(st.st_mode) && st.st_uid == getuid() && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* dir and every directory above it pass the loader's checks: no symlink on the way lies in or
   points into a directory others may write (txattn__path_links_unsafe), and none of the
   directories may be written by anyone else (txattn__stat_unsafe; above dir a sticky one, as /tmp,
   is fine). Otherwise another user could swap the registry, or a record in it, for their own. */
static int safe_path(const char *dir) {
  char real[PATH_MAX], why[512];
  if (txattn__path_links_unsafe(dir, why, sizeof why) != NULL || realpath(dir, real) == NULL)
    return 0;
  for (int above = 0;; above = 1) {
    struct stat st;
    if (stat(real[0] ? real : "/", &st) != 0 || txattn__stat_unsafe(&st, above, why, sizeof why))
      return 0;
    char *slash = strrchr(real, '/');
    if (slash == NULL) return 1;
    *slash = '\0';
  }
}

int txattn__scan_registry_dir(char *dir, size_t size) {
  if (TXATTN_SCAN_GETAUXVAL(AT_SECURE)) return 0;
  const char *own = secure_getenv("TXATTN_SCAN_REGISTRY");
  if (own && own[0] == '/') {
    int n = snprintf(dir, size, "%s", own);
    return n > 0 && (size_t)n < size && own_dir(dir) && safe_path(dir);
  }
  const char *xdg = secure_getenv("XDG_CACHE_HOME"), *home = secure_getenv("HOME");
  char cache[4096];
  int n;
  if (xdg && xdg[0] == '/')
    n = snprintf(cache, sizeof cache, "%s", xdg);
  else if (home && home[0] == '/')
    n = snprintf(cache, sizeof cache, "%s/.cache", home);
  else
    return 0;
  if (n < 0 || (size_t)n >= sizeof cache - 32) return 0;
  struct stat st;
  if (stat(cache, &st) != 0 && (errno != ENOENT || mkdir(cache, 0700) != 0)) return 0;
  strcat(cache, "/txtune");
  if (!own_dir(cache)) return 0;
  strcat(cache, "/plugin-scan");
  if (!own_dir(cache)) return 0;
  n = snprintf(dir, size, "%s", cache);
  return n > 0 && (size_t)n < size && safe_path(dir);
}

/* "fnv1a64x4:0123..." -> "fnv1a64x4-0123..." (no ':' in file names) */
static int record_path(const char *dir, const char *key, char *out, size_t size) {
  int n = snprintf(out, size, "%s/%s", dir, key);
  if (n < 0 || (size_t)n >= size) return 0;
  for (char *p = out + strlen(dir) + 1; *p; p++)
    if (*p == ':' || *p == '/') *p = '-';
  return 1;
}

int txattn__scan_registry_get(const char *dir, const char *key, unsigned *isa_mask,
                              int *quarantined, char *reason, size_t size) {
  char path[4200], buf[RECORD_MAX + 1];
  if (!record_path(dir, key, path, sizeof path)) return 0;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return 0;
  struct stat st;
  ssize_t n = -1;
  char why[256];
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
      txattn__stat_unsafe(&st, 0, why, sizeof why) == NULL && st.st_size <= RECORD_MAX)
    n = read(fd, buf, RECORD_MAX);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *line2 = strchr(buf, '\n');
  if (line2 == NULL) return 0;
  *line2++ = '\0';
  if (strcmp(buf, HEADER) != 0) return 0;
  char *line3 = strchr(line2, '\n');
  if (line3 == NULL) return 0;
  *line3++ = '\0';
  char *end = NULL;
  if (strncmp(line2, "isa 0x", 6) != 0) return 0;
  unsigned long mask = strtoul(line2 + 6, &end, 16);
  if (end == line2 + 6 || *end != '\0' || mask > 0xffff) return 0;
  char *nl = strchr(line3, '\n');
  if (nl == NULL || nl[1] != '\0') return 0; /* exactly one verdict line */
  *nl = '\0';
  if (strcmp(line3, "ok") == 0) {
    *quarantined = 0;
    reason[0] = '\0';
  } else if (strncmp(line3, "quarantined: ", 13) == 0 && line3[13] != '\0') {
    *quarantined = 1;
    snprintf(reason, size, "%s", line3 + 13);
  } else {
    return 0;
  }
  *isa_mask = (unsigned)mask;
  return 1;
}

void txattn__scan_registry_put(const char *dir, const char *key, unsigned isa_mask, int quarantined,
                               const char *reason) {
  char path[4200], tmp[4300];
  if (!record_path(dir, key, path, sizeof path)) return;
  snprintf(tmp, sizeof tmp, "%s/.new-XXXXXX", dir);
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) return;
  char rec[RECORD_MAX];
  int n = snprintf(rec, sizeof rec, "%s\nisa 0x%x\n%s%.3000s\n", HEADER, isa_mask,
                   quarantined ? "quarantined: " : "ok", quarantined ? reason : "");
  int ok = n > 0 && (size_t)n < sizeof rec && write(fd, rec, (size_t)n) == n;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) unlink(tmp);
}
