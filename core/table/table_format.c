/* SPDX-License-Identifier: MIT */
/* Reading a dispatch table file (docs/dispatch_table.md describes the format). jansson parses the
 * JSON, so syntax errors come with line:column; then every field is checked for its type and range
 * and the first bad one is reported with its JSON path ("classes[2].points[0].n"). The file holds
 * what was measured, one record per kernel and shape; the records of a shape become a point (its
 * winner the fastest, or the one marked chosen) and the failed ones exclusions, through the same
 * builders as txtune's (table_model.c), which derive the regions. A table is returned whole or not
 * at all. */
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

#define MAX_FILE_BYTES (INT64_C(64) << 20)
#define MAX_PROFILE    65536
#define BIG            (INT64_C(1) << 40)
#define PATH_LEN       160
#define MAX_CANDS      TXATTN__TABLE_MAX_CANDIDATES

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
  snprintf(r->why, sizeof r->why, "%s%s%s", *path ? "at " : "", path, *path ? ": " : "");
  snprintf(r->why + strlen(r->why), sizeof r->why - strlen(r->why), "%s", msg);
  return 0;
}

/* A builder's refusal (table_model.c) at path. */
static int model_err(rd *r, const char *path, txattn_status s, const char *why) {
  if (s == TXATTN_E_NOMEM) r->s = s;
  return err(r, path, "%s", why);
}

static const char *kind(const json_t *v) {
  static const char *const kinds[] = {
      [JSON_OBJECT] = "an object",   [JSON_ARRAY] = "an array",     [JSON_STRING] = "a string",
      [JSON_INTEGER] = "an integer", [JSON_REAL] = "a real number", [JSON_TRUE] = "a boolean",
      [JSON_FALSE] = "a boolean",    [JSON_NULL] = "null"};
  return kinds[json_typeof(v)];
}

/* JSON paths of fields: path.key (i < 0) or path[i]; a path too long for messages ends in "..." */
static const char *at(char *out, const char *path, const char *key, long i) {
  int n = i < 0 ? snprintf(out, PATH_LEN, "%s%s%s", path, *path ? "." : "", key)
                : snprintf(out, PATH_LEN, "%s[%ld]", path, i);
  if (n >= PATH_LEN) memcpy(out + PATH_LEN - 4, "...", 4);
  return out;
}

/* obj is an object whose keys are all in allowed (NULL-terminated). */
static int keys_ok(rd *r, const json_t *obj, const char *path, const char *const *allowed) {
  const char *key;
  json_t *v;
  if (!json_is_object(obj)) return err(r, path, "expected an object, got %s", kind(obj));
  json_object_foreach((json_t *)obj, key, v) {
    size_t i = 0;
    while (allowed[i] && strcmp(allowed[i], key) != 0) i++;
    if (allowed[i] != NULL) continue;
    char list[256] = "";
    for (size_t j = 0; allowed[j]; j++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "", allowed[j]);
    return err(r, path, "unknown field \"%.60s\" (format_version %d has: %s)", key,
               TXATTN_TABLE_FORMAT_VERSION, list);
  }
  return 1;
}

/* The kinds a field may have, and how a message names them. */
enum { INT, STR, NUM, NUM_OR_NULL, BOOL, ARRAY };
static const char *const wanted[] = {"an integer",       "a string",      "a number",
                                     "a number or null", "true or false", "an array"};

/* obj[key] if it has the kind, else NULL with the error set. */
static json_t *get(rd *r, const json_t *obj, const char *path, const char *key, int want) {
  char p[PATH_LEN];
  json_t *v = json_object_get(obj, key);
  if (v == NULL) return err(r, path, "the field \"%s\" is missing", key), NULL;
  int ok = want == INT           ? json_is_integer(v)
           : want == STR         ? json_is_string(v)
           : want == NUM         ? json_is_number(v)
           : want == NUM_OR_NULL ? json_is_number(v) || json_is_null(v)
           : want == BOOL        ? json_is_boolean(v)
                                 : json_is_array(v);
  if (!ok) return err(r, at(p, path, key, -1), "expected %s, got %s", wanted[want], kind(v)), NULL;
  if (want == STR && strlen(json_string_value(v)) != json_string_length(v))
    return err(r, p, "the string holds a NUL character"), NULL;
  return v;
}

static int get_int(rd *r, const json_t *obj, const char *path, const char *key, int64_t lo,
                   int64_t hi, int64_t *out) {
  char p[PATH_LEN];
  json_t *v = get(r, obj, path, key, INT);
  if (v == NULL) return 0;
  *out = (int64_t)json_integer_value(v);
  if (*out < lo || *out > hi)
    return err(r, at(p, path, key, -1), "%" PRId64 " is outside %" PRId64 "..%" PRId64, *out, lo,
               hi);
  return 1;
}

