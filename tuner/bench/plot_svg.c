/* A txtune plot as a self-contained SVG: log-log panels of time against n, a curve per kernel with
   its fitted slope in the legend, slope 1 and 2 guides (dense attention bends to 2, a fixed window
   stays at 1), and dashed lines where the fastest kernel changes. */
#include <math.h>
#include <string.h>

#include "loglog_fit.h"
#include "plot.h"
#include "text_table.h"

#define PANEL_W  620
#define PANEL_H  340
#define MARGIN_L 70
#define MARGIN_R 210
#define MARGIN_T 34
#define MARGIN_B 46
#define COLUMNS  2

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define COLOUR(k) palette[(k) % (sizeof palette / sizeof palette[0])]

/* Kernel names and titles come from plugins and files: never markup. */
static void xml_text(FILE *f, const char *s) {
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

typedef struct frame { /* a panel's placement and scales */
  double x0, y0, w, h, lx0, lx1, ly0, ly1;
} frame;

static double px(const frame *f, double n) {
  return f->x0 + (log2(n) - f->lx0) / (f->lx1 - f->lx0) * f->w;
}
static double py(const frame *f, double t) {
  return f->y0 + f->h - (log10(t) - f->ly0) / (f->ly1 - f->ly0) * f->h;
}

static void axes(FILE *f, const frame *fr, const tx_plot_panel *p) {
  fprintf(f, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='none' stroke='#444'/>\n",
          fr->x0, fr->y0, fr->w, fr->h);
  for (size_t i = 0; i < p->n_x; i++) {
    double x = px(fr, (double)p->x[i]);
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#eee'/>\n", x, fr->y0, x,
            fr->y0 + fr->h);
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle'>%lld</text>\n", x, fr->y0 + fr->h + 14,
            (long long)p->x[i]);
  }
  for (double e = fr->ly0; e <= fr->ly1 + 1e-9; e += 1) {
    char lab[32];
    double y = py(fr, pow(10, e));
    tx_fmt_time(pow(10, e), lab, sizeof lab);
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#eee'/>\n", fr->x0, y,
            fr->x0 + fr->w, y);
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='end'>%s</text>\n", fr->x0 - 4, y + 4, lab);
  }
  fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle'>n</text>\n", fr->x0 + fr->w / 2,
          fr->y0 + fr->h + 30);
  fprintf(f, "<text x='%.1f' y='%.1f' font-weight='bold'>", fr->x0, fr->y0 - 10);
  xml_text(f, p->title);
  fputs("</text>\n", f);
}

static double series_slope(const tx_plot_panel *p, size_t k) {
  double n[TX_PLOT_MAX_X];
  for (size_t i = 0; i < p->n_x; i++) n[i] = (double)p->x[i];
  return tx_loglog_slope(n, p->s[k].t, p->n_x);
}

static void legend(FILE *f, const frame *fr, const tx_plot_panel *p, size_t k, size_t row) {
  double slope = series_slope(p, k), y = fr->y0 + 14 + 16.0 * (double)row;
  fprintf(f, "<text x='%.1f' y='%.1f' fill='%s'>", fr->x0 + fr->w + 10, y, COLOUR(k));
  xml_text(f, p->s[k].kernel);
  if (!isnan(slope)) fprintf(f, "  slope %.2f", slope);
  if (p->s[k].inexact) fputs(" (inexact!)", f);
  fputs("</text>\n", f);
}

static void curve(FILE *f, const frame *fr, const tx_plot_panel *p, size_t k) {
  int open = 0;
  for (size_t i = 0; i < p->n_x; i++) {
    if (p->s[k].t[i] <= 0) {
      if (open) fputs("'/>\n", f);
      open = 0;
      continue;
    }
    if (!open)
      fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.6' points='", COLOUR(k));
    fprintf(f, "%.1f,%.1f ", px(fr, (double)p->x[i]), py(fr, p->s[k].t[i]));
    open = 1;
  }
  if (open) fputs("'/>\n", f);
  for (size_t i = 0; i < p->n_x; i++)
    if (p->s[k].t[i] > 0)
      fprintf(f, "<circle cx='%.1f' cy='%.1f' r='2.5' fill='%s'/>\n", px(fr, (double)p->x[i]),
              py(fr, p->s[k].t[i]), COLOUR(k));
}

