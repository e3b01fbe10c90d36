/* SPDX-License-Identifier: MIT */
/* The public builder and reader of dispatch tables (txattn/table.h): thin wrappers over the model
 * that check arguments and set txattn_last_error. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "struct_size.h"
#include "table_model.h"

#define NEED(cond, fn, what) TXATTN_RETURN_IF(!(cond), TXATTN_E_INVALID, "%s: %s is NULL", fn, what)

/* The caller's class (or exclusion) as this header's struct, read as far as its struct_size reaches
   (struct_size.h). An exclusion's class is read by the class's own struct_size, within the bytes
   the exclusion's covers. */
static txattn_status class_in(const txattn_table_class *c, txattn_table_class *copy) {
  return TXATTN__STRUCT_IN(txattn_table_class, c, copy);
}

static txattn_status exclusion_in(const txattn_table_exclusion *e, txattn_table_exclusion *copy) {
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_IN(txattn_table_exclusion, e, copy));
  size_t size = e->struct_size ? e->struct_size : TXATTN_TABLE_EXCLUSION_SIZE_0_2;
  size_t reach = size - offsetof(txattn_table_exclusion, cls); /* struct_in checked size */
  txattn_table_class cls = copy->cls;                          /* zero past the caller's bytes */
  size_t cls_size = cls.struct_size ? cls.struct_size : TXATTN_TABLE_CLASS_SIZE_0_2;
  TXATTN_RETURN_IF(cls_size > reach, TXATTN_E_INVALID,
                   "txattn_table_exclusion.cls.struct_size = %zu reaches past the exclusion's "
                   "struct_size = %zu",
                   cls_size, size);
  /* bytes of a newer header's class past this one's were checked zero with the exclusion's */
  if (cls_size > sizeof cls) cls.struct_size = sizeof cls;
  return class_in(&cls, &copy->cls);
}

/* After an output struct was written: the struct_size of the struct it holds last, at `at`, says how
   much of that one was written (the outer struct_size, the first field, counts both). */
static void inner_size(void *out, size_t at) {
  size_t written;
  memcpy(&written, out, sizeof written);
  if (written < at + sizeof(size_t)) return;
  size_t inner = written - at;
  memcpy((unsigned char *)out + at, &inner, sizeof inner);
}

/* The caller's candidates as this header's structs in *copy (to free): the stride is the first's
   struct_size, which every one must share. NULL, empty or oversized arrays go to the model as they
   are: it refuses them without reading one. */
static txattn_status cands_in(const txattn_table_candidate *cands, size_t n,
                              txattn_table_candidate **copy) {
  *copy = NULL;
  if (cands == NULL || n == 0 || n > TXATTN__TABLE_MAX_CANDIDATES) return TXATTN_OK;
  size_t stride = cands->struct_size ? cands->struct_size : TXATTN_TABLE_CANDIDATE_SIZE_0_2;
  TXATTN_RETURN_IF(stride % sizeof(size_t) != 0, TXATTN_E_INVALID,
                   "txattn_table_candidate.struct_size = %zu is no size of a "
                   "txattn_table_candidate (this library's is %zu)",
                   stride, sizeof *cands);
  txattn_table_candidate *c = calloc(n, sizeof *c);
  TXATTN_RETURN_IF(c == NULL, TXATTN_E_NOMEM, "out of memory for %zu candidates", n);
  for (size_t i = 0; i < n; i++) {
    const txattn_table_candidate *in =
        (const txattn_table_candidate *)((const unsigned char *)cands + i * stride);
    txattn_status s = in->struct_size == cands->struct_size
                          ? TXATTN__STRUCT_IN(txattn_table_candidate, in, &c[i])
                          : txattn__fail(TXATTN_E_INVALID,
                                         "txattn_table_candidate.struct_size of candidate %zu, "
                                         "%zu, differs from the first's, %zu",
                                         i, in->struct_size, cands->struct_size);
    if (s != TXATTN_OK) {
      free(c);
      return s;
    }
  }
  *copy = c;
  return TXATTN_OK;
}

static txattn_status from_model(txattn_status s, const char *fn, const char *why) {
  return s == TXATTN_OK ? txattn__ok() : txattn__fail(s, "%s: %s", fn, why);
}

void txattn_table_free(txattn_table *t) {
  txattn__tm_free(t);
}

