/* SPDX-License-Identifier: MIT */
/* What the drawing of a txtune plot shares (plot_svg.c, plot_price.c, plot_style.c): the panel
   grid, a panel's frame and log-log scales, labels placed so that they cover nothing taken, and
   text escaped for SVG. */
#ifndef TXTUNE_PLOT_DRAW_H
#define TXTUNE_PLOT_DRAW_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plot.h"

#define TX_PANEL_W  620
#define TX_PANEL_H  340
#define TX_MARGIN_L 70
#define TX_MARGIN_R 210
#define TX_MARGIN_T 34
#define TX_MARGIN_B 46
#define TX_COLUMNS  2
#define TX_NOTE_H   12 /* a line of the notes below a panel: its row grows by that much */

typedef struct tx_frame { /* a panel's plot area and scales: log2 n across, log10 t up */
  double x0, y0, w, h, lx0, lx1, ly0, ly1;
} tx_frame;

static inline double tx_px(const tx_frame *f, double n) {
  return f->x0 + (log2(n) - f->lx0) / (f->lx1 - f->lx0) * f->w;
}
static inline double tx_py(const tx_frame *f, double t) {
  return f->y0 + f->h - (log10(t) - f->ly0) / (f->ly1 - f->ly0) * f->h;
}

/* The plot area of the panel in this column of the row starting at y = top, scaled to n in
   [n_lo, n_hi] and t in [t_lo, t_hi] (whole decades). */
tx_frame tx_frame_at(size_t column, double top, double n_lo, double n_hi, double t_lo, double t_hi);

typedef struct tx_box {
  double x0, y0, x1, y1;
  int soft; /* a line: a label may cover it where no place is free of everything */
} tx_box;

#define TX_MAX_BOXES 8192 /* points, failure marks, lines in 4 px steps, labels */
typedef struct tx_taken { /* what a new label must not cover */
  tx_box b[TX_MAX_BOXES];
  size_t n;
} tx_taken;

void tx_take(tx_taken *tk, tx_box b);
/* The baseline for a label whose box spans [left, left + w], from y down in steps of a line until
   its box is free (y itself if none is above y_max); the box is then taken. */
double tx_place(tx_taken *tk, double left, double w, double y, double size, double y_max);
/* The same, trying y, then a line above and a line below it in turn, within [y_min, y_max]; as
   tx_place when none of them is free. */
double tx_place_near(tx_taken *tk, double left, double w, double y, double size, double y_min,
                     double y_max);
/* Takes the boxes along a segment, so that no label is placed across it. */
void tx_take_segment(tx_taken *tk, double x0, double y0, double x1, double y1);
/* The width of a text in sans-serif of this size, about: UTF-8 characters at 0.6 em each. */
double tx_text_width(const char *s, double size);
/* Kernel names and titles come from plugins and files: never markup. */
void tx_svg_text(FILE *f, const char *s);
/* The frame, a grid line and label at each n of x (ascending) and at each power of ten of time,
   and the title above. */
void tx_axes(FILE *f, const tx_frame *fr, const int64_t *x, size_t n_x, const char *title);

/* The first panel, "the price of attention" (plot_price.c): a row of its own at the top. */
void tx_plot_draw_price(FILE *f, const tx_plot *pl, const tx_plot_styles *st);

#endif
