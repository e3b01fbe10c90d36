/* SPDX-License-Identifier: MIT */
/* What txtune plot draws for each kernel (tuner/lab/plot*.c), on made-up times: a colour and
   marker of its own, the same in every panel and in every plot; a label at the end of its line
   that overlaps no other and stays inside the picture; a slope only from 3 points or more; and
   where a line stops before the panel's largest n, a note there saying why, with what the source
   recorded below the panel. The SVG is read back as text. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plot.h"
#include "plot_svg.h"
#include "txattn/txattn.h"

TestSuite(plot, .timeout = 60);

/* ---- building plots ---- */

/* kernel's time c * n^k at each n of ns in panel p. */
static void line(tx_plot *pl, tx_plot_panel *p, const char *kernel, double c, double k,
                 const int64_t *ns, size_t count) {
  for (size_t i = 0; i < count; i++)
    cr_assert_eq(tx_plot_set(pl, p, kernel, ns[i], c * pow((double)ns[i], k), 0), 0);
}

static const int64_t four_n[] = {64, 256, 1024, 4096};

static char *svg_of(const tx_plot *pl) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  cr_assert(f);
  cr_assert_eq(tx_plot_write_svg(pl, "test", f), 0);
  fclose(f);
  return text;
}

/* ---- reading the SVG back ---- */

/* The value of attribute `name` in the element starting at el, into out; 0 if it has none. */
static int attr(const char *el, const char *name, char *out, size_t size) {
  const char *end = strchr(el, '>');
  char key[48];
  snprintf(key, sizeof key, " %s='", name);
  const char *at = strstr(el, key);
  if (!at || (end && at > end)) return 0;
  at += strlen(key);
  size_t n = strcspn(at, "'");
  snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), at);
  return 1;
}

static double num_attr(const char *el, const char *name) {
  char v[64];
  cr_assert(attr(el, name, v, sizeof v), "no %s in %.80s", name, el);
  return strtod(v, NULL);
}

/* The text of the element starting at el, up to the next tag, entities unescaped roughly. */
static void inner(const char *el, char *out, size_t size) {
  const char *at = strchr(el, '>') + 1;
  size_t n = 0;
  while (*at && *at != '<' && n + 1 < size) {
    if (*at == '&') {
      out[n++] = '?';
      at = strchr(at, ';') + 1;
    } else {
      out[n++] = *at++;
    }
  }
  out[n] = '\0';
}

typedef struct look {
  char kernel[64], colour[8];
  int marker;
} look;

/* Every series group's kernel, colour and marker (its markers' href and fill, all alike). */
static size_t looks(const char *svg, look *out, size_t cap) {
  size_t n = 0;
  for (const char *g = strstr(svg, "<g class='series'"); g;
       g = strstr(g + 1, "<g class='series'")) {
    cr_assert_lt(n, cap);
    look *l = &out[n++];
    cr_assert(attr(g, "data-kernel", l->kernel, sizeof l->kernel));
    l->marker = -1;
    const char *end = strstr(g, "</g>");
    for (const char *u = strstr(g, "<use href='#txm"); u && u < end;
         u = strstr(u + 1, "<use href='#txm")) {
      char fill[8];
      int m = atoi(u + strlen("<use href='#txm"));
      cr_assert(attr(u, "fill", fill, sizeof fill));
      if (l->marker < 0) {
        l->marker = m;
        snprintf(l->colour, sizeof l->colour, "%s", fill);
      }
      cr_assert(l->marker == m && strcmp(l->colour, fill) == 0,
                "%s: markers of two styles in one line", l->kernel);
    }
    cr_assert_geq(l->marker, 0, "%s: a line without markers", l->kernel);
  }
  return n;
}

static const look *look_of(const look *ls, size_t n, const char *kernel) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(ls[i].kernel, kernel) == 0) return &ls[i];
  return NULL;
}

/* Every kernel has one look across the panels; two kernels never share one. */
static void check_looks(const look *ls, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      int same_kernel = strcmp(ls[i].kernel, ls[j].kernel) == 0;
      int same_look = ls[i].marker == ls[j].marker && strcmp(ls[i].colour, ls[j].colour) == 0;
      cr_assert_eq(same_kernel, same_look, "%s (%s, marker %d) and %s (%s, marker %d)",
                   ls[i].kernel, ls[i].colour, ls[i].marker, ls[j].kernel, ls[j].colour,
                   ls[j].marker);
    }
}

typedef struct label {
  char cls[8], kernel[64], text[160];
  double x0, y0, x1, y1;
} label;

/* The kernels' labels (text class 'end' or 'stop') with their boxes, as the plot estimates text
   widths (0.6 em a character). */
