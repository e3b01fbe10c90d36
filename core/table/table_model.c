/* SPDX-License-Identifier: MIT */
/* The dispatch table in memory: the rules every class, point, candidate and header field must
 * follow, and the builders that enforce them (for the public builder and the file parser alike). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "table_model.h"
#include "table_regions.h"
#include "txattn/plugin.h"

#define BIG            (INT64_C(1) << 40) /* sizes beyond this are typos, not shapes */
#define MAX_TUNABLES   64
#define MAX_CANDIDATES TXATTN__TABLE_MAX_CANDIDATES
#define MAX_POINTS     (1 << 16)
#define MAX_CLASSES    4096
#define MAX_EXCLUDED   (1 << 16)
#define MAX_TEXT       63
#define MAX_REASON     511
#define NOMEM(why, sz) fail(TXATTN_E_NOMEM, why, sz, "out of memory")

static txattn_status fail(txattn_status s, char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static txattn_status fail(txattn_status s, char *why, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, size, fmt, ap);
  va_end(ap);
  return s;
}

/* Six significant digits: what the file keeps, so a table in memory equals the one read back. */
static double round6(double x) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.6g", x);
  return strtod(buf, NULL);
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 1;
  size_t new_cap = *cap ? 2 * *cap : 4;
  void *p = realloc(*arr, new_cap * elem);
  if (p == NULL) return 0;
  *arr = p;
  *cap = new_cap;
  return 1;
}

/* ---- names and texts ---- */

const char *txattn__tm_mask_name(const txattn_table_class *c) {
  if (c->mask != TXATTN_MASK_WINDOW) return txattn_mask_name(c->mask);
  return c->window == TXATTN_TABLE_WINDOW_LEFT ? "window-left" : "window-sym";
}

void txattn__tm_types_text(const txattn_table_class *c, char *buf, size_t size) {
  const txattn_dtype q = c->q_type, k = c->k_type, v = c->v_type, o = c->o_type;
  if (!txattn__tm_typed(c))
    snprintf(buf, size, "%s", "");
  else if (q == k && k == v && v == o)
    snprintf(buf, size, "%s", txattn_dtype_name(q));
  else if (q == TXATTN_DTYPE_F32 && o == TXATTN_DTYPE_F32 && k == v)
    snprintf(buf, size, "kv=%s", txattn_dtype_name(k));
  else
    snprintf(buf, size, "q,k,v,o=%s,%s,%s,%s", txattn_dtype_name(q), txattn_dtype_name(k),
             txattn_dtype_name(v), txattn_dtype_name(o));
}

int txattn__tm_class_text(const txattn_table_class *c, char *buf, size_t size) {
  char types[48] = "";
  txattn__tm_types_text(c, types, sizeof types);
  static const char *const tensors[] = {"", " mask=bool", " mask=additive"};
  return snprintf(buf, size, "%s d%" PRId64 "/%" PRId64 " g%" PRId64 " t%d%s%s%s%s%s%s",
                  txattn__tm_mask_name(c), c->d_qk, c->d_v, c->group, c->threads,
                  c->decode ? " decode" : "", c->ragged ? " ragged" : "",
                  c->softcap ? " softcap" : "", tensors[c->mask_tensor % 3], *types ? " " : "",
                  types);
}

int txattn__tm_name_ok(const char *s, int need_dot) {
  size_t n = strnlen(s, MAX_TEXT + 1);
  if (n == 0 || n > MAX_TEXT) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
      return 0;
  }
  return !need_dot || memchr(s, '.', n) != NULL;
}

/* Printable (no control characters), 1..max bytes: safe to print in messages and `txtune show`. */
static int text_ok(const char *s, size_t max, int may_be_empty) {
  size_t n = strnlen(s, max + 1);
  if (n > max || (n == 0 && !may_be_empty)) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
  return 1;
}

/* "YYYY-MM-DDTHH:MM:SSZ" */
static int created_ok(const char *s) {
  static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
  if (strlen(s) != sizeof shape - 1) return 0;
  for (size_t i = 0; shape[i]; i++)
    if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i]) return 0;
  return 1;
}

