/* SPDX-License-Identifier: MIT */
/* The plugin loader: scans the path's directories, refuses unsafe or malformed plugins with a
 * reason, and registers the kernels of the rest.
 *
 * dlopen flags: RTLD_NOW so that a plugin with a missing symbol fails here, with dlerror's text,
 * rather than at its first call; RTLD_LOCAL so that plugins cannot resolve each other's symbols;
 * RTLD_NODELETE because plugins may pull in libgomp or OpenBLAS, whose worker threads outlive any
 * one call: unmapping their code at dlclose would crash those threads, so a loaded plugin stays
 * mapped for the process's life (dlclose still balances the reference count, and a later context
 * reuses the mapping).
 *
 * The safety checks stat() a path and then dlopen() it. Swapping the file in between needs write
 * access to its directory, which the same checks refuse to anyone but root and this process's user.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "loader.h"
#include "log.h"
#include "plugin_check.h"
#include "plugin_path.h"
#include "scan/scan_admit.h"

/* Makes room for one more element of size elem in *arr. 0 when out of memory. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 1;
  size_t new_cap = *cap ? 2 * *cap : 8;
  void *p = realloc(*arr, new_cap * elem);
  if (p == NULL) return 0;
  *arr = p;
  *cap = new_cap;
  return 1;
}

static txattn_status reject(txattn__registry *reg, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static txattn_status reject(txattn__registry *reg, const char *path, const char *fmt, ...) {
  char reason[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  txattn__log("skipped %s: %s", path, reason);
  if (!grow((void **)&reg->rejected, &reg->cap_rejected, reg->n_rejected, sizeof *reg->rejected))
    return txattn__fail(TXATTN_E_NOMEM, "out of memory while listing skipped plugins");
  txattn__rejected *r = &reg->rejected[reg->n_rejected];
  r->path = strdup(path);
  r->reason = strdup(reason);
  if (r->path == NULL || r->reason == NULL) {
    free(r->path);
    free(r->reason);
    return txattn__fail(TXATTN_E_NOMEM, "out of memory while listing skipped plugins");
  }
  reg->n_rejected++;
  return TXATTN_OK;
}

/* Why a file or directory may not be trusted (as sudo judges plugins), or NULL. A scanned
   directory may not rely on the sticky bit: anyone could still add a plugin file to it. */
static const char *unsafe(const struct stat *st, char *buf, size_t size) {
  return txattn__stat_unsafe(st, 0, buf, size);
}

static const txattn__plugin *same_file(const txattn__registry *reg, const struct stat *st) {
  for (size_t i = 0; i < reg->n_plugins; i++)
    if (reg->plugins[i].dev == st->st_dev && reg->plugins[i].ino == st->st_ino)
      return &reg->plugins[i];
  return NULL;
}

/* The file of the plugin already loaded under d's name, or NULL: the first in the search order
   wins, as a table lists each plugin name once. */
static const char *taken_plugin(const txattn__registry *reg, const txattn_plugin_desc *d) {
  for (size_t i = 0; i < reg->n_plugins; i++)
    if (strcmp(reg->plugins[i].desc->name, d->name) == 0) return reg->plugins[i].path;
  return NULL;
}

/* The file already providing a kernel of d, or NULL; *name gets the kernel. */
static const char *taken_name(const txattn__registry *reg, const txattn_plugin_desc *d,
                              const char **name) {
  for (size_t i = 0; i < d->n_kernels; i++)
    for (size_t j = 0; j < reg->n_kernels; j++)
      if (strcmp(reg->kernels[j].desc->name, d->kernels[i]->name) == 0) {
        *name = d->kernels[i]->name;
        return reg->plugins[reg->kernels[j].plugin].path;
      }
  return NULL;
}

