/* SPDX-License-Identifier: MIT */
/* txtune plot from a dispatch table: one panel per class and window reach r, each kernel's
   fastest measured time (whatever its tunables) at each n, and where the profile excluded one;
   and the first panel's lines: per mask kind, the chosen kernel at each n of one class. */
#include <stdio.h>

#include "args.h"
#include "context_cli.h"
#include "plot.h"
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

int tx_plot_from_table(const char *path, tx_plot *pl) {
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