txattn_status txattn_table_add_class(txattn_table *t, const txattn_table_class *c, size_t *index) {
  char why[512];
  txattn_table_class copy = TXATTN_TABLE_CLASS_INIT;
  NEED(t && c, "txattn_table_add_class", t ? "c" : "t");
  TXATTN_FORWARD_IF_ERROR(class_in(c, &copy));
  return from_model(txattn__tm_add_class(t, &copy, index, why, sizeof why),
                    "txattn_table_add_class", why);
}

/* Both builders of a point: chosen is -1 for the fastest. */
static txattn_status add_point(txattn_table *t, size_t cls, int64_t n, int64_t r,
                               const txattn_table_candidate *cands, size_t n_cands, long chosen,
                               const char *fn) {
  char why[512];
  txattn_table_candidate *copy;
  NEED(t, fn, "t");
  TXATTN_FORWARD_IF_ERROR(cands_in(cands, n_cands, &copy));
  txattn_status s =
      txattn__tm_add_point(t, cls, n, r, copy ? copy : cands, n_cands, chosen, 1, why, sizeof why);
  free(copy);
  return from_model(s, fn, why);
}

txattn_status txattn_table_add_point(txattn_table *t, size_t cls, int64_t n, int64_t r,
                                     const txattn_table_candidate *cands, size_t n_cands) {
  return add_point(t, cls, n, r, cands, n_cands, -1, "txattn_table_add_point");
}

txattn_status txattn_table_add_point_chosen(txattn_table *t, size_t cls, int64_t n, int64_t r,
                                            const txattn_table_candidate *cands, size_t n_cands,
                                            size_t chosen) {
  TXATTN_RETURN_IF(chosen > LONG_MAX, TXATTN_E_INVALID,
                   "txattn_table_add_point_chosen: chosen = %zu is not a candidate", chosen);
  return add_point(t, cls, n, r, cands, n_cands, (long)chosen, "txattn_table_add_point_chosen");
}

txattn_status txattn_table_add_exclusion(txattn_table *t, const txattn_table_exclusion *e) {
  char why[512];
  txattn_table_exclusion copy = TXATTN_TABLE_EXCLUSION_INIT;
  NEED(t && e, "txattn_table_add_exclusion", t ? "e" : "t");
  TXATTN_FORWARD_IF_ERROR(exclusion_in(e, &copy));
  return from_model(txattn__tm_add_exclusion(t, &copy, why, sizeof why),
                    "txattn_table_add_exclusion", why);
}

int txattn_table_class_describe(const txattn_table_class *in, char *buf, size_t size) {
  txattn_table_class copy = TXATTN_TABLE_CLASS_INIT;
  if (in == NULL) {
    txattn__fail(TXATTN_E_INVALID, "txattn_table_class_describe: c is NULL");
    return -1;
  }
  if (class_in(in, &copy) != TXATTN_OK) return -1;
  return txattn__tm_class_text(&copy, buf, size);
}

/* ---- reading ---- */

txattn_status txattn_table_header_get(const txattn_table *t, txattn_table_header *out) {
  NEED(t && out, "txattn_table_header_get", t ? "out" : "t");
  txattn_table_header full;
  memset(&full, 0, sizeof full); /* padding too: callers may compare */
  full.struct_size = sizeof full;
  full.format_version = t->format_version;
  full.library_version = t->library_version ? t->library_version : "";
  full.created = t->created ? t->created : "";
  full.profile = t->profile ? t->profile : "";
  full.path = t->path ? t->path : "";
  full.n_plugins = t->n_plugins;
  full.n_classes = t->n_classes;
  full.n_excluded = t->n_excluded;
  memcpy(&full.machine, &t->machine, sizeof full.machine);
  full.machine.struct_size = sizeof full.machine;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_table_header, out, &full));
  inner_size(out, offsetof(txattn_table_header, machine));
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
  txattn_table_plugin full;
  memset(&full, 0, sizeof full); /* padding too: callers may compare */
  full.struct_size = sizeof full;
  full.name = t->plugins[i].name;
  full.version = t->plugins[i].version;
  full.build = t->plugins[i].build;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_table_plugin, out, &full));
  return txattn__ok();
}

