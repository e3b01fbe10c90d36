/* SPDX-License-Identifier: MIT */
/* Reading a dispatch table file (docs/dispatch_table.md describes the format). jansson parses the
 * JSON, so syntax errors come with line:column; then every field is checked for its type and range
 * and the first bad one is reported with its JSON path ("classes[2].points[0].n"). The file holds
 * what was measured, one record per kernel and shape; the records of a shape become a point (its
 * winner the fastest, or the one marked chosen) and the failed ones exclusions, through the same
 * builders as txattn_table_add_* (table_model.c), which derive the regions. A table is returned
 * whole or not at all. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "table_model.h"
#include "txattn/plugin.h"
#include "table_regions.h"

#define MAX_FILE_BYTES (INT64_C(64) << 20)
#define MAX_PROFILE    65536
#define BIG            (INT64_C(1) << 40)
#define PATH_LEN       160

typedef struct rd {
  txattn_table *t;
  txattn_status s; /* E_TABLE, or E_NOMEM */
  char why[768];
} rd;

static int err(rd *r, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int err(rd *r, const char *path, const char *fmt, ...) {
  char msg[640];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(r->why, sizeof r->why, "%s%s%s%s", *path ? "at " : "", path, *path ? ": " : "", msg);
  return 0;
}

/* A model builder's failure at path. */
static int model_err(rd *r, const char *path, txattn_status s, const char *why) {
  if (s == TXATTN_E_NOMEM) r->s = s;
  return err(r, path, "%s", why);
}

static const char *kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
    return "an integer";
  case JSON_REAL:
    return "a real number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  case JSON_NULL:
    return "null";
  }
  return "?";
}

/* JSON paths of fields; a path too long for messages ends in "..." */
static void join(char *out, const char *path, const char *key) {
  if (snprintf(out, PATH_LEN, "%s%s%s", path, *path ? "." : "", key) >= PATH_LEN)
    memcpy(out + PATH_LEN - 4, "...", 4);
}

static void item(char *out, const char *path, size_t i) {
  if (snprintf(out, PATH_LEN, "%s[%zu]", path, i) >= PATH_LEN) memcpy(out + PATH_LEN - 4, "...", 4);
}

/* obj is an object whose keys are all in allowed (NULL-terminated). */
static int keys_ok(rd *r, const json_t *obj, const char *path, const char *const *allowed) {
  if (!json_is_object(obj)) return err(r, path, "expected an object, got %s", kind(obj));
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)obj, key, v) {
    size_t i = 0;
    while (allowed[i] && strcmp(allowed[i], key) != 0) i++;
    if (allowed[i] == NULL) {
      char list[256] = "";
      for (size_t j = 0; allowed[j]; j++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "",
                 allowed[j]);
      return err(r, path, "unknown field \"%.60s\" (format_version %d has: %s)", key,
                 TXATTN_TABLE_FORMAT_VERSION, list);
    }
  }
  return 1;
}

static json_t *field(rd *r, const json_t *obj, const char *path, const char *key) {
  json_t *v = json_object_get(obj, key);
  if (v == NULL) err(r, path, "the field \"%s\" is missing", key);
  return v;
}

static int get_int(rd *r, const json_t *obj, const char *path, const char *key, int64_t lo,
                   int64_t hi, int64_t *out) {
  char p[PATH_LEN];
  json_t *v = field(r, obj, path, key);
  if (v == NULL) return 0;
  join(p, path, key);
  if (!json_is_integer(v)) return err(r, p, "expected an integer, got %s", kind(v));
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return err(r, p, "%" PRId64 " is outside %" PRId64 "..%" PRId64, (int64_t)x, lo, hi);
  *out = (int64_t)x;
  return 1;
}

static int get_str(rd *r, const json_t *obj, const char *path, const char *key, const char **out) {
  char p[PATH_LEN];
  json_t *v = field(r, obj, path, key);
  if (v == NULL) return 0;
  join(p, path, key);
  if (!json_is_string(v)) return err(r, p, "expected a string, got %s", kind(v));
  if (strlen(json_string_value(v)) != json_string_length(v))
    return err(r, p, "the string holds a NUL character");
  *out = json_string_value(v);
  return 1;
}