static int build_ok(const char *s) {
  static const char prefix[] = "fnv1a64x4:";
  size_t k = sizeof prefix - 1;
  if (strncmp(s, prefix, k) != 0 || strlen(s) != k + 16) return 0;
  for (const char *p = s + k; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return 0;
  return 1;
}

void txattn__tm_tunables_text(const txattn__tunables *tun, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < tun->n && used < size; i++) {
    int n = snprintf(buf + used, size - used, "%s%s=%" PRId64, i ? " " : "", tun->names[i],
                     tun->values[i]);
    used += n > 0 ? (size_t)n : 0;
  }
}

/* *dst = *src with zero padding (the struct has some after ragged), so that keys compare and
   copy out byte for byte. */
static void key_copy(txattn_table_class *dst, const txattn_table_class *src) {
  memset(dst, 0, sizeof *dst);
  dst->struct_size = sizeof *dst;
  dst->mask = src->mask;
  dst->window = src->window;
  dst->d_qk = src->d_qk;
  dst->d_v = src->d_v;
  dst->group = src->group;
  dst->threads = src->threads;
  dst->decode = src->decode;
  dst->batch = src->batch;
  dst->heads_q = src->heads_q;
  dst->q_type = src->q_type;
  dst->k_type = src->k_type;
  dst->v_type = src->v_type;
  dst->o_type = src->o_type;
  dst->ragged = src->ragged;
  dst->softcap = src->softcap;
  dst->mask_tensor = src->mask_tensor;
}

/* ---- checks ---- */