static txattn_status add_plugin(txattn__registry *reg, const char *path, void *handle,
                                const txattn_plugin_desc *d, const struct stat *st,
                                const char *build) {
  const char *nomem = "out of memory while loading plugins";
  if (!grow((void **)&reg->plugins, &reg->cap_plugins, reg->n_plugins, sizeof *reg->plugins))
    return txattn__fail(TXATTN_E_NOMEM, "%s", nomem);
  for (size_t i = 0; i < d->n_kernels; i++)
    if (!grow((void **)&reg->kernels, &reg->cap_kernels, reg->n_kernels + i, sizeof *reg->kernels))
      return txattn__fail(TXATTN_E_NOMEM, "%s", nomem);
  char *p = strdup(path);
  if (p == NULL) return txattn__fail(TXATTN_E_NOMEM, "%s", nomem);
  reg->plugins[reg->n_plugins] =
      (txattn__plugin){handle,
                       p,
                       d,
                       st->st_dev,
                       st->st_ino,
                       "",
                       txattn__plugin_shipped(reg->own_dirs, path, d->name)};
  snprintf(reg->plugins[reg->n_plugins].build, sizeof reg->plugins[0].build, "%s", build);
  for (size_t i = 0; i < d->n_kernels; i++) {
    txattn_isa isa = d->kernels[i]->isa;
    reg->kernels[reg->n_kernels++] =
        (txattn__kernel){d->kernels[i], reg->n_plugins, reg->isa.usable[isa], reg->isa.why[isa]};
  }
  reg->n_plugins++;
  txattn__log("loaded plugin %s %s from %s (%zu kernel(s))", d->name, d->version, path,
              d->n_kernels);
  return TXATTN_OK;
}

/* The descriptor of an opened plugin, or NULL with the reason in why. */
static const txattn_plugin_desc *describe(const txattn__registry *reg, void *handle, char *why,
                                          size_t size) {
  void *sym = dlsym(handle, TXATTN_PLUGIN_ENTRY_SYMBOL);
  if (sym == NULL) {
    snprintf(why, size, "exports no %s symbol (not a txattn plugin?)", TXATTN_PLUGIN_ENTRY_SYMBOL);
    return NULL;
  }
  txattn_plugin_entry_fn entry;
  memcpy(&entry, &sym, sizeof entry); /* ISO C has no cast from object to function pointer */
  const txattn_plugin_desc *d = entry(TXATTN_PLUGIN_ABI_VERSION);
  const char *kernel, *other;
  if (d == NULL)
    snprintf(why, size, "%s(%u) returned NULL: the plugin does not serve ABI %u",
             TXATTN_PLUGIN_ENTRY_SYMBOL, TXATTN_PLUGIN_ABI_VERSION, TXATTN_PLUGIN_ABI_VERSION);
  else if (!txattn__plugin_desc_ok(d, why, size))
    d = NULL;
  else if ((other = taken_plugin(reg, d)) != NULL) {
    snprintf(why, size, "name %s is already taken by %s", d->name, other);
    d = NULL;
  } else if ((other = taken_name(reg, d, &kernel)) != NULL) {
    snprintf(why, size, "kernel %s is already provided by %s", kernel, other);
    d = NULL;
  }
  return d;
}

static txattn_status load_file(txattn__registry *reg, const char *path) {
  struct stat st;
  char why[512];
  const char *u;
  const txattn__plugin *twin;
  if (stat(path, &st) != 0) return reject(reg, path, "cannot stat it: %s", strerror(errno));
  if (!S_ISREG(st.st_mode)) return reject(reg, path, "not a regular file");
  if ((u = unsafe(&st, why, sizeof why)) != NULL) return reject(reg, path, "the file %s", u);
  if ((u = txattn__path_links_unsafe(path, why, sizeof why)) != NULL)
    return reject(reg, path, "%s", u);
  if ((twin = same_file(reg, &st)) != NULL)
    return reject(reg, path, "the same file as %s, which is already loaded", twin->path);
  /* a file the scanner quarantined, now or before, is never dlopened here (scan/scan_admit.c) */
  if (!txattn__scan_admit(&reg->isa, path, &st, why, sizeof why))
    return reject(reg, path, "%s", why);
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == NULL) {
    const char *e = dlerror();
    return reject(reg, path, "dlopen failed: %s", e ? e : "(no dlerror text)");
  }
  const txattn_plugin_desc *d = describe(reg, handle, why, sizeof why);
  char build[TXATTN_BUILD_ID_LEN];
  if (d == NULL || !txattn__file_build_id(path, &st, build, why, sizeof why)) {
    dlclose(handle);
    return reject(reg, path, "%s", why);
  }
  txattn_status s = add_plugin(reg, path, handle, d, &st, build);
  if (s != TXATTN_OK) dlclose(handle);
  return s;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_plugin_name(const char *name) {
  size_t n = strlen(name);
  return n > 3 && strcmp(name + n - 3, ".so") == 0;
}