/* A number (integer or real); null gives NaN when null_ok. */
static int get_num(rd *r, const json_t *obj, const char *path, const char *key, int null_ok,
                   double *out) {
  char p[PATH_LEN];
  json_t *v = field(r, obj, path, key);
  if (v == NULL) return 0;
  join(p, path, key);
  if (null_ok && json_is_null(v)) {
    *out = NAN;
    return 1;
  }
  if (!json_is_number(v))
    return err(r, p, "expected a number%s, got %s", null_ok ? " or null" : "", kind(v));
  *out = json_number_value(v);
  return 1;
}

static int get_bool(rd *r, const json_t *obj, const char *path, const char *key, int *out) {
  char p[PATH_LEN];
  json_t *v = field(r, obj, path, key);
  if (v == NULL) return 0;
  join(p, path, key);
  if (!json_is_boolean(v)) return err(r, p, "expected true or false, got %s", kind(v));
  *out = json_is_true(v);
  return 1;
}

static json_t *get_array(rd *r, const json_t *obj, const char *path, const char *key) {
  char p[PATH_LEN];
  json_t *v = field(r, obj, path, key);
  if (v == NULL) return NULL;
  join(p, path, key);
  if (!json_is_array(v)) {
    err(r, p, "expected an array, got %s", kind(v));
    return NULL;
  }
  return v;
}

/* One of choices (NULL-terminated): its index. */
static int get_choice(rd *r, const json_t *obj, const char *path, const char *key,
                      const char *const *choices, int *out) {
  const char *s;
  char p[PATH_LEN];
  if (!get_str(r, obj, path, key, &s)) return 0;
  for (int i = 0; choices[i]; i++)
    if (strcmp(choices[i], s) == 0) {
      *out = i;
      return 1;
    }
  join(p, path, key);
  return err(r, p, "\"%.40s\" is not one of the allowed values", s);
}

/* ---- header ---- */

static int read_caches(rd *r, const json_t *m, const char *path, txattn_machine_info *out) {
  static const char *const keys[] = {"l1d", "l2", "l3", NULL};
  char p[PATH_LEN];
  json_t *c = field(r, m, path, "caches");
  if (c == NULL) return 0;
  join(p, path, "caches");
  return keys_ok(r, c, p, keys) && get_int(r, c, p, "l1d", 0, BIG, &out->l1d_bytes) &&
         get_int(r, c, p, "l2", 0, BIG, &out->l2_bytes) &&
         get_int(r, c, p, "l3", 0, BIG, &out->l3_bytes);
}

/* The txattn_isa named name, -1 if none. */
static int isa_bit(const char *name) {
  for (int i = 0; i < TXATTN_ISA_COUNT_; i++)
    if (strcmp(txattn_isa_name((txattn_isa)i), name) == 0) return i;
  return -1;
}

static int read_isa(rd *r, const json_t *m, const char *path, unsigned *mask) {
  char p[PATH_LEN], q[PATH_LEN];
  json_t *a = get_array(r, m, path, "isa");
  if (a == NULL) return 0;
  join(p, path, "isa");
  *mask = 0;
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *v = json_array_get(a, i);
    item(q, p, i);
    if (!json_is_string(v)) return err(r, q, "expected an ISA name, got %s", kind(v));
    int bit = isa_bit(json_string_value(v));
    if (bit < 0)
      return err(r, q, "unknown ISA \"%.30s\" (known: scalar, avx2, avx512, neon, avx512bf16)",
                 json_string_value(v));
    if (*mask & (1u << bit)) return err(r, q, "%s is listed twice", json_string_value(v));
    *mask |= 1u << bit;
  }
  return 1;
}

static int copy_text(rd *r, const char *path, const char *key, const char *s, char *dst,
                     size_t size) {
  char p[PATH_LEN];
  join(p, path, key);
  if (strlen(s) >= size) return err(r, p, "longer than %zu bytes", size - 1);
  memcpy(dst, s, strlen(s) + 1);
  return 1;
}

