/* SPDX-License-Identifier: MIT */
/* A class's lookup index (its distinct n and r values and the point at each pair) and its regions:
 * rectangles of neighbouring measured points with the same winner (kernel and tunables).
 *
 * Regions are found row by row: in each r row, runs of points adjacent in n with one winner; a run
 * whose n extent and winner equal those of a rectangle ending in the row below extends it upwards.
 * The lookup (table_lookup.c) never reads the regions to decide, only the points: a problem whose
 * surrounding measured points all have one winner gets that winner, which is exactly what lying
 * inside a region means when the region is one row or one column wide. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table_regions.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The distinct values of the points' field (offset: n or r), ascending. */
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

/* Appends the row's runs to rects, extending the rectangles that ended in the row below. */
static int add_row(const txattn__class *c, const int32_t *grid, size_t ri, rect **rects, size_t *n,
                   size_t *cap) {
  size_t ni = 0;
  while (ni < c->n_ns) {
    int32_t p = grid[ri * c->n_ns + ni];
    if (p < 0) {
      ni++;
      continue;
    }
    size_t end = ni;
    while (end + 1 < c->n_ns && grid[ri * c->n_ns + end + 1] >= 0 &&
           same_winner(c, p, grid[ri * c->n_ns + end + 1]))
      end++;
    size_t j = 0;
    while (j < *n && !((*rects)[j].ri_hi + 1 == ri && (*rects)[j].ni_lo == ni &&
                       (*rects)[j].ni_hi == end && same_winner(c, (*rects)[j].point, p)))
      j++;
    if (j < *n) {
      (*rects)[j].ri_hi = ri;
    } else {
      if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 8;
        rect *r = realloc(*rects, nc * sizeof *r);
        if (r == NULL) return 0;
        *rects = r;
        *cap = nc;
      }
      (*rects)[(*n)++] = (rect){ni, end, ri, ri, p};
    }
    ni = end + 1;
  }
  return 1;
}

static double round6(double x) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.6g", x);
  return strtod(buf, NULL);
}

/* The fastest candidate of another kernel than the winner's, or NULL. */
static const txattn__cand *runner_up(const txattn__point *p) {
  for (size_t i = 1; i < p->n_cands; i++)
    if (strcmp(p->cands[i].kernel, p->cands[0].kernel) != 0) return &p->cands[i];
  return NULL;
}

static void region_stats(txattn__class *c, const int32_t *grid, const rect *q, size_t index,
                         txattn__region *out) {
  *out = (txattn__region){c->ns[q->ni_lo],
                          c->ns[q->ni_hi],
                          c->rs[q->ri_lo],
                          c->rs[q->ri_hi],
                          (size_t)q->point,
                          INFINITY,
                          0,
                          0,
                          NULL,
                          0};
  for (size_t ri = q->ri_lo; ri <= q->ri_hi; ri++)
    for (size_t ni = q->ni_lo; ni <= q->ni_hi; ni++) {
      txattn__point *p = &c->points[grid[ri * c->n_ns + ni]];
      const txattn__cand *w = &p->cands[0], *u = runner_up(p);
      p->region = index;
      out->t_min = fmin(out->t_min, w->time_s);
      out->t_max = fmax(out->t_max, w->time_s);
      out->max_error = fmax(out->max_error, w->max_error);
      double m = u ? round6(u->time_s / w->time_s) : 0;
      if (u && (out->runner_up == NULL || m < out->margin)) {
        out->runner_up = u->kernel;
        out->margin = m;
      }
    }
}

static int regions(txattn__class *c, const int32_t *grid, txattn__region **out, size_t *n_out) {
  rect *rects = NULL;
  size_t n = 0, cap = 0;
  for (size_t ri = 0; ri < c->n_rs; ri++)
    if (!add_row(c, grid, ri, &rects, &n, &cap)) {
      free(rects);
      return 0;
    }
  txattn__region *r = malloc((n ? n : 1) * sizeof *r);
  if (r == NULL) {
    free(rects);
    return 0;
  }
  for (size_t i = 0; i < n; i++) region_stats(c, grid, &rects[i], i, &r[i]);
  free(rects);
  *out = r;
  *n_out = n;
  return 1;
}

int txattn__tm_reindex(txattn__class *c) {
  size_t n_ns = 0, n_rs = 0;
  int64_t *ns = distinct(c, 0, &n_ns), *rs = distinct(c, 1, &n_rs);
  int32_t *grid = NULL;
  txattn__region *reg = NULL;
  size_t n_reg = 0;
  size_t cells = n_ns * n_rs;
  int ok = ns && rs && cells <= (1u << 22) &&
           (grid = malloc((cells > 0 ? cells : 1) * sizeof *grid)) != NULL;
  if (ok) {
    for (size_t i = 0; i < cells; i++) grid[i] = -1;
    for (size_t i = 0; i < c->n_points; i++)
      grid[find(rs, n_rs, c->points[i].r) * n_ns + find(ns, n_ns, c->points[i].n)] = (int32_t)i;
    int64_t *old_ns = c->ns, *old_rs = c->rs;
    size_t old_n_ns = c->n_ns, old_n_rs = c->n_rs;
    c->ns = ns, c->rs = rs, c->n_ns = n_ns, c->n_rs = n_rs;
    ok = regions(c, grid, &reg, &n_reg);
    c->ns = old_ns, c->rs = old_rs, c->n_ns = old_n_ns, c->n_rs = old_n_rs;
  }
  if (!ok) {
    free(ns);
    free(rs);
    free(grid);
    return 0;
  }
  free(c->ns);
  free(c->rs);
  free(c->grid);
  free(c->regions);
  c->ns = ns, c->rs = rs, c->n_ns = n_ns, c->n_rs = n_rs, c->grid = grid;
  c->regions = reg;
  c->n_regions = n_reg;
  return 1;
}
