/* SPDX-License-Identifier: MIT */
/* The dispatch table in memory: the rules every class, point, candidate and header field must
 * follow, the builders that enforce them (for txtune's builder and the file reader alike), what is
 * derived from the points (each class's lookup index and its regions) and the getters.
 *
 * Regions are rectangles of neighbouring measured points with one winner (kernel and tunables),
 * found row by row: in each r row, runs of points adjacent in n with one winner; a run whose n
 * extent and winner equal those of a rectangle ending in the row below extends it upwards. The
 * lookup never decides by them, only by the points; they name where a choice holds. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "table_model.h"
#include "txattn/plugin.h"

#define BIG          (INT64_C(1) << 40) /* sizes beyond this are typos, not shapes */
#define MAX_TUNABLES 64
#define MAX_CANDS    TXATTN__TABLE_MAX_CANDIDATES
#define MAX_TEXT     63
#define TIE_RATIO    1.25 /* a chosen winner is at most this much slower than the fastest */
/* a builder's refusal: the reason in why, E_INVALID (or E_NOMEM) returned */
#define BAD(...) (txattn__why_not(why, size, __VA_ARGS__), TXATTN_E_INVALID)
#define NOMEM    (txattn__why_not(why, size, "out of memory"), TXATTN_E_NOMEM)

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

/* ---- names, texts and checks ---- */

int txattn_table_class_describe(const txattn_table_class *c, char *buf, size_t size) {
  if (c == NULL) {
    txattn__fail(TXATTN_E_INVALID, "txattn_table_class_describe: c is NULL");
    return -1;
  }
  const txattn_dtype q = c->q_type, k = c->k_type, v = c->v_type, o = c->o_type;
  const char *mask = c->mask != TXATTN_MASK_WINDOW           ? txattn_mask_name(c->mask)
                     : c->window == TXATTN_TABLE_WINDOW_LEFT ? "window-left"
                                                             : "window-sym";
  char types[48] = "";
  if (q == k && k == v && v == o && q != TXATTN_DTYPE_F32)
    snprintf(types, sizeof types, " %s", txattn_dtype_name(q));
  else if (q == TXATTN_DTYPE_F32 && o == TXATTN_DTYPE_F32 && k == v && k != TXATTN_DTYPE_F32)
    snprintf(types, sizeof types, " kv=%s", txattn_dtype_name(k));
  else if (q != TXATTN_DTYPE_F32 || k != TXATTN_DTYPE_F32 || v != TXATTN_DTYPE_F32 ||
           o != TXATTN_DTYPE_F32)
    snprintf(types, sizeof types, " q,k,v,o=%s,%s,%s,%s", txattn_dtype_name(q),
             txattn_dtype_name(k), txattn_dtype_name(v), txattn_dtype_name(o));
  static const char *const tensors[] = {"", " mask=bool", " mask=additive"};
  char paged[32] = "";
  if (c->page_size > 0) snprintf(paged, sizeof paged, " paged%" PRId64, c->page_size);
  return snprintf(buf, size, "%s d%" PRId64 "/%" PRId64 " g%" PRId64 " t%d%s%s%s%s%s%s", mask,
                  c->d_qk, c->d_v, c->group, c->threads, c->decode ? " decode" : "",
                  c->ragged ? " ragged" : "", c->softcap ? " softcap" : "",
                  tensors[(unsigned)c->mask_tensor % 3], paged, types);
}