static int read_machine(rd *r, const json_t *root, txattn_machine_info *m) {
  static const char *const keys[] = {"vendor", "brand",  "family", "model", "stepping",
                                     "isa",    "caches", "cores",  NULL};
  const char *vendor, *brand;
  int64_t family, model, stepping, cores;
  json_t *o = field(r, root, "", "machine");
  memset(m, 0, sizeof *m);
  if (o == NULL || !keys_ok(r, o, "machine", keys)) return 0;
  if (!get_str(r, o, "machine", "vendor", &vendor) || !get_str(r, o, "machine", "brand", &brand) ||
      !copy_text(r, "machine", "vendor", vendor, m->vendor, sizeof m->vendor) ||
      !copy_text(r, "machine", "brand", brand, m->brand, sizeof m->brand) ||
      !get_int(r, o, "machine", "family", 0, INT32_MAX, &family) ||
      !get_int(r, o, "machine", "model", 0, INT32_MAX, &model) ||
      !get_int(r, o, "machine", "stepping", 0, INT32_MAX, &stepping) ||
      !read_isa(r, o, "machine", &m->isa_mask) || !read_caches(r, o, "machine", m) ||
      !get_int(r, o, "machine", "cores", 1, 1 << 20, &cores))
    return 0;
  m->family = (int)family;
  m->model = (int)model;
  m->stepping = (int)stepping;
  m->n_cores = (int)cores;
  return 1;
}

static int read_plugins(rd *r, const json_t *root) {
  static const char *const keys[] = {"name", "version", "build", NULL};
  char p[PATH_LEN], why[512];
  json_t *a = get_array(r, root, "", "plugins");
  if (a == NULL) return 0;
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *o = json_array_get(a, i);
    const char *name, *version, *build;
    item(p, "plugins", i);
    if (!keys_ok(r, o, p, keys) || !get_str(r, o, p, "name", &name) ||
        !get_str(r, o, p, "version", &version) || !get_str(r, o, p, "build", &build))
      return 0;
    txattn_status s = txattn__tm_add_plugin(r->t, name, version, build, why, sizeof why);
    if (s != TXATTN_OK) return model_err(r, p, s, why);
  }
  return 1;
}

static int read_header(rd *r, const json_t *root) {
  const char *lib, *created;
  char why[512];
  txattn_machine_info m = TXATTN_MACHINE_INFO_INIT;
  if (!get_str(r, root, "", "library_version", &lib) ||
      !get_str(r, root, "", "created", &created) || !read_machine(r, root, &m))
    return 0;
  txattn_status s = txattn__tm_set_header(r->t, lib, created, &m, why, sizeof why);
  if (s != TXATTN_OK) return model_err(r, "", s, why);
  json_t *profile = json_object_get(root, "profile");
  if (profile != NULL) {
    if (!json_is_object(profile))
      return err(r, "profile", "expected an object, got %s", kind(profile));
    r->t->profile = json_dumps(profile, JSON_COMPACT | JSON_REAL_PRECISION(6));
    if (r->t->profile == NULL) return model_err(r, "profile", TXATTN_E_NOMEM, "out of memory");
    if (strlen(r->t->profile) > MAX_PROFILE)
      return err(r, "profile", "longer than %d bytes", MAX_PROFILE);
  }
  return read_plugins(r, root);
}

/* ---- classes ---- */

/* A tunables object {"name": integer, ...}: names point into the JSON, alive with it. */
typedef struct tun_view {
  size_t n;
  const char *names[64];
  int64_t values[64];
} tun_view;

static int read_tunables(rd *r, const json_t *obj, const char *path, tun_view *out) {
  char p[PATH_LEN], q[PATH_LEN];
  json_t *t = field(r, obj, path, "tunables");
  if (t == NULL) return 0;
  join(p, path, "tunables");
  if (!json_is_object(t)) return err(r, p, "expected an object, got %s", kind(t));
  if (json_object_size(t) > 64) return err(r, p, "more than 64 tunables");
  const char *key;
  json_t *v;
  out->n = 0;
  json_object_foreach(t, key, v) {
    join(q, p, key);
    if (!json_is_integer(v)) return err(r, q, "expected an integer, got %s", kind(v));
    out->names[out->n] = key;
    out->values[out->n++] = (int64_t)json_integer_value(v);
  }
  return 1;
}

static const char *const shapes[] = {"sym", "left", NULL};

/* The element types of a class: each of q_type ... o_type is optional, f32 when
   absent (what the writer leaves out). */
static int read_types(rd *r, const json_t *o, const char *path, txattn_table_class *c) {
  static const char *const keys[4] = {"q_type", "k_type", "v_type", "o_type"};
  const char *const names[] = {txattn_dtype_name(TXATTN_DTYPE_F32),
                               txattn_dtype_name(TXATTN_DTYPE_F16),
                               txattn_dtype_name(TXATTN_DTYPE_BF16), NULL};
  txattn_dtype *out[4] = {&c->q_type, &c->k_type, &c->v_type, &c->o_type};
  for (int i = 0; i < 4; i++) {
    int t = 0;
    *out[i] = TXATTN_DTYPE_F32;
    if (json_object_get(o, keys[i]) == NULL) continue;
    if (!get_choice(r, o, path, keys[i], names, &t)) return 0;
    *out[i] = (txattn_dtype)t;
  }
  return 1;
}

