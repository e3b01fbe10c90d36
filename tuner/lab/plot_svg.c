/* SPDX-License-Identifier: MIT */
/* A txtune plot as a self-contained SVG: the first panel, "the price of attention", then a log-log
   panel of time against n per class: a curve per kernel in its colour and marker (the same in every
   panel and in every plot), labelled at its end (with its fitted slope), a note where it stops
   before the panel's largest n and why, slope 1 and 2 guides (dense attention bends to 2, a fixed
   window stays at 1), dashed lines where the fastest kernel changes, an x where a kernel failed,
   and below the panel what the source says about each n a kernel has no time at. Labels are placed
   where they cover no other label, line or data point. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plot_svg.h"
#include "text_table.h"
#include "txattn/txattn.h"

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

typedef struct tx_box {
  double x0, y0, x1, y1;
  int soft; /* a line: a label may cover it where no place is free of everything */
} tx_box;

#define TX_MAX_BOXES 8192 /* points, failure marks, lines in 4 px steps, labels */
typedef struct tx_taken { /* what a new label must not cover */
  tx_box b[TX_MAX_BOXES];
  size_t n;
} tx_taken;

/* ---- label placement, text, frames and axes ---- */

static void tx_take(tx_taken *tk, tx_box b) {
  if (tk->n < TX_MAX_BOXES) tk->b[tk->n++] = b;
}

/* Takes the boxes along a segment, so that no label is placed across it. */
static void tx_take_segment(tx_taken *tk, double x0, double y0, double x1, double y1) {
  double len = hypot(x1 - x0, y1 - y0);
  size_t steps = (size_t)ceil(len / 4);
  for (size_t i = 0; i <= steps; i++) {
    double u = steps ? (double)i / (double)steps : 0, x = x0 + u * (x1 - x0),
           y = y0 + u * (y1 - y0);
    tx_take(tk, (tx_box){x - 1.5, y - 1.5, x + 1.5, y + 1.5, 1});
  }
}

/* 1 if b covers nothing taken. */
static int box_free(const tx_taken *tk, tx_box b) {
  for (size_t i = 0; i < tk->n; i++)
    if (b.x0 < tk->b[i].x1 && tk->b[i].x0 < b.x1 && b.y0 < tk->b[i].y1 && tk->b[i].y0 < b.y1)
      return 0;
  return 1;
}

/* The width of a text in sans-serif of this size, about: UTF-8 characters at 0.6 em each. */
static double tx_text_width(const char *s, double size) {
  size_t n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
  return 0.6 * size * (double)n;
}

/* The baseline for a label whose box spans [left, left + w], from y down in steps of a line until
   its box is free (y itself if none is above y_max); the box is then taken. */
static double tx_place(tx_taken *tk, double left, double w, double y, double size, double y_max) {
  for (double at = y; at <= y_max; at += size + 1) {
    tx_box b = {left - 1, at - size, left + w + 1, at + 3, 0};
    if (box_free(tk, b)) {
      tx_take(tk, b);
      return at;
    }
  }
  tx_take(tk, (tx_box){left - 1, y - size, left + w + 1, y + 3, 0});
  return y;
}

/* The same, trying y, then a line above and a line below it in turn, within [y_min, y_max]; as
   tx_place when none of them is free. */
static double tx_place_near(tx_taken *tk, double left, double w, double y, double size,
                            double y_min, double y_max) {
  for (int i = 0; i < 24; i++) { /* y, a line above, a line below, two lines above ... */
    double at = y + (size + 1) * (i % 2 ? -(i + 1) / 2 : i / 2);
    tx_box b = {left - 1, at - size, left + w + 1, at + 3, 0};
    if (at - size >= y_min && at <= y_max && box_free(tk, b)) {
      tx_take(tk, b);
      return at;
    }
  }
  return tx_place(tk, left, w, y, size, y_max);
}

/* The plot area of the panel in this column of the row starting at y = top, scaled to n in
   [n_lo, n_hi] and t in [t_lo, t_hi] (whole decades). */
static tx_frame tx_frame_at(size_t column, double top, double n_lo, double n_hi, double t_lo,
                            double t_hi) {
  tx_frame fr = {.x0 = (double)column * TX_PANEL_W + TX_MARGIN_L,
                 .y0 = top + TX_MARGIN_T,
                 .w = TX_PANEL_W - TX_MARGIN_L - TX_MARGIN_R,
                 .h = TX_PANEL_H - TX_MARGIN_T - TX_MARGIN_B};
  fr.lx0 = log2(n_lo) - 0.3;
  fr.lx1 = log2(n_hi) + 0.3;
  fr.ly0 = floor(log10(t_lo));
  fr.ly1 = ceil(log10(t_hi));
  if (fr.ly1 <= fr.ly0) fr.ly1 = fr.ly0 + 1;
  return fr;
}

/* The frame, a grid line and label at each n of x (ascending) and at each power of ten of time,
   and the title above. */
static void tx_axes(FILE *f, const tx_frame *fr, const int64_t *x, size_t n_x, const char *title) {
  fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#444'/>\n",
          fr->x0, fr->y0, fr->w, fr->h);
  for (size_t i = 0; i < n_x; i++) {
    double at = tx_px(fr, (double)x[i]);
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#eee'/>\n", at, fr->y0, at,
            fr->y0 + fr->h);
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle'>%lld</text>\n", at,
            fr->y0 + fr->h + 14, (long long)x[i]);
  }
  for (double e = fr->ly0; e <= fr->ly1 + 1e-9; e += 1) {
    char lab[32];
    double y = tx_py(fr, pow(10, e));
    tx_fmt_time(pow(10, e), lab, sizeof lab);
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#eee'/>\n", fr->x0, y,
            fr->x0 + fr->w, y);
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='end'>%s</text>\n", fr->x0 - 4, y + 4, lab);
  }
  fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle'>n</text>\n", fr->x0 + fr->w / 2,
          fr->y0 + fr->h + 30);
  fprintf(f, "<text x='%.1f' y='%.1f' font-weight='bold'>", fr->x0, fr->y0 - 10);
  tx_svg_text(f, title);
  fputs("</text>\n", f);
}

