/* SPDX-License-Identifier: MIT */
/* What txtune plot draws (plot_source.h): a dispatch table (each kernel's fastest time at each
   point of each class) or a bench sweep (each kernel's median at each n of each problem class). */
#include "plot_source.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "bench_sweep.h"
#include "context_cli.h"
#include "txattn/table.h"

#define MAX_REACHES 64

/* The distinct r of class ci's points (one 0 without a window). */
static size_t reaches(const txattn_table *t, size_t ci, int64_t *r, size_t cap) {
  size_t n_points = 0, k = 0;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  txattn_table_class_get(t, ci, &c, &n_points, NULL);
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point pt = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(t, ci, i, &pt) != TXATTN_OK) continue;
    int seen = 0;
    for (size_t j = 0; j < k && !seen; j++) seen = r[j] == pt.r;
    if (!seen && k < cap) r[k++] = pt.r;
  }
  return k;
}

static int same_class(const txattn_table_class *a, const txattn_table_class *b) {
  return a->mask == b->mask && a->window == b->window && a->d_qk == b->d_qk && a->d_v == b->d_v &&
         a->group == b->group && a->threads == b->threads && a->decode == b->decode &&
         a->q_type == b->q_type && a->k_type == b->k_type && a->v_type == b->v_type &&
         a->o_type == b->o_type && a->ragged == b->ragged;
}

static int all_f32(const txattn_table_class *c) {
  return c->q_type == TXATTN_DTYPE_F32 && c->k_type == TXATTN_DTYPE_F32 &&
         c->v_type == TXATTN_DTYPE_F32 && c->o_type == TXATTN_DTYPE_F32;
}

/* The kernels the profile excluded at a point of this panel (failed to plan, or inexact), and
   why. */
static void mark_failures(const txattn_table *t, const txattn_table_class *c, int64_t r,
                          tx_plot *pl, tx_plot_panel *p) {
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  txattn_table_header_get(t, &h);
  for (size_t i = 0; i < h.n_excluded; i++) {
    txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
    if (txattn_table_exclusion_get(t, i, &x) == TXATTN_OK && same_class(&x.cls, c) && x.r == r)
      tx_plot_mark(pl, p, x.kernel, x.n, 1, x.reason);
  }
}

static int fill_panel(const txattn_table *t, size_t ci, int64_t r, tx_plot *pl) {
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  size_t n_points = 0;
  char d[96], title[128];
  txattn_table_class_get(t, ci, &c, &n_points, NULL);
  txattn_table_class_describe(&c, d, sizeof d);
  snprintf(title, sizeof title, r ? "%s, r = %lld" : "%s", d, (long long)r);
  tx_plot_panel *p = tx_plot_add_panel(pl, title);
  if (!p) return -1;
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point pt = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(t, ci, i, &pt) != TXATTN_OK || pt.r != r) continue;
    for (size_t k = 0; k < pt.n_candidates; k++) {
      txattn_table_candidate cand = TXATTN_TABLE_CANDIDATE_INIT;
      if (txattn_table_candidate_get(t, ci, i, k, &cand) == TXATTN_OK)
        tx_plot_set(pl, p, cand.kernel, pt.n, cand.time_s, 0);
    }
  }
  mark_failures(t, &c, r, pl, p);
  return 0;
}

/* ---- the first panel: per mask kind, the chosen kernel against n in one class ---- */

/* The reach r of class ci with the most points (the smallest among equals: the window stays
   small against n longest), and its count of points. */
static size_t best_reach(const txattn_table *t, size_t ci, int64_t *r_out) {
  int64_t rs[MAX_REACHES];
  size_t n_r = reaches(t, ci, rs, MAX_REACHES), n_points = 0, best = 0;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  txattn_table_class_get(t, ci, &c, &n_points, NULL);
  *r_out = 0;
  for (size_t k = 0; k < n_r; k++) {
    size_t count = 0;
    for (size_t i = 0; i < n_points; i++) {
      txattn_table_point pt = TXATTN_TABLE_POINT_INIT;
      count += txattn_table_point_get(t, ci, i, &pt) == TXATTN_OK && pt.r == rs[k];
    }
    if (count > best || (count == best && rs[k] < *r_out)) {
      best = count;
      *r_out = rs[k];
    }
  }
  return best;
}

typedef struct pick {
  size_t ci, count;
  int64_t r;
  txattn_table_class c;
} pick;

