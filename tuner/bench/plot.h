/* SPDX-License-Identifier: MIT */
/* txtune plot: time against n per kernel, in panels, whatever the measurements came from (a
   dispatch table: plot_table.c; a bench sweep: plot_sweep.c), drawn as one SVG (plot_svg.c). */
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
/* The chart: first "the price of attention" (tx_plot_has_best), a row of its own, then one panel
   per 2 columns, each with its curves, each labelled at its end (with its slope from 3 points
   up), a note where one stops before the panel's largest n and why, slope 1 and slope 2 guides,
   dashed lines where the fastest kernel changes, an x where one failed, and below the panel what
   the source says about each n a kernel has no time at. A kernel has the same colour and marker
   in every panel (tx_plot_styles). `source` names the input in the SVG's title. Returns 0, or -1
   if writing failed or out of memory. */
int tx_plot_write_svg(const tx_plot *pl, const char *source, FILE *f);

/* ---- each kernel's colour and marker (plot_style.c) ---- */
#define TX_PLOT_COLOURS 10
#define TX_PLOT_MARKERS 7
#define TX_PLOT_STYLES  (TX_PLOT_COLOURS * TX_PLOT_MARKERS)

typedef struct tx_plot_style {
  const char *colour; /* "#rrggbb" */
  unsigned marker;    /* < TX_PLOT_MARKERS: the SVG symbol "#txm<marker>" (tx_plot_marker_defs) */
} tx_plot_style;

/* The styles of one plot's kernels. Style i is colour i % TX_PLOT_COLOURS and marker
   i % TX_PLOT_MARKERS, so that two styles differ in colour, marker or both. The kernels shipped
   with libtxattn hold fixed styles (in a fixed order of their names); any other name takes the
   style its hash names, or the next free one when another kernel of the plot holds it (names
   taken in sorted order): a kernel has its style in every plot that has no other unknown kernel
   hashed alike. */
typedef struct tx_plot_styles {
  size_t n;
  char (*name)[64];
  unsigned *style;
} tx_plot_styles;

/* The styles of every kernel in pl (panels and first panel). Returns 0, or -1 out of memory. */
int tx_plot_styles_init(tx_plot_styles *st, const tx_plot *pl);
/* kernel's style; a kernel not in st gets the style its name alone gives. */
tx_plot_style tx_plot_style_of(const tx_plot_styles *st, const char *kernel);
void tx_plot_styles_free(tx_plot_styles *st);
/* The <defs> of the markers, to be written once in the SVG. */
void tx_plot_marker_defs(FILE *f);
/* A marker of style s centred at (x, y), `scale` times its size, with a tooltip unless title is
   NULL. */
void tx_plot_marker(FILE *f, tx_plot_style s, double x, double y, double scale, const char *title);

/* ---- sources: each returns 0, or prints why ("txtune plot: ...") and returns TX_EXIT_FAIL ---- */
/* A dispatch table, strictly validated by libtxattn: one panel per class and window reach r, each
   kernel's fastest time (any tunables) at each n; and for the first panel, per mask kind, the
   chosen kernel's time at each n of one class (plot_table.c says which). */
int tx_plot_from_table(const char *path, tx_plot *pl);
/* A bench sweep document (bench_sweep.md) already parsed: `root` is a json_t *. One panel per
   problem class (mask kind and window, head sizes, heads, batch); for the first panel, per mask
   kind, the fastest exact kernel at each n of the class with the most n. */
int tx_plot_from_sweep(const void *root, const char *path, tx_plot *pl);

#endif
