/* SPDX-License-Identifier: MIT */
/* txtune profile's closing summary: per class, which kernel wins over which ranges of n (and r),
   and how much faster it is there than the dense OpenBLAS kernel (masked.*). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "profile.h"
#include "text_table.h"

/* The ratio masked.* time / winner time over the points of region g: lo..hi; 0 if masked was not
   measured at any of them. */
static void speedup(const txattn_table *t, size_t ci, size_t n_points, const txattn_table_region *g,
                    double *lo, double *hi) {
  *lo = INFINITY;
  *hi = 0;
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(t, ci, i, &p) != TXATTN_OK) continue;
    if (p.n < g->n_lo || p.n > g->n_hi || p.r < g->r_lo || p.r > g->r_hi) continue;
    double best = 0, masked = 0;
    for (size_t k = 0; k < p.n_candidates; k++) {
      txattn_table_candidate c = TXATTN_TABLE_CANDIDATE_INIT;
      if (txattn_table_candidate_get(t, ci, i, k, &c) != TXATTN_OK) continue;
      if (k == 0) best = c.time_s;
      if (masked == 0 && strncmp(c.kernel, "masked.", 7) == 0) masked = c.time_s;
    }
    if (masked <= 0 || best <= 0) continue;
    if (masked / best < *lo) *lo = masked / best;
    if (masked / best > *hi) *hi = masked / best;
  }
  if (*hi == 0) *lo = 0;
}

static void range(int64_t lo, int64_t hi, char *buf, size_t size) {
  if (lo == hi)
    snprintf(buf, size, "%lld", (long long)lo);
  else
    snprintf(buf, size, "%lld..%lld", (long long)lo, (long long)hi);
}

static void add_region(tx_table *tab, const txattn_table *t, size_t ci, size_t n_points,
                       const char *cls, const txattn_table_region *g) {
  char n[40], r[40], time[48], up[40];
  double lo, hi;
  range(g->n_lo, g->n_hi, n, sizeof n);
  if (g->r_hi)
    range(g->r_lo, g->r_hi, r, sizeof r);
  else
    snprintf(r, sizeof r, "-");
  char t1[20], t2[20];
  tx_fmt_time(g->time_min_s, t1, sizeof t1);
  tx_fmt_time(g->time_max_s, t2, sizeof t2);
  if (g->time_min_s == g->time_max_s)
    snprintf(time, sizeof time, "%s", t1);
  else
    snprintf(time, sizeof time, "%s..%s", t1, t2);
  speedup(t, ci, n_points, g, &lo, &hi);
  if (hi == 0)
    snprintf(up, sizeof up, "-");
  else if (hi / lo < 1.005)
    snprintf(up, sizeof up, "%.2fx", lo);
  else
    snprintf(up, sizeof up, "%.2fx..%.2fx", lo, hi);
  const char *cells[] = {cls, n, r, g->winner.kernel, time, up};
  tx_table_add(tab, cells);
}

void prof_summary(const txattn_table *t, FILE *f) {
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  if (txattn_table_header_get(t, &h) != TXATTN_OK) return;
  tx_table tab;
  tx_table_init(&tab, "CLASS|>N|>R|WINNER|TIME|>VS MASKED (DENSE BLAS)");
  for (size_t ci = 0; ci < h.n_classes; ci++) {
    txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
    size_t n_points, n_regions;
    char d[96];
    if (txattn_table_class_get(t, ci, &c, &n_points, &n_regions) != TXATTN_OK) continue;
    txattn_table_class_describe(&c, d, sizeof d);
    for (size_t i = 0; i < n_regions; i++) {
      txattn_table_region g = TXATTN_TABLE_REGION_INIT;
      if (txattn_table_region_get(t, ci, i, &g) == TXATTN_OK)
        add_region(&tab, t, ci, n_points, i ? "" : d, &g);
    }
  }
  tx_table_print(&tab, f, "  ");
  tx_table_free(&tab);
}