static int get_str(rd *r, const json_t *obj, const char *path, const char *key, const char **out) {
  json_t *v = get(r, obj, path, key, STR);
  return v && (*out = json_string_value(v)) != NULL;
}

/* A number; null (when null_ok) gives NaN. */
static int get_num(rd *r, const json_t *obj, const char *path, const char *key, int null_ok,
                   double *out) {
  json_t *v = get(r, obj, path, key, null_ok ? NUM_OR_NULL : NUM);
  if (v) *out = json_is_null(v) ? NAN : json_number_value(v);
  return v != NULL;
}

/* One of choices (NULL-terminated): its index. */
static int get_choice(rd *r, const json_t *obj, const char *path, const char *key,
                      const char *const *choices, int *out) {
  const char *s;
  char p[PATH_LEN];
  if (!get_str(r, obj, path, key, &s)) return 0;
  for (*out = 0; choices[*out]; ++*out)
    if (strcmp(choices[*out], s) == 0) return 1;
  return err(r, at(p, path, key, -1), "\"%.40s\" is not one of the allowed values", s);
}

/* ---- header ---- */

static int read_machine(rd *r, const json_t *root, txattn_machine_info *m) {
  static const char *const keys[] = {"vendor", "brand",  "family", "model", "stepping",
                                     "isa",    "caches", "cores",  NULL};
  static const char *const cache_keys[] = {"l1d", "l2", "l3", NULL};
  const char *text[2];
  int64_t v[4];
  char p[PATH_LEN];
  json_t *o = json_object_get(root, "machine"), *isa, *c;
  if (o == NULL) return err(r, "", "the field \"machine\" is missing");
  if (!keys_ok(r, o, "machine", keys)) return 0;
  for (int i = 0; i < 2; i++) {
    const char *key = i ? "brand" : "vendor";
    size_t size = i ? sizeof m->brand : sizeof m->vendor;
    if (!get_str(r, o, "machine", key, &text[i])) return 0;
    if (strlen(text[i]) >= size)
      return err(r, at(p, "machine", key, -1), "longer than %zu bytes", size - 1);
    memcpy(i ? m->brand : m->vendor, text[i], strlen(text[i]) + 1);
  }
  if (!get_int(r, o, "machine", "family", 0, INT32_MAX, &v[0]) ||
      !get_int(r, o, "machine", "model", 0, INT32_MAX, &v[1]) ||
      !get_int(r, o, "machine", "stepping", 0, INT32_MAX, &v[2]) ||
      (isa = get(r, o, "machine", "isa", ARRAY)) == NULL)
    return 0;
  for (size_t i = 0; i < json_array_size(isa); i++) {
    json_t *e = json_array_get(isa, i);
    int bit = 0;
    at(p, "machine.isa", "", (long)i);
    if (!json_is_string(e)) return err(r, p, "expected an ISA name, got %s", kind(e));
    while (bit < TXATTN_ISA_COUNT_ &&
           strcmp(txattn_isa_name((txattn_isa)bit), json_string_value(e)))
      bit++;
    if (bit == TXATTN_ISA_COUNT_)
      return err(r, p, "unknown ISA \"%.30s\" (known: scalar, avx2, avx512, neon, avx512bf16)",
                 json_string_value(e));
    if (m->isa_mask & (1u << bit)) return err(r, p, "%s is listed twice", json_string_value(e));
    m->isa_mask |= 1u << bit;
  }
  if ((c = json_object_get(o, "caches")) == NULL)
    return err(r, "machine", "the field \"caches\" is missing");
  if (!keys_ok(r, c, "machine.caches", cache_keys) ||
      !get_int(r, c, "machine.caches", "l1d", 0, BIG, &m->l1d_bytes) ||
      !get_int(r, c, "machine.caches", "l2", 0, BIG, &m->l2_bytes) ||
      !get_int(r, c, "machine.caches", "l3", 0, BIG, &m->l3_bytes) ||
      !get_int(r, o, "machine", "cores", 1, 1 << 20, &v[3]))
    return 0;
  m->family = (int)v[0], m->model = (int)v[1], m->stepping = (int)v[2], m->n_cores = (int)v[3];
  return 1;
}