/* ---- the first panel, "the price of attention" ----
   For each mask kind, the best kernel's time against n in one class (plot_source.c says which),
   log-log, with each line's slope fitted at large n and slopes 1 and 2 drawn from the fastest
   first point. Dense attention (no mask, causal) bends toward slope 2, a fixed window stays at
   slope 1. A line keeps its mask kind's colour, each point the colour and marker of the kernel
   that was best there; a mask kind with too few points, or none, is named in the panel's text. */

typedef struct kind_style {
  const char *name, *cost, *colour, *dash;
} kind_style;

/* indexed by txattn_mask; no kernel family has these colours (plot_svg.c) */
static const kind_style kinds[TX_PLOT_KINDS] = {
    {"none", "dense", "#1a1a1a", "none"},
    {"causal", "dense", "#1a1a1a", "6 3"},
    {"window", "windowed", "#00838f", "none"},
};

#define LABELS_W 120 /* right of the frame: each line's label at its end, then the text */

#define FIT_SPAN 16 /* the slope at large n: fitted over [n_max / 16, n_max] */

/* The first point of b's fit at large n: n_max / FIT_SPAN or above, and at least three points
   (a slope through two is no fit). */
static size_t fit_from(const tx_plot_best *b) {
  size_t i = b->n;
  while (i > 0 && b->x[i - 1] * FIT_SPAN >= b->x[b->n - 1]) i--;
  if (b->n - i < 3) i = b->n >= 3 ? b->n - 3 : 0;
  return i;
}

static double slope_at_large_n(const tx_plot_best *b) {
  double n[TX_PLOT_MAX_X];
  size_t from = fit_from(b);
  for (size_t i = from; i < b->n; i++) n[i - from] = (double)b->x[i];
  return tx_loglog_slope(n, b->t + from, b->n - from);
}

/* The n of every line, ascending, for the axis; returns how many. */
static size_t all_n(const tx_plot *pl, int64_t *x) {
  size_t n_x = 0;
  for (size_t k = 0; k < TX_PLOT_KINDS; k++)
    for (size_t i = 0; i < pl->best[k].n; i++) {
      int64_t n = pl->best[k].x[i];
      size_t at = 0;
      while (at < n_x && x[at] < n) at++;
      if ((at < n_x && x[at] == n) || n_x == TX_PLOT_MAX_X) continue;
      memmove(&x[at + 1], &x[at], (n_x - at) * sizeof x[0]);
      x[at] = n;
      n_x++;
    }
  return n_x;
}

static void price_time_range(const tx_plot *pl, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = 0;
  for (size_t k = 0; k < TX_PLOT_KINDS; k++)
    for (size_t i = 0; i < pl->best[k].n; i++) {
      *lo = fmin(*lo, pl->best[k].t[i]);
      *hi = fmax(*hi, pl->best[k].t[i]);
    }
}

/* Dotted lines of slope 1 and 2 from the fastest time at the smallest n, to where they leave the
   frame, each labelled above its middle: a line that bends toward one grows like it. */
static void price_guides(FILE *f, const tx_frame *fr, tx_taken *tk, const tx_plot *pl, double n_lo,
                         double n_hi) {
  double t0 = INFINITY, t_max = pow(10, fr->ly1);
  for (size_t k = 0; k < TX_PLOT_KINDS; k++)
    if (pl->best[k].n > 0 && (double)pl->best[k].x[0] == n_lo) t0 = fmin(t0, pl->best[k].t[0]);
  if (!isfinite(t0) || !(n_lo < n_hi)) return;
  double x0 = tx_px(fr, n_lo), y0 = tx_py(fr, t0), x1[3], y1[3], xm[3], ym[3];
  for (int k = 1; k <= 2; k++) {
    double n1 = fmin(n_hi, n_lo * pow(t_max / t0, 1.0 / k)), n_mid = sqrt(n_lo * n1);
    x1[k] = tx_px(fr, n1);
    y1[k] = tx_py(fr, t0 * pow(n1 / n_lo, k));
    xm[k] = tx_px(fr, n_mid);
    ym[k] = tx_py(fr, t0 * pow(n_mid / n_lo, k));
    tx_take_segment(tk, x0, y0, x1[k], y1[k]);
  }
  for (int k = 1; k <= 2; k++) {
    const char *label = k == 1 ? "slope 1" : "slope 2";
    double w = tx_text_width(label, 10);
    double y = tx_place_near(tk, xm[k] - w, w, ym[k] - 5, 10, fr->y0 + 2, fr->y0 + fr->h - 2);
    fprintf(f,
            "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#999' stroke-dasharray='1 3'/>"
            "\n<text x='%.1f' y='%.1f' font-size='10' fill='#888' text-anchor='end'>%s</text>\n",
            x0, y0, x1[k], y1[k], xm[k], y, label);
  }
}

/* Kind k's line in its colour, at each point the best kernel's marker in its colour (its name, n
   and time in the tooltip), and right of its last point its name and fitted slope. */
static void line(FILE *f, const tx_frame *fr, tx_taken *tk, const tx_plot_best *b, size_t k,
                 const tx_plot_styles *st) {
  if (b->n >= 2) {
    fprintf(f,
            "<path class='price' data-mask='%s' fill='none' stroke='%s' stroke-width='2' "
            "stroke-dasharray='%s' d='",
            kinds[k].name, kinds[k].colour, kinds[k].dash);
    for (size_t i = 0; i < b->n; i++)
      fprintf(f, "%s%.1f,%.1f", i ? " L" : "M", tx_px(fr, (double)b->x[i]), tx_py(fr, b->t[i]));
    fputs("'/>\n", f);
  }
  for (size_t i = 0; i < b->n; i++) {
    char title[160], time[32];
    tx_fmt_time(b->t[i], time, sizeof time);
    snprintf(title, sizeof title, "%s, n=%lld: %s, %s", kinds[k].name, (long long)b->x[i],
             b->kernel[i], time);
    tx_plot_marker(f, tx_plot_style_of(st, b->kernel[i]), tx_px(fr, (double)b->x[i]),
                   tx_py(fr, b->t[i]), 1.2, title);
    fputc('\n', f);
  }
  if (b->n == 0) return;
  double slope = slope_at_large_n(b);
  char label[32];
  snprintf(label, sizeof label, isnan(slope) ? "%s" : "%s: slope %.2f", kinds[k].name, slope);
  double w = tx_text_width(label, 10), x = tx_px(fr, (double)b->x[b->n - 1]) + 7;
  if (x < fr->x0 + fr->w && x + w > fr->x0 + fr->w) x = fr->x0 + fr->w + 4; /* off the border */
  double y =
      tx_place_near(tk, x, w, tx_py(fr, b->t[b->n - 1]) + 3.5, 10, fr->y0 + 2, fr->y0 + fr->h - 2);
  fprintf(f, "<text x='%.1f' y='%.1f' font-size='10' fill='%s'>%s</text>\n", x, y, kinds[k].colour,
          label);
}

