/* txtune plot from a bench sweep (bench_sweep.md): one panel per problem class (mask kind and
   window, head sizes, heads, batch), each kernel's median time at each n, and the first panel's
   lines. Every field read is checked; an error names the file and the field's JSON path. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "bench.h"
#include "plot.h"

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
  txattn_problem p;
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
static void fill_best(const sweep_reader *r) {
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

int tx_plot_from_sweep(const void *root_, const char *path, tx_plot *pl) {
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
  if (!rc) fill_best(&r);
  free(r.classes);
  return rc;
}
