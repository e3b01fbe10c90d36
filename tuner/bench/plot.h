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

typedef struct tx_plot {
  tx_plot_panel *panels;
  size_t n, cap;
  size_t dropped; /* measurements beyond the limits above, left out (and reported) */
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

/* Panels with at least one measured time. */
size_t tx_plot_count_drawable(const tx_plot *pl);
/* The chart: one panel per 2 columns, each with its curves, fitted slopes in the legend, slope 1
   and slope 2 guides, dashed lines where the fastest kernel changes and an x where one failed. A
   kernel has the same colour in every panel (tx_plot_colour). `source` names the input
   in the SVG's title. Returns 0, or -1 if writing failed. */
int tx_plot_write_svg(const tx_plot *pl, const char *source, FILE *f);
/* A kernel's colour as "#rrggbb", from its name alone: a hue per family (the part before the
   '.'; a known one or a hash of the name), a shade per ISA. */
void tx_plot_colour(const char *kernel, char out[8]);

/* ---- sources: each returns 0, or prints why ("txtune plot: ...") and returns TX_EXIT_FAIL ---- */
/* A dispatch table, strictly validated by libtxattn: one panel per class and window reach r, each
   kernel's fastest time (any tunables) at each n. */
int tx_plot_from_table(const char *path, tx_plot *pl);
/* A bench sweep document (bench_sweep.md) already parsed: `root` is a json_t *. One panel per
   problem class (mask kind and window, head sizes, heads, batch). */
int tx_plot_from_sweep(const void *root, const char *path, tx_plot *pl);

#endif
