/* txtune plot: time against n, log-log, for each kernel of a dispatch table, one panel per class
   (and per window reach r), with the crossovers (where the fastest kernel changes) marked: dense
   kernels bend to slope 2, windowed ones stay linear. A self-contained SVG. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "context_cli.h"
#include "txattn/table.h"

#define PANEL_W    560
#define PANEL_H    340
#define MARGIN_L   70
#define MARGIN_R   150
#define MARGIN_T   34
#define MARGIN_B   46
#define COLUMNS    2
#define MAX_SERIES 32
#define MAX_X      64

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

/* One kernel's fastest time at each measured n of a panel (0: not measured there). */
typedef struct series {
  const char *kernel;
  double t[MAX_X];
} series;

typedef struct panel {
  char title[128];
  int64_t x[MAX_X];
  size_t n_x;
  series s[MAX_SERIES];
  size_t n_s;
  double t_min, t_max;
} panel;

typedef struct plot_run {
  const char *table_path, *out;
  tx_opt opts[2];
  tx_opt_group groups[1];
  tx_cmd_spec spec;
  char path[4096];
  txattn_table *t;
} plot_run;

static const char about[] =
    "Draws time against n (log-log) for each kernel of a dispatch table: one panel per class,\n"
    "and per window reach r, each kernel's fastest measured time (any tunables) at each n, the\n"
    "crossovers (where the fastest kernel changes) marked by dashed lines. Writes a\n"
    "self-contained SVG that a browser opens, to -o FILE (default: txtune-profile.svg).";

static int parse(plot_run *r, int argc, char **argv) {
  r->opts[0] = tx_opt_string("table", &r->table_path, "FILE",
                             "the dispatch table [$TXATTN_TABLE, else the default]");
  r->opts[1] = tx_opt_string("output", &r->out, "FILE.svg",
                             "where to write the SVG (also -o) [txtune-profile.svg]");
  r->groups[0] = (tx_opt_group){"Options", r->opts, 2};
  r->spec = (tx_cmd_spec){"plot", "[--table FILE] [-o FILE.svg]", about, r->groups, 1};
  static char output[] = "--output"; /* the option parser knows long names only */
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-o") == 0) argv[i] = output;
  return tx_args_parse_cmd(&r->spec, argc, argv);
}

static size_t x_index(panel *p, int64_t n) {
  size_t i = 0;
  while (i < p->n_x && p->x[i] < n) i++;
  if (i < p->n_x && p->x[i] == n) return i;
  if (p->n_x == MAX_X) return SIZE_MAX;
  memmove(&p->x[i + 1], &p->x[i], (p->n_x - i) * sizeof p->x[0]);
  for (size_t k = 0; k < p->n_s; k++)
    memmove(&p->s[k].t[i + 1], &p->s[k].t[i], (p->n_x - i) * sizeof(double));
  for (size_t k = 0; k < p->n_s; k++) p->s[k].t[i] = 0;
  p->n_x++;
  return i;
}

static series *series_of(panel *p, const char *kernel) {
  for (size_t k = 0; k < p->n_s; k++)
    if (strcmp(p->s[k].kernel, kernel) == 0) return &p->s[k];
  if (p->n_s == MAX_SERIES) return NULL;
  series *s = &p->s[p->n_s++];
  memset(s, 0, sizeof *s);
  s->kernel = kernel;
  return s;
}

