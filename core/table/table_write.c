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
  /* only the types that are not f32, so an fp32 class reads as it did before format_version 3 */
  const char *const keys[4] = {"q_type", "k_type", "v_type", "o_type"};
  const txattn_dtype types[4] = {c->q_type, c->k_type, c->v_type, c->o_type};
  for (int i = 0; i < 4; i++)
    if (types[i] != TXATTN_DTYPE_F32) put(o, keys[i], json_string(txattn_dtype_name(types[i])), ok);
  /* only when set, so a dense class reads as it did before format_version 4 */
  if (c->ragged) put(o, "ragged", json_true(), ok);
}

static json_t *candidate_json(const txattn__cand *c) {
  json_t *o = json_object();
  int ok = o != NULL;
  if (ok) {
    put(o, "kernel", json_string(c->kernel), &ok);
    put(o, "tunables", tunables_json(&c->tun), &ok);
    put(o, "time_s", json_real(c->time_s), &ok);
    put(o, "max_error", json_real(c->max_error), &ok);
    if (c->spread >= 0) put(o, "spread", json_real(c->spread), &ok);
  }
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

static json_t *pair(int64_t a, int64_t b) {
  return json_pack("[II]", (json_int_t)a, (json_int_t)b);
}

static json_t *point_json(const txattn__class *k, const txattn__point *p) {
  json_t *o = json_object(), *a = json_array();
  int ok = o && a;
  if (ok) {
    put(o, "n", json_integer(p->n), &ok);
    if (k->key.mask == TXATTN_MASK_WINDOW) put(o, "r", json_integer(p->r), &ok);
    if (p->tie) put(o, "tie", json_true(), &ok);
    for (size_t i = 0; ok && i < p->n_cands; i++)
      ok = json_array_append_new(a, candidate_json(&p->cands[i])) == 0;
    put(o, "candidates", a, &ok);
    a = NULL;
  }
  json_decref(a);
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

static json_t *region_json(const txattn__class *k, const txattn__region *g) {
  const txattn__cand *w = &k->points[g->point].cands[0];
  json_t *o = json_object();
  int ok = o != NULL;
  if (ok) {
    put(o, "n", pair(g->n_lo, g->n_hi), &ok);
    if (k->key.mask == TXATTN_MASK_WINDOW) put(o, "r", pair(g->r_lo, g->r_hi), &ok);
    put(o, "kernel", json_string(w->kernel), &ok);
    put(o, "tunables", tunables_json(&w->tun), &ok);
    put(o, "time_s", json_pack("[ff]", g->t_min, g->t_max), &ok);
    put(o, "max_error", json_real(g->max_error), &ok);
    put(o, "runner_up", g->runner_up ? json_string(g->runner_up) : json_null(), &ok);
    put(o, "margin", g->runner_up ? json_real(g->margin) : json_null(), &ok);
  }
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

static json_t *class_json(const txattn__class *k) {
  json_t *o = json_object(), *pts = json_array(), *reg = json_array();
  int ok = o && pts && reg;
  if (ok) key_fields(o, &k->key, &ok);
  for (size_t i = 0; ok && i < k->n_points; i++)
    ok = json_array_append_new(pts, point_json(k, &k->points[i])) == 0;
  for (size_t i = 0; ok && i < k->n_regions; i++)
    ok = json_array_append_new(reg, region_json(k, &k->regions[i])) == 0;
  if (ok) {
    put(o, "points", pts, &ok);
    put(o, "regions", reg, &ok);
    pts = reg = NULL;
  }
  json_decref(pts);
  json_decref(reg);
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

static json_t *exclusion_json(const txattn__exclusion *x) {
  json_t *o = json_object(), *k = json_object();
  int ok = o && k;
  if (ok) {
    key_fields(k, &x->key, &ok);
    put(o, "class", k, &ok);
    k = NULL;
    put(o, "kernel", json_string(x->c.kernel), &ok);
    put(o, "tunables", tunables_json(&x->c.tun), &ok);
    put(o, "n", json_integer(x->n), &ok);
    if (x->key.mask == TXATTN_MASK_WINDOW) put(o, "r", json_integer(x->r), &ok);
    put(o, "max_error", num_or_null(x->c.max_error), &ok);
    put(o, "reason", json_string(x->reason), &ok);
  }
  json_decref(k);
  if (!ok) json_decref(o);
  return ok ? o : NULL;
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
static json_t *class_json_v(const void *p) {
  return class_json(p);
}
static json_t *exclusion_json_v(const void *p) {
  return exclusion_json(p);
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
  put(o, "classes", list_json(t->n_classes, t->classes, sizeof *t->classes, class_json_v), &ok);
  put(o, "excluded", list_json(t->n_excluded, t->excluded, sizeof *t->excluded, exclusion_json_v),
      &ok);
  if (!ok) json_decref(o);
  return ok ? o : NULL;
}

/* ---- layout: one line where it fits, else one member per line ---- */

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