static void curves(FILE *f, const frame *fr, const tx_plot_panel *p) {
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
static void guides(FILE *f, const frame *fr, const tx_plot_panel *p, double t0) {
  double n0 = (double)p->x[0], n1 = (double)p->x[p->n_x - 1], t_top = pow(10, fr->ly1);
  for (int k = 1; k <= 2; k++) {
    double n_end = n1, t_end = t0 * pow(n1 / n0, k);
    if (t_end > t_top) { /* it leaves through the top */
      n_end = n0 * pow(t_top / t0, 1.0 / k);
      t_end = t_top;
    }
    double x0 = px(fr, n0), y0 = py(fr, t0), x1 = px(fr, n_end), y1 = py(fr, t_end);
    fprintf(f,
            "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#aaa' stroke-dasharray='1 3'/>\n"
            "<text x='%.1f' y='%.1f' font-size='10' fill='#888' text-anchor='end'>%s</text>\n",
            x0, y0, x1, y1, x1 - 2, y1 + (k == 1 ? -4 : 12), k == 1 ? "~n" : "~n\xc2\xb2");
  }
}

/* The fastest kernel at x index i; SIZE_MAX if none was measured there. */
static size_t winner(const tx_plot_panel *p, size_t i) {
  size_t w = SIZE_MAX;
  for (size_t k = 0; k < p->n_s; k++)
    if (p->s[k].t[i] > 0 && (w == SIZE_MAX || p->s[k].t[i] < p->s[w].t[i])) w = k;
  return w;
}

static void crossovers(FILE *f, const frame *fr, const tx_plot_panel *p) {
  for (size_t i = 1; i < p->n_x; i++) {
    size_t a = winner(p, i - 1), b = winner(p, i);
    if (a == SIZE_MAX || b == SIZE_MAX || a == b) continue;
    double x = px(fr, sqrt((double)p->x[i - 1] * (double)p->x[i]));
    fprintf(f,
            "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#555' stroke-dasharray='4 3'/>"
            "\n<text x='%.1f' y='%.1f' font-size='10' fill='%s'>&#8594; ",
            x, fr->y0, x, fr->y0 + fr->h, x + 2, fr->y0 + 10 + 11.0 * (double)(i % 3), COLOUR(b));
    xml_text(f, p->s[b].kernel);
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
}

static void draw_panel(FILE *f, const tx_plot_panel *p, size_t slot) {
  double lo, hi, first;
  time_range(p, &lo, &hi, &first);
  frame fr = {.x0 = (double)(slot % COLUMNS) * PANEL_W + MARGIN_L,
              .y0 = (double)(slot / COLUMNS) * PANEL_H + MARGIN_T,
              .w = PANEL_W - MARGIN_L - MARGIN_R,
              .h = PANEL_H - MARGIN_T - MARGIN_B};
  fr.lx0 = log2((double)p->x[0]) - 0.3;
  fr.lx1 = log2((double)p->x[p->n_x - 1]) + 0.3;
  fr.ly0 = floor(log10(lo));
  fr.ly1 = ceil(log10(hi));
  if (fr.ly1 <= fr.ly0) fr.ly1 = fr.ly0 + 1;
  axes(f, &fr, p);
  if (p->n_x > 1 && isfinite(first)) guides(f, &fr, p, first);
  curves(f, &fr, p);
  crossovers(f, &fr, p);
}

int tx_plot_write_svg(const tx_plot *pl, const char *source, FILE *f) {
  size_t rows = (tx_plot_count_drawable(pl) + COLUMNS - 1) / COLUMNS;
  fprintf(f,
          "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' "
          "width='%d' height='%zu' font-family='sans-serif' font-size='11'>\n"
          "<rect width='100%%' height='100%%' fill='white'/>\n<title>txtune: time against n, ",
          COLUMNS * PANEL_W, rows * PANEL_H + 10);
  xml_text(f, source);
  fputs("</title>\n", f);
  size_t slot = 0;
  for (size_t i = 0; i < pl->n; i++)
    if (pl->panels[i].n_x > 0 && pl->panels[i].n_s > 0) draw_panel(f, &pl->panels[i], slot++);
  fputs("</svg>\n", f);
  return ferror(f) ? -1 : 0;
}