/* The class key and measured shape, shared by classes and exclusions. */
static int read_key(rd *r, const json_t *o, const char *path, txattn_table_class *c) {
  int mask = 0, shape = -1, decode = 0;
  int64_t d_qk, d_v, group, threads, batch, heads_q;
  const char *const masks[] = {txattn_mask_name(TXATTN_MASK_NONE),
                               txattn_mask_name(TXATTN_MASK_CAUSAL),
                               txattn_mask_name(TXATTN_MASK_WINDOW), NULL};
  if (!get_choice(r, o, path, "mask", masks, &mask)) return 0;
  json_t *w = json_object_get(o, "window");
  if (mask == TXATTN_MASK_WINDOW && !get_choice(r, o, path, "window", shapes, &shape)) return 0;
  if (mask != TXATTN_MASK_WINDOW && w != NULL)
    return err(r, path, "\"window\" is only for mask \"window\", not \"%s\"", masks[mask]);
  if (!get_int(r, o, path, "d_qk", 1, BIG, &d_qk) || !get_int(r, o, path, "d_v", 1, BIG, &d_v) ||
      !get_int(r, o, path, "group", 1, BIG, &group) ||
      !get_int(r, o, path, "threads", 1, 4096, &threads) ||
      !get_bool(r, o, path, "decode", &decode) || !get_int(r, o, path, "batch", 1, BIG, &batch) ||
      !get_int(r, o, path, "heads_q", 1, BIG, &heads_q))
    return 0;
  *c = (txattn_table_class){.struct_size = sizeof *c,
                            .mask = (txattn_mask)mask,
                            .window = (txattn_table_window)(shape + 1),
                            .d_qk = d_qk,
                            .d_v = d_v,
                            .group = group,
                            .threads = (int)threads,
                            .decode = decode,
                            .batch = batch,
                            .heads_q = heads_q};
  if (mask != TXATTN_MASK_WINDOW) c->window = TXATTN_TABLE_WINDOW_NONE;
  if (!read_types(r, o, path, c)) return 0;
  /* "ragged": true or absent (false, what the writer leaves out) */
  if (json_object_get(o, "ragged") != NULL && !get_bool(r, o, path, "ragged", &c->ragged)) return 0;
  /* "softcap": true or absent; "mask_tensor": "bool", "additive" or absent */
  if (json_object_get(o, "softcap") != NULL && !get_bool(r, o, path, "softcap", &c->softcap))
    return 0;
  const char *mt = json_string_value(json_object_get(o, "mask_tensor"));
  c->mask_tensor = mt && !strcmp(mt, "bool")           ? TXATTN_MASK_TENSOR_BOOL
                   : mt && !strcmp(mt, "additive")     ? TXATTN_MASK_TENSOR_ADDITIVE
                   : json_object_get(o, "mask_tensor") ? -1
                                                       : TXATTN_MASK_TENSOR_NONE;
  char why[256];
  return txattn__tm_class_ok(c, why, sizeof why) || err(r, path, "%s", why);
}

/* r of a point, region or exclusion: present exactly in window classes. */
static int read_r(rd *r, const json_t *o, const char *path, const txattn_table_class *c,
                  int64_t *out) {
  *out = 0;
  if (c->mask == TXATTN_MASK_WINDOW) return get_int(r, o, path, "r", 1, BIG, out);
  if (json_object_get(o, "r") != NULL) return err(r, path, "\"r\" is only for window classes");
  return 1;
}

/* One record of a class: a kernel timed at (n, r), or one that failed there ("failed": why). Its
   tunables stay in the JSON (tun) until its point is built: a file may hold many records. */
typedef struct record {
  int64_t n, r;
  int chosen;
  size_t index;
  const char *failed;
  const json_t *tun;
  txattn_table_candidate c;
} record;

