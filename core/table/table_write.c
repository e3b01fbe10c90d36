/* SPDX-License-Identifier: MIT */
/* Writing a dispatch table: its records as JSON (docs/dispatch_table.md), laid out for people (a
 * value that fits in a line stays on one line, so each record is one line), and written
 * atomically: a temporary file beside the target, fsync, rename over it, fsync of the directory.
 * A reader therefore sees the old table or the new one, never a part of one, even when the
 * writer is killed half way. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "table_model.h"
#include "txattn/plugin.h"

#define LINE_WIDTH 132
#define DUMP_FLAGS (JSON_ENCODE_ANY | JSON_REAL_PRECISION(6))

/* ---- the records as a jansson tree; NULL when out of memory ---- */

/* Appends v to array a; 0 (and a is left as it was) when v is NULL or out of memory. */
static int append(json_t *a, json_t *v) {
  return v != NULL && json_array_append_new(a, v) == 0;
}

/* One record of class key at (n, r): a candidate timed there (chosen: the point's winner although
   not the fastest), or, with failed, one that failed there. Absent fields are left out. */
static json_t *record_json(const txattn_table_class *key, int64_t n, int64_t r,
                           const txattn__cand *c, const char *failed, int chosen) {
  json_t *tun = json_object();
  for (size_t i = 0; tun && i < c->tun.n; i++)
    if (json_object_set_new(tun, c->tun.names[i], json_integer(c->tun.values[i])) != 0)
      json_decref(tun), tun = NULL;
  return json_pack("{s:I, s:o*, s:s, s:o, s:o*, s:o, s:o*, s:o*, s:s*}", "n", (json_int_t)n, "r",
                   key->mask == TXATTN_MASK_WINDOW ? json_integer(r) : NULL, "kernel", c->kernel,
                   "tunables", tun, "time_s", failed ? NULL : json_real(c->time_s), "max_error",
                   isfinite(c->max_error) ? json_real(c->max_error) : json_null(), "spread",
                   failed == NULL && c->spread >= 0 ? json_real(c->spread) : NULL, "chosen",
                   chosen ? json_true() : NULL, "failed", failed);
}

/* A class object with key's fields and its records: k's points (k may be NULL), then every
   exclusion of t from the first'th on with key's key. Only the element types that are not f32,
   and ragged, softcap, mask_tensor and page_size only when set: absent means f32, dense, no softcap,
   no mask tensor and contiguous K/V. */
