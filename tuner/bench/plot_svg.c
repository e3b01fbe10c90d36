/* A txtune plot as a self-contained SVG: the first panel (plot_price.c), then a log-log panel of
   time against n per class, a curve per kernel with its fitted slope in the legend, slope 1 and 2
   guides (dense attention bends to 2, a fixed window stays at 1), dashed lines where the fastest
   kernel changes and an x where a kernel failed. A kernel has one colour in every panel; labels
   are moved down until they cover no other label, legend or data point. Also the drawing
   primitives both use (plot_draw.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "loglog_fit.h"
#include "plot.h"
#include "plot_draw.h"
#include "text_table.h"

/* ---- colours: a hue per kernel family, a shade per ISA ---- */

typedef struct family_hue {
  const char *family;
  double hue, sat; /* degrees, 0..1 */
} family_hue;

static const family_hue families[] = {
    {"tiled", 215, 0.80},     {"tiled_omp", 280, 0.60}, {"banded", 125, 0.65},
    {"banded_omp", 35, 0.90}, {"masked", 355, 0.75},    {"naive", 0, 0.0},
};

typedef struct isa_shade {
  const char *isa;
  double lightness;
} isa_shade;

/* the wider the vectors, the darker */
static const isa_shade shades[] = {
    {"avx512bf16", 0.30}, {"avx512", 0.30}, {"avx2", 0.43}, {"neon", 0.43}, {"scalar", 0.56}};