/* Whether class a is drawn rather than b: one with a line (two points or more) first, then fp32
   tensors (the mask kinds compared in one element type), then the fewest threads and the smallest
   GQA group (attention's own cost, least mixed with threading's), then the most points. */
static int better(const pick *a, const pick *b) {
  int la = a->count >= 2, lb = b->count >= 2;
  if (la != lb) return la;
  if (all_f32(&a->c) != all_f32(&b->c)) return all_f32(&a->c);
  if (a->c.threads != b->c.threads) return a->c.threads < b->c.threads;
  if (a->c.group != b->c.group) return a->c.group < b->c.group;
  return a->count > b->count;
}

/* Decode classes are left out: one query row against n keys costs O(n) under any mask. */
static void fill_best(const txattn_table *t, size_t n_classes, tx_plot *pl) {
  pick chosen[TX_PLOT_KINDS];
  int have[TX_PLOT_KINDS] = {0};
  for (size_t ci = 0; ci < n_classes; ci++) {
    pick p = {.ci = ci, .c = TXATTN_TABLE_CLASS_INIT};
    if (txattn_table_class_get(t, ci, &p.c, NULL, NULL) != TXATTN_OK ||
        (unsigned)p.c.mask >= TX_PLOT_KINDS)
      continue;
    if (p.c.decode) {
      pl->best[p.c.mask].decode_only = !have[p.c.mask];
      continue;
    }
    p.count = best_reach(t, ci, &p.r);
    if (!have[p.c.mask] || better(&p, &chosen[p.c.mask])) chosen[p.c.mask] = p;
    have[p.c.mask] = 1;
    pl->best[p.c.mask].decode_only = 0;
  }
  for (size_t k = 0; k < TX_PLOT_KINDS; k++) {
    if (!have[k]) continue;
    tx_plot_best *b = &pl->best[k];
    char d[96];
    size_t n_points = 0;
    txattn_table_class_get(t, chosen[k].ci, &chosen[k].c, &n_points, NULL);
    txattn_table_class_describe(&chosen[k].c, d, sizeof d);
    snprintf(b->cls, sizeof b->cls, chosen[k].r ? "%s, r = %lld" : "%s", d, (long long)chosen[k].r);
    for (size_t i = 0; i < n_points; i++) {
      txattn_table_point pt = TXATTN_TABLE_POINT_INIT;
      txattn_table_candidate cand = TXATTN_TABLE_CANDIDATE_INIT;
      if (txattn_table_point_get(t, chosen[k].ci, i, &pt) == TXATTN_OK && pt.r == chosen[k].r &&
          txattn_table_candidate_get(t, chosen[k].ci, i, 0, &cand) == TXATTN_OK)
        tx_plot_best_set(pl, b, cand.kernel, pt.n, cand.time_s);
    }
  }
  pl->best_is = "the kernel the table chose";
  pl->untimed = "dropped"; /* the profile stops timing a kernel that loses by far */
}

/* A dispatch table, strictly validated by libtxattn: one panel per class and window reach r, each
   kernel's fastest time (any tunables) at each n; and for the first panel, per mask kind, the
   chosen kernel's time at each n of one class (plot_source.c says which). */
static int from_table(const char *path, tx_plot *pl) {
  txattn_table *t = NULL;
  txattn_status s = txattn_table_load(path, &t);
  if (s != TXATTN_OK) {
    tx_print_lib_error("plot", "cannot use the table", s);
    return TX_EXIT_FAIL;
  }
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  txattn_table_header_get(t, &h);
  fill_best(t, h.n_classes, pl);
  int rc = 0;
  for (size_t ci = 0; ci < h.n_classes && !rc; ci++) {
    int64_t rs[MAX_REACHES];
    size_t n_r = reaches(t, ci, rs, MAX_REACHES);
    for (size_t k = 0; k < n_r && !rc; k++) rc = fill_panel(t, ci, rs[k], pl);
  }
  txattn_table_free(t);
  if (!rc) return 0;
  fprintf(stderr, "txtune plot: out of memory\n");
  return TX_EXIT_FAIL;
}

typedef struct sweep_reader {
  const char *path;
  tx_plot *pl;
  txattn_problem *classes; /* one per panel, in panel order */
  int threads;
} sweep_reader;

static int bad(const sweep_reader *r, const char *where, const char *what) {
  fprintf(stderr, "txtune plot: %s: %s: %s (a `txtune bench` sweep, bench_sweep.md)\n", r->path,
          where, what);
  return TX_EXIT_FAIL;
}