static size_t labels(const char *svg, label *out, size_t cap) {
  size_t n = 0;
  for (const char *t = strstr(svg, "<text class='"); t; t = strstr(t + 1, "<text class='")) {
    label l;
    attr(t, "class", l.cls, sizeof l.cls);
    if (strcmp(l.cls, "end") != 0 && strcmp(l.cls, "stop") != 0) continue;
    cr_assert_lt(n, cap);
    cr_assert(attr(t, "data-kernel", l.kernel, sizeof l.kernel));
    inner(t, l.text, sizeof l.text);
    double x = num_attr(t, "x"), y = num_attr(t, "y"), size = num_attr(t, "font-size");
    l.x0 = x;
    l.x1 = x + 0.6 * size * (double)strlen(l.text);
    l.y0 = y - 0.75 * size;
    l.y1 = y + 0.2 * size;
    out[n++] = l;
  }
  return n;
}

static void check_labels_apart(const char *svg, const label *ls, size_t n) {
  char width[16];
  cr_assert(attr(strstr(svg, "<svg "), "width", width, sizeof width));
  for (size_t i = 0; i < n; i++) {
    cr_assert(ls[i].x0 >= 0 && ls[i].x1 <= atof(width), "'%s' is cut at the edge (%g..%g of %s)",
              ls[i].text, ls[i].x0, ls[i].x1, width);
    for (size_t j = i + 1; j < n; j++)
      cr_assert(ls[i].x1 <= ls[j].x0 || ls[j].x1 <= ls[i].x0 || ls[i].y1 <= ls[j].y0 ||
                    ls[j].y1 <= ls[i].y0,
                "'%s' and '%s' overlap", ls[i].text, ls[j].text);
  }
}

static const label *label_of(const label *ls, size_t n, const char *cls, const char *kernel) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(ls[i].cls, cls) == 0 && strcmp(ls[i].kernel, kernel) == 0) return &ls[i];
  return NULL;
}

/* ---- the tests ---- */

Test(plot, a_kernel_has_one_colour_and_marker_in_every_panel_and_plot) {
  static const char *const a_kernels[] = {"tiled.avx2",    "tiled.avx512",  "tiled.scalar",
                                          "banded.avx512", "masked.scalar", "vendor.fast"};
  tx_plot a = {0}, b = {0};
  tx_plot_panel *p1 = tx_plot_add_panel(&a, "one"), *p2 = tx_plot_add_panel(&a, "two");
  for (size_t k = 0; k < 6; k++) {
    line(&a, p1, a_kernels[k], 1e-9 * (double)(k + 1), 2, four_n, 4);
    if (k % 2 == 0) line(&a, p2, a_kernels[k], 2e-9 * (double)(k + 1), 1.5, four_n, 4);
  }
  /* another plot, other kernels beside some of the same */
  tx_plot_panel *q = tx_plot_add_panel(&b, "other");
  static const char *const b_kernels[] = {"naive.scalar", "tiled.avx512", "vendor.fast",
                                          "banded.avx2", "tiled_omp.avx2"};
  for (size_t k = 0; k < 5; k++) line(&b, q, b_kernels[k], 3e-9 * (double)(k + 1), 2, four_n, 4);
  char *sa = svg_of(&a), *sb = svg_of(&b);
  look la[64], lb[64];
  size_t na = looks(sa, la, 64), nb = looks(sb, lb, 64);
  cr_assert_eq(na, 6 + 3);
  cr_assert_eq(nb, 5);
  check_looks(la, na);
  check_looks(lb, nb);
  /* one family, apart in colour, not only in shade */
  cr_assert_str_neq(look_of(la, na, "tiled.avx2")->colour, look_of(la, na, "tiled.avx512")->colour);
  cr_assert_str_neq(look_of(la, na, "tiled.avx512")->colour,
                    look_of(la, na, "tiled.scalar")->colour);
  for (size_t i = 0; i < nb; i++) {
    const look *same = look_of(la, na, lb[i].kernel);
    if (same)
      cr_assert(same->marker == lb[i].marker && strcmp(same->colour, lb[i].colour) == 0,
                "%s: %s marker %d in one plot, %s marker %d in another", lb[i].kernel, same->colour,
                same->marker, lb[i].colour, lb[i].marker);
  }
  free(sa);
  free(sb);
  tx_plot_free(&a);
  tx_plot_free(&b);
}