static int read_record(rd *r, const json_t *o, const char *path, const txattn_table_class *key,
                       record *x, tun_view *scratch) {
  static const char *const keys[] = {"n",         "r",      "kernel", "tunables", "time_s",
                                     "max_error", "spread", "chosen", "failed",   NULL};
  char p[PATH_LEN];
  txattn_table_candidate *c = &x->c;
  c->struct_size = sizeof *c;
  c->spread = -1;
  if (!keys_ok(r, o, path, keys) || !get_int(r, o, path, "n", 1, BIG, &x->n) ||
      !read_r(r, o, path, key, &x->r) || !get_str(r, o, path, "kernel", &c->kernel) ||
      !read_tunables(r, o, path, scratch))
    return 0;
  x->tun = json_object_get(o, "tunables");
  if (json_object_get(o, "failed") != NULL) {
    static const char *const timed[] = {"time_s", "spread", "chosen"};
    for (int i = 0; i < 3; i++)
      if (json_object_get(o, timed[i]) != NULL)
        return err(r, path, "a failed record has no \"%s\"", timed[i]);
    return get_str(r, o, path, "failed", &x->failed) &&
           get_num(r, o, path, "max_error", 1, &c->max_error);
  }
  if (!get_num(r, o, path, "time_s", 0, &c->time_s) ||
      !get_num(r, o, path, "max_error", 0, &c->max_error))
    return 0;
  if (json_object_get(o, "spread") && !get_num(r, o, path, "spread", 0, &c->spread)) return 0;
  join(p, path, "spread");
  if (c->spread < 0 && json_object_get(o, "spread")) return err(r, p, "must be >= 0");
  json_t *ch = json_object_get(o, "chosen");
  join(p, path, "chosen");
  if (ch != NULL && !json_is_true(ch))
    return err(r, p, "expected true (or no \"chosen\"), got %s", kind(ch));
  x->chosen = ch != NULL;
  return 1;
}

/* The candidate of x with its tunables in tun (valid as long as the JSON). */
static txattn_table_candidate with_tunables(const record *x, tun_view *tun) {
  const char *key;
  json_t *v;
  txattn_table_candidate c = x->c;
  tun->n = 0;
  json_object_foreach((json_t *)x->tun, key, v) {
    tun->names[tun->n] = key;
    tun->values[tun->n++] = (int64_t)json_integer_value(v);
  }
  c.n_tunables = tun->n;
  c.tunable_names = tun->names;
  c.tunable_values = tun->values;
  return c;
}