/* The "*.so" entries of an open directory, sorted so that loading (and the winner of a duplicate
   kernel name) does not depend on the file system's order. */
static txattn_status list_plugins(DIR *dir, char ***names, size_t *n) {
  size_t cap = 0;
  struct dirent *e;
  *names = NULL;
  *n = 0;
  while ((e = readdir(dir)) != NULL) {
    if (!is_plugin_name(e->d_name)) continue;
    if (!grow((void **)names, &cap, *n, sizeof **names) ||
        ((*names)[*n] = strdup(e->d_name)) == NULL)
      return txattn__fail(TXATTN_E_NOMEM, "out of memory while listing plugin files");
    (*n)++;
  }
  if (*n > 1) qsort(*names, *n, sizeof **names, by_name);
  return TXATTN_OK;
}

static txattn_status load_names(txattn__registry *reg, const char *dir, char **names, size_t n) {
  txattn_status s = TXATTN_OK;
  for (size_t i = 0; i < n && s == TXATTN_OK; i++) {
    size_t len = strlen(dir) + 1 + strlen(names[i]) + 1;
    char *path = malloc(len);
    if (path == NULL) return txattn__fail(TXATTN_E_NOMEM, "out of memory while loading plugins");
    snprintf(path, len, "%s/%s", dir, names[i]);
    s = load_file(reg, path);
    free(path);
  }
  return s;
}

static txattn_status load_dir(txattn__registry *reg, const char *dir) {
  struct stat st;
  char why[512];
  const char *u;
  if (stat(dir, &st) != 0)
    return reject(reg, dir, "%s", errno == ENOENT ? "directory does not exist" : strerror(errno));
  if (!S_ISDIR(st.st_mode)) return reject(reg, dir, "not a directory");
  if ((u = unsafe(&st, why, sizeof why)) != NULL) return reject(reg, dir, "the directory %s", u);
  if ((u = txattn__path_links_unsafe(dir, why, sizeof why)) != NULL)
    return reject(reg, dir, "%s", u);
  DIR *d = opendir(dir);
  if (d == NULL) return reject(reg, dir, "cannot open the directory: %s", strerror(errno));
  char **names;
  size_t n;
  txattn_status s = list_plugins(d, &names, &n);
  closedir(d);
  if (s == TXATTN_OK) s = load_names(reg, dir, names, n);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return s;
}

static txattn_status load_path(txattn__registry *reg) {
  char *copy = strdup(reg->search_path), *save = NULL;
  if (copy == NULL) return txattn__fail(TXATTN_E_NOMEM, "out of memory while loading plugins");
  txattn_status s = TXATTN_OK;
  /* strtok_r skips empty entries ("a::b", a trailing ':'), as the path's contract wants */
  for (char *dir = strtok_r(copy, ":", &save); dir != NULL && s == TXATTN_OK;
       dir = strtok_r(NULL, ":", &save))
    s = load_dir(reg, dir);
  free(copy);
  return s;
}

txattn_status txattn__registry_load(txattn__registry *reg, const char *plugin_path) {
  *reg = (txattn__registry){0};
  txattn__isa_state_get(&reg->isa);
  if (reg->isa.cap_note[0] != '\0')
    TXATTN_FORWARD_IF_ERROR(reject(reg, "TXATTN_MAX_ISA", "%s", reg->isa.cap_note));
  reg->search_path = txattn__plugin_path(plugin_path);
  if (reg->search_path == NULL)
    return txattn__fail(TXATTN_E_NOMEM, "out of memory while loading plugins");
  txattn__log("plugin path: %s", reg->search_path);
  reg->own_dirs = txattn__own_plugin_dirs(); /* NULL (none, or out of memory): nothing is shipped */
  return load_path(reg);
}

