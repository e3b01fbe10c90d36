/* SPDX-License-Identifier: MIT */
/* The first panel of a txtune plot, "the price of attention": for each mask kind, the best
   kernel's time against n in one class (plot_table.c, plot_sweep.c say which), log-log, with each
   line's slope fitted at large n and slopes 1 and 2 drawn from the fastest first point. Dense
   attention (no mask, causal) bends toward slope 2, a fixed window stays at slope 1. A line keeps
   its mask kind's colour, each point the colour and marker of the kernel that was best there; a
   mask kind with too few points, or none, is named in the panel's text. */
#include <math.h>
#include <string.h>

#include "loglog_fit.h"
#include "plot.h"
#include "plot_draw.h"
#include "text_table.h"
#include "txattn/txattn.h"

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

static void time_range(const tx_plot *pl, double *lo, double *hi) {
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
static void guides(FILE *f, const tx_frame *fr, tx_taken *tk, const tx_plot *pl, double n_lo,
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

void tx_plot_draw_price(FILE *f, const tx_plot *pl, const tx_plot_styles *st) {
  static const char title[] = "the price of attention: the best kernel's time against n";
  int64_t x[TX_PLOT_MAX_X];
  size_t n_x = all_n(pl, x);
  double lo, hi;
  time_range(pl, &lo, &hi);
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
  guides(f, &fr, &tk, pl, (double)x[0], (double)x[n_x - 1]);
  for (size_t k = 0; k < TX_PLOT_KINDS; k++) line(f, &fr, &tk, &pl->best[k], k, st);
  text_beside(f, &fr, pl, st);
}