/* The timed records by shape, each shape's in the file's order, then the failed ones in it. */
static int by_shape(const void *a, const void *b) {
  const record *x = a, *y = b;
  if ((x->failed != NULL) != (y->failed != NULL)) return x->failed != NULL ? 1 : -1;
  if (x->failed == NULL && x->r != y->r) return x->r < y->r ? -1 : 1;
  if (x->failed == NULL && x->n != y->n) return x->n < y->n ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* The k timed records at one shape make a point: the chosen one its winner, else the fastest. */
static int add_point(rd *r, size_t cls, const char *path, const record *recs, size_t k,
                     txattn_table_candidate *buf, tun_view *tun) {
  long chosen = -1;
  char why[512];
  if (k > TXATTN__TABLE_MAX_CANDIDATES)
    return err(r, path, "%zu records at n = %" PRId64 ", r = %" PRId64 ": a shape holds 1..%d", k,
               recs[0].n, recs[0].r, TXATTN__TABLE_MAX_CANDIDATES);
  for (size_t i = 0; i < k; i++) {
    if (recs[i].chosen && chosen >= 0)
      return err(r, path, "two records are chosen at n = %" PRId64 ", r = %" PRId64, recs[i].n,
                 recs[i].r);
    if (recs[i].chosen) chosen = (long)i;
    buf[i] = with_tunables(&recs[i], &tun[i]);
  }
  txattn_status s =
      txattn__tm_add_point(r->t, cls, recs[0].n, recs[0].r, buf, k, chosen, 0, why, sizeof why);
  return s == TXATTN_OK || model_err(r, path, s, why);
}

static int add_exclusion(rd *r, const char *path, const txattn_table_class *key, const record *x,
                         tun_view *tun) {
  char why[512];
  txattn_table_candidate c = with_tunables(x, tun);
  txattn_table_exclusion e = TXATTN_TABLE_EXCLUSION_INIT;
  e.cls = *key;
  e.kernel = c.kernel;
  e.n_tunables = c.n_tunables;
  e.tunable_names = c.tunable_names;
  e.tunable_values = c.tunable_values;
  e.n = x->n;
  e.r = x->r;
  e.max_error = c.max_error;
  e.reason = x->failed;
  txattn_status s = txattn__tm_add_exclusion(r->t, &e, why, sizeof why);
  return s == TXATTN_OK || model_err(r, path, s, why);
}

/* A class and its records: the timed ones become its points, the failed ones exclusions. A class
   with failed records only is not added (its records are exclusions alone). */
static int read_class(rd *r, const json_t *o, const char *path) {
  static const char *const keys[] = {"mask",        "window", "d_qk",   "d_v",     "group",
                                     "threads",     "decode", "batch",  "heads_q", "q_type",
                                     "k_type",      "v_type", "o_type", "ragged",  "softcap",
                                     "mask_tensor", "points", NULL};
  txattn_table_class key = TXATTN_TABLE_CLASS_INIT;
  size_t cls = SIZE_MAX;
  char p[PATH_LEN], q[PATH_LEN], why[512];
  if (!keys_ok(r, o, path, keys) || !read_key(r, o, path, &key)) return 0;
  json_t *a = get_array(r, o, path, "points");
  if (a == NULL) return 0;
  join(p, path, "points");
  size_t n = json_array_size(a), timed = 0;
  if (n == 0) return err(r, p, "a class needs at least one record");
  record *recs = calloc(n, sizeof *recs);
  txattn_table_candidate *buf = calloc(TXATTN__TABLE_MAX_CANDIDATES, sizeof *buf);
  tun_view *tun = calloc(TXATTN__TABLE_MAX_CANDIDATES, sizeof *tun);
  int ok = recs && buf && tun;
  if (!ok) model_err(r, p, TXATTN_E_NOMEM, "out of memory");
  for (size_t i = 0; ok && i < n; i++) {
    item(q, p, i);
    recs[i].index = i;
    ok = read_record(r, json_array_get(a, i), q, &key, &recs[i], tun);
    timed += ok && recs[i].failed == NULL;
  }
  if (ok && timed > 0) {
    txattn_status s = txattn__tm_add_class(r->t, &key, &cls, why, sizeof why);
    if (s != TXATTN_OK) ok = model_err(r, path, s, why);
  }
  if (ok) qsort(recs, n, sizeof *recs, by_shape);
  for (size_t i = 0, k; ok && i < n; i += k) {
    item(q, p, recs[i].index);
    k = 1;
    if (recs[i].failed != NULL) {
      ok = add_exclusion(r, q, &key, &recs[i], tun);
      continue;
    }
    while (i + k < n && recs[i + k].failed == NULL && recs[i + k].n == recs[i].n &&
           recs[i + k].r == recs[i].r)
      k++;
    ok = add_point(r, cls, q, &recs[i], k, buf, tun);
  }
  if (ok && cls != SIZE_MAX && !txattn__tm_reindex(&r->t->classes[cls]))
    ok = model_err(r, p, TXATTN_E_NOMEM, "out of memory, or too many distinct n and r values");
  free(recs);
  free(buf);
  free(tun);
  return ok;
}

static int read_list(rd *r, const json_t *root, const char *key,
                     int (*one)(rd *, const json_t *, const char *)) {
  char p[PATH_LEN];
  json_t *a = get_array(r, root, "", key);
  if (a == NULL) return 0;
  for (size_t i = 0; i < json_array_size(a); i++) {
    item(p, key, i);
    if (!one(r, json_array_get(a, i), p)) return 0;
  }
  return 1;
}

/* format and format_version first: a newer file gets "unsupported version", not "unknown field". */
static int read_root(rd *r, const json_t *root) {
  static const char *const keys[] = {"format",  "format_version", "library_version",
                                     "created", "machine",        "plugins",
                                     "profile", "classes",        NULL};
  const char *format;
  int64_t version;
  if (!json_is_object(root)) return err(r, "", "expected a JSON object, got %s", kind(root));
  if (!get_str(r, root, "", "format", &format)) return 0;
  if (strcmp(format, TXATTN_TABLE_FORMAT) != 0)
    return err(r, "format", "\"%.40s\" is not \"%s\": not a txtune dispatch table", format,
               TXATTN_TABLE_FORMAT);
  if (!get_int(r, root, "", "format_version", 0, INT32_MAX, &version)) return 0;
  if (version >= 1 && version < TXATTN_TABLE_FORMAT_VERSION)
    return err(r, "format_version",
               "%" PRId64 " is an older txtune's format, which stored the regions it derived; this "
               "library (%s) reads format_version %d, the measurements alone: rerun `txtune "
               "profile` to measure this machine again",
               version, txattn_version_string(), TXATTN_TABLE_FORMAT_VERSION);
  if (version != TXATTN_TABLE_FORMAT_VERSION)
    return err(r, "format_version",
               "%" PRId64 " is not supported: this library (%s) reads format_version %d; "
               "`txtune profile` writes a table it can read",
               version, txattn_version_string(), TXATTN_TABLE_FORMAT_VERSION);
  r->t->format_version = (int)version;
  return keys_ok(r, root, "", keys) && read_header(r, root) &&
         read_list(r, root, "classes", read_class);
}

static txattn_status open_error(const char *path, const json_error_t *e) {
  if (json_error_code(e) == json_error_cannot_open_file)
    return txattn__fail(TXATTN_E_IO, "cannot read the dispatch table %s: %s", path, e->text);
  if (json_error_code(e) == json_error_out_of_memory)
    return txattn__fail(TXATTN_E_NOMEM, "out of memory reading the dispatch table %s", path);
  return txattn__fail(TXATTN_E_TABLE, "malformed dispatch table %s:%d:%d: %s", path, e->line,
                      e->column, e->text);
}

txattn_status txattn_table_load(const char *path, txattn_table **out) {
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_table_load: out is NULL");
  *out = NULL;
  TXATTN_RETURN_IF(path == NULL || *path == '\0', TXATTN_E_INVALID,
                   "txattn_table_load: path is NULL or empty");
  struct stat st;
  TXATTN_RETURN_IF(stat(path, &st) != 0, TXATTN_E_IO, "cannot read the dispatch table %s: %s", path,
                   strerror(errno));
  TXATTN_RETURN_IF(!S_ISREG(st.st_mode), TXATTN_E_IO,
                   "cannot read the dispatch table %s: not a regular file", path);
  TXATTN_RETURN_IF(st.st_size > MAX_FILE_BYTES, TXATTN_E_TABLE,
                   "malformed dispatch table %s: %lld bytes, more than a table can hold (%lld)",
                   path, (long long)st.st_size, (long long)MAX_FILE_BYTES);
  json_error_t e;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
  if (root == NULL) return open_error(path, &e);
  rd r = {.t = txattn__tm_new(), .s = TXATTN_E_TABLE};
  int ok = r.t != NULL && (r.t->path = strdup(path)) != NULL;
  if (!ok) r.s = TXATTN_E_NOMEM;
  if (ok) ok = read_root(&r, root);
  json_decref(root);
  if (!ok) {
    txattn__tm_free(r.t);
    if (r.s == TXATTN_E_NOMEM)
      return txattn__fail(TXATTN_E_NOMEM, "out of memory reading the dispatch table %s", path);
    return txattn__fail(TXATTN_E_TABLE, "malformed dispatch table %s: %s", path, r.why);
  }
  *out = r.t;
  return txattn__ok();
}

txattn_status txattn_table_set_profile(txattn_table *t, const char *json_object) {
  TXATTN_RETURN_IF(t == NULL || json_object == NULL, TXATTN_E_INVALID,
                   "txattn_table_set_profile: %s is NULL", t ? "json_object" : "t");
  json_error_t e;
  json_t *v = json_loads(json_object, JSON_REJECT_DUPLICATES, &e);
  TXATTN_RETURN_IF(v == NULL, TXATTN_E_INVALID, "txattn_table_set_profile: not JSON: %d:%d: %s",
                   e.line, e.column, e.text);
  char *text = json_is_object(v) ? json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
  int object = json_is_object(v);
  json_decref(v);
  TXATTN_RETURN_IF(!object, TXATTN_E_INVALID, "txattn_table_set_profile: not a JSON object");
  TXATTN_RETURN_IF(text == NULL, TXATTN_E_NOMEM, "txattn_table_set_profile: out of memory");
  if (strlen(text) > MAX_PROFILE) {
    free(text);
    return txattn__fail(TXATTN_E_INVALID, "txattn_table_set_profile: longer than %d bytes",
                        MAX_PROFILE);
  }
  free(t->profile);
  t->profile = text;
  return txattn__ok();
}
