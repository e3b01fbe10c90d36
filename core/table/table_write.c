/* SPDX-License-Identifier: MIT */
/* Writing a dispatch table: the model as JSON (docs/dispatch_table.md), laid out for people (a
 * value that fits in a line stays on one line, so each candidate is one line), and written
 * atomically: a temporary file beside the target, fsync, rename over it, fsync of the directory.
 * A reader therefore sees the old table or the new one, never a part of one, even when the
 * writer is killed half way. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#define REAL_FLAGS JSON_REAL_PRECISION(6)

/* ---- the model as a jansson tree; NULL when out of memory ---- */

static json_t *num_or_null(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

/* json_object_set_new that remembers a failure in *ok */
static void put(json_t *o, const char *key, json_t *v, int *ok) {
  if (v == NULL || json_object_set_new(o, key, v) != 0) *ok = 0;
}

static json_t *tunables_json(const txattn__tunables *t) {
  json_t *o = json_object();
  int ok = o != NULL;
  for (size_t i = 0; ok && i < t->n; i++) put(o, t->names[i], json_integer(t->values[i]), &ok);
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

static void key_fields(json_t *o, const txattn_table_class *c, int *ok) {
  put(o, "mask", json_string(txattn_mask_name(c->mask)), ok);
  if (c->mask == TXATTN_MASK_WINDOW)
    put(o, "window", json_string(c->window == TXATTN_TABLE_WINDOW_LEFT ? "left" : "sym"), ok);
  put(o, "d_qk", json_integer(c->d_qk), ok);
  put(o, "d_v", json_integer(c->d_v), ok);
  put(o, "group", json_integer(c->group), ok);
  put(o, "threads", json_integer(c->threads), ok);
  put(o, "decode", json_boolean(c->decode), ok);
  put(o, "batch", json_integer(c->batch), ok);
  put(o, "heads_q", json_integer(c->heads_q), ok);
  /* only the types that are not f32, and ragged only when set: absent means f32 and dense */
  const char *const keys[4] = {"q_type", "k_type", "v_type", "o_type"};
  const txattn_dtype types[4] = {c->q_type, c->k_type, c->v_type, c->o_type};
  for (int i = 0; i < 4; i++)
    if (types[i] != TXATTN_DTYPE_F32) put(o, keys[i], json_string(txattn_dtype_name(types[i])), ok);
  if (c->ragged) put(o, "ragged", json_true(), ok);
  if (c->softcap) put(o, "softcap", json_true(), ok);
  if (c->mask_tensor)
    put(o, "mask_tensor", json_string(c->mask_tensor == 1 ? "bool" : "additive"), ok);
}

/* One measurement of class key at (n, r): a candidate timed there (chosen: the point's winner
   although not the fastest), or, with failed, one that failed there. */
static json_t *record_json(const txattn_table_class *key, int64_t n, int64_t r,
                           const txattn__cand *c, const char *failed, int chosen) {
  json_t *o = json_object();
  int ok = o != NULL;
  if (ok) {
    put(o, "n", json_integer(n), &ok);
    if (key->mask == TXATTN_MASK_WINDOW) put(o, "r", json_integer(r), &ok);
    put(o, "kernel", json_string(c->kernel), &ok);
    put(o, "tunables", tunables_json(&c->tun), &ok);
    if (failed == NULL) put(o, "time_s", json_real(c->time_s), &ok);
    put(o, "max_error", num_or_null(c->max_error), &ok);
    if (failed == NULL && c->spread >= 0) put(o, "spread", json_real(c->spread), &ok);
    if (chosen) put(o, "chosen", json_true(), &ok);
    if (failed) put(o, "failed", json_string(failed), &ok);
  }
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

/* A class object with key's fields and the records: k's points (when k is not NULL), then every
   exclusion of t from the first'th on with key's key. */
static json_t *class_json(const txattn_table *t, const txattn_table_class *key,
                          const txattn__class *k, size_t first) {
  json_t *o = json_object(), *recs = json_array();
  int ok = o && recs;
  if (ok) key_fields(o, key, &ok);
  for (size_t i = 0; ok && k && i < k->n_points; i++) {
    const txattn__point *p = &k->points[i];
    for (size_t j = 0; ok && j < p->n_cands; j++)
      ok = json_array_append_new(
               recs, record_json(key, p->n, p->r, &p->cands[j], NULL, p->tie && j == 0)) == 0;
  }
  for (size_t i = first; ok && i < t->n_excluded; i++) {
    const txattn__exclusion *x = &t->excluded[i];
    if (txattn__tm_same_key(&x->key, key))
      ok = json_array_append_new(recs, record_json(key, x->n, x->r, &x->c, x->reason, 0)) == 0;
  }
  put(o, "points", recs, &ok);
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
      ok = json_array_append_new(a, class_json(t, &t->classes[i].key, &t->classes[i], 0)) == 0;
  for (size_t i = 0; ok && i < t->n_excluded; i++) {
    const txattn_table_class *key = &t->excluded[i].key;
    size_t j = 0;
    while (j < t->n_classes &&
           !(t->classes[j].n_points > 0 && txattn__tm_same_key(&t->classes[j].key, key)))
      j++;
    size_t e = 0;
    while (e < i && !txattn__tm_same_key(&t->excluded[e].key, key)) e++;
    if (j == t->n_classes && e == i)
      ok = json_array_append_new(a, class_json(t, key, NULL, i)) == 0;
  }
  if (!ok) json_decref(a);
  return ok ? a : NULL;
}

static json_t *machine_json(const txattn_machine_info *m) {
  json_t *o = json_object(), *isa = json_array();
  int ok = o && isa;
  for (unsigned b = 0; ok && b < TXATTN_ISA_COUNT_; b++)
    if (m->isa_mask & (1u << b))
      ok = json_array_append_new(isa, json_string(txattn_isa_name((txattn_isa)b))) == 0;
  if (ok) {
    put(o, "vendor", json_string(m->vendor), &ok);
    put(o, "brand", json_string(m->brand), &ok);
    put(o, "family", json_integer(m->family), &ok);
    put(o, "model", json_integer(m->model), &ok);
    put(o, "stepping", json_integer(m->stepping), &ok);
    put(o, "isa", isa, &ok);
    isa = NULL;
    put(o, "caches",
        json_pack("{sIsIsI}", "l1d", (json_int_t)m->l1d_bytes, "l2", (json_int_t)m->l2_bytes, "l3",
                  (json_int_t)m->l3_bytes),
        &ok);
    put(o, "cores", json_integer(m->n_cores), &ok);
  }
  json_decref(isa);
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

static json_t *list_json(size_t n, const void *base, size_t elem, json_t *(*one)(const void *)) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, one((const char *)base + i * elem)) != 0) {
      json_decref(a);
      a = NULL;
    }
  return a;
}

static json_t *plugin_json(const void *p) {
  const txattn__tplugin *x = p;
  return json_pack("{ssssss}", "name", x->name, "version", x->version, "build", x->build);
}

static json_t *table_json(const txattn_table *t) {
  json_t *o = json_object();
  int ok = o != NULL;
  if (!ok) return NULL;
  put(o, "format", json_string(TXATTN_TABLE_FORMAT), &ok);
  put(o, "format_version", json_integer(TXATTN_TABLE_FORMAT_VERSION), &ok);
  put(o, "library_version", json_string(t->library_version ? t->library_version : ""), &ok);
  put(o, "created", json_string(t->created ? t->created : ""), &ok);
  put(o, "machine", machine_json(&t->machine), &ok);
  put(o, "plugins", list_json(t->n_plugins, t->plugins, sizeof *t->plugins, plugin_json), &ok);
  if (t->profile) put(o, "profile", json_loads(t->profile, 0, NULL), &ok);
  put(o, "classes", classes_json(t), &ok);
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

/* ---- layout: one line where it fits (a record always), else one member per line ---- */

typedef struct text {
  char *buf;
  size_t len, cap;
  int oom;
} text;

static void add(text *t, const char *s, size_t n) {
  if (t->oom) return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + n + 1) cap *= 2;
    char *b = realloc(t->buf, cap);
    if (b == NULL) {
      t->oom = 1;
      return;
    }
    t->buf = b;
    t->cap = cap;
  }
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = '\0';
}

