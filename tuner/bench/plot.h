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
  int inexact; /* some point failed the exactness check: the legend says so */
  unsigned char failed[TX_PLOT_MAX_X]; /* it failed at this n (no time): an x marks it */
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
} tx_plot;

/* A new empty panel, or NULL when out of memory. */
tx_plot_panel *tx_plot_add_panel(tx_plot *pl, const char *title);
/* Records kernel's time t at n; the smaller time wins when n is given twice (a table holds one
   time per tunable setting). Returns 0, or -1 when the panel is full (counted in dropped). */
int tx_plot_set(tx_plot *pl, tx_plot_panel *p, const char *kernel, int64_t n, double t,
                int inexact);
/* Records that kernel failed at n (did not plan, run or pass the exactness check there). Returns
   0, or -1 when the panel is full (counted in dropped). */
int tx_plot_fail(tx_plot *pl, tx_plot_panel *p, const char *kernel, int64_t n);
void tx_plot_free(tx_plot *pl);

/* Records the best kernel's time t at n on a line of the first panel; the smaller time wins when
   n is given twice. Returns 0, or -1 when the line is full (counted in pl->dropped). */
int tx_plot_best_set(tx_plot *pl, tx_plot_best *b, const char *kernel, int64_t n, double t);
/* 1 if the first panel has something to show: a line, or a mask kind to say something about. */
int tx_plot_has_best(const tx_plot *pl);

/* Panels with at least one measured time. */
size_t tx_plot_count_drawable(const tx_plot *pl);
/* The chart: first "the price of attention" (tx_plot_has_best), a row of its own, then one panel
   per 2 columns, each with its curves, fitted slopes in the legend, slope 1
   and slope 2 guides, dashed lines where the fastest kernel changes and an x where one failed. A
   kernel has the same colour in every panel (tx_plot_colour). `source` names the input
   in the SVG's title. Returns 0, or -1 if writing failed. */
int tx_plot_write_svg(const tx_plot *pl, const char *source, FILE *f);
/* A kernel's colour as "#rrggbb", from its name alone: a hue per family (the part before the
   '.'; a known one or a hash of the name), a shade per ISA. */
void tx_plot_colour(const char *kernel, char out[8]);

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