/* One row of the text beside the frame: what line k is, or why it is missing. */
static void legend_row(FILE *f, double x, double y, const tx_plot_best *b, size_t k) {
  if (b->n >= 2)
    fprintf(f,
            "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='2' "
            "stroke-dasharray='%s'/>\n",
            x, y - 4, x + 22, y - 4, kinds[k].colour, kinds[k].dash);
  fprintf(f, "<text x='%.1f' y='%.1f' fill='%s'>", x + 28, y, kinds[k].colour);
  if (!b->cls[0]) {
    fprintf(f, "%s: only decode classes (one query row costs O(n) under any mask): not drawn",
            kinds[k].name);
  } else {
    tx_svg_text(f, b->cls);
    size_t from = fit_from(b);
    if (b->n >= 3)
      fprintf(f, " (%s): slope %.2f over n = %lld..%lld", kinds[k].cost, slope_at_large_n(b),
              (long long)b->x[from], (long long)b->x[b->n - 1]);
    else if (b->n == 2)
      fprintf(f, " (%s): two points (n = %lld, %lld), too few for a slope", kinds[k].cost,
              (long long)b->x[0], (long long)b->x[1]);
    else if (b->n == 1)
      fprintf(f, ": one point (n = %lld), too few for a line and a slope", (long long)b->x[0]);
    else
      fputs(": no measured point to draw", f);
  }
  fputs("</text>\n", f);
}

/* The kernels that were best somewhere, each in its colour and marker, in rows within
   [x, x_end]. */
static double kernel_key(FILE *f, const tx_plot *pl, const tx_plot_styles *st, double x,
                         double x_end, double y) {
  const char *seen[TX_PLOT_KINDS * TX_PLOT_MAX_X];
  size_t n_seen = 0;
  double at = x + tx_text_width("best: ", 11);
  fprintf(f, "<text x='%.1f' y='%.1f' fill='#555'>best:</text>\n", x, y);
  for (size_t k = 0; k < TX_PLOT_KINDS; k++)
    for (size_t i = 0; i < pl->best[k].n; i++) {
      const char *name = pl->best[k].kernel[i];
      int known = 0;
      for (size_t j = 0; j < n_seen && !known; j++) known = strcmp(seen[j], name) == 0;
      if (known) continue;
      seen[n_seen++] = name;
      tx_plot_style sty = tx_plot_style_of(st, name);
      double w = 10 + tx_text_width(name, 11);
      if (at + w > x_end) {
        at = x + tx_text_width("best: ", 11);
        y += 16;
      }
      tx_plot_marker(f, sty, at + 3.5, y - 4, 1, NULL);
      fprintf(f, "<text x='%.1f' y='%.1f' fill='%s'>", at + 9, y, sty.colour);
      tx_svg_text(f, name);
      fputs("</text>\n", f);
      at += w + 8;
    }
  return y;
}

static void text_beside(FILE *f, const tx_frame *fr, const tx_plot *pl, const tx_plot_styles *st) {
  double x = fr->x0 + fr->w + LABELS_W, x_end = TX_COLUMNS * TX_PANEL_W - 10, y = fr->y0 + 12;
  char absent[64] = "";
  for (size_t k = 0; k < TX_PLOT_KINDS; k++) {
    const tx_plot_best *b = &pl->best[k];
    if (!b->cls[0] && !b->decode_only) {
      size_t len = strlen(absent);
      snprintf(absent + len, sizeof absent - len, "%s%s", len ? ", " : "", kinds[k].name);
      continue;
    }
    legend_row(f, x, y, b, k);
    y += 16;
  }
  if (absent[0]) {
    fprintf(f, "<text x='%.1f' y='%.1f' fill='#555'>mask %s: not measured</text>\n", x + 28, y,
            absent);
    y += 16;
  }
  static const char *const about[] = {
      "Dense attention compares every query with every key: its time bends toward slope 2 "
      "(t ~ n\xc2\xb2)",
      "as n grows. A window of r keys costs n\xc2\xb7r whatever n: slope 1.",
      "Each slope: least squares on log-log over the largest n (down to n/16), 3 points at least.",
  };
  y += 8;
  for (size_t i = 0; i < sizeof about / sizeof about[0]; i++, y += 15)
    fprintf(f, "<text x='%.1f' y='%.1f' fill='#555'>%s</text>\n", x, y, about[i]);
  fprintf(
      f,
      "<text x='%.1f' y='%.1f' fill='#555'>Dotted: slopes 1 and 2 from the fastest first point. "
      "Each marker: %s at that n.</text>\n",
      x, y, pl->best_is ? pl->best_is : "the best kernel");
  kernel_key(f, pl, st, x, x_end, y + 23);
}

static void tx_plot_draw_price(FILE *f, const tx_plot *pl, const tx_plot_styles *st) {
  static const char title[] = "the price of attention: the best kernel's time against n";
  int64_t x[TX_PLOT_MAX_X];
  size_t n_x = all_n(pl, x);
  double lo, hi;
  price_time_range(pl, &lo, &hi);
  if (n_x == 0) { /* nothing to draw: the text says why */
    tx_frame fr = tx_frame_at(0, 0, 1, 2, 1e-3, 1e-2);
    fprintf(f, "<text x='%.1f' y='%.1f' font-weight='bold'>%s</text>\n", fr.x0, fr.y0 - 10, title);
    text_beside(f, &fr, pl, st);
    return;
  }
  tx_frame fr = tx_frame_at(0, 0, (double)x[0], (double)x[n_x - 1], lo, hi);
  static tx_taken tk; /* 70 KiB: not on the stack */
  tk.n = 0;
  for (size_t k = 0; k < TX_PLOT_KINDS; k++)
    for (size_t i = 0; i < pl->best[k].n; i++) {
      double px = tx_px(&fr, (double)pl->best[k].x[i]), py = tx_py(&fr, pl->best[k].t[i]);
      tx_take(&tk, (tx_box){px - 4, py - 4, px + 4, py + 4, 0});
      if (i > 0)
        tx_take_segment(&tk, tx_px(&fr, (double)pl->best[k].x[i - 1]),
                        tx_py(&fr, pl->best[k].t[i - 1]), px, py);
    }
  tx_axes(f, &fr, x, n_x, title);
  price_guides(f, &fr, &tk, pl, (double)x[0], (double)x[n_x - 1]);
  for (size_t k = 0; k < TX_PLOT_KINDS; k++) line(f, &fr, &tk, &pl->best[k], k, st);
  text_beside(f, &fr, pl, st);
}