static int read_header(rd *r, const json_t *root) {
  static const char *const keys[] = {"name", "version", "build", NULL};
  const char *lib, *created, *name, *version, *build;
  char why[512], p[PATH_LEN];
  txattn_machine_info m = TXATTN_MACHINE_INFO_INIT;
  json_t *plugins, *profile = json_object_get(root, "profile");
  if (!get_str(r, root, "", "library_version", &lib) ||
      !get_str(r, root, "", "created", &created) || !read_machine(r, root, &m))
    return 0;
  txattn_status s = txattn__tm_set_header(r->t, lib, created, &m, why, sizeof why);
  if (s != TXATTN_OK) return model_err(r, "", s, why);
  if (profile != NULL) {
    if (!json_is_object(profile))
      return err(r, "profile", "expected an object, got %s", kind(profile));
    r->t->profile = json_dumps(profile, JSON_COMPACT | JSON_REAL_PRECISION(6));
    if (r->t->profile == NULL) return model_err(r, "profile", TXATTN_E_NOMEM, "out of memory");
    if (strlen(r->t->profile) > MAX_PROFILE)
      return err(r, "profile", "longer than %d bytes", MAX_PROFILE);
  }
  if ((plugins = get(r, root, "", "plugins", ARRAY)) == NULL) return 0;
  for (size_t i = 0; i < json_array_size(plugins); i++) {
    json_t *o = json_array_get(plugins, i);
    at(p, "plugins", "", (long)i);
    if (!keys_ok(r, o, p, keys) || !get_str(r, o, p, "name", &name) ||
        !get_str(r, o, p, "version", &version) || !get_str(r, o, p, "build", &build))
      return 0;
    if ((s = txattn__tm_add_plugin(r->t, name, version, build, why, sizeof why)) != TXATTN_OK)
      return model_err(r, p, s, why);
  }
  return 1;
}

/* ---- classes ---- */

/* The class key and measured shape. The element types are each optional, f32 when absent;
   "ragged" and "softcap" true or absent (false), "mask_tensor" "bool", "additive" or absent (none),
   "page_size" a page size or absent (contiguous K/V): what the writer leaves out. */
static int read_key(rd *r, const json_t *o, const char *path, txattn_table_class *c) {
  static const char *const shapes[] = {"sym", "left", NULL}, *const tkeys[4] = {"q_type", "k_type",
                                                                                "v_type", "o_type"};
  static const char *const tensors[] = {"bool", "additive", NULL};
  const char *const masks[] = {txattn_mask_name(TXATTN_MASK_NONE),
                               txattn_mask_name(TXATTN_MASK_CAUSAL),
                               txattn_mask_name(TXATTN_MASK_WINDOW), NULL};
  const char *const types[] = {
      txattn_dtype_name(TXATTN_DTYPE_F32),  txattn_dtype_name(TXATTN_DTYPE_F16),
      txattn_dtype_name(TXATTN_DTYPE_BF16), txattn_dtype_name(TXATTN_DTYPE_Q8_0),
      txattn_dtype_name(TXATTN_DTYPE_E4M3), txattn_dtype_name(TXATTN_DTYPE_E5M2),
      txattn_dtype_name(TXATTN_DTYPE_Q4_0), NULL};
  txattn_dtype *dtypes[4] = {&c->q_type, &c->k_type, &c->v_type, &c->o_type};
  int mask = 0, shape = -1, t = 0;
  int64_t v[6];
  json_t *b;
  if (!get_choice(r, o, path, "mask", masks, &mask)) return 0;
  if (mask == TXATTN_MASK_WINDOW && !get_choice(r, o, path, "window", shapes, &shape)) return 0;
  if (mask != TXATTN_MASK_WINDOW && json_object_get(o, "window") != NULL)
    return err(r, path, "\"window\" is only for mask \"window\", not \"%s\"", masks[mask]);
  if (!get_int(r, o, path, "d_qk", 1, BIG, &v[0]) || !get_int(r, o, path, "d_v", 1, BIG, &v[1]) ||
      !get_int(r, o, path, "group", 1, BIG, &v[2]) ||
      !get_int(r, o, path, "threads", 1, 4096, &v[3]) ||
      (b = get(r, o, path, "decode", BOOL)) == NULL ||
      !get_int(r, o, path, "batch", 1, BIG, &v[4]) ||
      !get_int(r, o, path, "heads_q", 1, BIG, &v[5]))
    return 0;
  *c = (txattn_table_class){.mask = (txattn_mask)mask,
                            .window = (txattn_table_window)(shape + 1),
                            .d_qk = v[0],
                            .d_v = v[1],
                            .group = v[2],
                            .threads = (int)v[3],
                            .decode = json_is_true(b),
                            .batch = v[4],
                            .heads_q = v[5]};
  for (int i = 0; i < 4; i++) {
    *dtypes[i] = TXATTN_DTYPE_F32;
    if (json_object_get(o, tkeys[i]) == NULL) continue;
    if (!get_choice(r, o, path, tkeys[i], types, &t)) return 0;
    *dtypes[i] = (txattn_dtype)t;
  }
  if (json_object_get(o, "ragged") != NULL) {
    if ((b = get(r, o, path, "ragged", BOOL)) == NULL) return 0;
    c->ragged = json_is_true(b);
  }
  if (json_object_get(o, "softcap") != NULL) {
    if ((b = get(r, o, path, "softcap", BOOL)) == NULL) return 0;
    c->softcap = json_is_true(b);
  }
  if (json_object_get(o, "mask_tensor") != NULL) {
    if (!get_choice(r, o, path, "mask_tensor", tensors, &t)) return 0;
    c->mask_tensor = t + 1; /* TXATTN_MASK_TENSOR_BOOL or _ADDITIVE */
  }
  if (json_object_get(o, "page_size") != NULL &&
      !get_int(r, o, path, "page_size", 1, BIG, &c->page_size))
    return 0;
  char why[256];
  return txattn__tm_class_ok(c, why, sizeof why) || err(r, path, "%s", why);
}

