/* SPDX-License-Identifier: MIT */
/* The panels of a txtune plot: each a set of kernels' times over a shared, sorted list of n; and
   the log-log slope of time against n. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "plot.h"

tx_plot_panel *tx_plot_add_panel(tx_plot *pl, const char *title) {
  if (pl->n == pl->cap) {
    size_t cap = pl->cap ? 2 * pl->cap : 8;
    tx_plot_panel *p = realloc(pl->panels, cap * sizeof *p);
    if (!p) return NULL;
    pl->panels = p;
    pl->cap = cap;
  }
  tx_plot_panel *p = &pl->panels[pl->n++];
  memset(p, 0, sizeof *p);
  snprintf(p->title, sizeof p->title, "%s", title);
  return p;
}

/* The index of n in p->x, inserted in order if new; SIZE_MAX when the panel is full. */
static size_t x_index(tx_plot_panel *p, int64_t n) {
  size_t i = 0;
  while (i < p->n_x && p->x[i] < n) i++;
  if (i < p->n_x && p->x[i] == n) return i;
  if (p->n_x == TX_PLOT_MAX_X) return SIZE_MAX;
  size_t tail = p->n_x - i;
  memmove(&p->x[i + 1], &p->x[i], tail * sizeof p->x[0]);
  for (size_t k = 0; k < p->n_s; k++) {
    memmove(&p->s[k].t[i + 1], &p->s[k].t[i], tail * sizeof(double));
    memmove(&p->s[k].failed[i + 1], &p->s[k].failed[i], tail);
    memmove(&p->s[k].why[i + 1], &p->s[k].why[i], tail * sizeof(char *));
    p->s[k].t[i] = 0;
    p->s[k].failed[i] = 0;
    p->s[k].why[i] = NULL;
  }
  p->x[i] = n;
  p->n_x++;
  return i;
}

static tx_plot_series *series_of(tx_plot_panel *p, const char *kernel) {
  for (size_t k = 0; k < p->n_s; k++)
    if (strcmp(p->s[k].kernel, kernel) == 0) return &p->s[k];
  if (p->n_s == TX_PLOT_MAX_SERIES) return NULL;
  tx_plot_series *s = &p->s[p->n_s++];
  memset(s, 0, sizeof *s);
  snprintf(s->kernel, sizeof s->kernel, "%s", kernel);
  return s;
}

int tx_plot_set(tx_plot *pl, tx_plot_panel *p, const char *kernel, int64_t n, double t,
                int inexact) {
  tx_plot_series *s = series_of(p, kernel);
  size_t i = s ? x_index(p, n) : SIZE_MAX;
  if (i == SIZE_MAX) {
    pl->dropped++;
    return -1;
  }
  if (s->t[i] <= 0 || t < s->t[i]) s->t[i] = t;
  s->inexact |= inexact;
  return 0;
}

int tx_plot_mark(tx_plot *pl, tx_plot_panel *p, const char *kernel, int64_t n, int failed,
                 const char *why) {
  tx_plot_series *s = series_of(p, kernel);
  size_t i = s ? x_index(p, n) : SIZE_MAX;
  if (i == SIZE_MAX) {
    pl->dropped++;
    return -1;
  }
  s->failed[i] |= failed != 0;
  if (why && *why && !s->why[i] && !(s->why[i] = strdup(why))) return -1;
  return 0;
}

int tx_plot_series_drawn(const tx_plot_series *s) {
  for (size_t i = 0; i < TX_PLOT_MAX_X; i++)
    if (s->t[i] > 0 || s->failed[i]) return 1;
  return 0;
}

int tx_plot_panel_drawn(const tx_plot_panel *p) {
  for (size_t k = 0; k < p->n_s; k++)
    if (tx_plot_series_drawn(&p->s[k])) return 1;
  return 0;
}

size_t tx_plot_count_drawable(const tx_plot *pl) {
  size_t n = 0;
  for (size_t i = 0; i < pl->n; i++) n += (size_t)tx_plot_panel_drawn(&pl->panels[i]);
  return n;
}

void tx_plot_free(tx_plot *pl) {
  for (size_t i = 0; i < pl->n; i++)
    for (size_t k = 0; k < pl->panels[i].n_s; k++)
      for (size_t j = 0; j < TX_PLOT_MAX_X; j++) free(pl->panels[i].s[k].why[j]);
  free(pl->panels);
  memset(pl, 0, sizeof *pl);
}

int tx_plot_best_set(tx_plot *pl, tx_plot_best *b, const char *kernel, int64_t n, double t) {
  size_t i = 0;
  while (i < b->n && b->x[i] < n) i++;
  if (i < b->n && b->x[i] == n) {
    if (t >= b->t[i]) return 0;
  } else if (b->n == TX_PLOT_MAX_X) {
    pl->dropped++;
    return -1;
  } else {
    size_t tail = b->n - i;
    memmove(&b->x[i + 1], &b->x[i], tail * sizeof b->x[0]);
    memmove(&b->t[i + 1], &b->t[i], tail * sizeof b->t[0]);
    memmove(&b->kernel[i + 1], &b->kernel[i], tail * sizeof b->kernel[0]);
    b->x[i] = n;
    b->n++;
  }
  b->t[i] = t;
  snprintf(b->kernel[i], sizeof b->kernel[i], "%s", kernel);
  return 0;
}

int tx_plot_has_best(const tx_plot *pl) {
  for (size_t k = 0; k < TX_PLOT_KINDS; k++)
    if (pl->best[k].cls[0] || pl->best[k].decode_only) return 1;
  return 0;
}

double tx_loglog_slope(const double *n, const double *t, size_t count) {
  double sx = 0, sy = 0, m = 0;
  for (size_t i = 0; i < count; i++)
    if (n[i] > 0 && t[i] > 0) {
      sx += log(n[i]);
      sy += log(t[i]);
      m += 1;
    }
  if (m < 3) return NAN;
  double mx = sx / m, my = sy / m, sxx = 0, sxy = 0;
  for (size_t i = 0; i < count; i++)
    if (n[i] > 0 && t[i] > 0) {
      double dx = log(n[i]) - mx;
      sxx += dx * dx;
      sxy += dx * (log(t[i]) - my);
    }
  return sxx > 0 ? sxy / sxx : NAN;
}