/* ---- the panels of one class each ---- */

/* The first and last x index where series s has a time; 0 if it has none. */
static int time_span(const tx_plot_series *s, size_t n_x, size_t *first, size_t *last) {
  *first = SIZE_MAX;
  *last = 0;
  for (size_t i = 0; i < n_x; i++)
    if (s->t[i] > 0) {
      if (*first == SIZE_MAX) *first = i;
      *last = i;
    }
  return *first != SIZE_MAX;
}

static double series_slope(const tx_plot_panel *p, size_t k) {
  double n[TX_PLOT_MAX_X];
  for (size_t i = 0; i < p->n_x; i++) n[i] = (double)p->x[i];
  return tx_loglog_slope(n, p->s[k].t, p->n_x);
}

/* The fastest time of any kernel at x index i; 0 if none was measured there. */
static double fastest(const tx_plot_panel *p, size_t i) {
  double best = 0;
  for (size_t k = 0; k < p->n_s; k++)
    if (p->s[k].t[i] > 0 && (best == 0 || p->s[k].t[i] < best)) best = p->s[k].t[i];
  return best;
}

/* Where kernel k's failure at x index i is marked: at its time at the nearest n it ran before
   (where its curve ends), else after, else at the panel's top. */
static double failure_y(const tx_frame *fr, const tx_plot_panel *p, size_t k, size_t i) {
  for (size_t j = i + 1; j-- > 0;)
    if (p->s[k].t[j] > 0) return tx_py(fr, p->s[k].t[j]);
  for (size_t j = i + 1; j < p->n_x; j++)
    if (p->s[k].t[j] > 0) return tx_py(fr, p->s[k].t[j]);
  return fr->y0 + 8;
}

/* Why series k stops before the panel's largest n, in a few words: what the source records at
   the first n after its last time, or that it has no record there. "" when it does not stop. */
static void stop_note(const tx_plot *pl, const tx_plot_panel *p, size_t k, char *buf, size_t size) {
  const tx_plot_series *s = &p->s[k];
  size_t first, last;
  buf[0] = '\0';
  if (!time_span(s, p->n_x, &first, &last)) {
    for (size_t i = 0; i < p->n_x && !buf[0]; i++)
      if (s->failed[i]) snprintf(buf, size, "failed at n=%lld", (long long)p->x[i]);
    return;
  }
  if (last + 1 == p->n_x) return;
  for (size_t i = last + 1; i < p->n_x; i++) {
    if (s->failed[i] || s->why[i]) {
      snprintf(buf, size, "%s at n=%lld", s->failed[i] ? "failed" : "did not run",
               (long long)p->x[i]);
      return;
    }
  }
  double ratio = s->t[last] / fastest(p, last); /* the label is at its last n: no need to say it */
  const char *what = pl->untimed ? pl->untimed : "not measured";
  if (ratio >= 1.05)
    snprintf(buf, size, ratio < 10 ? "%s: %.1fx slower" : "%s: %.0fx slower", what, ratio);
  else
    snprintf(buf, size, "%s at larger n", what);
}

/* Kernel k's curve: a line through its times (dotted across an n it has no time at), its
   marker at each, an x where it failed (with why in the tooltip). */
static void curve(FILE *f, const tx_frame *fr, const tx_plot_panel *p, size_t k, tx_plot_style st) {
  const tx_plot_series *s = &p->s[k];
  size_t prev = SIZE_MAX;
  fputs("<g class='series' data-kernel='", f);
  tx_svg_text(f, s->kernel);
  fputs("'>\n", f);
  for (size_t i = 0; i < p->n_x; i++) {
    if (s->t[i] <= 0) continue;
    if (prev != SIZE_MAX)
      fprintf(f,
              "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='%s'%s/>\n",
              tx_px(fr, (double)p->x[prev]), tx_py(fr, s->t[prev]), tx_px(fr, (double)p->x[i]),
              tx_py(fr, s->t[i]), st.colour, prev + 1 == i ? "1.6" : "1",
              prev + 1 == i ? "" : " stroke-dasharray='2 3'");
    prev = i;
  }
  for (size_t i = 0; i < p->n_x; i++) {
    if (s->t[i] <= 0) continue;
    char title[128], time[32];
    tx_fmt_time(s->t[i], time, sizeof time);
    snprintf(title, sizeof title, "%s, n=%lld: %s", s->kernel, (long long)p->x[i], time);
    tx_plot_marker(f, st, tx_px(fr, (double)p->x[i]), tx_py(fr, s->t[i]), 1, title);
    fputc('\n', f);
  }
  for (size_t i = 0; i < p->n_x; i++) {
    if (!s->failed[i]) continue;
    double x = tx_px(fr, (double)p->x[i]), y = failure_y(fr, p, k, i);
    fprintf(f,
            "<path class='failed' d='M%.1f,%.1f l8,8 m0,-8 l-8,8' stroke='%s' stroke-width='2.2'>"
            "<title>",
            x - 4, y - 4, st.colour);
    tx_svg_text(f, s->kernel);
    fprintf(f, " failed at n=%lld", (long long)p->x[i]);
    if (s->why[i]) {
      fputs(": ", f);
      tx_svg_text(f, s->why[i]);
    }
    fputs("</title></path>\n", f);
  }
  fputs("</g>\n", f);
}

/* What a label must not cover: each data point and failure mark; with lines, each line too (a
   label may cover one where nothing else is free). */