/* A tunables object {"name": integer, ...}: names point into the JSON, alive with it. */
typedef struct tun_view {
  const char *names[64];
  int64_t values[64];
} tun_view;

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
                       record *x) {
  static const char *const keys[] = {"n",         "r",      "kernel", "tunables", "time_s",
                                     "max_error", "spread", "chosen", "failed",   NULL};
  char p[PATH_LEN], q[PATH_LEN];
  const char *name;
  json_t *v, *ch;
  x->c.spread = -1;
  if (!keys_ok(r, o, path, keys) || !get_int(r, o, path, "n", 1, BIG, &x->n)) return 0;
  if (key->mask == TXATTN_MASK_WINDOW && !get_int(r, o, path, "r", 1, BIG, &x->r)) return 0;
  if (key->mask != TXATTN_MASK_WINDOW && json_object_get(o, "r") != NULL)
    return err(r, path, "\"r\" is only for window classes");
  if (!get_str(r, o, path, "kernel", &x->c.kernel)) return 0;
  if ((x->tun = json_object_get(o, "tunables")) == NULL)
    return err(r, path, "the field \"tunables\" is missing");
  at(p, path, "tunables", -1);
  if (!json_is_object(x->tun)) return err(r, p, "expected an object, got %s", kind(x->tun));
  if (json_object_size(x->tun) > 64) return err(r, p, "more than 64 tunables");
  json_object_foreach((json_t *)x->tun, name, v) {
    if (!json_is_integer(v))
      return err(r, at(q, p, name, -1), "expected an integer, got %s", kind(v));
  }
  if (json_object_get(o, "failed") != NULL) {
    static const char *const timed[] = {"time_s", "spread", "chosen"};
    for (int i = 0; i < 3; i++)
      if (json_object_get(o, timed[i]) != NULL)
        return err(r, path, "a failed record has no \"%s\"", timed[i]);
    return get_str(r, o, path, "failed", &x->failed) &&
           get_num(r, o, path, "max_error", 1, &x->c.max_error);
  }
  if (!get_num(r, o, path, "time_s", 0, &x->c.time_s) ||
      !get_num(r, o, path, "max_error", 0, &x->c.max_error) ||
      (json_object_get(o, "spread") && !get_num(r, o, path, "spread", 0, &x->c.spread)))
    return 0;
  if (x->c.spread < 0 && json_object_get(o, "spread"))
    return err(r, at(p, path, "spread", -1), "must be >= 0");
  if ((ch = json_object_get(o, "chosen")) != NULL && !json_is_true(ch))
    return err(r, at(p, path, "chosen", -1), "expected true (or no \"chosen\"), got %s", kind(ch));
  x->chosen = ch != NULL;
  return 1;
}