static int get_int(const sweep_reader *r, const json_t *obj, const char *key, const char *where,
                   int64_t *out) {
  const json_t *v = json_object_get(obj, key);
  char at[160];
  snprintf(at, sizeof at, "%s%s%s", where, *where ? "." : "", key);
  if (!json_is_integer(v)) return bad(r, at, "expected an integer");
  *out = (int64_t)json_integer_value(v);
  return 0;
}

/* A window side: an integer, or null for unbounded. */
static int get_bound(const sweep_reader *r, const json_t *obj, const char *key, const char *where,
                     int64_t *out) {
  if (json_is_null(json_object_get(obj, key))) {
    *out = TXATTN_UNBOUNDED;
    return 0;
  }
  return get_int(r, obj, key, where, out);
}

static int get_mask(const sweep_reader *r, const json_t *obj, const char *where, txattn_mask *m) {
  const char *s = json_string_value(json_object_get(obj, "mask"));
  if (s && tx_mask_parse(s, m)) return 0;
  char at[160];
  snprintf(at, sizeof at, "%s.mask", where);
  return bad(r, at, "expected \"none\", \"causal\" or \"window\"");
}

static int read_problem(const sweep_reader *r, const json_t *point, const char *where,
                        txattn_problem *p) {
  const json_t *o = json_object_get(point, "problem");
  char at[128];
  snprintf(at, sizeof at, "%s.problem", where);
  if (!json_is_object(o)) return bad(r, at, "expected an object");
  memset(p, 0, sizeof *p);
  const json_t *scale = json_object_get(o, "scale");
  if (!json_is_number(scale)) return bad(r, at, "expected a number in .scale");
  p->scale = (float)json_number_value(scale);
  if (get_int(r, o, "batch", at, &p->batch) || get_int(r, o, "heads_q", at, &p->heads_q) ||
      get_int(r, o, "heads_kv", at, &p->heads_kv) || get_int(r, o, "n_q", at, &p->n_q) ||
      get_int(r, o, "n_kv", at, &p->n_kv) || get_int(r, o, "d_qk", at, &p->d_qk) ||
      get_int(r, o, "d_v", at, &p->d_v) || get_mask(r, o, at, &p->mask))
    return TX_EXIT_FAIL;
  if (p->mask == TXATTN_MASK_WINDOW && (get_bound(r, o, "window_left", at, &p->window_left) ||
                                        get_bound(r, o, "window_right", at, &p->window_right)))
    return TX_EXIT_FAIL;
  if (p->n_q < 1) return bad(r, at, "n_q must be >= 1");
  /* the element types (absent in sweeps written before them: f32) */
  static const char *const keys[4] = {"q_type", "k_type", "v_type", "o_type"};
  txattn_dtype *types[4] = {&p->q_type, &p->k_type, &p->v_type, &p->o_type};
  for (int i = 0; i < 4; i++) {
    const json_t *t = json_object_get(o, keys[i]);
    tx_dtypes d;
    if (t == NULL) continue;
    if (!json_is_string(t) || !tx_dtypes_parse(json_string_value(t), &d))
      return bad(r, at, "expected f32, f16 or bf16 in a type");
    *types[i] = d.t[0];
  }
  return 0;
}

static tx_plot_panel *panel_of(sweep_reader *r, const txattn_problem *p) {
  for (size_t i = 0; i < r->pl->n; i++)
    if (tx_sweep_same_class(&r->classes[i], p)) return &r->pl->panels[i];
  char label[160], title[192];
  tx_sweep_class_label(p, label, sizeof label);
  snprintf(title, sizeof title, "%s, %d thread%s", label, r->threads, r->threads == 1 ? "" : "s");
  tx_plot_panel *panel = tx_plot_add_panel(r->pl, title);
  if (panel) r->classes[r->pl->n - 1] = *p;
  return panel;
}

/* Kernels that did not run here (unusable, not applicable, failed) have no time to draw: a failed
   one is marked, and each keeps its reason. */