/* [a-z0-9_.-]{1,63}, with a '.' if need_dot */
static int name_ok(const char *s, int need_dot) {
  size_t n = strnlen(s, MAX_TEXT + 1);
  if (n == 0 || n > MAX_TEXT || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_.-") != n) return 0;
  return !need_dot || memchr(s, '.', n) != NULL;
}

/* Printable (no control characters), at most max bytes: safe in messages and `txtune show`. */
static int text_ok(const char *s, size_t max, int may_be_empty) {
  size_t n = strnlen(s, max + 1);
  if (n > max || (n == 0 && !may_be_empty)) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
  return 1;
}

/* s has the shape of pattern, where '#' is a decimal and '*' a lowercase hex digit. */
static int shaped(const char *s, const char *pattern) {
  for (; *pattern; s++, pattern++)
    if (*pattern == '#'   ? !(*s >= '0' && *s <= '9')
        : *pattern == '*' ? !((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))
                          : *s != *pattern)
      return 0;
  return *s == '\0';
}

/* *c with zero padding (the struct has some), so that keys compare and copy out byte for byte. */
static void key_copy(txattn_table_class *dst, const txattn_table_class *c) {
  memset(dst, 0, sizeof *dst);
  dst->mask = c->mask, dst->window = c->window, dst->d_qk = c->d_qk, dst->d_v = c->d_v;
  dst->group = c->group, dst->threads = c->threads, dst->decode = c->decode;
  dst->batch = c->batch, dst->heads_q = c->heads_q, dst->ragged = c->ragged;
  dst->q_type = c->q_type, dst->k_type = c->k_type, dst->v_type = c->v_type;
  dst->o_type = c->o_type, dst->softcap = c->softcap, dst->mask_tensor = c->mask_tensor;
  dst->page_size = c->page_size;
}

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
  if (c->page_size < 0 || c->page_size > BIG)
    return txattn__why_not(why, size, "page_size = %" PRId64 " is outside 0..%" PRId64,
                           c->page_size, BIG);
  const txattn_dtype types[4] = {c->q_type, c->k_type, c->v_type, c->o_type};
  for (int i = 0; i < 4; i++)
    if (txattn_dtype_size(types[i]) == 0)
      return txattn__why_not(why, size, "%c_type = %d is not a txattn_dtype", "qkvo"[i],
                             (int)types[i]);
  if ((TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4) &
      (TXATTN_DTYPE_BIT(c->q_type) | TXATTN_DTYPE_BIT(c->o_type)))
    return txattn__why_not(
        why, size, "q_type and o_type are f32, f16 or bf16 (8-bit and 4-bit are for k and v)");
  return 1;
}