Test(plot, the_shipped_kernels_have_styles_of_their_own_and_families_no_shared_colour) {
  static const char *const shipped[] = {
      "tiled.scalar",         "tiled.avx2",       "tiled.avx512",      "tiled.avx512bf16",
      "tiled.neon",           "tiled_omp.scalar", "tiled_omp.avx2",    "tiled_omp.avx512",
      "tiled_omp.avx512bf16", "tiled_omp.neon",   "banded.scalar",     "banded.avx2",
      "banded.avx512",        "banded.neon",      "banded_omp.scalar", "banded_omp.avx2",
      "banded_omp.avx512",    "banded_omp.neon",  "masked.scalar",     "naive.scalar"};
  size_t n = sizeof shipped / sizeof shipped[0];
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      tx_plot_style a = tx_plot_style_of(NULL, shipped[i]), b = tx_plot_style_of(NULL, shipped[j]);
      size_t fa = strcspn(shipped[i], "."), fb = strcspn(shipped[j], ".");
      int family = fa == fb && strncmp(shipped[i], shipped[j], fa) == 0;
      cr_assert(a.marker != b.marker || strcmp(a.colour, b.colour) != 0, "%s and %s look alike",
                shipped[i], shipped[j]);
      cr_assert(!family || strcmp(a.colour, b.colour) != 0, "%s and %s share %s", shipped[i],
                shipped[j], a.colour);
    }
}

Test(plot, kernels_whose_names_hash_alike_get_apart) {
  /* 40 names of third-party kernels for 50 free styles: some hash to one style */
  tx_plot pl = {0};
  tx_plot_panel *p[2] = {tx_plot_add_panel(&pl, "a"), tx_plot_add_panel(&pl, "b")};
  char names[40][32];
  int collide = 0;
  for (int i = 0; i < 40; i++) {
    snprintf(names[i], sizeof names[i], "vendor%d.avx2", i);
    line(&pl, p[i % 2], names[i], 1e-9 * (i + 1), 2, four_n, 4);
    for (int j = 0; j < i; j++) {
      tx_plot_style a = tx_plot_style_of(NULL, names[i]), b = tx_plot_style_of(NULL, names[j]);
      collide |= a.marker == b.marker && strcmp(a.colour, b.colour) == 0;
    }
  }
  cr_assert(collide, "no two names hash alike: the test proves nothing");
  char *svg = svg_of(&pl);
  look ls[64];
  size_t n = looks(svg, ls, 64);
  cr_assert_eq(n, 40);
  check_looks(ls, n);
  free(svg);
  tx_plot_free(&pl);
}

Test(plot, each_line_is_labelled_at_its_end_and_no_labels_overlap) {
  /* a crowded panel: 12 kernels ending close together, 4 stopping early at one n */
  static const char *const kernels[] = {"tiled.avx512",   "banded.avx512",    "tiled.avx2",
                                        "banded.avx2",    "tiled_omp.avx512", "banded_omp.avx512",
                                        "tiled_omp.avx2", "banded_omp.avx2",  "naive.scalar",
                                        "tiled.scalar",   "masked.scalar",    "banded.scalar"};
  tx_plot pl = {0};
  tx_plot_panel *p = tx_plot_add_panel(&pl, "crowded");
  for (size_t k = 0; k < 12; k++)
    line(&pl, p, kernels[k], 1e-9 * (1 + 0.05 * (double)k), 2, four_n, k < 8 ? 4 : 2);
  char *svg = svg_of(&pl);
  label ls[64];
  size_t n = labels(svg, ls, 64);
  check_labels_apart(svg, ls, n);
  for (size_t k = 0; k < 12; k++) {
    const label *l = label_of(ls, n, "end", kernels[k]);
    cr_assert(l, "%s has no label", kernels[k]);
    cr_assert_eq(strncmp(l->text, kernels[k], strlen(kernels[k])), 0, "'%s'", l->text);
    /* at the end of its line: right of its last point */
    const char *g = strstr(svg, "<g class='series' data-kernel='");
    while (g && strncmp(g + 31, kernels[k], strlen(kernels[k])) != 0) g = strstr(g + 1, "<g class");
    cr_assert(g);
    const char *last = NULL, *end = strstr(g, "</g>");
    for (const char *u = strstr(g, "translate("); u && u < end; u = strstr(u + 1, "translate("))
      last = u;
    double x_last = strtod(last + strlen("translate("), NULL);
    if (k < 8) /* right of the panel, beside its end */
      cr_assert(l->x0 > x_last && l->x0 < x_last + 60, "%s: its label at %g, its last point at %g",
                kernels[k], l->x0, x_last);
    else /* near where it stops (the label's box within 100 px of the point) */
      cr_assert(l->x1 > x_last - 100 && l->x0 < x_last + 100,
                "%s: its label at %g..%g, its last point at %g", kernels[k], l->x0, l->x1, x_last);
  }
  free(svg);
  tx_plot_free(&pl);
}

