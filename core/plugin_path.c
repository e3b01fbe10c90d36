/* SPDX-License-Identifier: MIT */
/* Where plugins are looked for. The default is found relative to libtxattn.so itself, so the build
 * tree (build/lib/libtxattn.so + build/lib/txattn/plugins) and any relocated install work with no
 * variable set; the compiled-in install directory is the last resort. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin_path.h"

static const char anchor = 0; /* any address inside libtxattn.so tells dladdr which file we are */

static char *join(const char *dir, size_t dir_len, const char *sub) {
  size_t n = dir_len + 1 + strlen(sub) + 1;
  char *s = malloc(n);
  if (s == NULL) return NULL;
  memcpy(s, dir, dir_len);
  s[dir_len] = '/';
  strcpy(s + dir_len + 1, sub);
  return s;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "<dir of libtxattn.so>/txattn/plugins" if that directory exists, else NULL (also when out of
   memory, which then surfaces at the strdup of the fallback). */
static char *beside_library(void) {
  Dl_info info;
  if (dladdr(&anchor, &info) == 0 || info.dli_fname == NULL) return NULL;
  const char *slash = strrchr(info.dli_fname, '/');
  char *dir = slash ? join(info.dli_fname, (size_t)(slash - info.dli_fname), TXATTN_PLUGIN_SUBDIR)
                    : join(".", 1, TXATTN_PLUGIN_SUBDIR);
  if (dir != NULL && !is_dir(dir)) {
    free(dir);
    dir = NULL;
  }
  return dir;
}

char *txattn__plugin_path(const char *explicit_path) {
  if (explicit_path != NULL) return strdup(explicit_path);
  const char *env = secure_getenv("TXATTN_PLUGIN_PATH");
  if (env != NULL && env[0] != '\0') return strdup(env);
  char *dir = beside_library();
  return dir != NULL ? dir : strdup(TXATTN_PLUGIN_INSTALL_DIR_ABS);
}

const char *txattn__stat_unsafe(const struct stat *st, int sticky_ok, char *buf, size_t size) {
  int sticky = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);
  if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(sticky_ok && sticky)) {
    int dir = sticky_ok && S_ISDIR(st->st_mode);
    snprintf(buf, size, "is writable by %s (mode %04o%s): fix with chmod go-w%s",
             (st->st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st->st_mode & 07777),
             dir ? ", no sticky bit" : "", dir ? " or chmod +t" : "");
    return buf;
  }
  if (st->st_uid != 0 && st->st_uid != geteuid()) {
    snprintf(buf, size,
             "is owned by uid %u, which is neither root nor this process's user (uid %u)",
             (unsigned)st->st_uid, (unsigned)geteuid());
    return buf;
  }
  return NULL;
}

/* Why directory dir (resolved, "" for the root) is unsafe to hold a link or a link's target, or
   NULL; role names the link ("the symlink X lies in", "the symlink X points into"). */
static const char *dir_unsafe(const char *role, const char *link, const char *dir, char *buf,
                              size_t size) {
  struct stat st;
  char why[200];
  const char *d = dir[0] ? dir : "/";
  if (stat(d, &st) != 0) {
    snprintf(buf, size, "the symlink %s %s %s, which cannot be checked: %s", link, role, d,
             strerror(errno));
    return buf;
  }
  if (txattn__stat_unsafe(&st, 1, why, sizeof why) == NULL) return NULL;
  snprintf(buf, size, "the symlink %s %s %s, which %s", link, role, d, why);
  return buf;
}

/* The longest resolved prefix and the rest still to walk; both fit PATH_MAX. */
typedef struct walk {
  char cur[PATH_MAX];  /* resolved so far, without a trailing '/' ("" is the root) */
  char todo[PATH_MAX]; /* components still to resolve */
  char next[PATH_MAX], target[PATH_MAX], dir[PATH_MAX];
} walk;

/* Follows the link at w->next (which lies in w->cur): checks both directories, then continues the
   walk at its target. NULL when the walk goes on; else the reason, or "" when the path is beyond
   what can be checked here (the loader's own stat then reports it). */