/* A record's kernel name and tunables. */
static int names_ok(const char *kernel, size_t n_tun, const char *const *names,
                    const int64_t *values, char *why, size_t size) {
  if (kernel == NULL || !name_ok(kernel, 1))
    return txattn__why_not(why, size,
                           "kernel \"%.63s\" is not a kernel name ([a-z0-9_.-]{1,63} with a '.')",
                           kernel ? kernel : "(null)");
  if (n_tun > MAX_TUNABLES)
    return txattn__why_not(why, size, "%zu tunables: at most %d", n_tun, MAX_TUNABLES);
  if (n_tun > 0 && (names == NULL || values == NULL))
    return txattn__why_not(why, size, "%zu tunables but no names or values", n_tun);
  for (size_t i = 0; i < n_tun; i++) {
    if (names[i] == NULL || !name_ok(names[i], 0))
      return txattn__why_not(why, size, "tunable name \"%.63s\" is not [a-z0-9_.-]{1,63}",
                             names[i] ? names[i] : "(null)");
    for (size_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return txattn__why_not(why, size, "tunable %s is given twice", names[i]);
  }
  return 1;
}

/* A record's shape (n, r) in class k. */
static int coords_ok(const txattn_table_class *k, int64_t n, int64_t r, char *why, size_t size) {
  if (n < 1 || n > BIG)
    return txattn__why_not(why, size, "n = %" PRId64 " is outside 1..%" PRId64, n, BIG);
  if (k->mask == TXATTN_MASK_WINDOW && (r < 1 || r > BIG))
    return txattn__why_not(why, size, "r = %" PRId64 " is outside 1..%" PRId64 " (a window class)",
                           r, BIG);
  if (k->mask != TXATTN_MASK_WINDOW && r != 0)
    return txattn__why_not(why, size, "r = %" PRId64 " must be 0 outside window classes", r);
  return 1;
}

static int candidate_ok(const txattn_table_candidate *c, char *why, size_t size) {
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

/* ---- records ---- */

static void cand_free(txattn__cand *c) {
  for (size_t i = 0; i < c->tun.n; i++) free(c->tun.names[i]);
  free(c->tun.names);
  free(c->tun.values);
  free(c->kernel);
  free(c->kvals);
  memset(c, 0, sizeof *c);
}

static int cand_copy(txattn__cand *d, const txattn_table_candidate *s) {
  size_t n = s->n_tunables;
  memset(d, 0, sizeof *d);
  d->kernel = strdup(s->kernel);
  d->tun.names = calloc(n ? n : 1, sizeof *d->tun.names);
  d->tun.values = malloc((n ? n : 1) * sizeof *d->tun.values);
  int ok = d->kernel && d->tun.names && d->tun.values;
  for (; ok && d->tun.n < n; d->tun.n++) {
    d->tun.values[d->tun.n] = s->tunable_values[d->tun.n];
    ok = (d->tun.names[d->tun.n] = strdup(s->tunable_names[d->tun.n])) != NULL;
  }
  d->time_s = round6(s->time_s);
  d->max_error = isnan(s->max_error) ? NAN : round6(s->max_error);
  d->spread = isnan(s->spread) || s->spread < 0 ? -1.0 : round6(s->spread);
  if (!ok) cand_free(d);
  return ok;
}

static void class_free(txattn__class *c) {
  for (size_t i = 0; i < c->n_points; i++) {
    for (size_t j = 0; j < c->points[i].n_cands; j++) cand_free(&c->points[i].cands[j]);
    free(c->points[i].cands);
  }
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

void txattn_table_free(txattn_table *t) {
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
    return BAD("library_version is empty, longer than %d bytes or not printable", MAX_TEXT);
  if (!shaped(created, "####-##-##T##:##:##Z"))
    return BAD("created = \"%.40s\" is not a UTC time YYYY-MM-DDTHH:MM:SSZ", created);
  if (!machine_ok(m, why, size)) return TXATTN_E_INVALID;
  free(t->library_version);
  free(t->created);
  t->library_version = strdup(library_version);
  t->created = strdup(created);
  if (t->library_version == NULL || t->created == NULL) return NOMEM;
  memset(&t->machine, 0, sizeof t->machine);
  memcpy(t->machine.vendor, m->vendor, sizeof m->vendor);
  memcpy(t->machine.brand, m->brand, sizeof m->brand);
  t->machine.family = m->family, t->machine.model = m->model, t->machine.stepping = m->stepping;
  t->machine.isa_mask = m->isa_mask, t->machine.n_cores = m->n_cores;
  t->machine.l1d_bytes = m->l1d_bytes, t->machine.l2_bytes = m->l2_bytes;
  t->machine.l3_bytes = m->l3_bytes;
  return TXATTN_OK;
}

txattn_status txattn__tm_add_plugin(txattn_table *t, const char *name, const char *version,
                                    const char *build, char *why, size_t size) {
  if (!name_ok(name, 0)) return BAD("plugin name \"%.63s\" is not [a-z0-9_.-]{1,63}", name);
  if (!text_ok(version, MAX_TEXT, 0))
    return BAD("plugin %s: version is empty, too long or not printable", name);
  if (!shaped(build, "fnv1a64x4:****************"))
    return BAD("plugin %s: build \"%.40s\" is not \"fnv1a64x4:\" and 16 lowercase hex digits", name,
               build);
  for (size_t i = 0; i < t->n_plugins; i++)
    if (strcmp(t->plugins[i].name, name) == 0) return BAD("plugin %s is listed twice", name);
  txattn__tplugin *p = realloc(t->plugins, (t->n_plugins + 1) * sizeof *p);
  if (p == NULL) return NOMEM;
  t->plugins = p;
  txattn__tplugin e = {strdup(name), strdup(version), strdup(build)};
  if (e.name == NULL || e.version == NULL || e.build == NULL) {
    free(e.name);
    free(e.version);
    free(e.build);
    return NOMEM;
  }
  p[t->n_plugins++] = e;
  return TXATTN_OK;
}

txattn_status txattn__tm_add_class(txattn_table *t, const txattn_table_class *c, size_t *index,
                                   char *why, size_t size) {
  char d[96];
  if (!txattn__tm_class_ok(c, why, size)) return TXATTN_E_INVALID;
  if (t->n_classes >= 4096) return BAD("a table holds at most %d classes", 4096);
  for (size_t i = 0; i < t->n_classes; i++)
    if (txattn__tm_same_key(&t->classes[i].key, c)) {
      txattn_table_class_describe(c, d, sizeof d);
      return BAD("class %s is already in the table (class %zu)", d, i);
    }
  if (!grow((void **)&t->classes, &t->cap_classes, t->n_classes, sizeof *t->classes)) return NOMEM;
  txattn__class *k = &t->classes[t->n_classes];
  memset(k, 0, sizeof *k);
  key_copy(&k->key, c);
  if (index) *index = t->n_classes;
  t->n_classes++;
  return TXATTN_OK;
}

/* The tunables as text, "block_q=64 block_k=256"; sorted by name when sorted is set, so that two
   candidates are the same exactly when these texts and their kernels are. */
static void tunables_text(const txattn__tunables *tun, int sorted, char *buf, size_t size) {
  size_t ord[MAX_TUNABLES], used = 0;
  for (size_t i = 0; i < tun->n; i++) { /* insertion sort: at most MAX_TUNABLES names */
    size_t j = i;
    for (; sorted && j > 0 && strcmp(tun->names[ord[j - 1]], tun->names[i]) > 0; j--)
      ord[j] = ord[j - 1];
    ord[j] = i;
  }
  buf[0] = '\0';
  for (size_t i = 0; i < tun->n && used < size; i++) {
    int n = snprintf(buf + used, size - used, "%s%s=%" PRId64, i ? " " : "", tun->names[ord[i]],
                     tun->values[ord[i]]);
    used += n > 0 ? (size_t)n : 0;
  }
}

static int cand_order(const void *pa, const void *pb) {
  const txattn__cand *a = pa, *b = pb;
  if (a->time_s != b->time_s) return a->time_s < b->time_s ? -1 : 1;
  int c = strcmp(a->kernel, b->kernel);
  if (c != 0) return c;
  char ta[512], tb[512];
  tunables_text(&a->tun, 0, ta, sizeof ta);
  tunables_text(&b->tun, 0, tb, sizeof tb);
  return strcmp(ta, tb);
}

/* A candidate's identity (kernel, then its tunables by name) and its index, for finding repeats
   in O(n log n): sorted by identity, equal ones are adjacent. */
typedef struct keyed {
  char *key;
  size_t i;
} keyed;

static int keyed_order(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  int c = strcmp(a->key, b->key);
  return c != 0 ? c : a->i < b->i ? -1 : a->i > b->i;
}

/* No candidate twice; names the earliest repeat, as a scan in the caller's order would. */
static txattn_status no_repeats(const txattn__cand *c, size_t n, char *why, size_t size) {
  keyed *ks = calloc(n, sizeof *ks);
  int ok = ks != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    size_t len = strlen(c[i].kernel) + 2;
    for (size_t j = 0; j < c[i].tun.n; j++) len += strlen(c[i].tun.names[j]) + 22;
    ks[i] = (keyed){malloc(len), i};
    if ((ok = ks[i].key != NULL)) {
      int used = snprintf(ks[i].key, len, "%s\x01", c[i].kernel);
      tunables_text(&c[i].tun, 1, ks[i].key + used, len - (size_t)used);
    }
  }
  if (ok) qsort(ks, n, sizeof *ks, keyed_order);
  size_t later = n, first = 0;
  for (size_t i = 1, run = 0; ok && i < n; i++) {
    if (strcmp(ks[i].key, ks[run].key) != 0)
      run = i;
    else if (ks[i].i < later)
      later = ks[i].i, first = ks[run].i;
  }
  for (size_t i = 0; ks != NULL && i < n; i++) free(ks[i].key);
  free(ks);
  if (!ok) return NOMEM;
  if (later < n)
    return BAD("candidates[%zu] repeats candidates[%zu] (%s)", later, first, c[first].kernel);
  return TXATTN_OK;
}

/* The candidates copied, the chosen one first (a tie when it is not the fastest) and the others
   fastest first (equal times by kernel name). */
static txattn_status copy_cands(const txattn_table_candidate *in, size_t n, long chosen,
                                txattn__cand **out, int *tie, char *why, size_t size) {
  txattn__cand *c = calloc(n, sizeof *c);
  if (c == NULL) return NOMEM;
  size_t done = 0;
  txattn_status s = TXATTN_OK;
  char inner[384];
  for (; done < n && s == TXATTN_OK; done++) {
    if (!names_ok(in[done].kernel, in[done].n_tunables, in[done].tunable_names,
                  in[done].tunable_values, inner, sizeof inner) ||
        !candidate_ok(&in[done], inner, sizeof inner)) {
      s = BAD("candidates[%zu]: %s", done, inner);
      break;
    }
    if (!cand_copy(&c[done], &in[done])) s = NOMEM;
  }
  if (s == TXATTN_OK) s = no_repeats(c, n, why, size);
  *tie = 0;
  if (s == TXATTN_OK && chosen >= 0) {
    txattn__cand w = c[chosen];
    c[chosen] = c[0];
    c[0] = w;
    qsort(c + 1, n - 1, sizeof *c, cand_order);
    *tie = n > 1 && cand_order(&c[0], &c[1]) > 0;
    if (*tie && !(c[0].time_s <= TIE_RATIO * c[1].time_s))
      s = BAD("the chosen candidate (%s, %g s) is more than %g x the fastest (%s, %g s): a tie "
              "is a choice among near-equal times",
              c[0].kernel, c[0].time_s, TIE_RATIO, c[1].kernel, c[1].time_s);
  } else if (s == TXATTN_OK) {
    qsort(c, n, sizeof *c, cand_order);
  }
  if (s != TXATTN_OK) {
    for (size_t j = 0; j < done && j < n; j++) cand_free(&c[j]);
    free(c);
    return s;
  }
  *out = c;
  return TXATTN_OK;
}

txattn_status txattn__tm_add_point(txattn_table *t, size_t cls, int64_t n, int64_t r,
                                   const txattn_table_candidate *cands, size_t n_cands, long chosen,
                                   int reindex, char *why, size_t size) {
  if (cls >= t->n_classes)
    return BAD("class %zu is out of range (the table has %zu)", cls, t->n_classes);
  txattn__class *k = &t->classes[cls];
  if (!coords_ok(&k->key, n, r, why, size)) return TXATTN_E_INVALID;
  if (n_cands == 0 || n_cands > MAX_CANDS || cands == NULL)
    return BAD("a point needs 1..%d candidates, got %zu", MAX_CANDS, n_cands);
  size_t slot = 0, hi = k->n_points; /* where (n, r) goes in the class's (r, n) order */
  while (slot < hi) {
    size_t mid = (slot + hi) / 2;
    const txattn__point *q = &k->points[mid];
    if (q->r < r || (q->r == r && q->n < n))
      slot = mid + 1;
    else
      hi = mid;
  }
  if (slot < k->n_points && k->points[slot].r == r && k->points[slot].n == n)
    return BAD("the class already has a point at n = %" PRId64 ", r = %" PRId64, n, r);
  if (k->n_points >= (1 << 16)) return BAD("a class holds at most %d points", 1 << 16);
  if (chosen >= (long)n_cands)
    return BAD("chosen = %ld is not a candidate (there are %zu)", chosen, n_cands);
  txattn__point p = {n, r, n_cands, NULL, 0, 0};
  txattn_status s = copy_cands(cands, n_cands, chosen, &p.cands, &p.tie, why, size);
  if (s != TXATTN_OK) return s;
  if (!grow((void **)&k->points, &k->cap_points, k->n_points, sizeof *k->points)) {
    for (size_t j = 0; j < n_cands; j++) cand_free(&p.cands[j]);
    free(p.cands);
    return NOMEM;
  }
  memmove(&k->points[slot + 1], &k->points[slot], (k->n_points - slot) * sizeof p);
  k->points[slot] = p;
  k->n_points++;
  if (reindex && !txattn__tm_reindex(k)) {
    for (size_t j = 0; j < n_cands; j++) cand_free(&p.cands[j]);
    free(p.cands);
    memmove(&k->points[slot], &k->points[slot + 1], (k->n_points - slot - 1) * sizeof p);
    k->n_points--;
    txattn__tm_reindex(k); /* restores what was there: its memory was just freed, so it fits */
    txattn__why_not(why, size, "out of memory, or too many distinct n and r values in one class");
    return TXATTN_E_NOMEM;
  }
  return TXATTN_OK;
}

txattn_status txattn__tm_add_exclusion(txattn_table *t, const txattn_table_exclusion *e, char *why,
                                       size_t size) {
  if (!txattn__tm_class_ok(&e->cls, why, size) ||
      !names_ok(e->kernel, e->n_tunables, e->tunable_names, e->tunable_values, why, size) ||
      !coords_ok(&e->cls, e->n, e->r, why, size))
    return TXATTN_E_INVALID;
  if (!isnan(e->max_error) && !(e->max_error >= 0 && isfinite(e->max_error)))
    return BAD("max_error = %g must be >= 0 (NaN: not finite)", e->max_error);
  if (e->reason == NULL || !text_ok(e->reason, 511, 0))
    return BAD("reason is missing, longer than %d bytes or not printable", 511);
  if (t->n_excluded >= (1 << 16)) return BAD("a table holds at most %d exclusions", 1 << 16);
  if (!grow((void **)&t->excluded, &t->cap_excluded, t->n_excluded, sizeof *t->excluded))
    return NOMEM;
  txattn__exclusion *x = &t->excluded[t->n_excluded];
  txattn_table_candidate c = {e->kernel,    e->n_tunables, e->tunable_names, e->tunable_values, 1.0,
                              e->max_error, -1.0};
  memset(x, 0, sizeof *x);
  if (!cand_copy(&x->c, &c) || (x->reason = strdup(e->reason)) == NULL) {
    cand_free(&x->c);
    return NOMEM;
  }
  key_copy(&x->key, &e->cls);
  x->n = e->n;
  x->r = e->r;
  t->n_excluded++;
  return TXATTN_OK;
}

/* ---- derived: the lookup index and the regions ---- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The distinct n (or r) values of the points, ascending. */
static int64_t *distinct(const txattn__class *c, int use_r, size_t *count) {
  int64_t *v = malloc((c->n_points ? c->n_points : 1) * sizeof *v);
  if (v == NULL) return NULL;
  for (size_t i = 0; i < c->n_points; i++) v[i] = use_r ? c->points[i].r : c->points[i].n;
  qsort(v, c->n_points, sizeof *v, cmp_i64);
  size_t k = 0;
  for (size_t i = 0; i < c->n_points; i++)
    if (k == 0 || v[k - 1] != v[i]) v[k++] = v[i];
  *count = k;
  return v;
}

static size_t find(const int64_t *v, size_t n, int64_t x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (v[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int same_winner(const txattn__class *c, int32_t a, int32_t b) {
  return txattn__tm_same_candidate(&c->points[a].cands[0], &c->points[b].cands[0]);
}

/* A rectangle being grown: cells ni_lo..ni_hi of rows ri_lo..ri_hi, and a point in it. */
typedef struct rect {
  size_t ni_lo, ni_hi, ri_lo, ri_hi;
  int32_t point;
} rect;

/* Appends row ri's runs to rects, extending the rectangles that ended in the row below. */
static int add_row(const txattn__class *c, const int32_t *grid, size_t ri, rect **rects, size_t *n,
                   size_t *cap) {
  const int32_t *row = grid + ri * c->n_ns;
  for (size_t ni = 0, end = 0; ni < c->n_ns; ni = end + 1) {
    end = ni;
    if (row[ni] < 0) continue;
    while (end + 1 < c->n_ns && row[end + 1] >= 0 && same_winner(c, row[ni], row[end + 1])) end++;
    size_t j = 0;
    while (j < *n && !((*rects)[j].ri_hi + 1 == ri && (*rects)[j].ni_lo == ni &&
                       (*rects)[j].ni_hi == end && same_winner(c, (*rects)[j].point, row[ni])))
      j++;
    if (j < *n)
      (*rects)[j].ri_hi = ri;
    else if (grow((void **)rects, cap, *n, sizeof **rects))
      (*rects)[(*n)++] = (rect){ni, end, ri, ri, row[ni]};
    else
      return 0;
  }
  return 1;
}

/* The region of rectangle q: the winner's times and error over it, and the runner-up (the fastest
   other kernel) where its margin is smallest. */
static txattn__region region_of(txattn__class *c, const int32_t *grid, const rect *q,
                                size_t index) {
  txattn__region g = {.point = (size_t)q->point, .t_min = INFINITY};
  g.n_lo = c->ns[q->ni_lo], g.n_hi = c->ns[q->ni_hi];
  g.r_lo = c->rs[q->ri_lo], g.r_hi = c->rs[q->ri_hi];
  for (size_t ri = q->ri_lo; ri <= q->ri_hi; ri++)
    for (size_t ni = q->ni_lo; ni <= q->ni_hi; ni++) {
      txattn__point *p = &c->points[grid[ri * c->n_ns + ni]];
      const txattn__cand *w = &p->cands[0], *u = NULL;
      for (size_t i = 1; u == NULL && i < p->n_cands; i++)
        if (strcmp(p->cands[i].kernel, w->kernel) != 0) u = &p->cands[i];
      p->region = index;
      g.t_min = fmin(g.t_min, w->time_s);
      g.t_max = fmax(g.t_max, w->time_s);
      g.max_error = fmax(g.max_error, w->max_error);
      double m = u ? round6(u->time_s / w->time_s) : 0;
      if (u && (g.runner_up == NULL || m < g.margin)) g.runner_up = u->kernel, g.margin = m;
    }
  return g;
}

int txattn__tm_reindex(txattn__class *c) {
  txattn__class d = *c; /* the new index, swapped in whole once it is complete */
  d.ns = distinct(c, 0, &d.n_ns);
  d.rs = distinct(c, 1, &d.n_rs);
  d.grid = NULL;
  d.regions = NULL;
  size_t cells = d.n_ns * d.n_rs, n = 0, cap = 0;
  rect *rects = NULL;
  int ok = d.ns && d.rs && cells <= (1u << 22) &&
           (d.grid = malloc((cells ? cells : 1) * sizeof *d.grid)) != NULL;
  for (size_t i = 0; ok && i < cells; i++) d.grid[i] = -1;
  for (size_t i = 0; ok && i < c->n_points; i++)
    d.grid[find(d.rs, d.n_rs, c->points[i].r) * d.n_ns + find(d.ns, d.n_ns, c->points[i].n)] =
        (int32_t)i;
  for (size_t ri = 0; ok && ri < d.n_rs; ri++) ok = add_row(&d, d.grid, ri, &rects, &n, &cap);
  ok = ok && (d.regions = malloc((n ? n : 1) * sizeof *d.regions)) != NULL;
  for (size_t i = 0; ok && i < n; i++) d.regions[i] = region_of(&d, d.grid, &rects[i], i);
  free(rects);
  if (!ok) {
    free(d.ns);
    free(d.rs);
    free(d.grid);
    free(d.regions);
    return 0;
  }
  free(c->ns);
  free(c->rs);
  free(c->grid);
  free(c->regions);
  d.n_regions = n;
  *c = d;
  return 1;
}

/* ---- txtune's builder and reader (txattn/table.h) ---- */

#define NEED(cond, fn, what) TXATTN_RETURN_IF(!(cond), TXATTN_E_INVALID, "%s: %s is NULL", fn, what)

static txattn_status from_model(txattn_status s, const char *fn, const char *why) {
  return s == TXATTN_OK ? txattn__ok() : txattn__fail(s, "%s: %s", fn, why);
}

txattn_status txattn_table_add_class(txattn_table *t, const txattn_table_class *c, size_t *index) {
  char why[512];
  NEED(t && c, "txattn_table_add_class", t ? "c" : "t");
  return from_model(txattn__tm_add_class(t, c, index, why, sizeof why), "txattn_table_add_class",
                    why);
}

txattn_status txattn_table_add_point(txattn_table *t, size_t cls, int64_t n, int64_t r,
                                     const txattn_table_candidate *cands, size_t n_cands) {
  char why[512];
  NEED(t, "txattn_table_add_point", "t");
  return from_model(txattn__tm_add_point(t, cls, n, r, cands, n_cands, -1, 1, why, sizeof why),
                    "txattn_table_add_point", why);
}

txattn_status txattn_table_add_point_chosen(txattn_table *t, size_t cls, int64_t n, int64_t r,
                                            const txattn_table_candidate *cands, size_t n_cands,
                                            size_t chosen) {
  char why[512];
  NEED(t, "txattn_table_add_point_chosen", "t");
  TXATTN_RETURN_IF(chosen > LONG_MAX, TXATTN_E_INVALID,
                   "txattn_table_add_point_chosen: chosen = %zu is not a candidate", chosen);
  return from_model(
      txattn__tm_add_point(t, cls, n, r, cands, n_cands, (long)chosen, 1, why, sizeof why),
      "txattn_table_add_point_chosen", why);
}

txattn_status txattn_table_add_exclusion(txattn_table *t, const txattn_table_exclusion *e) {
  char why[512];
  NEED(t && e, "txattn_table_add_exclusion", t ? "e" : "t");
  return from_model(txattn__tm_add_exclusion(t, e, why, sizeof why), "txattn_table_add_exclusion",
                    why);
}

txattn_status txattn_table_header_get(const txattn_table *t, txattn_table_header *out) {
  NEED(t && out, "txattn_table_header_get", t ? "out" : "t");
  *out = (txattn_table_header){t->format_version,
                               t->library_version ? t->library_version : "",
                               t->created ? t->created : "",
                               t->profile ? t->profile : "",
                               t->path ? t->path : "",
                               t->n_plugins,
                               t->n_classes,
                               t->n_excluded,
                               t->machine};
  out->machine.struct_size = sizeof out->machine; /* a whole txattn_machine_info */
  return txattn__ok();
}

#define IN_RANGE(fn, i, n, what)                                                                   \
  TXATTN_RETURN_IF((i) >= (n), TXATTN_E_INVALID, "%s: index %zu is out of range (%zu %s)", fn, i,  \
                   n, what)

txattn_status txattn_table_plugin_get(const txattn_table *t, size_t i, txattn_table_plugin *out) {
  NEED(t && out, "txattn_table_plugin_get", t ? "out" : "t");
  IN_RANGE("txattn_table_plugin_get", i, t->n_plugins, "plugins");
  *out = (txattn_table_plugin){t->plugins[i].name, t->plugins[i].version, t->plugins[i].build};
  return txattn__ok();
}

txattn_status txattn_table_class_get(const txattn_table *t, size_t cls, txattn_table_class *out,
                                     size_t *n_points, size_t *n_regions) {
  NEED(t && out, "txattn_table_class_get", t ? "out" : "t");
  IN_RANGE("txattn_table_class_get", cls, t->n_classes, "classes");
  *out = t->classes[cls].key;
  if (n_points) *n_points = t->classes[cls].n_points;
  if (n_regions) *n_regions = t->classes[cls].n_regions;
  return txattn__ok();
}

static txattn_status point_of(const txattn_table *t, const char *fn, size_t cls, size_t point,
                              const txattn__point **out) {
  IN_RANGE(fn, cls, t->n_classes, "classes");
  IN_RANGE(fn, point, t->classes[cls].n_points, "points in the class");
  *out = &t->classes[cls].points[point];
  return TXATTN_OK;
}

txattn_status txattn_table_point_get(const txattn_table *t, size_t cls, size_t point,
                                     txattn_table_point *out) {
  const txattn__point *p = NULL;
  NEED(t && out, "txattn_table_point_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(point_of(t, "txattn_table_point_get", cls, point, &p));
  *out = (txattn_table_point){p->n, p->r, p->n_cands, p->tie};
  return txattn__ok();
}

static txattn_table_candidate cand_view(const txattn__cand *c) {
  return (txattn_table_candidate){c->kernel,     c->tun.n,  (const char *const *)c->tun.names,
                                  c->tun.values, c->time_s, c->max_error,
                                  c->spread};
}

txattn_status txattn_table_candidate_get(const txattn_table *t, size_t cls, size_t point, size_t i,
                                         txattn_table_candidate *out) {
  const txattn__point *p = NULL;
  NEED(t && out, "txattn_table_candidate_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(point_of(t, "txattn_table_candidate_get", cls, point, &p));
  IN_RANGE("txattn_table_candidate_get", i, p->n_cands, "candidates");
  *out = cand_view(&p->cands[i]);
  return txattn__ok();
}

txattn_status txattn_table_region_get(const txattn_table *t, size_t cls, size_t i,
                                      txattn_table_region *out) {
  NEED(t && out, "txattn_table_region_get", t ? "out" : "t");
  IN_RANGE("txattn_table_region_get", cls, t->n_classes, "classes");
  const txattn__class *c = &t->classes[cls];
  IN_RANGE("txattn_table_region_get", i, c->n_regions, "regions");
  const txattn__region *g = &c->regions[i];
  txattn_table_candidate w = cand_view(&c->points[g->point].cands[0]);
  w.time_s = g->t_min, w.max_error = g->max_error, w.spread = -1;
  *out = (txattn_table_region){g->n_lo,  g->n_hi,      g->r_lo,      g->r_hi,   g->t_min,
                               g->t_max, g->max_error, g->runner_up, g->margin, w};
  return txattn__ok();
}

txattn_status txattn_table_exclusion_get(const txattn_table *t, size_t i,
                                         txattn_table_exclusion *out) {
  NEED(t && out, "txattn_table_exclusion_get", t ? "out" : "t");
  IN_RANGE("txattn_table_exclusion_get", i, t->n_excluded, "exclusions");
  const txattn__exclusion *x = &t->excluded[i];
  txattn_table_candidate c = cand_view(&x->c);
  *out = (txattn_table_exclusion){c.kernel,         c.n_tunables, c.tunable_names,
                                  c.tunable_values, x->n,         x->r,
                                  c.max_error,      x->reason,    x->key};
  return txattn__ok();
}

txattn_status txattn_table_find_class(const txattn_table *t, const txattn_table_class *c,
                                      size_t *index) {
  char d[96];
  NEED(t && c && index, "txattn_table_find_class", "an argument");
  for (size_t i = 0; i < t->n_classes; i++)
    if (txattn__tm_same_key(&t->classes[i].key, c)) {
      *index = i;
      return txattn__ok();
    }
  txattn_table_class_describe(c, d, sizeof d);
  return txattn__fail(TXATTN_E_NOT_FOUND, "the table has no class %s", d);
}