static void take_panel(tx_taken *tk, const tx_frame *fr, const tx_plot_panel *p, int lines) {
  for (size_t k = 0; k < p->n_s; k++) {
    size_t prev = SIZE_MAX;
    for (size_t i = 0; i < p->n_x; i++) {
      double x = tx_px(fr, (double)p->x[i]);
      if (p->s[k].t[i] > 0) {
        double y = tx_py(fr, p->s[k].t[i]);
        if (lines && prev != SIZE_MAX)
          tx_take_segment(tk, tx_px(fr, (double)p->x[prev]), tx_py(fr, p->s[k].t[prev]), x, y);
        if (!lines) tx_take(tk, (tx_box){x - 4.5, y - 4.5, x + 4.5, y + 4.5, 0});
        prev = i;
      }
      if (p->s[k].failed[i] && !lines) {
        double y = failure_y(fr, p, k, i);
        tx_take(tk, (tx_box){x - 5, y - 5, x + 5, y + 5, 0});
      }
    }
  }
}

/* How much of b the labels and data points taken cover, in px^2; *line: whether it covers a line. */
static double covered(const tx_taken *tk, tx_box b, int *line) {
  double area = 0;
  *line = 0;
  for (size_t i = 0; i < tk->n; i++) {
    double w = fmin(b.x1, tk->b[i].x1) - fmax(b.x0, tk->b[i].x0),
           h = fmin(b.y1, tk->b[i].y1) - fmax(b.y0, tk->b[i].y0);
    if (w <= 0 || h <= 0) continue;
    if (tk->b[i].soft)
      *line = 1;
    else
      area += w * h;
  }
  return area;
}

/* The top left of a w x h label near the point (x, y), inside the frame or right of it in the
   panel: the nearest place that covers no label or data point, a place that covers a line
   counting as 40 px farther; where every place covers one, the place that covers least. Nearest:
   right of the point at its height first; a place left of it, or further right, counts as
   farther. The box is taken. */
static void place_beside(tx_taken *tk, const tx_frame *fr, double x, double y, double w, double h,
                         double *left, double *top) {
  double best = INFINITY, right = fr->x0 - TX_MARGIN_L + TX_PANEL_W - 4;
  *left = x + 7;
  *top = y - h / 2;
  for (int shift = -12; shift <= 16; shift++) /* 15 px steps; < 0: left of the point */
    for (int dy = -64; dy <= 64; dy++) {      /* 4 px steps: the whole frame */
      double l = shift >= 0 ? x + 7 + 15 * shift : x - 7 - w + 15 * (shift + 1);
      double t = y - h / 2 + 4 * dy, cost = 4 * abs(dy) + 15 * abs(shift) + 10 * (shift < 0);
      int line;
      if (cost >= best || l < fr->x0 + 2 || l + w > right || t < fr->y0 + 2 ||
          t + h > fr->y0 + fr->h - 2)
        continue;
      double area = covered(tk, (tx_box){l - 1, t - 1, l + w + 1, t + h + 1, 0}, &line);
      cost += 40 * line + (area > 0 ? 1e6 + 100 * area : 0);
      if (cost >= best) continue;
      best = cost;
      *left = l;
      *top = t;
    }
  tx_take(tk, (tx_box){*left - 1, *top - 1, *left + w + 1, *top + h + 1, 0});
}

static void label_text(FILE *f, const char *cls, const char *kernel, double x, double y,
                       double size, const char *colour, const char *text) {
  fprintf(f, "<text class='%s' data-kernel='", cls);
  tx_svg_text(f, kernel);
  fprintf(f,
          "' x='%.1f' y='%.1f' font-size='%g' fill='%s' stroke='white' stroke-width='3' "
          "stroke-linejoin='round' paint-order='stroke'>",
          x, y, size, colour);
  tx_svg_text(f, text);
  fputs("</text>\n", f);
}

/* The label of a kernel that stops before the panel's largest n: its name and why, beside the
   end of its line (or its first failure), joined to it by a thin line when moved away. */
static void stop_label(FILE *f, const tx_plot *pl, const tx_frame *fr, const tx_plot_panel *p,
                       size_t k, tx_plot_style st, tx_taken *tk) {
  const tx_plot_series *s = &p->s[k];
  char note[96], name[80];
  stop_note(pl, p, k, note, sizeof note);
  snprintf(name, sizeof name, "%s%s", s->kernel, s->inexact ? " (inexact!)" : "");
  size_t first, last, at = 0;
  double y;
  if (time_span(s, p->n_x, &first, &last)) {
    at = last;
    y = tx_py(fr, s->t[last]);
  } else {
    while (at + 1 < p->n_x && !s->failed[at]) at++;
    y = failure_y(fr, p, k, at);
  }
  double x = tx_px(fr, (double)p->x[at]),
         w = fmax(tx_text_width(name, 10) + 10, tx_text_width(note, 9)), left, top;
  place_beside(tk, fr, x, y, w, 22, &left, &top);
  double lx = fmin(fmax(x, left), left + w), ly = fmin(fmax(y, top), top + 22);
  if (hypot(lx - x, ly - y) > 12) /* joined to its point where moved away */
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='0.6'/>\n",
            x, y, lx, ly, st.colour);
  tx_plot_marker(f, st, left + 4, top + 6, 0.8, NULL);
  fputc('\n', f);
  label_text(f, "end", s->kernel, left + 10, top + 10, 10, st.colour, name);
  label_text(f, "stop", s->kernel, left, top + 20, 9, st.colour, note);
}

typedef struct end_label {
  size_t k;
  double y_line, y; /* the line's end; the label's middle */
} end_label;

static int by_y(const void *a, const void *b) {
  double ya = ((const end_label *)a)->y_line, yb = ((const end_label *)b)->y_line;
  return (ya > yb) - (ya < yb);
}

#define END_LABEL_H 12

/* The labels of the kernels whose lines reach the panel's largest n: right of the frame, each at
   the height of its line's end, moved apart just enough not to overlap, and joined to it. Their
   boxes are taken. */