static void add_s(text *t, const char *s) {
  add(t, s, strlen(s));
}

static void indent(text *t, int n) {
  for (int i = 0; i < n; i++) add(t, " ", 1);
}

static void add_dump(text *t, const json_t *v) {
  char *s = json_dumps(v, JSON_ENCODE_ANY | REAL_FLAGS);
  if (s == NULL) {
    t->oom = 1;
    return;
  }
  add_s(t, s);
  free(s);
}

static void layout(text *t, const json_t *v, int at, int used) {
  char *flat = json_dumps(v, JSON_ENCODE_ANY | REAL_FLAGS);
  if (flat == NULL) {
    t->oom = 1;
    return;
  }
  int fits = used + (int)strlen(flat) <= LINE_WIDTH || !(json_is_object(v) || json_is_array(v)) ||
             json_object_get(v, "kernel") != NULL ||
             (json_is_object(v) ? json_object_size(v) : json_array_size(v)) == 0;
  if (fits) add_s(t, flat);
  free(flat);
  if (fits) return;
  add_s(t, json_is_object(v) ? "{\n" : "[\n");
  if (json_is_object(v)) {
    const char *key;
    json_t *x;
    size_t i = 0, n = json_object_size(v);
    json_object_foreach((json_t *)v, key, x) {
      json_t *k = json_string(key);
      indent(t, at + 2);
      size_t before = t->len;
      add_dump(t, k);
      json_decref(k);
      add_s(t, ": ");
      layout(t, x, at + 2, at + 2 + (int)(t->len - before));
      add_s(t, ++i < n ? ",\n" : "\n");
    }
  } else {
    for (size_t i = 0, n = json_array_size(v); i < n; i++) {
      indent(t, at + 2);
      layout(t, json_array_get(v, i), at + 2, at + 2);
      add_s(t, i + 1 < n ? ",\n" : "\n");
    }
  }
  indent(t, at);
  add_s(t, json_is_object(v) ? "}" : "]");
}

/* The file's text, malloc'd; NULL when out of memory. */
static char *render(const txattn_table *t) {
  json_t *root = table_json(t);
  if (root == NULL) return NULL;
  text out = {0};
  layout(&out, root, 0, 0);
  add_s(&out, "\n");
  json_decref(root);
  if (out.oom) free(out.buf);
  return out.oom ? NULL : out.buf;
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
