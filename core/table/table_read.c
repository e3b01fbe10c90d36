/* The public builder and reader of dispatch tables (txattn/table.h): thin wrappers over the model
 * that check arguments and set txattn_last_error. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "table_model.h"

#define NEED(cond, fn, what) TXATTN_RETURN_IF(!(cond), TXATTN_E_INVALID, "%s: %s is NULL", fn, what)

static txattn_status from_model(txattn_status s, const char *fn, const char *why) {
  return s == TXATTN_OK ? txattn__ok() : txattn__fail(s, "%s: %s", fn, why);
}

void txattn_table_free(txattn_table *t) {
  txattn__tm_free(t);
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

int txattn_table_class_describe(const txattn_table_class *c, char *buf, size_t size) {
  if (c == NULL) {
    txattn__fail(TXATTN_E_INVALID, "txattn_table_class_describe: c is NULL");
    return -1;
  }
  char types[48] = "";
  txattn__tm_types_text(c, types, sizeof types);
  return snprintf(buf, size, "%s d%" PRId64 "/%" PRId64 " g%" PRId64 " t%d%s%s%s",
                  txattn__tm_mask_name(c), c->d_qk, c->d_v, c->group, c->threads,
                  c->decode ? " decode" : "", *types ? " " : "", types);
}

/* ---- reading ---- */

txattn_status txattn_table_header_get(const txattn_table *t, txattn_table_header *out) {
  NEED(t && out, "txattn_table_header_get", t ? "out" : "t");
  *out = (txattn_table_header){
      .format_version = t->format_version,
      .library_version = t->library_version ? t->library_version : "",
      .created = t->created ? t->created : "",
      .machine = t->machine,
      .profile = t->profile ? t->profile : "",
      .path = t->path ? t->path : "",
      .n_plugins = t->n_plugins,
      .n_classes = t->n_classes,
      .n_excluded = t->n_excluded,
  };
  return txattn__ok();
}

static txattn_status index_ok(const char *fn, size_t i, size_t n, const char *what) {
  TXATTN_RETURN_IF(i >= n, TXATTN_E_INVALID, "%s: index %zu is out of range (%zu %s)", fn, i, n,
                   what);
  return TXATTN_OK;
}

txattn_status txattn_table_plugin_get(const txattn_table *t, size_t i, txattn_table_plugin *out) {
  NEED(t && out, "txattn_table_plugin_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_plugin_get", i, t->n_plugins, "plugins"));
  *out = (txattn_table_plugin){t->plugins[i].name, t->plugins[i].version, t->plugins[i].build};
  return txattn__ok();
}

txattn_status txattn_table_class_get(const txattn_table *t, size_t cls, txattn_table_class *out,
                                     size_t *n_points, size_t *n_regions) {
  NEED(t && out, "txattn_table_class_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_class_get", cls, t->n_classes, "classes"));
  *out = t->classes[cls].key;
  if (n_points) *n_points = t->classes[cls].n_points;
  if (n_regions) *n_regions = t->classes[cls].n_regions;
  return txattn__ok();
}

static txattn_status point_of(const txattn_table *t, const char *fn, size_t cls, size_t point,
                              const txattn__point **out) {
  TXATTN_FORWARD_IF_ERROR(index_ok(fn, cls, t->n_classes, "classes"));
  TXATTN_FORWARD_IF_ERROR(index_ok(fn, point, t->classes[cls].n_points, "points in the class"));
  *out = &t->classes[cls].points[point];
  return TXATTN_OK;
}

txattn_status txattn_table_point_get(const txattn_table *t, size_t cls, size_t point,
                                     txattn_table_point *out) {
  const txattn__point *p;
  NEED(t && out, "txattn_table_point_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(point_of(t, "txattn_table_point_get", cls, point, &p));
  *out = (txattn_table_point){p->n, p->r, p->n_cands, p->tie};
  return txattn__ok();
}

static void cand_view(const txattn__cand *c, txattn_table_candidate *out) {
  *out = (txattn_table_candidate){c->kernel,     c->tun.n,  (const char *const *)c->tun.names,
                                  c->tun.values, c->time_s, c->max_error,
                                  c->spread};
}

txattn_status txattn_table_candidate_get(const txattn_table *t, size_t cls, size_t point, size_t i,
                                         txattn_table_candidate *out) {
  const txattn__point *p;
  NEED(t && out, "txattn_table_candidate_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(point_of(t, "txattn_table_candidate_get", cls, point, &p));
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_candidate_get", i, p->n_cands, "candidates"));
  cand_view(&p->cands[i], out);
  return txattn__ok();
}

txattn_status txattn_table_region_get(const txattn_table *t, size_t cls, size_t i,
                                      txattn_table_region *out) {
  NEED(t && out, "txattn_table_region_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_region_get", cls, t->n_classes, "classes"));
  const txattn__class *c = &t->classes[cls];
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_region_get", i, c->n_regions, "regions"));
  const txattn__region *g = &c->regions[i];
  *out = (txattn_table_region){.n_lo = g->n_lo,
                               .n_hi = g->n_hi,
                               .r_lo = g->r_lo,
                               .r_hi = g->r_hi,
                               .time_min_s = g->t_min,
                               .time_max_s = g->t_max,
                               .max_error = g->max_error,
                               .runner_up = g->runner_up,
                               .margin = g->margin};
  cand_view(&c->points[g->point].cands[0], &out->winner);
  out->winner.time_s = g->t_min;
  out->winner.max_error = g->max_error;
  out->winner.spread = -1;
  return txattn__ok();
}

txattn_status txattn_table_exclusion_get(const txattn_table *t, size_t i,
                                         txattn_table_exclusion *out) {
  NEED(t && out, "txattn_table_exclusion_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_exclusion_get", i, t->n_excluded, "exclusions"));
  const txattn__exclusion *x = &t->excluded[i];
  *out = (txattn_table_exclusion){
      x->key,          x->c.kernel, x->c.tun.n, (const char *const *)x->c.tun.names,
      x->c.tun.values, x->n,        x->r,       x->c.max_error,
      x->reason};
  return txattn__ok();
}

txattn_status txattn_table_find_class(const txattn_table *t, const txattn_table_class *c,
                                      size_t *index) {
  NEED(t && c && index, "txattn_table_find_class", "an argument");
  for (size_t i = 0; i < t->n_classes; i++)
    if (txattn__tm_same_key(&t->classes[i].key, c)) {
      *index = i;
      return txattn__ok();
    }
  char d[96];
  txattn_table_class_describe(c, d, sizeof d);
  return txattn__fail(TXATTN_E_NOT_FOUND, "the table has no class %s", d);
}
