/* SPDX-License-Identifier: MIT */
/* The query rows of a problem cut where the ends of their visible key ranges change slope
 * (txattn_visible_range): within a piece, each end is constant or grows by one key a row, and
 * either every row sees a key or none does. Counting what a kernel computes row group by row group
 * is then periodic within a piece (the kernels' cost_pairs, plugins/tiled and plugins/banded), so
 * the counts need O(pieces x period) groups, not O(n_q). Header-only, for the plugins. */
#ifndef TXATTN_VISIBLE_PIECES_H
#define TXATTN_VISIBLE_PIECES_H

#include <stdint.h>

#include "txattn/plugin.h"

#define VISIBLE_PIECES_MAX 4

/* The greatest common divisor of a > 0 and b > 0: the periods of the groups' counts. */
static inline int64_t visible_gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The first row that sees a key (n_q if none): rows with no key come first. */
static inline int64_t visible_first_row(const txattn_problem *p) {
  int64_t a = 0, b = p->n_q;
  while (a < b) {
    int64_t m = a + (b - a) / 2, lo, hi;
    txattn_visible_range(p, m, &lo, &hi);
    if (lo < hi)
      b = m;
    else
      a = m + 1;
  }
  return a;
}

/* Fills starts[] with the first row of each piece (starts[0] = 0, increasing) and returns the
   number of pieces; piece k ends where piece k + 1 starts, the last at n_q. p must be resolved. The
   cuts: the first row that sees a key, and for a window the rows from which the range's start
   moves with the row (pos = left) and its end stops at n_kv (pos = n_kv - 1 - right), pos being
   i + n_kv - n_q. A causal range's end never stops before the last row. */
static inline int visible_pieces(const txattn_problem *p, int64_t starts[VISIBLE_PIECES_MAX]) {
  const int64_t off = p->n_kv - p->n_q, span = p->n_q + p->n_kv; /* |off| < span */
  int64_t cut[VISIBLE_PIECES_MAX];
  int n = 0, m = 0;
  cut[n++] = 0;
  cut[n++] = visible_first_row(p);
  if (p->mask == TXATTN_MASK_WINDOW) { /* a reach of span or more moves nothing */
    if (p->window_left != TXATTN_UNBOUNDED && p->window_left < span)
      cut[n++] = p->window_left - off;
    if (p->window_right != TXATTN_UNBOUNDED && p->window_right < span)
      cut[n++] = p->n_kv - 1 - p->window_right - off;
  }
  for (int i = 1; i < n; i++) /* insertion sort of at most four */
    for (int j = i; j > 0 && cut[j - 1] > cut[j]; j--) {
      int64_t t = cut[j];
      cut[j] = cut[j - 1];
      cut[j - 1] = t;
    }
  for (int i = 0; i < n; i++) {
    int64_t r = cut[i] < 0 ? 0 : cut[i];
    if (r < p->n_q && (m == 0 || r != starts[m - 1])) starts[m++] = r;
  }
  if (m == 0) starts[m++] = 0; /* n_q == 0: one empty piece */
  return m;
}

#endif