static uint32_t fnv1a(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n && s[i]; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static double hue_channel(double p, double q, double t) {
  if (t < 0) t += 1;
  if (t > 1) t -= 1;
  if (t < 1.0 / 6) return p + (q - p) * 6 * t;
  if (t < 0.5) return q;
  if (t < 2.0 / 3) return p + (q - p) * (2.0 / 3 - t) * 6;
  return p;
}

void tx_plot_colour(const char *kernel, char out[8]) {
  const char *dot = strchr(kernel, '.');
  size_t fam_len = dot ? (size_t)(dot - kernel) : strlen(kernel);
  const char *isa = dot ? dot + 1 : "";
  uint32_t h = fnv1a(kernel, fam_len); /* a family not listed: a hue of its own name */
  double hue = (double)(h % 360), sat = 0.65, light = 0.30 + (double)(fnv1a(isa, 64) % 27) / 100;
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
    if (strlen(families[i].family) == fam_len && strncmp(kernel, families[i].family, fam_len) == 0)
      hue = families[i].hue, sat = families[i].sat;
  for (size_t i = 0; i < sizeof shades / sizeof shades[0]; i++)
    if (strcmp(isa, shades[i].isa) == 0) light = shades[i].lightness;
  double q = light < 0.5 ? light * (1 + sat) : light + sat - light * sat, p = 2 * light - q;
  int rgb[3];
  for (int c = 0; c < 3; c++)
    rgb[c] = (int)lround(255 * hue_channel(p, q, hue / 360 + (1 - c) / 3.0));
  snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* ---- label placement, text, frames and axes (plot_draw.h) ---- */

void tx_take(tx_taken *tk, tx_box b) {
  if (tk->n < TX_MAX_BOXES) tk->b[tk->n++] = b;
}

static int is_free(const tx_taken *tk, tx_box b) {
  for (size_t i = 0; i < tk->n; i++)
    if (b.x0 < tk->b[i].x1 && tk->b[i].x0 < b.x1 && b.y0 < tk->b[i].y1 && tk->b[i].y0 < b.y1)
      return 0;
  return 1;
}

double tx_text_width(const char *s, double size) {
  size_t n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
  return 0.6 * size * (double)n;
}

double tx_place(tx_taken *tk, double left, double w, double y, double size, double y_max) {
  for (double at = y; at <= y_max; at += size + 1) {
    tx_box b = {left - 1, at - size, left + w + 1, at + 3};
    if (is_free(tk, b)) {
      tx_take(tk, b);
      return at;
    }
  }
  tx_take(tk, (tx_box){left - 1, y - size, left + w + 1, y + 3});
  return y;
}

double tx_place_near(tx_taken *tk, double left, double w, double y, double size, double y_min,
                     double y_max) {
  for (int i = 0; i < 24; i++) { /* y, a line above, a line below, two lines above ... */
    double at = y + (size + 1) * (i % 2 ? -(i + 1) / 2 : i / 2);
    tx_box b = {left - 1, at - size, left + w + 1, at + 3};
    if (at - size >= y_min && at <= y_max && is_free(tk, b)) {
      tx_take(tk, b);
      return at;
    }
  }
  return tx_place(tk, left, w, y, size, y_max);
}

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

tx_frame tx_frame_at(size_t slot, double n_lo, double n_hi, double t_lo, double t_hi) {
  tx_frame fr = {.x0 = (double)(slot % TX_COLUMNS) * TX_PANEL_W + TX_MARGIN_L,
                 .y0 = (double)(slot / TX_COLUMNS) * TX_PANEL_H + TX_MARGIN_T,
                 .w = TX_PANEL_W - TX_MARGIN_L - TX_MARGIN_R,
                 .h = TX_PANEL_H - TX_MARGIN_T - TX_MARGIN_B};
  fr.lx0 = log2(n_lo) - 0.3;
  fr.lx1 = log2(n_hi) + 0.3;
  fr.ly0 = floor(log10(t_lo));
  fr.ly1 = ceil(log10(t_hi));
  if (fr.ly1 <= fr.ly0) fr.ly1 = fr.ly0 + 1;
  return fr;
}

void tx_axes(FILE *f, const tx_frame *fr, const int64_t *x, size_t n_x, const char *title) {
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

/* ---- the panels of one class each ---- */

static double series_slope(const tx_plot_panel *p, size_t k) {
  double n[TX_PLOT_MAX_X];
  for (size_t i = 0; i < p->n_x; i++) n[i] = (double)p->x[i];
  return tx_loglog_slope(n, p->s[k].t, p->n_x);
}

static void legend(FILE *f, const tx_frame *fr, const tx_plot_panel *p, size_t k, size_t row) {
  double slope = series_slope(p, k), y = fr->y0 + 14 + 16.0 * (double)row;
  char colour[8];
  tx_plot_colour(p->s[k].kernel, colour);
  fprintf(f, "<text x='%.1f' y='%.1f' fill='%s'>", fr->x0 + fr->w + 10, y, colour);
  tx_svg_text(f, p->s[k].kernel);
  if (!isnan(slope)) fprintf(f, "  slope %.2f", slope);
  if (p->s[k].inexact) fputs(" (inexact!)", f);
  size_t n_failed = 0;
  for (size_t i = 0; i < p->n_x; i++)
    if (p->s[k].failed[i])
      fprintf(f, "%s%lld", n_failed++ ? "," : " (x: failed at n=", (long long)p->x[i]);
  fputs(n_failed ? ")</text>\n" : "</text>\n", f);
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

static void curve(FILE *f, const tx_frame *fr, const tx_plot_panel *p, size_t k) {
  char colour[8];
  tx_plot_colour(p->s[k].kernel, colour);
  int open = 0;
  for (size_t i = 0; i < p->n_x; i++) {
    if (p->s[k].t[i] <= 0) {
      if (open) fputs("'/>\n", f);
      open = 0;
      continue;
    }
    if (!open) fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.6' points='", colour);
    fprintf(f, "%.1f,%.1f ", tx_px(fr, (double)p->x[i]), tx_py(fr, p->s[k].t[i]));
    open = 1;
  }
  if (open) fputs("'/>\n", f);
  for (size_t i = 0; i < p->n_x; i++)
    if (p->s[k].t[i] > 0)
      fprintf(f, "<circle cx='%.1f' cy='%.1f' r='2.5' fill='%s'/>\n", tx_px(fr, (double)p->x[i]),
              tx_py(fr, p->s[k].t[i]), colour);
  for (size_t i = 0; i < p->n_x; i++) {
    if (!p->s[k].failed[i]) continue;
    double x = tx_px(fr, (double)p->x[i]), y = failure_y(fr, p, k, i);
    fprintf(f,
            "<path d='M%.1f,%.1f l8,8 m0,-8 l-8,8' stroke='%s' stroke-width='2.2'>"
            "<title>failed at n=%lld</title></path>\n",
            x - 4, y - 4, colour, (long long)p->x[i]);
  }
}

/* The boxes a label must not cover: each data point, each failure mark, the legend. */
static void take_panel(tx_taken *tk, const tx_frame *fr, const tx_plot_panel *p) {
  for (size_t k = 0; k < p->n_s; k++)
    for (size_t i = 0; i < p->n_x; i++) {
      double x = tx_px(fr, (double)p->x[i]);
      if (p->s[k].t[i] > 0) {
        double y = tx_py(fr, p->s[k].t[i]);
        tx_take(tk, (tx_box){x - 3, y - 3, x + 3, y + 3});
      }
      if (p->s[k].failed[i]) {
        double y = failure_y(fr, p, k, i);
        tx_take(tk, (tx_box){x - 5, y - 5, x + 5, y + 5});
      }
    }
  tx_take(tk, (tx_box){fr->x0 + fr->w + 6, fr->y0, fr->x0 + TX_PANEL_W,
                       fr->y0 + 18 + 16.0 * (double)p->n_s});
}

static void curves(FILE *f, const tx_frame *fr, const tx_plot_panel *p) {
  size_t row = 0;
  for (size_t k = 0; k < p->n_s; k++) {
    curve(f, fr, p, k);
    legend(f, fr, p, k, row++);
  }
  fprintf(
      f,
      "<text x='%.1f' y='%.1f' fill='#888' font-size='10'>slope: least squares on log-log</text>\n",
      fr->x0 + fr->w + 10, fr->y0 + 14 + 16.0 * (double)row);
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
static void crossovers(FILE *f, const tx_frame *fr, const tx_plot_panel *p, tx_taken *tk) {
  for (size_t i = 1; i < p->n_x; i++) {
    size_t a = winner(p, i - 1), b = winner(p, i);
    if (a == SIZE_MAX || b == SIZE_MAX || a == b) continue;
    char colour[8], label[80];
    tx_plot_colour(p->s[b].kernel, colour);
    snprintf(label, sizeof label, "-> %s", p->s[b].kernel);
    double x = tx_px(fr, sqrt((double)p->x[i - 1] * (double)p->x[i])), w = tx_text_width(label, 10);
    double left = x + 2 + w <= fr->x0 + fr->w ? x + 2 : x - 2 - w;
    double y = tx_place(tk, left, w, fr->y0 + 11, 10, fr->y0 + fr->h - 2);
    fprintf(f,
            "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#555' stroke-dasharray='4 3'/>"
            "\n<text x='%.1f' y='%.1f' font-size='10' fill='%s'>&#8594; ",
            x, fr->y0, x, fr->y0 + fr->h, left, y, colour);
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

static void draw_panel(FILE *f, const tx_plot_panel *p, size_t slot) {
  double lo, hi, first;
  time_range(p, &lo, &hi, &first);
  tx_frame fr = tx_frame_at(slot, (double)p->x[0], (double)p->x[p->n_x - 1], lo, hi);
  static tx_taken tk; /* 70 KiB: not on the stack; txtune draws one panel at a time */
  tk.n = 0;
  take_panel(&tk, &fr, p);
  tx_axes(f, &fr, p->x, p->n_x, p->title);
  if (p->n_x > 1 && isfinite(first)) guides(f, &fr, p, first, &tk);
  curves(f, &fr, p);
  crossovers(f, &fr, p, &tk);
}

int tx_plot_write_svg(const tx_plot *pl, const char *source, FILE *f) {
  /* the first panel fills a row: the panels of one class each start on the next */
  size_t slot = tx_plot_has_best(pl) ? TX_COLUMNS : 0;
  size_t rows = (slot + tx_plot_count_drawable(pl) + TX_COLUMNS - 1) / TX_COLUMNS;
  fprintf(f,
          "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' "
          "width='%d' height='%zu' font-family='sans-serif' font-size='11'>\n"
          "<rect width='100%%' height='100%%' fill='white'/>\n<title>txtune: time against n, ",
          TX_COLUMNS * TX_PANEL_W, rows * TX_PANEL_H + 10);
  tx_svg_text(f, source);
  fputs("</title>\n", f);
  if (slot) tx_plot_draw_price(f, pl);
  for (size_t i = 0; i < pl->n; i++)
    if (pl->panels[i].n_x > 0 && pl->panels[i].n_s > 0) draw_panel(f, &pl->panels[i], slot++);
  fputs("</svg>\n", f);
  return ferror(f) ? -1 : 0;
}
