/* SPDX-License-Identifier: MIT */
/* Each kernel's colour and marker in a txtune plot: the same in every panel and in every plot. */
#include "plot_style.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
