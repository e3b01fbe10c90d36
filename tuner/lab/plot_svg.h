/* SPDX-License-Identifier: MIT */
/* A txtune plot drawn as one self-contained SVG (plot_svg.c), each kernel in its colour and marker,
   and text escaped for SVG. */
#ifndef TXTUNE_PLOT_SVG_H
#define TXTUNE_PLOT_SVG_H

#include <stdio.h>

#include "plot.h"

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
/* Kernel names and titles come from plugins and files: never markup. */
void tx_svg_text(FILE *f, const char *s);
/* A marker of style s centred at (x, y), `scale` times its size, with a tooltip unless title is
   NULL. */
void tx_plot_marker(FILE *f, tx_plot_style s, double x, double y, double scale, const char *title);

/* The chart: first "the price of attention" (tx_plot_has_best), a row of its own, then one panel
   per 2 columns, each with its curves, each labelled at its end (with its slope from 3 points
   up), a note where one stops before the panel's largest n and why, slope 1 and slope 2 guides,
   dashed lines where the fastest kernel changes, an x where one failed, and below the panel what
   the source says about each n a kernel has no time at. A kernel has the same colour and marker
   in every panel (tx_plot_styles). `source` names the input in the SVG's title. Returns 0, or -1
   if writing failed or out of memory. */
int tx_plot_write_svg(const tx_plot *pl, const char *source, FILE *f);

#endif