static void end_labels(FILE *f, const tx_frame *fr, const tx_plot_panel *p,
                       const tx_plot_styles *st, tx_taken *tk) {
  end_label e[TX_PLOT_MAX_SERIES];
  size_t n = 0, first, last;
  for (size_t k = 0; k < p->n_s; k++)
    if (time_span(&p->s[k], p->n_x, &first, &last) && last + 1 == p->n_x) {
      e[n].k = k;
      e[n].y_line = e[n].y = tx_py(fr, p->s[k].t[last]);
      n++;
    }
  qsort(e, n, sizeof e[0], by_y);
  double lo = fr->y0 + END_LABEL_H / 2.0, hi = fr->y0 + fr->h + 14;
  for (size_t i = 0; i < n; i++) /* down from the top, each below the one before */
    e[i].y = fmax(fmax(e[i].y, lo), i ? e[i - 1].y + END_LABEL_H : lo);
  for (size_t i = n; i-- > 0;) /* then up from the bottom where they ran past it */
    e[i].y = fmin(e[i].y, i + 1 < n ? e[i + 1].y - END_LABEL_H : hi);
  double x_label = fr->x0 + fr->w + 8;
  for (size_t i = 0; i < n; i++) {
    const tx_plot_series *s = &p->s[e[i].k];
    tx_plot_style sty = tx_plot_style_of(st, s->kernel);
    double x_end = tx_px(fr, (double)p->x[p->n_x - 1]), slope = series_slope(p, e[i].k);
    char text[128];
    int len = snprintf(text, sizeof text, "%s", s->kernel);
    if (!isnan(slope) && len > 0)
      len += snprintf(text + len, sizeof text - (size_t)len, "  slope %.2f", slope);
    if (s->inexact && len > 0 && (size_t)len < sizeof text)
      snprintf(text + len, sizeof text - (size_t)len, " (inexact!)");
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='%s' stroke-width='0.6'/>\n",
            x_end + 5, e[i].y_line, x_label - 2, e[i].y, sty.colour);
    tx_plot_marker(f, sty, x_label + 4, e[i].y, 0.8, NULL);
    fputc('\n', f);
    label_text(f, "end", s->kernel, x_label + 10, e[i].y + 3.5, 10, sty.colour, text);
    tx_take(tk, (tx_box){x_label - 2, e[i].y - 7, x_label + 11 + tx_text_width(text, 10),
                         e[i].y + 6, 0});
  }
}

/* Grey dotted lines t ~ n and t ~ n^2 from the fastest time at the smallest n, ending where they
   leave the panel: a curve parallel to one grows like it. */
static void guides(FILE *f, const tx_frame *fr, const tx_plot_panel *p, double t0, tx_taken *tk) {
  double n0 = (double)p->x[0], n1 = (double)p->x[p->n_x - 1], t_top = pow(10, fr->ly1);
  for (int k = 1; k <= 2; k++) {
    double n_end = n1, t_end = t0 * pow(n1 / n0, k);
    if (t_end > t_top) { /* it leaves through the top */
      n_end = n0 * pow(t_top / t0, 1.0 / k);
      t_end = t_top;
    }
    double x0 = tx_px(fr, n0), y0 = tx_py(fr, t0), x1 = tx_px(fr, n_end), y1 = tx_py(fr, t_end);
    const char *label = k == 1 ? "~n" : "~n\xc2\xb2";
    double w = tx_text_width(label, 10);
    double y = tx_place(tk, x1 - 2 - w, w, y1 + (k == 1 ? -4 : 12), 10, fr->y0 + fr->h - 2);
    fprintf(f,
            "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#aaa' stroke-dasharray='1 3'/>\n"
            "<text x='%.1f' y='%.1f' font-size='10' fill='#888' text-anchor='end'>%s</text>\n",
            x0, y0, x1, y1, x1 - 2, y, label);
  }
}

/* The fastest kernel at x index i; SIZE_MAX if none was measured there. */
static size_t winner(const tx_plot_panel *p, size_t i) {
  size_t w = SIZE_MAX;
  for (size_t k = 0; k < p->n_s; k++)
    if (p->s[k].t[i] > 0 && (w == SIZE_MAX || p->s[k].t[i] < p->s[w].t[i])) w = k;
  return w;
}

/* A dashed line where the fastest kernel changes, labelled with the new one: right of the line,
   or left of it where the label would leave the plot. */
static void crossovers(FILE *f, const tx_frame *fr, const tx_plot_panel *p,
                       const tx_plot_styles *st, tx_taken *tk) {
  for (size_t i = 1; i < p->n_x; i++) {
    size_t a = winner(p, i - 1), b = winner(p, i);
    if (a == SIZE_MAX || b == SIZE_MAX || a == b) continue;
    char label[80];
    tx_plot_style sty = tx_plot_style_of(st, p->s[b].kernel);
    snprintf(label, sizeof label, "-> %s", p->s[b].kernel);
    double x = tx_px(fr, sqrt((double)p->x[i - 1] * (double)p->x[i])), w = tx_text_width(label, 10);
    double left = x + 2 + w <= fr->x0 + fr->w ? x + 2 : x - 2 - w;
    double y = tx_place(tk, left, w, fr->y0 + 11, 10, fr->y0 + fr->h - 2);
    fprintf(f,
            "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#555' stroke-dasharray='4 3'/>"
            "\n<text class='crossover' x='%.1f' y='%.1f' font-size='10' fill='%s'>&#8594; ",
            x, fr->y0, x, fr->y0 + fr->h, left, y, sty.colour);
    tx_svg_text(f, p->s[b].kernel);
    fputs("</text>\n", f);
  }
}

static void time_range(const tx_plot_panel *p, double *lo, double *hi, double *first) {
  *lo = INFINITY;
  *hi = 0;
  *first = INFINITY;
  for (size_t k = 0; k < p->n_s; k++)
    for (size_t i = 0; i < p->n_x; i++) {
      double t = p->s[k].t[i];
      if (t <= 0) continue;
      *lo = t < *lo ? t : *lo;
      *hi = t > *hi ? t : *hi;
      if (i == 0 && t < *first) *first = t;
    }
  if (!(*hi > 0)) *lo = *hi = 1e-3; /* only failures: any scale */
}

/* The notes below the panel: for each kernel drawn, each run of n where the source says why it
   has no time (the same reason at neighbouring n once), one line cut to the panel's width with
   the whole in its tooltip. Returns the lines written (all of them if f is NULL). */