void txattn__registry_free(txattn__registry *reg) {
  for (size_t i = 0; i < reg->n_plugins; i++) {
    dlclose(reg->plugins[i].handle);
    free(reg->plugins[i].path);
  }
  for (size_t i = 0; i < reg->n_rejected; i++) {
    free(reg->rejected[i].path);
    free(reg->rejected[i].reason);
  }
  free(reg->plugins);
  free(reg->kernels);
  free(reg->rejected);
  free(reg->search_path);
  free(reg->own_dirs);
  *reg = (txattn__registry){0};
}

unsigned txattn__kernel_dtypes(const txattn__kernel *k, int tensor) {
  const txattn_kernel_desc *d = k->desc;
  unsigned takes = TXATTN_KERNEL_DESC_HAS(d, dtypes) ? d->dtypes[tensor] : 0;
  return takes != 0 ? takes : TXATTN_DTYPE_BIT(TXATTN_DTYPE_F32);
}

int txattn__kernel_applicable(const txattn__kernel *k, const txattn_problem *r, const char **why) {
#define TAKES_NOT(t)                                                                               \
  {                                                                                                \
    "it does not take " t " q", "it does not take " t " k", "it does not take " t " v",            \
        "it does not make " t " o"                                                                 \
  }
  static const char *const declined[6][4] = {TAKES_NOT("f32"),  TAKES_NOT("f16"),
                                             TAKES_NOT("bf16"), TAKES_NOT("q8_0"),
                                             TAKES_NOT("e4m3"), TAKES_NOT("e5m2")};
#undef TAKES_NOT
  const txattn_kernel_desc *d = k->desc;
  const txattn_dtype types[4] = {r->q_type, r->k_type, r->v_type, r->o_type};
  for (int i = 0; i < 4; i++) {
    if (!(txattn__kernel_dtypes(k, i) & TXATTN_DTYPE_BIT(types[i]))) {
      *why = declined[types[i]][i];
      return 0;
    }
  }
  if (r->lse && !(d->flags & TXATTN_KERNEL_LSE)) {
    *why = "it does not write lse";
    return 0;
  }
  /* the score modifiers (ABI 1.6) and a mask tensor (1.7) go only to kernels that declare them */
  const struct {
    int asked;
    unsigned flag;
    const char *why;
  } mods[5] = {
      {r->softcap > 0.0f, TXATTN_KERNEL_SOFTCAP, "it does not compute softcap"},
      {r->alibi, TXATTN_KERNEL_ALIBI, "it does not compute ALiBi"},
      {r->sinks, TXATTN_KERNEL_SINKS, "it does not compute sink logits"},
      {r->sink_keys > 0, TXATTN_KERNEL_SINK_KEYS, "it does not compute sink keys"},
      {r->mask_tensor != TXATTN_MASK_TENSOR_NONE, TXATTN_KERNEL_MASK_TENSOR,
       "it does not take a mask tensor"},
  };
  for (int i = 0; i < 5; i++)
    if (mods[i].asked && !(d->flags & mods[i].flag)) {
      *why = mods[i].why;
      return 0;
    }
  if (r->page_size > 0 && !(d->flags & TXATTN_KERNEL_PAGED)) {
    *why = "it does not read paged K/V";
    return 0;
  }
  /* a kernel without TXATTN_KERNEL_RAGGED (or, for packed rows, TXATTN_KERNEL_PACKED) runs each
     sequence as a problem of its own: it judges the dense problem of the tensors' capacity */
  txattn_problem dense = TXATTN_PROBLEM_INIT;
  if (txattn__per_sequence(r, d->flags)) {
    dense = *r;
    dense.ragged = 0;
    dense.packed = 0;
    r = &dense;
  }
  *why = NULL;
  if (d->applicable(r, why)) return 1;
  if (*why == NULL) *why = "(the kernel gave no reason)";
  return 0;
}