static json_t *class_json(const txattn_table *t, const txattn_table_class *key,
                          const txattn__class *k, size_t first) {
  static const char *const tkeys[4] = {"q_type", "k_type", "v_type", "o_type"};
  const txattn_dtype types[4] = {key->q_type, key->k_type, key->v_type, key->o_type};
  json_t *o = json_pack("{s:s, s:s*, s:I, s:I, s:I, s:i, s:b, s:I, s:I}", "mask",
                        txattn_mask_name(key->mask), "window",
                        key->mask != TXATTN_MASK_WINDOW           ? NULL
                        : key->window == TXATTN_TABLE_WINDOW_LEFT ? "left"
                                                                  : "sym",
                        "d_qk", (json_int_t)key->d_qk, "d_v", (json_int_t)key->d_v, "group",
                        (json_int_t)key->group, "threads", key->threads, "decode", key->decode,
                        "batch", (json_int_t)key->batch, "heads_q", (json_int_t)key->heads_q);
  json_t *recs = json_array();
  int ok = o && recs;
  for (int i = 0; ok && i < 4; i++)
    if (types[i] != TXATTN_DTYPE_F32)
      ok = json_object_set_new(o, tkeys[i], json_string(txattn_dtype_name(types[i]))) == 0;
  if (ok && key->ragged) ok = json_object_set_new(o, "ragged", json_true()) == 0;
  if (ok && key->softcap) ok = json_object_set_new(o, "softcap", json_true()) == 0;
  if (ok && key->mask_tensor != TXATTN_MASK_TENSOR_NONE)
    ok = json_object_set_new(
             o, "mask_tensor",
             json_string(key->mask_tensor == TXATTN_MASK_TENSOR_BOOL ? "bool" : "additive")) == 0;
  if (ok && key->page_size > 0)
    ok = json_object_set_new(o, "page_size", json_integer((json_int_t)key->page_size)) == 0;
  for (size_t i = 0; ok && k && i < k->n_points; i++) {
    const txattn__point *p = &k->points[i];
    for (size_t j = 0; ok && j < p->n_cands; j++)
      ok = append(recs, record_json(key, p->n, p->r, &p->cands[j], NULL, p->tie && j == 0));
  }
  for (size_t i = first; ok && i < t->n_excluded; i++) {
    const txattn__exclusion *x = &t->excluded[i];
    if (txattn__tm_same_key(&x->key, key))
      ok = append(recs, record_json(key, x->n, x->r, &x->c, x->reason, 0));
  }
  if (ok)
    ok = json_object_set_new(o, "points", recs) == 0; /* steals recs either way */
  else
    json_decref(recs);
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

/* Every class with points and its records, then a class for the exclusions of each key no such
   class has: a class without points is no class to the reader, so it is left out. */
static json_t *classes_json(const txattn_table *t) {
  json_t *a = json_array();
  int ok = a != NULL;
  for (size_t i = 0; ok && i < t->n_classes; i++)
    if (t->classes[i].n_points > 0)
      ok = append(a, class_json(t, &t->classes[i].key, &t->classes[i], 0));
  for (size_t i = 0; ok && i < t->n_excluded; i++) {
    const txattn_table_class *key = &t->excluded[i].key;
    size_t j = 0, e = 0;
    while (j < t->n_classes &&
           !(t->classes[j].n_points > 0 && txattn__tm_same_key(&t->classes[j].key, key)))
      j++;
    while (e < i && !txattn__tm_same_key(&t->excluded[e].key, key)) e++;
    if (j == t->n_classes && e == i) ok = append(a, class_json(t, key, NULL, i));
  }
  if (!ok) json_decref(a);
  return ok ? a : NULL;
}

static json_t *table_json(const txattn_table *t) {
  const txattn_machine_info *m = &t->machine;
  json_t *isa = json_array(), *plugins = json_array();
  for (unsigned b = 0; isa && b < TXATTN_ISA_COUNT_; b++)
    if ((m->isa_mask & (1u << b)) && !append(isa, json_string(txattn_isa_name((txattn_isa)b))))
      json_decref(isa), isa = NULL;
  for (size_t i = 0; plugins && i < t->n_plugins; i++)
    if (!append(plugins, json_pack("{s:s, s:s, s:s}", "name", t->plugins[i].name, "version",
                                   t->plugins[i].version, "build", t->plugins[i].build)))
      json_decref(plugins), plugins = NULL;
  return json_pack("{s:s, s:i, s:s, s:s, s:{s:s, s:s, s:i, s:i, s:i, s:o, s:{s:I, s:I, s:I}, s:i}, "
                   "s:o, s:o*, s:o}",
                   "format", TXATTN_TABLE_FORMAT, "format_version", TXATTN_TABLE_FORMAT_VERSION,
                   "library_version", t->library_version ? t->library_version : "", "created",
                   t->created ? t->created : "", "machine", "vendor", m->vendor, "brand", m->brand,
                   "family", m->family, "model", m->model, "stepping", m->stepping, "isa", isa,
                   "caches", "l1d", (json_int_t)m->l1d_bytes, "l2", (json_int_t)m->l2_bytes, "l3",
                   (json_int_t)m->l3_bytes, "cores", m->n_cores, "plugins", plugins, "profile",
                   t->profile ? json_loads(t->profile, 0, NULL) : NULL, "classes", classes_json(t));
}

/* ---- layout ---- */

/* v, indented by at with `used` columns of its line taken: on that line where it fits (a record
   always), else one member per line. 0 when out of memory. */
static int layout(FILE *f, const json_t *v, int at, int used) {
  char *flat = json_dumps(v, DUMP_FLAGS), *k;
  size_t i = 0, n = json_is_object(v) ? json_object_size(v) : json_array_size(v);
  int ok = flat != NULL, fits = ok && (used + (int)strlen(flat) <= LINE_WIDTH || n == 0 ||
                                       json_object_get(v, "kernel") != NULL);
  if (fits) fputs(flat, f);
  free(flat);
  if (fits || !ok) return ok;
  const char *key;
  json_t *x;
  fputs(json_is_object(v) ? "{\n" : "[\n", f);
  json_object_foreach((json_t *)v, key, x) {
    json_t *ks = json_string(key);
    ok = ok && ks && (k = json_dumps(ks, DUMP_FLAGS)) != NULL;
    json_decref(ks);
    if (!ok) break;
    fprintf(f, "%*s%s: ", at + 2, "", k);
    ok = layout(f, x, at + 2, at + 4 + (int)strlen(k));
    free(k);
    fputs(++i < n ? ",\n" : "\n", f);
  }
  for (i = 0; json_is_array(v) && ok && i < n; i++) {
    fprintf(f, "%*s", at + 2, "");
    ok = layout(f, json_array_get(v, i), at + 2, at + 2);
    fputs(i + 1 < n ? ",\n" : "\n", f);
  }
  fprintf(f, "%*s%s", at, "", json_is_object(v) ? "}" : "]");
  return ok;
}

/* The file's text, malloc'd; NULL when out of memory. */
static char *render(const txattn_table *t) {
  char *buf = NULL;
  size_t len = 0;
  json_t *root = table_json(t);
  FILE *f = root ? open_memstream(&buf, &len) : NULL;
  int ok = f != NULL && layout(f, root, 0, 0) && fputs("\n", f) >= 0;
  if (f != NULL && fclose(f) != 0) ok = 0;
  json_decref(root);
  if (!ok) free(buf);
  return ok ? buf : NULL;
}

txattn_status txattn_table_dump(const txattn_table *t, FILE *f) {
  TXATTN_RETURN_IF(t == NULL || f == NULL, TXATTN_E_INVALID, "txattn_table_dump: %s is NULL",
                   t ? "f" : "t");
  char *s = render(t);
  TXATTN_RETURN_IF(s == NULL, TXATTN_E_NOMEM, "txattn_table_dump: out of memory");
  size_t n = strlen(s);
  int ok = fwrite(s, 1, n, f) == n && fflush(f) == 0;
  free(s);
  TXATTN_RETURN_IF(!ok, TXATTN_E_IO, "txattn_table_dump: writing failed: %s", strerror(errno));
  return txattn__ok();
}

/* ---- the atomic write ---- */

/* mkdir -p for the directory part of path (0755 less the umask: the table is for every user). */
static txattn_status make_parents(const char *path) {
  char *p = strdup(path);
  TXATTN_RETURN_IF(p == NULL, TXATTN_E_NOMEM, "txattn_table_write: out of memory");
  txattn_status s = TXATTN_OK;
  for (char *slash = strchr(p + 1, '/'); slash != NULL && s == TXATTN_OK;
       slash = strchr(slash + 1, '/')) {
    *slash = '\0';
    struct stat st;
    if (stat(p, &st) != 0 && (mkdir(p, 0755) != 0 && errno != EEXIST))
      s = txattn__fail(TXATTN_E_IO, "cannot write the dispatch table %s: cannot create %s: %s",
                       path, p, strerror(errno));
    *slash = '/';
  }
  free(p);
  return s;
}

static int write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return 0;
    }
    s += w;
    n -= (size_t)w;
  }
  return 1;
}