static int read_kernel(sweep_reader *r, const json_t *k, const char *where, tx_plot_panel *panel,
                       int64_t n) {
  const char *name = json_string_value(json_object_get(k, "name"));
  const char *status = json_string_value(json_object_get(k, "status"));
  if (!name || !status) return bad(r, where, "expected strings in .name and .status");
  if (strcmp(status, "ok") != 0) {
    const char *reason = json_string_value(json_object_get(k, "reason"));
    int failed = strcmp(status, "failed") == 0;
    char word[32], why[512];
    snprintf(word, sizeof word, "%s", status);
    for (char *c = word; *c; c++) *c = *c == '_' ? ' ' : *c; /* "not_applicable" in words */
    if (failed)                                              /* the x says so */
      snprintf(why, sizeof why, "%s", reason ? reason : "");
    else
      snprintf(why, sizeof why, "%s%s%s", word, reason ? ": " : "", reason ? reason : "");
    tx_plot_mark(r->pl, panel, name, n, failed, why);
    return 0;
  }
  const json_t *t = json_object_get(k, "median_s");
  if (!json_is_number(t) || !(json_number_value(t) > 0))
    return bad(r, where, "a kernel with status \"ok\" needs .median_s > 0");
  int inexact = json_is_false(json_object_get(k, "exact"));
  tx_plot_set(r->pl, panel, name, n, json_number_value(t), inexact);
  return 0;
}

static int read_point(sweep_reader *r, const json_t *point, size_t i) {
  char where[64], at[96];
  snprintf(where, sizeof where, "points[%zu]", i);
  txattn_problem p = TXATTN_PROBLEM_INIT;
  if (read_problem(r, point, where, &p)) return TX_EXIT_FAIL;
  const json_t *kernels = json_object_get(point, "kernels");
  snprintf(at, sizeof at, "%s.kernels", where);
  if (!json_is_array(kernels)) return bad(r, at, "expected an array");
  tx_plot_panel *panel = panel_of(r, &p);
  if (!panel) return bad(r, where, "out of memory");
  for (size_t k = 0; k < json_array_size(kernels); k++) {
    snprintf(at, sizeof at, "%s.kernels[%zu]", where, k);
    if (read_kernel(r, json_array_get(kernels, k), at, panel, p.n_q)) return TX_EXIT_FAIL;
  }
  return 0;
}

/* The first panel: per mask kind, the panel with the most n (the first among equals) and at
   each of its n the fastest kernel that was exact throughout. */
static void sweep_fill_best(const sweep_reader *r) {
  size_t chosen[TX_PLOT_KINDS];
  int have[TX_PLOT_KINDS] = {0};
  for (size_t i = 0; i < r->pl->n; i++) {
    unsigned k = (unsigned)r->classes[i].mask;
    if (k < TX_PLOT_KINDS && (!have[k] || r->pl->panels[i].n_x > r->pl->panels[chosen[k]].n_x)) {
      chosen[k] = i;
      have[k] = 1;
    }
  }
  for (size_t k = 0; k < TX_PLOT_KINDS; k++) {
    if (!have[k]) continue;
    const tx_plot_panel *p = &r->pl->panels[chosen[k]];
    snprintf(r->pl->best[k].cls, sizeof r->pl->best[k].cls, "%s", p->title);
    for (size_t s = 0; s < p->n_s; s++)
      for (size_t i = 0; i < p->n_x; i++)
        if (!p->s[s].inexact && p->s[s].t[i] > 0)
          tx_plot_best_set(r->pl, &r->pl->best[k], p->s[s].kernel, p->x[i], p->s[s].t[i]);
  }
  r->pl->best_is = "the fastest exact kernel";
  r->pl->untimed = "not measured";
}

/* A bench sweep document (bench_sweep.md) already parsed: `root` is a json_t *. One panel per
   problem class (mask kind and window, head sizes, heads, batch); for the first panel, per mask
   kind, the fastest exact kernel at each n of the class with the most n. */
static int from_sweep(const void *root_, const char *path, tx_plot *pl) {
  const json_t *root = root_;
  sweep_reader r = {.path = path, .pl = pl};
  const json_t *version = json_object_get(root, "format_version");
  if (!json_is_integer(version) || json_integer_value(version) != TX_SWEEP_FORMAT_VERSION) {
    char what[96];
    snprintf(what, sizeof what, "%s; this txtune reads version %d",
             json_is_integer(version) ? "a newer or unknown version" : "missing or not an integer",
             TX_SWEEP_FORMAT_VERSION);
    return bad(&r, "format_version", what);
  }
  int64_t threads;
  if (get_int(&r, root, "threads", "", &threads)) return TX_EXIT_FAIL;
  r.threads = (int)threads;
  const json_t *points = json_object_get(root, "points");
  if (!json_is_array(points) || json_array_size(points) == 0)
    return bad(&r, "points", "expected an array of at least one point");
  if (!(r.classes = calloc(json_array_size(points), sizeof *r.classes)))
    return bad(&r, "points", "out of memory");
  int rc = 0;
  for (size_t i = 0; i < json_array_size(points) && !rc; i++)
    rc = read_point(&r, json_array_get(points, i), i);
  if (!rc) sweep_fill_best(&r);
  free(r.classes);
  return rc;
}