Test(plot, no_slope_from_fewer_than_three_points) {
  static const double n[3] = {64, 256, 1024}, t[3] = {1e-6, 1.6e-5, 2.56e-4};
  cr_assert(isnan(tx_loglog_slope(n, t, 2)));
  cr_assert_float_eq(tx_loglog_slope(n, t, 3), 2.0, 1e-9);
  tx_plot pl = {0};
  tx_plot_panel *p = tx_plot_add_panel(&pl, "slopes");
  line(&pl, p, "tiled.avx512", 1e-9, 2, four_n, 4);
  line(&pl, p, "banded.avx512", 1e-9, 1, four_n + 2, 2); /* 1024 and 4096 only */
  line(&pl, p, "tiled.avx2", 2e-9, 2, four_n + 1, 3);
  /* the first panel too: a line of two points gets no slope, one of three gets one */
  tx_plot_best_set(&pl, &pl.best[TXATTN_MASK_NONE], "tiled.avx512", 256, 1e-4);
  tx_plot_best_set(&pl, &pl.best[TXATTN_MASK_NONE], "tiled.avx512", 1024, 1.6e-3);
  snprintf(pl.best[TXATTN_MASK_NONE].cls, sizeof pl.best[0].cls, "none d64");
  for (size_t i = 0; i < 3; i++)
    tx_plot_best_set(&pl, &pl.best[TXATTN_MASK_CAUSAL], "tiled.avx512", four_n[i],
                     1e-9 * pow((double)four_n[i], 1.5));
  snprintf(pl.best[TXATTN_MASK_CAUSAL].cls, sizeof pl.best[0].cls, "causal d64");
  char *svg = svg_of(&pl);
  label ls[16];
  size_t n_l = labels(svg, ls, 16);
  cr_assert_str_eq(label_of(ls, n_l, "end", "tiled.avx512")->text, "tiled.avx512  slope 2.00");
  cr_assert_str_eq(label_of(ls, n_l, "end", "tiled.avx2")->text, "tiled.avx2  slope 2.00");
  cr_assert_str_eq(label_of(ls, n_l, "end", "banded.avx512")->text, "banded.avx512");
  cr_assert(strstr(svg, ">none: slope") == NULL && strstr(svg, ">none</text>"), "%s", svg);
  cr_assert(strstr(svg, "none d64 (dense): two points (n = 256, 1024), too few for a slope<"));
  cr_assert(strstr(svg, ">causal: slope 1.50</text>"));
  free(svg);
  tx_plot_free(&pl);
}

Test(plot, a_line_that_stops_says_where_and_why) {
  tx_plot pl = {0};
  pl.untimed = "dropped";
  tx_plot_panel *p = tx_plot_add_panel(&pl, "stops");
  line(&pl, p, "tiled.avx512", 1e-9, 2, four_n, 4);
  line(&pl, p, "naive.scalar", 4e-9, 2, four_n, 2); /* no record at 1024, 4096 */
  line(&pl, p, "tiled.scalar", 2e-9, 2, four_n, 2);
  cr_assert_eq(tx_plot_mark(&pl, p, "tiled.scalar", 1024, 1, "one call would take 12.9 s"), 0);
  line(&pl, p, "banded.avx2", 1.5e-9, 2, four_n, 2);
  tx_plot_mark(&pl, p, "banded.avx2", 1024, 0, "not applicable: n > 512");
  tx_plot_mark(&pl, p, "banded.avx2", 4096, 0, "not applicable: n > 512");
  tx_plot_mark(&pl, p, "bad.scalar", 256, 1, "max error 0.035 > 1e-05");
  tx_plot_mark(&pl, p, "banded.avx512", 64, 0, "not usable here"); /* never ran: not drawn */
  char *svg = svg_of(&pl);
  label ls[32];
  size_t n = labels(svg, ls, 32);
  check_labels_apart(svg, ls, n);
  cr_assert_str_eq(label_of(ls, n, "stop", "naive.scalar")->text, "dropped: 4.0x slower");
  cr_assert_str_eq(label_of(ls, n, "stop", "tiled.scalar")->text, "failed at n=1024");
  cr_assert_str_eq(label_of(ls, n, "stop", "banded.avx2")->text, "did not run at n=1024");
  cr_assert_str_eq(label_of(ls, n, "stop", "bad.scalar")->text, "failed at n=256");
  cr_assert_null(label_of(ls, n, "stop", "tiled.avx512"));
  cr_assert_null(label_of(ls, n, "end", "banded.avx512"));
  cr_assert(strstr(svg, ">tiled.scalar, n=1024: one call would take 12.9 s</text>"));
  cr_assert(strstr(svg, ">banded.avx2, n=1024..4096: not applicable: n &gt; 512</text>"));
  cr_assert(strstr(svg, ">bad.scalar, n=256: max error 0.035 &gt; 1e-05</text>"));
  cr_assert(strstr(svg, "<title>tiled.scalar failed at n=1024: one call would take 12.9 s<"));
  free(svg);
  tx_plot_free(&pl);
}