/* The panel of class ci at reach r (0 without a window). */
static void fill_panel(const txattn_table *t, size_t ci, int64_t r, panel *p) {
  txattn_table_class c;
  size_t n_points;
  char d[96];
  memset(p, 0, sizeof *p);
  txattn_table_class_get(t, ci, &c, &n_points, NULL);
  txattn_table_class_describe(&c, d, sizeof d);
  snprintf(p->title, sizeof p->title, r ? "%s, r = %lld" : "%s", d, (long long)r);
  p->t_min = INFINITY;
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point pt;
    if (txattn_table_point_get(t, ci, i, &pt) != TXATTN_OK || pt.r != r) continue;
    size_t xi = x_index(p, pt.n);
    for (size_t k = 0; k < pt.n_candidates && xi != SIZE_MAX; k++) {
      txattn_table_candidate cand;
      if (txattn_table_candidate_get(t, ci, i, k, &cand) != TXATTN_OK) continue;
      series *s = series_of(p, cand.kernel);
      if (!s || (s->t[xi] > 0 && s->t[xi] <= cand.time_s)) continue;
      s->t[xi] = cand.time_s;
      if (cand.time_s < p->t_min) p->t_min = cand.time_s;
      if (cand.time_s > p->t_max) p->t_max = cand.time_s;
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

static void fmt_time(double s, char *buf, size_t size) {
  if (s < 1e-3)
    snprintf(buf, size, "%g us", s * 1e6);
  else if (s < 1.0)
    snprintf(buf, size, "%g ms", s * 1e3);
  else
    snprintf(buf, size, "%g s", s);
}

static void axes(FILE *f, const frame *fr, const panel *p) {
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
    fmt_time(pow(10, e), lab, sizeof lab);
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#eee'/>\n", fr->x0, y,
            fr->x0 + fr->w, y);
    fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='end'>%s</text>\n", fr->x0 - 4, y + 4, lab);
  }
  fprintf(f, "<text x='%.1f' y='%.1f' text-anchor='middle'>n</text>\n", fr->x0 + fr->w / 2,
          fr->y0 + fr->h + 30);
  fprintf(f, "<text x='%.1f' y='%.1f' font-weight='bold'>%s</text>\n", fr->x0, fr->y0 - 10,
          p->title);
}

static void curves(FILE *f, const frame *fr, const panel *p) {
  for (size_t k = 0; k < p->n_s; k++) {
    const char *col = palette[k % (sizeof palette / sizeof palette[0])];
    int open = 0;
    for (size_t i = 0; i < p->n_x; i++) {
      if (p->s[k].t[i] <= 0) {
        if (open) fputs("'/>\n", f);
        open = 0;
        continue;
      }
      double x = px(fr, (double)p->x[i]), y = py(fr, p->s[k].t[i]);
      if (!open) fprintf(f, "<polyline fill='none' stroke='%s' stroke-width='1.6' points='", col);
      fprintf(f, "%.1f,%.1f ", x, y);
      open = 1;
    }
    if (open) fputs("'/>\n", f);
    for (size_t i = 0; i < p->n_x; i++)
      if (p->s[k].t[i] > 0)
        fprintf(f, "<circle cx='%.1f' cy='%.1f' r='2.5' fill='%s'/>\n", px(fr, (double)p->x[i]),
                py(fr, p->s[k].t[i]), col);
    fprintf(f, "<text x='%.1f' y='%.1f' fill='%s'>%s</text>\n", fr->x0 + fr->w + 10,
            fr->y0 + 14 + 16.0 * (double)k, col, p->s[k].kernel);
  }
}

/* The fastest kernel at x index i; SIZE_MAX if none was measured there. */
static size_t winner(const panel *p, size_t i) {
  size_t w = SIZE_MAX;
  for (size_t k = 0; k < p->n_s; k++)
    if (p->s[k].t[i] > 0 && (w == SIZE_MAX || p->s[k].t[i] < p->s[w].t[i])) w = k;
  return w;
}

static void crossovers(FILE *f, const frame *fr, const panel *p) {
  for (size_t i = 1; i < p->n_x; i++) {
    size_t a = winner(p, i - 1), b = winner(p, i);
    if (a == SIZE_MAX || b == SIZE_MAX || a == b) continue;
    double x = px(fr, sqrt((double)p->x[i - 1] * (double)p->x[i]));
    fprintf(f,
            "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#555' stroke-dasharray='4 3'/>"
            "\n<text x='%.1f' y='%.1f' font-size='10' fill='%s'>&#8594; %s</text>\n",
            x, fr->y0, x, fr->y0 + fr->h, x + 2, fr->y0 + 10 + 11.0 * (double)(i % 3),
            palette[b % (sizeof palette / sizeof palette[0])], p->s[b].kernel);
  }
}