/* A new file "<dir>/.<name>.tmp.<pid>.<n>" beside path, opened for writing; -1 with errno. */
static int open_temp(const char *path, char *tmp, size_t size) {
  static unsigned counter;
  const char *slash = strrchr(path, '/');
  int dir_len = slash ? (int)(slash - path + 1) : 0;
  for (int attempt = 0; attempt < 100; attempt++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    snprintf(tmp, size, "%.*s.%s.tmp.%ld.%u%ld", dir_len, path, path + dir_len, (long)getpid(), n,
             (long)(ts.tv_nsec % 1000));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

static void sync_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path + (slash == path)) : 1,
           slash ? path : ".");
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return; /* the rename is done; durability of the directory entry is best effort */
  fsync(fd);
  close(fd);
}

static txattn_status write_file(const char *path, const char *s) {
  char tmp[4200];
  TXATTN_RETURN_IF(strlen(path) > 4000, TXATTN_E_INVALID,
                   "txattn_table_write: the path is longer than 4000 bytes");
  TXATTN_FORWARD_IF_ERROR(make_parents(path));
  int fd = open_temp(path, tmp, sizeof tmp);
  TXATTN_RETURN_IF(fd < 0, TXATTN_E_IO,
                   "cannot write the dispatch table %s: cannot create a temporary file beside "
                   "it: %s",
                   path, strerror(errno));
  int ok = write_all(fd, s, strlen(s)) && fsync(fd) == 0;
  int e = errno;
  if (close(fd) != 0 && ok) ok = 0, e = errno;
  if (ok && rename(tmp, path) != 0) ok = 0, e = errno;
  if (!ok) {
    unlink(tmp);
    return txattn__fail(TXATTN_E_IO, "cannot write the dispatch table %s (left as it was): %s",
                        path, strerror(e));
  }
  sync_dir(path);
  return TXATTN_OK;
}

txattn_status txattn_table_write(const txattn_table *t, const char *path) {
  char def[4096];
  TXATTN_RETURN_IF(t == NULL, TXATTN_E_INVALID, "txattn_table_write: t is NULL");
  if (path == NULL) {
    TXATTN_FORWARD_IF_ERROR(txattn_table_default_path(def, sizeof def));
    path = def;
  }
  TXATTN_RETURN_IF(*path == '\0', TXATTN_E_INVALID, "txattn_table_write: path is empty");
  char *s = render(t);
  TXATTN_RETURN_IF(s == NULL, TXATTN_E_NOMEM, "txattn_table_write: out of memory");
  txattn_status st = write_file(path, s);
  free(s);
  return st == TXATTN_OK ? txattn__ok() : st;
}
