/* txtune plot from a dispatch table: one panel per class and window reach r, each kernel's
   fastest measured time (whatever its tunables) at each n, and where the profile excluded one. */
#include <stdio.h>

#include "args.h"
#include "context_cli.h"
#include "plot.h"
#include "txattn/table.h"

#define MAX_REACHES 64

/* The distinct r of class ci's points (one 0 without a window). */
static size_t reaches(const txattn_table *t, size_t ci, int64_t *r, size_t cap) {
  size_t n_points = 0, k = 0;
  txattn_table_class c;
  txattn_table_class_get(t, ci, &c, &n_points, NULL);
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point pt;
    if (txattn_table_point_get(t, ci, i, &pt) != TXATTN_OK) continue;
    int seen = 0;
    for (size_t j = 0; j < k && !seen; j++) seen = r[j] == pt.r;
    if (!seen && k < cap) r[k++] = pt.r;
  }
  return k;
}

static int same_class(const txattn_table_class *a, const txattn_table_class *b) {
  return a->mask == b->mask && a->window == b->window && a->d_qk == b->d_qk && a->d_v == b->d_v &&
         a->group == b->group && a->threads == b->threads && a->decode == b->decode;
}

/* The kernels the profile excluded at a point of this panel (failed to plan, or inexact). */
static void mark_failures(const txattn_table *t, const txattn_table_class *c, int64_t r,
                          tx_plot *pl, tx_plot_panel *p) {
  txattn_table_header h;
  txattn_table_header_get(t, &h);
  for (size_t i = 0; i < h.n_excluded; i++) {
    txattn_table_exclusion x;
    if (txattn_table_exclusion_get(t, i, &x) == TXATTN_OK && same_class(&x.cls, c) && x.r == r)
      tx_plot_fail(pl, p, x.kernel, x.n);
  }
}

static int fill_panel(const txattn_table *t, size_t ci, int64_t r, tx_plot *pl) {
  txattn_table_class c;
  size_t n_points = 0;
  char d[96], title[128];
  txattn_table_class_get(t, ci, &c, &n_points, NULL);
  txattn_table_class_describe(&c, d, sizeof d);
  snprintf(title, sizeof title, r ? "%s, r = %lld" : "%s", d, (long long)r);
  tx_plot_panel *p = tx_plot_add_panel(pl, title);
  if (!p) return -1;
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point pt;
    if (txattn_table_point_get(t, ci, i, &pt) != TXATTN_OK || pt.r != r) continue;
    for (size_t k = 0; k < pt.n_candidates; k++) {
      txattn_table_candidate cand;
      if (txattn_table_candidate_get(t, ci, i, k, &cand) == TXATTN_OK)
        tx_plot_set(pl, p, cand.kernel, pt.n, cand.time_s, 0);
    }
  }
  mark_failures(t, &c, r, pl, p);
  return 0;
}

int tx_plot_from_table(const char *path, tx_plot *pl) {
  txattn_table *t = NULL;
  txattn_status s = txattn_table_load(path, &t);
  if (s != TXATTN_OK) {
    tx_print_lib_error("plot", "cannot use the table", s);
    return TX_EXIT_FAIL;
  }
  txattn_table_header h;
  txattn_table_header_get(t, &h);
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