#define MAX_NOTES 8
static size_t notes(FILE *f, const tx_frame *fr, const tx_plot_panel *p) {
  size_t lines = 0, more = 0;
  double y = fr->y0 + fr->h + TX_MARGIN_B + 4, width = TX_PANEL_W - TX_MARGIN_L - 12;
  for (size_t k = 0; k < p->n_s; k++) {
    const tx_plot_series *s = &p->s[k];
    if (!tx_plot_series_drawn(s)) continue;
    for (size_t i = 0; i < p->n_x; i++) {
      if (!s->why[i]) continue;
      size_t j = i;
      while (j + 1 < p->n_x && s->why[j + 1] && strcmp(s->why[j + 1], s->why[i]) == 0) j++;
      if (lines == MAX_NOTES - 1 && f) {
        more++;
        i = j;
        continue;
      }
      char text[640];
      int len = i == j ? snprintf(text, sizeof text, "%s, n=%lld: ", s->kernel, (long long)p->x[i])
                       : snprintf(text, sizeof text, "%s, n=%lld..%lld: ", s->kernel,
                                  (long long)p->x[i], (long long)p->x[j]);
      snprintf(text + len, sizeof text - (size_t)len, "%s", s->why[i]);
      if (f) {
        size_t keep = (size_t)(width / tx_text_width("m", 9)), chars = 0, at = 0;
        for (; text[at] && chars < keep; at++) chars += ((unsigned char)text[at] & 0xc0) != 0x80;
        while (((unsigned char)text[at] & 0xc0) == 0x80) at++;
        fprintf(f, "<text class='note' x='%.1f' y='%.1f' font-size='9' fill='#444'><title>", fr->x0,
                y + TX_NOTE_H * (double)lines);
        tx_svg_text(f, text);
        fputs("</title>", f);
        char cut = text[at];
        text[at] = '\0';
        tx_svg_text(f, text);
        fputs(cut ? "\xe2\x80\xa6</text>\n" : "</text>\n", f);
      }
      lines++;
      i = j;
    }
  }
  if (more)
    fprintf(f,
            "<text class='note' x='%.1f' y='%.1f' font-size='9' fill='#444'>and %zu more: "
            "hover the x marks, or see the source</text>\n",
            fr->x0, y + TX_NOTE_H * (double)lines++, more);
  return lines < MAX_NOTES ? lines : MAX_NOTES;
}

static tx_frame panel_frame(const tx_plot_panel *p, size_t column, double top, double *first) {
  double lo, hi;
  time_range(p, &lo, &hi, first);
  return tx_frame_at(column, top, (double)p->x[0], (double)p->x[p->n_x - 1], lo, hi);
}

static void draw_panel(FILE *f, const tx_plot *pl, const tx_plot_panel *p, size_t column,
                       double top, const tx_plot_styles *st) {
  double first;
  tx_frame fr = panel_frame(p, column, top, &first);
  static tx_taken tk; /* not on the stack; txtune draws one panel at a time */
  tk.n = 0;
  take_panel(&tk, &fr, p, 0);
  tx_axes(f, &fr, p->x, p->n_x, p->title);
  if (p->n_x > 1 && isfinite(first)) guides(f, &fr, p, first, &tk);
  for (size_t k = 0; k < p->n_s; k++)
    if (tx_plot_series_drawn(&p->s[k])) curve(f, &fr, p, k, tx_plot_style_of(st, p->s[k].kernel));
  crossovers(f, &fr, p, st, &tk); /* at the top, over the lines: the kernels' labels go round */
  end_labels(f, &fr, p, st, &tk);
  take_panel(&tk, &fr, p, 1);
  for (size_t k = 0; k < p->n_s; k++) {
    size_t a, b;
    int timed = time_span(&p->s[k], p->n_x, &a, &b);
    if (tx_plot_series_drawn(&p->s[k]) && (!timed || b + 1 < p->n_x))
      stop_label(f, pl, &fr, p, k, tx_plot_style_of(st, p->s[k].kernel), &tk);
  }
  fprintf(f,
          "<text x='%.1f' y='%.1f' fill='#888' font-size='9'>slope: log-log least squares, "
          "3+ n</text>\n",
          fr.x0 + fr.w + 8, fr.y0 + fr.h + 30);
  notes(f, &fr, p);
}

int tx_plot_write_svg(const tx_plot *pl, const char *source, FILE *f) {
  tx_plot_styles st;
  if (tx_plot_styles_init(&st, pl) != 0) return -1;
  size_t *idx = calloc(pl->n ? pl->n : 1, sizeof *idx), n_draw = 0;
  double *row_h = calloc(pl->n ? pl->n : 1, sizeof *row_h);
  if (!idx || !row_h) {
    free(idx);
    free(row_h);
    tx_plot_styles_free(&st);
    return -1;
  }
  /* each row is as tall as its panel with the most lines of notes */
  double height = tx_plot_has_best(pl) ? TX_PANEL_H : 0, first;
  for (size_t i = 0; i < pl->n; i++)
    if (tx_plot_panel_drawn(&pl->panels[i])) {
      tx_frame fr = panel_frame(&pl->panels[i], 0, 0, &first);
      double h = TX_PANEL_H + TX_NOTE_H * (double)notes(NULL, &fr, &pl->panels[i]);
      row_h[n_draw / TX_COLUMNS] = fmax(row_h[n_draw / TX_COLUMNS], h);
      idx[n_draw++] = i;
    }
  for (size_t r = 0; r * TX_COLUMNS < n_draw; r++) height += row_h[r];
  fprintf(f,
          "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' "
          "width='%d' height='%.0f' font-family='sans-serif' font-size='11'>\n"
          "<rect width='100%%' height='100%%' fill='white'/>\n<title>txtune: time against n, ",
          TX_COLUMNS * TX_PANEL_W, height + 10);
  tx_svg_text(f, source);
  fputs("</title>\n", f);
  tx_plot_marker_defs(f);
  double top = 0;
  if (tx_plot_has_best(pl)) { /* the first panel fills a row */
    tx_plot_draw_price(f, pl, &st);
    top = TX_PANEL_H;
  }
  for (size_t d = 0; d < n_draw; d++) {
    draw_panel(f, pl, &pl->panels[idx[d]], d % TX_COLUMNS, top, &st);
    if (d % TX_COLUMNS == TX_COLUMNS - 1) top += row_h[d / TX_COLUMNS];
  }
  fputs("</svg>\n", f);
  free(idx);
  free(row_h);
  tx_plot_styles_free(&st);
  return ferror(f) ? -1 : 0;
}

/* Ten hues far apart (the Tableau 10 order), the light ones darkened to be read as text on white;
   none is near-black or the first panel's teal (plot_svg.c). */
static const char *const colours[TX_PLOT_COLOURS] = {
    "#1f77b4", "#e8710a", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#d6479f", "#7f7f7f", "#9a9b12", "#0f9aab",
};

