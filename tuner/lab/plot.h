/* SPDX-License-Identifier: MIT */
/* txtune plot's model (plot.c): time against n per kernel, in panels, whatever the measurements
   came from (plot_source.c), drawn as one SVG (plot_svg.c); and the power law t ~ n^k that measured
   times follow, for sweeps and plots: dense attention tends to k = 2, a fixed window to k = 1. */
#ifndef TXTUNE_PLOT_H
#define TXTUNE_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TX_PLOT_MAX_SERIES 32
#define TX_PLOT_MAX_X      64

/* One kernel's time at each n of its panel (0: not measured there). */
typedef struct tx_plot_series {
  char kernel[64];
  double t[TX_PLOT_MAX_X];
  int inexact; /* some point failed the exactness check: its label says so */
  unsigned char failed[TX_PLOT_MAX_X]; /* it failed at this n (no time): an x marks it */
  char *why[TX_PLOT_MAX_X]; /* why it has no time at this n, as the source says (owned), or NULL */
} tx_plot_series;

typedef struct tx_plot_panel {
  char title[192];
  int64_t x[TX_PLOT_MAX_X]; /* ascending */
  size_t n_x;
  tx_plot_series s[TX_PLOT_MAX_SERIES];
  size_t n_s;
} tx_plot_panel;

/* A line of the first panel, "the price of attention": the best kernel's time against n in one
   class of a mask kind. */
typedef struct tx_plot_best {
  char cls[192];   /* the class drawn, as its panel's title; "" when the source has none */
  int decode_only; /* the source has this mask kind only in decode classes, which are not drawn */
  size_t n;
  int64_t x[TX_PLOT_MAX_X]; /* ascending */
  double t[TX_PLOT_MAX_X];
  char kernel[TX_PLOT_MAX_X][64];
} tx_plot_best;

#define TX_PLOT_KINDS 3 /* the mask kinds, indexed by txattn_mask: none, causal, window */

typedef struct tx_plot {
  tx_plot_panel *panels;
  size_t n, cap;
  size_t dropped; /* measurements beyond the limits above, left out (and reported) */
  tx_plot_best best[TX_PLOT_KINDS]; /* the first panel */
  const char *best_is; /* what "best" means for the source: "the chosen kernel", "the fastest" */
  /* what it means that a kernel has no record at all at a panel's larger n: "dropped" (a profile
     stops timing a clear loser), "not measured" */
  const char *untimed;
} tx_plot;

/* A new empty panel, or NULL when out of memory. */
tx_plot_panel *tx_plot_add_panel(tx_plot *pl, const char *title);
/* Records kernel's time t at n; the smaller time wins when n is given twice (a table holds one
   time per tunable setting). Returns 0, or -1 when the panel is full (counted in dropped). */
int tx_plot_set(tx_plot *pl, tx_plot_panel *p, const char *kernel, int64_t n, double t,
                int inexact);
/* Records that kernel has no time at n and why (NULL: the source does not say): failed (did not
   plan, run or pass the exactness check: an x marks it) or did not run (not usable, not
   applicable). The first reason given for an n is kept. Returns 0, or -1 when the panel is full
   (counted in dropped) or out of memory. */
int tx_plot_mark(tx_plot *pl, tx_plot_panel *p, const char *kernel, int64_t n, int failed,
                 const char *why);
void tx_plot_free(tx_plot *pl);

/* Records the best kernel's time t at n on a line of the first panel; the smaller time wins when
   n is given twice. Returns 0, or -1 when the line is full (counted in pl->dropped). */
int tx_plot_best_set(tx_plot *pl, tx_plot_best *b, const char *kernel, int64_t n, double t);
/* 1 if the first panel has something to show: a line, or a mask kind to say something about. */
int tx_plot_has_best(const tx_plot *pl);

/* 1 if series s has something to draw: a time or a failure. */
int tx_plot_series_drawn(const tx_plot_series *s);
/* 1 if panel p has a series drawn. */
int tx_plot_panel_drawn(const tx_plot_panel *p);
/* Panels with at least one series drawn. */
size_t tx_plot_count_drawable(const tx_plot *pl);
/* The least-squares slope of log t against log n over the pairs with n > 0 and t > 0; NaN when
   fewer than three remain, or fewer than two distinct n (a line through two points fits anything
   and says nothing of how t grows). */
double tx_loglog_slope(const double *n, const double *t, size_t count);

#endif