static int not_plottable(const char *path, const char *why) {
  fprintf(stderr,
          "txtune plot: %s is neither a dispatch table (\"format\": \"" TXATTN_TABLE_FORMAT
          "\", from `txtune profile`) nor a bench sweep (\"format\": \"" TX_SWEEP_FORMAT
          "\", from `txtune bench` with several n and -o FILE): %s\n",
          path, why);
  return TX_EXIT_FAIL;
}

static int from_json(const char *path, tx_plot *pl, const json_t *root) {
  const char *format = json_string_value(json_object_get(root, "format"));
  char why[192];
  if (format && strcmp(format, TXATTN_TABLE_FORMAT) == 0) return from_table(path, pl);
  if (format && strcmp(format, TX_SWEEP_FORMAT) == 0) return from_sweep(root, path, pl);
  if (!format && json_object_get(root, "kernels") && json_object_get(root, "problem"))
    return not_plottable(path, "it is `txtune bench --json` output for a single problem; "
                               "give --n a list or a range (--n 1024..16384) for a sweep");
  if (format)
    snprintf(why, sizeof why, "its format is \"%.100s\"", format);
  else
    snprintf(why, sizeof why, "it has no \"format\" field");
  return not_plottable(path, why);
}

/* The whole file, NUL-terminated; NULL (errno set) if it cannot be read. */
static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  errno = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    char *bigger = realloc(buf, 2 * cap + 1);
    if (!bigger) free(buf);
    buf = bigger;
    cap *= 2;
  }
  int e = !buf ? ENOMEM : ferror(f) ? (errno ? errno : EIO) : 0; /* EISDIR for a directory */
  fclose(f);
  if (e) {
    free(buf);
    errno = e;
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* Not JSON: a damaged table still names its format, and its reader says where it breaks. */
static int from_broken(const char *path, tx_plot *pl, const char *text, const json_error_t *err) {
  if (strstr(text, "\"" TXATTN_TABLE_FORMAT "\"")) return from_table(path, pl);
  if (strstr(text, "\"" TX_SWEEP_FORMAT "\"")) {
    fprintf(stderr, "txtune plot: malformed bench sweep %s:%d:%d: %s\n", path, err->line,
            err->column, err->text);
    return TX_EXIT_FAIL;
  }
  char why[256];
  snprintf(why, sizeof why, "not JSON (line %d, column %d: %s)", err->line, err->column, err->text);
  return not_plottable(path, why);
}

/* --from: the content says what the file is. */
static int load_any(const char *path, tx_plot *pl) {
  size_t len;
  char *text = read_all(path, &len);
  if (!text) {
    fprintf(stderr, "txtune plot: cannot read %s: %s\n", path, strerror(errno));
    return TX_EXIT_FAIL;
  }
  json_error_t err;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  int rc = !root                  ? from_broken(path, pl, text, &err)
           : json_is_object(root) ? from_json(path, pl, root)
                                  : not_plottable(path, "not a JSON object");
  json_decref(root);
  free(text);
  return rc;
}

int tx_plot_load(const char *from, const char *table, tx_plot *pl, char *path, size_t size) {
  if (from || table)
    snprintf(path, size, "%s", from ? from : table);
  else if (txattn_table_default_path(path, size) != TXATTN_OK) {
    fprintf(stderr, "txtune plot: %s\n", txattn_last_error());
    return TX_EXIT_FAIL;
  }
  int rc = from ? load_any(path, pl) : from_table(path, pl);
  if (rc) return rc;
  if (pl->dropped)
    fprintf(stderr,
            "txtune plot: %zu measurements of %s left out: a panel holds at most %d n and "
            "%d kernels\n",
            pl->dropped, path, TX_PLOT_MAX_X, TX_PLOT_MAX_SERIES);
  if (tx_plot_count_drawable(pl) > 0) return 0;
  fprintf(stderr, "txtune plot: %s holds no measured time to plot\n", path);
  return TX_EXIT_FAIL;
}