static void draw_panel(FILE *f, const panel *p, size_t slot) {
  frame fr = {.x0 = (double)(slot % COLUMNS) * PANEL_W + MARGIN_L,
              .y0 = (double)(slot / COLUMNS) * PANEL_H + MARGIN_T,
              .w = PANEL_W - MARGIN_L - MARGIN_R,
              .h = PANEL_H - MARGIN_T - MARGIN_B};
  fr.lx0 = log2((double)p->x[0]) - 0.3;
  fr.lx1 = log2((double)p->x[p->n_x - 1]) + 0.3;
  fr.ly0 = floor(log10(p->t_min));
  fr.ly1 = ceil(log10(p->t_max));
  if (fr.ly1 <= fr.ly0) fr.ly1 = fr.ly0 + 1;
  axes(f, &fr, p);
  curves(f, &fr, p);
  crossovers(f, &fr, p);
}

/* The distinct r of class ci's points (one 0 without a window). */
static size_t reaches(const txattn_table *t, size_t ci, int64_t *r, size_t cap) {
  size_t n_points, k = 0;
  txattn_table_class c;
  txattn_table_class_get(t, ci, &c, &n_points, NULL);
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point pt;
    if (txattn_table_point_get(t, ci, i, &pt) != TXATTN_OK) continue;
    int seen = 0;
    for (size_t j = 0; j < k && !seen; j++) seen = r[j] == pt.r;
    if (!seen && k < cap) r[k++] = pt.r;
  }
  return k;
}

static size_t count_panels(const txattn_table *t, size_t n_classes) {
  size_t n = 0;
  int64_t r[64];
  for (size_t ci = 0; ci < n_classes; ci++) n += reaches(t, ci, r, 64);
  return n;
}

static int write_svg(plot_run *r, FILE *f) {
  txattn_table_header h;
  txattn_table_header_get(r->t, &h);
  size_t n_panels = count_panels(r->t, h.n_classes);
  size_t rows = (n_panels + COLUMNS - 1) / COLUMNS;
  fprintf(f,
          "<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/svg' "
          "width='%d' height='%zu' font-family='sans-serif' font-size='11'>\n"
          "<rect width='100%%' height='100%%' fill='white'/>\n<title>txtune: time against n, %s"
          "</title>\n",
          COLUMNS * PANEL_W, rows * PANEL_H + 10, h.path);
  panel *p = malloc(sizeof *p);
  if (!p) return TX_EXIT_FAIL;
  size_t slot = 0;
  for (size_t ci = 0; ci < h.n_classes; ci++) {
    int64_t rs[64];
    size_t n_r = reaches(r->t, ci, rs, 64);
    for (size_t k = 0; k < n_r; k++) {
      fill_panel(r->t, ci, rs[k], p);
      if (p->n_x > 0 && p->n_s > 0) draw_panel(f, p, slot++);
    }
  }
  free(p);
  fputs("</svg>\n", f);
  return TX_EXIT_OK;
}

static int load(plot_run *r) {
  if (r->table_path)
    snprintf(r->path, sizeof r->path, "%s", r->table_path);
  else if (txattn_table_default_path(r->path, sizeof r->path) != TXATTN_OK) {
    fprintf(stderr, "txtune plot: %s\n", txattn_last_error());
    return TX_EXIT_FAIL;
  }
  txattn_status s = txattn_table_load(r->path, &r->t);
  if (s == TXATTN_OK) return 0;
  tx_print_lib_error("plot", "cannot use the table", s);
  return TX_EXIT_FAIL;
}

int tx_cmd_plot(int argc, char **argv) {
  plot_run r;
  memset(&r, 0, sizeof r);
  int rc = parse(&r, argc, argv);
  if (rc >= 0) return rc;
  if ((rc = load(&r)) != 0) return rc;
  const char *out = r.out ? r.out : "txtune-profile.svg";
  FILE *f = fopen(out, "w");
  if (!f) {
    fprintf(stderr, "txtune plot: cannot write %s\n", out);
    txattn_table_free(r.t);
    return TX_EXIT_FAIL;
  }
  rc = write_svg(&r, f);
  if (fclose(f) != 0 && rc == 0) {
    fprintf(stderr, "txtune plot: cannot write %s\n", out);
    rc = TX_EXIT_FAIL;
  }
  if (rc == 0) printf("wrote %s (time against n from %s)\n", out, r.path);
  txattn_table_free(r.t);
  return rc;
}