/* The kernels shipped with libtxattn: style i is the i-th. The first ten take the ten colours:
   those that meet on a one-thread panel (tiled, banded of each x86 ISA, masked, naive) and the
   AVX-512 threaded ones. Each later one repeats the colour of a kernel of another family that is
   slow where it is fast, or that it never meets (NEON and AVX-512 share no machine), with another
   marker: no two kernels of one family share a colour. */
static const char *const known[] = {
    "tiled.avx512",     "banded.avx512",     "tiled.avx2",        "banded.avx2",
    "tiled_omp.avx512", "banded_omp.avx512", "naive.scalar",      "tiled.scalar",
    "masked.scalar",    "banded.scalar",     "banded_omp.scalar", "tiled_omp.scalar",
    "banded.neon",      "tiled.neon",        "banded_omp.neon",   "tiled_omp.neon",
    "tiled_omp.avx2",   "banded_omp.avx2",   "tiled.avx512bf16",  "tiled_omp.avx512bf16",
};
#define N_KNOWN (sizeof known / sizeof known[0])

static size_t known_index(const char *kernel) {
  for (size_t i = 0; i < N_KNOWN; i++)
    if (strcmp(kernel, known[i]) == 0) return i;
  return SIZE_MAX;
}

static unsigned name_hash(const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return (unsigned)(h % TX_PLOT_STYLES);
}

static tx_plot_style style_at(unsigned i) {
  return (tx_plot_style){colours[i % TX_PLOT_COLOURS], i % TX_PLOT_MARKERS};
}

static int add_name(tx_plot_styles *st, const char *kernel, size_t *cap) {
  for (size_t i = 0; i < st->n; i++)
    if (strcmp(st->name[i], kernel) == 0) return 0;
  if (st->n == *cap) {
    size_t c = *cap ? 2 * *cap : 32;
    char(*names)[64] = realloc(st->name, c * sizeof *names);
    if (!names) return -1;
    st->name = names;
    *cap = c;
  }
  snprintf(st->name[st->n++], sizeof st->name[0], "%s", kernel);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(a, b);
}

int tx_plot_styles_init(tx_plot_styles *st, const tx_plot *pl) {
  size_t cap = 0;
  int bad = 0;
  memset(st, 0, sizeof *st);
  for (size_t i = 0; i < pl->n; i++)
    for (size_t k = 0; k < pl->panels[i].n_s; k++)
      bad |= add_name(st, pl->panels[i].s[k].kernel, &cap);
  for (size_t k = 0; k < TX_PLOT_KINDS; k++)
    for (size_t i = 0; i < pl->best[k].n; i++) bad |= add_name(st, pl->best[k].kernel[i], &cap);
  if (bad || !(st->style = calloc(st->n ? st->n : 1, sizeof *st->style))) {
    tx_plot_styles_free(st);
    return -1;
  }
  qsort(st->name, st->n, sizeof st->name[0], by_name);
  unsigned char taken[TX_PLOT_STYLES] = {0};
  for (size_t i = 0; i < N_KNOWN; i++) taken[i] = 1; /* held in every plot */
  size_t n_taken = N_KNOWN;
  for (size_t i = 0; i < st->n; i++) {
    size_t k = known_index(st->name[i]);
    if (k != SIZE_MAX) {
      st->style[i] = (unsigned)k;
      continue;
    }
    unsigned s = name_hash(st->name[i]);
    if (n_taken < TX_PLOT_STYLES) { /* else every style is in use: share the hashed one */
      while (taken[s]) s = (s + 1) % TX_PLOT_STYLES;
      taken[s] = 1;
      n_taken++;
    }
    st->style[i] = s;
  }
  return 0;
}

tx_plot_style tx_plot_style_of(const tx_plot_styles *st, const char *kernel) {
  for (size_t i = 0; st && i < st->n; i++)
    if (strcmp(st->name[i], kernel) == 0) return style_at(st->style[i]);
  size_t k = known_index(kernel);
  return style_at(k != SIZE_MAX ? (unsigned)k : name_hash(kernel));
}

void tx_plot_styles_free(tx_plot_styles *st) {
  free(st->name);
  free(st->style);
  memset(st, 0, sizeof *st);
}

/* Centred on (0, 0), about 7 px across; the last two hollow (white inside, the colour around). */
static const char *const marker_paths[TX_PLOT_MARKERS] = {
    "d='M3.5,0A3.5,3.5 0 1 1 -3.5,0A3.5,3.5 0 1 1 3.5,0Z' stroke-width='0.5'",
    "d='M-3.1,-3.1H3.1V3.1H-3.1Z' stroke-width='0.5'",
    "d='M0,-4.2L3.9,2.8H-3.9Z' stroke-width='0.5'",
    "d='M0,-4.4L4.1,0L0,4.4L-4.1,0Z' stroke-width='0.5'",
    "d='M0,4.2L3.9,-2.8H-3.9Z' stroke-width='0.5'",
    "d='M3.2,0A3.2,3.2 0 1 1 -3.2,0A3.2,3.2 0 1 1 3.2,0Z' fill='white' stroke-width='1.6'",
    "d='M-2.9,-2.9H2.9V2.9H-2.9Z' fill='white' stroke-width='1.6'",
};

void tx_svg_text(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '&':
      fputs("&amp;", f);
      break;
    case '\'':
      fputs("&apos;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    default:
      fputc(*s, f);
    }
  }
}

void tx_plot_marker_defs(FILE *f) {
  fputs("<defs>\n", f);
  for (unsigned i = 0; i < TX_PLOT_MARKERS; i++)
    fprintf(f, "<path id='txm%u' %s/>\n", i, marker_paths[i]);
  fputs("</defs>\n", f);
}

void tx_plot_marker(FILE *f, tx_plot_style s, double x, double y, double scale, const char *title) {
  fprintf(f, "<use href='#txm%u' transform='translate(%.1f,%.1f)", s.marker, x, y);
  if (scale != 1) fprintf(f, " scale(%.2f)", scale);
  fprintf(f, "' fill='%s' stroke='%s'", s.colour, s.colour);
  if (!title) {
    fputs("/>", f);
    return;
  }
  fputs("><title>", f);
  tx_svg_text(f, title);
  fputs("</title></use>", f);
}