int txattn__tm_class_ok(const txattn_table_class *c, char *why, size_t size) {
  if ((int)c->mask < TXATTN_MASK_NONE || (int)c->mask > TXATTN_MASK_WINDOW)
    return txattn__why_not(why, size, "mask %d is not a txattn_mask", (int)c->mask);
  if (c->mask == TXATTN_MASK_WINDOW && c->window != TXATTN_TABLE_WINDOW_SYM &&
      c->window != TXATTN_TABLE_WINDOW_LEFT)
    return txattn__why_not(why, size, "a window class needs the window shape sym or left");
  if (c->mask != TXATTN_MASK_WINDOW && c->window != TXATTN_TABLE_WINDOW_NONE)
    return txattn__why_not(why, size, "only a window class has a window shape");
  const struct {
    const char *name;
    int64_t v, max;
  } f[] = {{"d_qk", c->d_qk, BIG},        {"d_v", c->d_v, BIG},     {"group", c->group, BIG},
           {"threads", c->threads, 4096}, {"batch", c->batch, BIG}, {"heads_q", c->heads_q, BIG}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (f[i].v < 1 || f[i].v > f[i].max)
      return txattn__why_not(why, size, "%s = %" PRId64 " is outside 1..%" PRId64, f[i].name,
                             f[i].v, f[i].max);
  if (c->decode != 0 && c->decode != 1)
    return txattn__why_not(why, size, "decode = %d is neither 0 nor 1", c->decode);
  if (c->heads_q % c->group != 0)
    return txattn__why_not(why, size, "heads_q = %" PRId64 " is not a multiple of group = %" PRId64,
                           c->heads_q, c->group);
  if (c->ragged != 0 && c->ragged != 1)
    return txattn__why_not(why, size, "ragged = %d is neither 0 nor 1", c->ragged);
  if (c->softcap != 0 && c->softcap != 1)
    return txattn__why_not(why, size, "softcap = %d is neither 0 nor 1", c->softcap);
  if (c->mask_tensor < TXATTN_MASK_TENSOR_NONE || c->mask_tensor > TXATTN_MASK_TENSOR_ADDITIVE)
    return txattn__why_not(why, size, "mask_tensor = %d is not a txattn_mask_tensor",
                           c->mask_tensor);
  if (c->ragged && !c->decode)
    return txattn__why_not(why, size, "a ragged class is a decode class (n_q = 1 per sequence)");
  const txattn_dtype types[4] = {c->q_type, c->k_type, c->v_type, c->o_type};
  for (int i = 0; i < 4; i++)
    if (txattn_dtype_size(types[i]) == 0)
      return txattn__why_not(why, size, "%c_type = %d is not a txattn_dtype", "qkvo"[i],
                             (int)types[i]);
  return 1;
}

static int tunables_ok(size_t n, const char *const *names, const int64_t *values, char *why,
                       size_t size) {
  if (n > MAX_TUNABLES)
    return txattn__why_not(why, size, "%zu tunables: at most %d", n, MAX_TUNABLES);
  if (n > 0 && (names == NULL || values == NULL))
    return txattn__why_not(why, size, "%zu tunables but no names or values", n);
  for (size_t i = 0; i < n; i++) {
    if (names[i] == NULL || !txattn__tm_name_ok(names[i], 0))
      return txattn__why_not(why, size, "tunable name \"%.63s\" is not [a-z0-9_.-]{1,63}",
                             names[i] ? names[i] : "(null)");
    for (size_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return txattn__why_not(why, size, "tunable %s is given twice", names[i]);
  }
  return 1;
}

static int kernel_ok(const char *kernel, char *why, size_t size) {
  if (kernel == NULL || !txattn__tm_name_ok(kernel, 1))
    return txattn__why_not(why, size,
                           "kernel \"%.63s\" is not a kernel name ([a-z0-9_.-]{1,63} with a '.')",
                           kernel ? kernel : "(null)");
  return 1;
}

static int candidate_ok(const txattn_table_candidate *c, char *why, size_t size) {
  if (!kernel_ok(c->kernel, why, size)) return 0;
  if (!tunables_ok(c->n_tunables, c->tunable_names, c->tunable_values, why, size)) return 0;
  if (!(isfinite(c->time_s) && c->time_s > 0 && c->time_s < 1e6))
    return txattn__why_not(why, size, "time_s = %g is not a time in seconds (0 < t < 1e6)",
                           c->time_s);
  if (!(isfinite(c->max_error) && c->max_error >= 0))
    return txattn__why_not(why, size, "max_error = %g is not a number >= 0", c->max_error);
  /* max_error is max|O - O_ref| / txattn_error_bound * TXATTN_EXACT_TOLERANCE (dispatch_table.md):
     above the tolerance exactly when the output was outside the bound */
  if (c->max_error > TXATTN_EXACT_TOLERANCE)
    return txattn__why_not(
        why, size,
        "%s is not exact (max_error %g > %g, outside txattn_error_bound): an inexact "
        "candidate belongs in the exclusions",
        c->kernel, c->max_error, TXATTN_EXACT_TOLERANCE);
  if (!isnan(c->spread) && c->spread >= 0 && !(c->spread <= 100))
    return txattn__why_not(why, size, "spread = %g is outside 0..100", c->spread);
  return 1;
}

static int point_coords_ok(const txattn_table_class *k, int64_t n, int64_t r, char *why,
                           size_t size) {
  if (n < 1 || n > BIG)
    return txattn__why_not(why, size, "n = %" PRId64 " is outside 1..%" PRId64, n, BIG);
  if (k->mask == TXATTN_MASK_WINDOW && (r < 1 || r > BIG))
    return txattn__why_not(why, size, "r = %" PRId64 " is outside 1..%" PRId64 " (a window class)",
                           r, BIG);
  if (k->mask != TXATTN_MASK_WINDOW && r != 0)
    return txattn__why_not(why, size, "r = %" PRId64 " must be 0 outside window classes", r);
  return 1;
}

/* ---- records ---- */

static void tunables_free(txattn__tunables *t) {
  for (size_t i = 0; i < t->n; i++) free(t->names[i]);
  free(t->names);
  free(t->values);
  *t = (txattn__tunables){0};
}

static int tunables_copy(txattn__tunables *t, size_t n, const char *const *names,
                         const int64_t *values) {
  *t = (txattn__tunables){0};
  if (n == 0) return 1;
  t->names = calloc(n, sizeof *t->names);
  t->values = malloc(n * sizeof *t->values);
  if (t->names == NULL || t->values == NULL) {
    tunables_free(t);
    return 0;
  }
  for (t->n = 0; t->n < n; t->n++) {
    if ((t->names[t->n] = strdup(names[t->n])) == NULL) {
      tunables_free(t);
      return 0;
    }
    t->values[t->n] = values[t->n];
  }
  return 1;
}

static void cand_free(txattn__cand *c) {
  free(c->kernel);
  tunables_free(&c->tun);
  free(c->kvals);
  memset(c, 0, sizeof *c);
}

static int cand_copy(txattn__cand *d, const txattn_table_candidate *s) {
  memset(d, 0, sizeof *d);
  if ((d->kernel = strdup(s->kernel)) == NULL ||
      !tunables_copy(&d->tun, s->n_tunables, s->tunable_names, s->tunable_values)) {
    cand_free(d);
    return 0;
  }
  d->time_s = round6(s->time_s);
  d->max_error = round6(s->max_error);
  d->spread = isnan(s->spread) || s->spread < 0 ? -1.0 : round6(s->spread);
  return 1;
}

static void point_free(txattn__point *p) {
  for (size_t i = 0; i < p->n_cands; i++) cand_free(&p->cands[i]);
  free(p->cands);
}

static void class_free(txattn__class *c) {
  for (size_t i = 0; i < c->n_points; i++) point_free(&c->points[i]);
  free(c->points);
  free(c->regions);
  free(c->ns);
  free(c->rs);
  free(c->grid);
}

txattn_table *txattn__tm_new(void) {
  txattn_table *t = calloc(1, sizeof *t);
  if (t != NULL) t->format_version = TXATTN_TABLE_FORMAT_VERSION;
  return t;
}

void txattn__tm_free(txattn_table *t) {
  if (t == NULL) return;
  for (size_t i = 0; i < t->n_plugins; i++) {
    free(t->plugins[i].name);
    free(t->plugins[i].version);
    free(t->plugins[i].build);
  }
  for (size_t i = 0; i < t->n_classes; i++) class_free(&t->classes[i]);
  for (size_t i = 0; i < t->n_excluded; i++) {
    cand_free(&t->excluded[i].c);
    free(t->excluded[i].reason);
  }
  free(t->plugins);
  free(t->classes);
  free(t->excluded);
  free(t->library_version);
  free(t->created);
  free(t->profile);
  free(t->path);
  free(t);
}

/* ---- builders ---- */

static int machine_ok(const txattn_machine_info *m, char *why, size_t size) {
  if (!text_ok(m->vendor, sizeof m->vendor - 1, 0))
    return txattn__why_not(why, size, "machine.vendor is empty, too long or not printable");
  if (!text_ok(m->brand, sizeof m->brand - 1, 1))
    return txattn__why_not(why, size, "machine.brand is too long or not printable");
  if (m->family < 0 || m->model < 0 || m->stepping < 0)
    return txattn__why_not(why, size, "machine.family, model and stepping must be >= 0");
  if (m->isa_mask >> TXATTN_ISA_COUNT_)
    return txattn__why_not(why, size, "machine.isa has bits beyond the known ISAs (0x%x)",
                           m->isa_mask);
  if (m->n_cores < 1)
    return txattn__why_not(why, size, "machine.cores = %d must be >= 1", m->n_cores);
  if (m->l1d_bytes < 0 || m->l2_bytes < 0 || m->l3_bytes < 0)
    return txattn__why_not(why, size, "machine.caches sizes must be >= 0");
  return 1;
}

txattn_status txattn__tm_set_header(txattn_table *t, const char *library_version,
                                    const char *created, const txattn_machine_info *m, char *why,
                                    size_t size) {
  if (!text_ok(library_version, MAX_TEXT, 0))
    return fail(TXATTN_E_INVALID, why, size,
                "library_version is empty, longer than %d bytes or not printable", MAX_TEXT);
  if (!created_ok(created))
    return fail(TXATTN_E_INVALID, why, size,
                "created = \"%.40s\" is not a UTC time YYYY-MM-DDTHH:MM:SSZ", created);
  if (!machine_ok(m, why, size)) return TXATTN_E_INVALID;
  char *lv = strdup(library_version), *cr = strdup(created);
  if (lv == NULL || cr == NULL) {
    free(lv);
    free(cr);
    return NOMEM(why, size);
  }
  free(t->library_version);
  free(t->created);
  t->library_version = lv;
  t->created = cr;
  memset(&t->machine, 0, sizeof t->machine);
  memcpy(t->machine.vendor, m->vendor, sizeof m->vendor);
  memcpy(t->machine.brand, m->brand, sizeof m->brand);
  t->machine.family = m->family;
  t->machine.model = m->model;
  t->machine.stepping = m->stepping;
  t->machine.isa_mask = m->isa_mask;
  t->machine.n_cores = m->n_cores;
  t->machine.l1d_bytes = m->l1d_bytes;
  t->machine.l2_bytes = m->l2_bytes;
  t->machine.l3_bytes = m->l3_bytes;
  return TXATTN_OK;
}

txattn_status txattn__tm_add_plugin(txattn_table *t, const char *name, const char *version,
                                    const char *build, char *why, size_t size) {
  if (!txattn__tm_name_ok(name, 0))
    return fail(TXATTN_E_INVALID, why, size, "plugin name \"%.63s\" is not [a-z0-9_.-]{1,63}",
                name);
  if (!text_ok(version, MAX_TEXT, 0))
    return fail(TXATTN_E_INVALID, why, size,
                "plugin %s: version is empty, too long or not printable", name);
  if (!build_ok(build))
    return fail(TXATTN_E_INVALID, why, size,
                "plugin %s: build \"%.40s\" is not \"fnv1a64x4:\" and 16 lowercase hex digits",
                name, build);
  for (size_t i = 0; i < t->n_plugins; i++)
    if (strcmp(t->plugins[i].name, name) == 0)
      return fail(TXATTN_E_INVALID, why, size, "plugin %s is listed twice", name);
  txattn__tplugin *p = realloc(t->plugins, (t->n_plugins + 1) * sizeof *p);
  if (p == NULL) return NOMEM(why, size);
  t->plugins = p;
  txattn__tplugin *e = &p[t->n_plugins];
  e->name = strdup(name);
  e->version = strdup(version);
  e->build = strdup(build);
  if (e->name == NULL || e->version == NULL || e->build == NULL) {
    free(e->name);
    free(e->version);
    free(e->build);
    return NOMEM(why, size);
  }
  t->n_plugins++;
  return TXATTN_OK;
}

txattn_status txattn__tm_add_class(txattn_table *t, const txattn_table_class *c, size_t *index,
                                   char *why, size_t size) {
  if (!txattn__tm_class_ok(c, why, size)) return TXATTN_E_INVALID;
  if (t->n_classes >= MAX_CLASSES)
    return fail(TXATTN_E_INVALID, why, size, "a table holds at most %d classes", MAX_CLASSES);
  for (size_t i = 0; i < t->n_classes; i++)
    if (txattn__tm_same_key(&t->classes[i].key, c)) {
      char d[96];
      txattn__tm_class_text(c, d, sizeof d);
      return fail(TXATTN_E_INVALID, why, size, "class %s is already in the table (class %zu)", d,
                  i);
    }
  if (!grow((void **)&t->classes, &t->cap_classes, t->n_classes, sizeof *t->classes))
    return NOMEM(why, size);
  txattn__class *k = &t->classes[t->n_classes];
  memset(k, 0, sizeof *k);
  key_copy(&k->key, c);
  if (index) *index = t->n_classes;
  t->n_classes++;
  return TXATTN_OK;
}

static int cand_order(const void *pa, const void *pb) {
  const txattn__cand *a = pa, *b = pb;
  if (a->time_s != b->time_s) return a->time_s < b->time_s ? -1 : 1;
  int c = strcmp(a->kernel, b->kernel);
  if (c != 0) return c;
  char ta[512], tb[512];
  txattn__tm_tunables_text(&a->tun, ta, sizeof ta);
  txattn__tm_tunables_text(&b->tun, tb, sizeof tb);
  return strcmp(ta, tb);
}

/* The chosen candidate first, the others fastest first; *tie when the chosen one is slower than
   the fastest. */
static txattn_status order_cands(txattn__cand *c, size_t n, long chosen, int *tie, char *why,
                                 size_t size) {
  *tie = 0;
  if (chosen < 0) {
    qsort(c, n, sizeof *c, cand_order);
    return TXATTN_OK;
  }
  txattn__cand w = c[chosen];
  c[chosen] = c[0];
  c[0] = w;
  qsort(c + 1, n - 1, sizeof *c, cand_order);
  if (n < 2 || cand_order(&c[0], &c[1]) <= 0) return TXATTN_OK; /* the fastest after all */
  *tie = 1;
  if (!(c[0].time_s <= TXATTN__TIE_MAX_RATIO * c[1].time_s))
    return fail(TXATTN_E_INVALID, why, size,
                "the chosen candidate (%s, %g s) is more than %g x the fastest (%s, %g s): a tie "
                "is a choice among near-equal times",
                c[0].kernel, c[0].time_s, TXATTN__TIE_MAX_RATIO, c[1].kernel, c[1].time_s);
  return TXATTN_OK;
}

typedef struct keyed {
  char *key;
  size_t i;
} keyed;

/* A candidate's identity as text: its kernel, then its tunables sorted by name, so that two keys
   are equal exactly when txattn__tm_same_candidate holds. NULL when out of memory. */
static char *cand_key(const txattn__cand *c) {
  size_t ord[MAX_TUNABLES], len = strlen(c->kernel) + 2;
  for (size_t i = 0; i < c->tun.n; i++) { /* insertion sort: at most MAX_TUNABLES names */
    size_t j = i;
    for (; j > 0 && strcmp(c->tun.names[ord[j - 1]], c->tun.names[i]) > 0; j--) ord[j] = ord[j - 1];
    ord[j] = i;
    len += strlen(c->tun.names[i]) + 24;
  }
  char *k = malloc(len);
  if (k == NULL) return NULL;
  size_t used = (size_t)snprintf(k, len, "%s", c->kernel);
  for (size_t i = 0; i < c->tun.n && used < len; i++)
    used += (size_t)snprintf(k + used, len - used, "\x01%s=%" PRId64, c->tun.names[ord[i]],
                             c->tun.values[ord[i]]);
  return k;
}

static int keyed_order(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  int c = strcmp(a->key, b->key);
  return c != 0 ? c : a->i < b->i ? -1 : a->i > b->i;
}

/* No candidate twice, in O(n log n): the candidates sorted by identity, equal ones are adjacent.
   Names the earliest repeat, as a scan in file order would. */
static txattn_status no_repeats(const txattn__cand *c, size_t n, char *why, size_t size) {
  keyed *ks = calloc(n, sizeof *ks);
  txattn_status s = ks == NULL ? NOMEM(why, size) : TXATTN_OK;
  for (size_t i = 0; i < n && s == TXATTN_OK; i++)
    if ((ks[i] = (keyed){cand_key(&c[i]), i}).key == NULL) s = NOMEM(why, size);
  size_t later = n, first = 0;
  if (s == TXATTN_OK) {
    qsort(ks, n, sizeof *ks, keyed_order);
    for (size_t i = 1, run = 0; i < n; i++) {
      if (strcmp(ks[i].key, ks[run].key) != 0)
        run = i;
      else if (ks[i].i < later)
        later = ks[i].i, first = ks[run].i;
    }
    if (later < n)
      s = fail(TXATTN_E_INVALID, why, size, "candidates[%zu] repeats candidates[%zu] (%s)", later,
               first, c[first].kernel);
  }
  for (size_t i = 0; ks != NULL && i < n; i++) free(ks[i].key);
  free(ks);
  return s;
}

static txattn_status copy_cands(const txattn_table_candidate *in, size_t n, long chosen,
                                txattn__cand **out, int *tie, char *why, size_t size) {
  txattn__cand *c = calloc(n, sizeof *c);
  if (c == NULL) return NOMEM(why, size);
  size_t done = 0;
  txattn_status s = TXATTN_OK;
  for (; done < n && s == TXATTN_OK; done++) {
    if (!candidate_ok(&in[done], why, size)) {
      char inner[384];
      snprintf(inner, sizeof inner, "%s", why);
      s = fail(TXATTN_E_INVALID, why, size, "candidates[%zu]: %s", done, inner);
      break;
    }
    if (!cand_copy(&c[done], &in[done])) s = NOMEM(why, size);
  }
  if (s == TXATTN_OK) s = no_repeats(c, n, why, size);
  if (s == TXATTN_OK) s = order_cands(c, n, chosen, tie, why, size);
  if (s != TXATTN_OK) {
    for (size_t j = 0; j < done && j < n; j++) cand_free(&c[j]);
    free(c);
    return s;
  }
  *out = c;
  return TXATTN_OK;
}

/* Where (n, r) goes in the class's (r, n) order; -1 if a point is there already. */
static long point_slot(const txattn__class *k, int64_t n, int64_t r) {
  size_t lo = 0, hi = k->n_points;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const txattn__point *p = &k->points[mid];
    if (p->r < r || (p->r == r && p->n < n))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < k->n_points && k->points[lo].r == r && k->points[lo].n == n) return -1;
  return (long)lo;
}

txattn_status txattn__tm_add_point(txattn_table *t, size_t cls, int64_t n, int64_t r,
                                   const txattn_table_candidate *cands, size_t n_cands, long chosen,
                                   int reindex, char *why, size_t size) {
  if (cls >= t->n_classes)
    return fail(TXATTN_E_INVALID, why, size, "class %zu is out of range (the table has %zu)", cls,
                t->n_classes);
  txattn__class *k = &t->classes[cls];
  if (!point_coords_ok(&k->key, n, r, why, size)) return TXATTN_E_INVALID;
  if (n_cands == 0 || n_cands > MAX_CANDIDATES || cands == NULL)
    return fail(TXATTN_E_INVALID, why, size, "a point needs 1..%d candidates, got %zu",
                MAX_CANDIDATES, n_cands);
  long slot = point_slot(k, n, r);
  if (slot < 0)
    return fail(TXATTN_E_INVALID, why, size,
                "the class already has a point at n = %" PRId64 ", r = %" PRId64, n, r);
  if (k->n_points >= MAX_POINTS)
    return fail(TXATTN_E_INVALID, why, size, "a class holds at most %d points", MAX_POINTS);
  if (chosen >= (long)n_cands)
    return fail(TXATTN_E_INVALID, why, size, "chosen = %ld is not a candidate (there are %zu)",
                chosen, n_cands);
  txattn__cand *c = NULL;
  int tie = 0;
  txattn_status s = copy_cands(cands, n_cands, chosen, &c, &tie, why, size);
  if (s != TXATTN_OK) return s;
  txattn__point p = {n, r, n_cands, c, tie, 0};
  if (!grow((void **)&k->points, &k->cap_points, k->n_points, sizeof *k->points)) {
    point_free(&p);
    return NOMEM(why, size);
  }
  memmove(&k->points[slot + 1], &k->points[slot], (k->n_points - (size_t)slot) * sizeof p);
  k->points[slot] = p;
  k->n_points++;
  if (reindex && !txattn__tm_reindex(k)) {
    point_free(&k->points[slot]);
    memmove(&k->points[slot], &k->points[slot + 1], (k->n_points - (size_t)slot - 1) * sizeof p);
    k->n_points--;
    txattn__tm_reindex(k); /* restores what was there: its memory was just freed, so it fits */
    return fail(TXATTN_E_NOMEM, why, size,
                "out of memory, or too many distinct n and r values in one class");
  }
  return TXATTN_OK;
}

txattn_status txattn__tm_add_exclusion(txattn_table *t, const txattn_table_exclusion *e, char *why,
                                       size_t size) {
  if (!txattn__tm_class_ok(&e->cls, why, size)) return TXATTN_E_INVALID;
  if (!kernel_ok(e->kernel, why, size) ||
      !tunables_ok(e->n_tunables, e->tunable_names, e->tunable_values, why, size) ||
      !point_coords_ok(&e->cls, e->n, e->r, why, size))
    return TXATTN_E_INVALID;
  if (!isnan(e->max_error) && !(e->max_error >= 0 && isfinite(e->max_error)))
    return fail(TXATTN_E_INVALID, why, size, "max_error = %g must be >= 0 (NaN: not finite)",
                e->max_error);
  if (e->reason == NULL || !text_ok(e->reason, MAX_REASON, 0))
    return fail(TXATTN_E_INVALID, why, size,
                "reason is missing, longer than %d bytes or not printable", MAX_REASON);
  if (t->n_excluded >= MAX_EXCLUDED)
    return fail(TXATTN_E_INVALID, why, size, "a table holds at most %d exclusions", MAX_EXCLUDED);
  if (!grow((void **)&t->excluded, &t->cap_excluded, t->n_excluded, sizeof *t->excluded))
    return NOMEM(why, size);
  txattn__exclusion *x = &t->excluded[t->n_excluded];
  memset(x, 0, sizeof *x);
  txattn_table_candidate as_cand = {.struct_size = sizeof as_cand,
                                    .kernel = e->kernel,
                                    .n_tunables = e->n_tunables,
                                    .tunable_names = e->tunable_names,
                                    .tunable_values = e->tunable_values,
                                    .time_s = 1.0,
                                    .max_error = 0.0,
                                    .spread = -1.0};
  if (!cand_copy(&x->c, &as_cand) || (x->reason = strdup(e->reason)) == NULL) {
    cand_free(&x->c);
    return NOMEM(why, size);
  }
  x->c.max_error = isnan(e->max_error) ? NAN : round6(e->max_error);
  key_copy(&x->key, &e->cls);
  x->n = e->n;
  x->r = e->r;
  t->n_excluded++;
  return TXATTN_OK;
}