txattn_status txattn_table_class_get(const txattn_table *t, size_t cls, txattn_table_class *out,
                                     size_t *n_points, size_t *n_regions) {
  NEED(t && out, "txattn_table_class_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_class_get", cls, t->n_classes, "classes"));
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_table_class, out, &t->classes[cls].key));
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
  txattn_table_point full;
  memset(&full, 0, sizeof full); /* padding too: callers may compare */
  full.struct_size = sizeof full;
  full.n = p->n;
  full.r = p->r;
  full.n_candidates = p->n_cands;
  full.tie = p->tie;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_table_point, out, &full));
  return txattn__ok();
}

static void cand_view(const txattn__cand *c, txattn_table_candidate *out) {
  memset(out, 0, sizeof *out); /* padding too: callers may compare */
  out->struct_size = sizeof *out;
  out->kernel = c->kernel;
  out->n_tunables = c->tun.n;
  out->tunable_names = (const char *const *)c->tun.names;
  out->tunable_values = c->tun.values;
  out->time_s = c->time_s;
  out->max_error = c->max_error;
  out->spread = c->spread;
}

txattn_status txattn_table_candidate_get(const txattn_table *t, size_t cls, size_t point, size_t i,
                                         txattn_table_candidate *out) {
  const txattn__point *p;
  NEED(t && out, "txattn_table_candidate_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(point_of(t, "txattn_table_candidate_get", cls, point, &p));
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_candidate_get", i, p->n_cands, "candidates"));
  txattn_table_candidate full = TXATTN_TABLE_CANDIDATE_INIT;
  cand_view(&p->cands[i], &full);
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_table_candidate, out, &full));
  return txattn__ok();
}

txattn_status txattn_table_region_get(const txattn_table *t, size_t cls, size_t i,
                                      txattn_table_region *out) {
  NEED(t && out, "txattn_table_region_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_region_get", cls, t->n_classes, "classes"));
  const txattn__class *c = &t->classes[cls];
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_region_get", i, c->n_regions, "regions"));
  const txattn__region *g = &c->regions[i];
  txattn_table_region full;
  memset(&full, 0, sizeof full); /* padding too: callers may compare */
  full.struct_size = sizeof full;
  full.n_lo = g->n_lo;
  full.n_hi = g->n_hi;
  full.r_lo = g->r_lo;
  full.r_hi = g->r_hi;
  full.time_min_s = g->t_min;
  full.time_max_s = g->t_max;
  full.max_error = g->max_error;
  full.runner_up = g->runner_up;
  full.margin = g->margin;
  cand_view(&c->points[g->point].cands[0], &full.winner);
  full.winner.time_s = g->t_min;
  full.winner.max_error = g->max_error;
  full.winner.spread = -1;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_table_region, out, &full));
  inner_size(out, offsetof(txattn_table_region, winner));
  return txattn__ok();
}

txattn_status txattn_table_exclusion_get(const txattn_table *t, size_t i,
                                         txattn_table_exclusion *out) {
  NEED(t && out, "txattn_table_exclusion_get", t ? "out" : "t");
  TXATTN_FORWARD_IF_ERROR(index_ok("txattn_table_exclusion_get", i, t->n_excluded, "exclusions"));
  const txattn__exclusion *x = &t->excluded[i];
  txattn_table_exclusion full;
  memset(&full, 0, sizeof full); /* padding too: callers may compare */
  full.struct_size = sizeof full;
  full.kernel = x->c.kernel;
  full.n_tunables = x->c.tun.n;
  full.tunable_names = (const char *const *)x->c.tun.names;
  full.tunable_values = x->c.tun.values;
  full.n = x->n;
  full.r = x->r;
  full.max_error = x->c.max_error;
  full.reason = x->reason;
  memcpy(&full.cls, &x->key, sizeof full.cls);
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_table_exclusion, out, &full));
  inner_size(out, offsetof(txattn_table_exclusion, cls));
  return txattn__ok();
}

txattn_status txattn_table_find_class(const txattn_table *t, const txattn_table_class *c,
                                      size_t *index) {
  txattn_table_class copy = TXATTN_TABLE_CLASS_INIT;
  NEED(t && c && index, "txattn_table_find_class", "an argument");
  TXATTN_FORWARD_IF_ERROR(class_in(c, &copy));
  for (size_t i = 0; i < t->n_classes; i++)
    if (txattn__tm_same_key(&t->classes[i].key, &copy)) {
      *index = i;
      return txattn__ok();
    }
  char d[96];
  txattn_table_class_describe(&copy, d, sizeof d);
  return txattn__fail(TXATTN_E_NOT_FOUND, "the table has no class %s", d);
}