/* The candidate of x with its tunables in tun (valid as long as the JSON). */
static txattn_table_candidate with_tunables(const record *x, tun_view *tun) {
  const char *key;
  json_t *v;
  txattn_table_candidate c = x->c;
  c.n_tunables = 0;
  json_object_foreach((json_t *)x->tun, key, v) {
    tun->names[c.n_tunables] = key;
    tun->values[c.n_tunables++] = (int64_t)json_integer_value(v);
  }
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
  if (k > MAX_CANDS)
    return err(r, path, "%zu records at n = %" PRId64 ", r = %" PRId64 ": a shape holds 1..%d", k,
               recs[0].n, recs[0].r, MAX_CANDS);
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
  txattn_table_exclusion e = {c.kernel,         c.n_tunables, c.tunable_names,
                              c.tunable_values, x->n,         x->r,
                              c.max_error,      x->failed,    *key};
  txattn_status s = txattn__tm_add_exclusion(r->t, &e, why, sizeof why);
  return s == TXATTN_OK || model_err(r, path, s, why);
}

/* A class and its records: the timed ones become its points, the failed ones exclusions. A class
   with failed records only is not added (its records are exclusions alone). */
static int read_class(rd *r, const json_t *o, const char *path) {
  static const char *const keys[] = {"mask",        "window",    "d_qk",   "d_v",     "group",
                                     "threads",     "decode",    "batch",  "heads_q", "q_type",
                                     "k_type",      "v_type",    "o_type", "ragged",  "softcap",
                                     "mask_tensor", "page_size", "points", NULL};
  txattn_table_class key = TXATTN_TABLE_CLASS_INIT;
  size_t cls = SIZE_MAX;
  char p[PATH_LEN], q[PATH_LEN], why[512];
  json_t *a;
  if (!keys_ok(r, o, path, keys) || !read_key(r, o, path, &key) ||
      (a = get(r, o, path, "points", ARRAY)) == NULL)
    return 0;
  at(p, path, "points", -1);
  size_t n = json_array_size(a), timed = 0;
  if (n == 0) return err(r, p, "a class needs at least one record");
  record *recs = calloc(n, sizeof *recs);
  txattn_table_candidate *buf = calloc(MAX_CANDS, sizeof *buf);
  tun_view *tun = calloc(MAX_CANDS, sizeof *tun);
  int ok = recs && buf && tun;
  if (!ok) model_err(r, p, TXATTN_E_NOMEM, "out of memory");
  for (size_t i = 0; ok && i < n; i++) {
    recs[i].index = i;
    ok = read_record(r, json_array_get(a, i), at(q, p, "", (long)i), &key, &recs[i]);
    timed += ok && recs[i].failed == NULL;
  }
  if (ok && timed > 0) {
    txattn_status s = txattn__tm_add_class(r->t, &key, &cls, why, sizeof why);
    if (s != TXATTN_OK) ok = model_err(r, path, s, why);
  }
  if (ok) qsort(recs, n, sizeof *recs, by_shape);
  for (size_t i = 0, k = 1; ok && i < n; i += k, k = 1) {
    at(q, p, "", (long)recs[i].index);
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

/* format and format_version first: a newer file gets "unsupported version", not "unknown field". */
static int read_root(rd *r, const json_t *root) {
  static const char *const keys[] = {"format",  "format_version", "library_version",
                                     "created", "machine",        "plugins",
                                     "profile", "classes",        NULL};
  const char *format;
  int64_t version;
  char p[PATH_LEN];
  json_t *classes;
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
  if (!keys_ok(r, root, "", keys) || !read_header(r, root) ||
      (classes = get(r, root, "", "classes", ARRAY)) == NULL)
    return 0;
  for (size_t i = 0; i < json_array_size(classes); i++)
    if (!read_class(r, json_array_get(classes, i), at(p, "classes", "", (long)i))) return 0;
  return 1;
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
  if (root == NULL && json_error_code(&e) == json_error_cannot_open_file)
    return txattn__fail(TXATTN_E_IO, "cannot read the dispatch table %s: %s", path, e.text);
  TXATTN_RETURN_IF(root == NULL && json_error_code(&e) == json_error_out_of_memory, TXATTN_E_NOMEM,
                   "out of memory reading the dispatch table %s", path);
  TXATTN_RETURN_IF(root == NULL, TXATTN_E_TABLE, "malformed dispatch table %s:%d:%d: %s", path,
                   e.line, e.column, e.text);
  rd r = {.t = txattn__tm_new(), .s = TXATTN_E_TABLE};
  int ok = r.t != NULL && (r.t->path = strdup(path)) != NULL;
  if (!ok) r.s = TXATTN_E_NOMEM;
  if (ok) ok = read_root(&r, root);
  json_decref(root);
  if (!ok) {
    txattn_table_free(r.t);
    TXATTN_RETURN_IF(r.s == TXATTN_E_NOMEM, TXATTN_E_NOMEM,
                     "out of memory reading the dispatch table %s", path);
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