static const char *follow(walk *w, const char *rest, char *buf, size_t size) {
  const char *why = dir_unsafe("lies in", w->next, w->cur, buf, size);
  if (why != NULL) return why;
  ssize_t n = readlink(w->next, w->target, sizeof w->target - 1);
  if (n < 0) return "";
  w->target[n] = '\0';
  /* the target as an absolute path: its directory must be safe once resolved */
  int len = w->target[0] == '/' ? snprintf(w->dir, sizeof w->dir, "%s", w->target)
                                : snprintf(w->dir, sizeof w->dir, "%s/%s", w->cur, w->target);
  if (len < 0 || (size_t)len >= sizeof w->dir) return "";
  char *slash = strrchr(w->dir, '/');
  char resolved[PATH_MAX];
  *slash = '\0';
  if (realpath(w->dir[0] ? w->dir : "/", resolved) == NULL) return "";
  if ((why = dir_unsafe("points into", w->next, resolved, buf, size)) != NULL) return why;
  *slash = '/';
  len = snprintf(w->todo, sizeof w->todo, "%s/%s", w->dir, rest);
  if (len < 0 || (size_t)len >= sizeof w->todo) return "";
  w->cur[0] = '\0'; /* w->dir is absolute: walk it from the root */
  return NULL;
}

const char *txattn__path_links_unsafe(const char *path, char *buf, size_t size) {
  walk *w = malloc(sizeof *w);
  if (w == NULL) return NULL; /* out of memory surfaces at the loader's next allocation */
  const char *why = NULL;
  int hops = 0;
  w->cur[0] = '\0';
  if (path[0] != '/' && getcwd(w->cur, sizeof w->cur) == NULL) goto done;
  if (strcmp(w->cur, "/") == 0) w->cur[0] = '\0';
  if ((size_t)snprintf(w->todo, sizeof w->todo, "%s", path) >= sizeof w->todo) goto done;
  for (;;) {
    char *c = w->todo;
    while (*c == '/') c++;
    if (*c == '\0') break;
    char *end = strchr(c, '/');
    char rest[PATH_MAX];
    snprintf(rest, sizeof rest, "%s", end ? end + 1 : "");
    if (end) *end = '\0';
    if (strcmp(c, ".") == 0) {
    } else if (strcmp(c, "..") == 0) {
      char *slash = strrchr(w->cur, '/');
      if (slash) *slash = '\0';
    } else {
      struct stat st;
      int len = snprintf(w->next, sizeof w->next, "%s/%s", w->cur, c);
      if (len < 0 || (size_t)len >= sizeof w->next || lstat(w->next, &st) != 0) break;
      if (S_ISLNK(st.st_mode)) {
        if (++hops > 40) break; /* a loop: the loader's stat says ELOOP */
        why = follow(w, rest, buf, size);
        if (why != NULL) break;
        continue;
      }
      memcpy(w->cur, w->next, (size_t)len + 1);
    }
    memmove(w->todo, rest, strlen(rest) + 1);
  }
done:
  free(w);
  return why != NULL && why[0] != '\0' ? why : NULL;
}

static const char *const shipped_names[] = {"naive",      "masked", "banded",
                                            "banded_omp", "tiled",  "tiled_omp"};

/* Appends the resolved dir to list (malloc'd, "\n"-separated); the list unchanged when dir does
   not resolve. */
static char *add_dir(char *list, const char *dir) {
  char resolved[PATH_MAX];
  if (dir == NULL || realpath(dir, resolved) == NULL) return list;
  size_t had = list ? strlen(list) : 0, n = had + strlen(resolved) + 2;
  char *s = realloc(list, n);
  if (s == NULL) return list;
  snprintf(s + had, n - had, "%s%s", had ? "\n" : "", resolved);
  return s;
}

char *txattn__own_plugin_dirs(void) {
  char *beside = beside_library();
  char *list = add_dir(NULL, beside);
  free(beside);
  return add_dir(list, TXATTN_PLUGIN_INSTALL_DIR_ABS);
}

int txattn__plugin_shipped(const char *own_dirs, const char *file, const char *plugin_name) {
  int named = 0;
  for (size_t i = 0; i < sizeof shipped_names / sizeof shipped_names[0]; i++)
    named |= strcmp(plugin_name, shipped_names[i]) == 0;
  const char *slash = strrchr(file, '/');
  if (!named || own_dirs == NULL) return 0;
  char dir[PATH_MAX], resolved[PATH_MAX];
  int len = slash ? snprintf(dir, sizeof dir, "%.*s", (int)(slash - file), file)
                  : snprintf(dir, sizeof dir, ".");
  if (len < 0 || (size_t)len >= sizeof dir || realpath(dir[0] ? dir : "/", resolved) == NULL)
    return 0;
  size_t n = strlen(resolved);
  for (const char *p = own_dirs; *p;) {
    const char *e = strchr(p, '\n');
    size_t m = e ? (size_t)(e - p) : strlen(p);
    if (m == n && memcmp(p, resolved, n) == 0) return 1;
    p += m + (e != NULL);
  }
  return 0;
}
