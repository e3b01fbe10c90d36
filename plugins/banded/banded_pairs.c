/* What the banded kernels cost, for the dispatcher's fallback estimate
 * (txattn_kernel_desc.cost_pairs): for the vector kernels the decisions of banded_algo.h replayed on
 * the visible ranges alone; banded.scalar computes exactly the visible pairs. Both add their
 * per-row work (banded.h). */
#include <math.h>

#include "banded.h"

/* Pairs of one row alone over n keys (one_row in banded_algo.h): whole blocks of row_kb keys, the
   last one padded when at least a quarter of a block is left, else the leftover keys one by one. */
static int64_t row_pairs(int64_t n, int row_kb) {
  const int64_t full = n / row_kb, rest = n % row_kb;
  return rest >= row_kb / 4 && rest > 0 ? (full + 1) * row_kb : n;
}

/* Pairs of the group of BANDED_MR rows from row i (group_rows), or -1 if its rows go one by one:
   whole blocks of np panels over the union's panels (the last block overlapping the one before),
   or fewer panels than a block in one narrower block. */
static int64_t group_pairs(const txattn_problem *p, int64_t i, int w, int np) {
  int64_t base = INT64_MAX, end = 0, shortest = INT64_MAX;
  for (int m = 0; m < BANDED_MR; m++) {
    int64_t lo, hi;
    txattn_visible_range(p, i + m, &lo, &hi);
    if (lo >= hi) return -1;
    base = lo < base ? lo : base;
    end = hi > end ? hi : end;
    shortest = hi - lo < shortest ? hi - lo : shortest;
  }
  if (end - base > 2 * shortest) return -1;
  const int64_t n_p = (end + w - 1) / w - base / w;
  const int64_t panels = n_p >= np ? (n_p + np - 1) / np * np : n_p;
  return BANDED_MR * panels * w;
}

/* The pairs of one query head (every head does the same: K and V are read per query head) plus
   row_cost a row, counted from row 0 until the call's total (per head times heads) reaches enough:
   a count cut short is still a lower bound. */
static double vector_head(const txattn_problem *p, int w, int np, int row_kb, double row_cost,
                          double enough) {
  const double heads = (double)p->batch * (double)p->heads_q;
  double per_head = 0.0;
  for (int64_t i = 0; i < p->n_q && per_head * heads < enough;) {
    const int64_t g = i + BANDED_MR <= p->n_q ? group_pairs(p, i, w, np) : -1;
    if (g >= 0) {
      per_head += (double)g + BANDED_MR * row_cost;
      i += BANDED_MR;
      continue;
    }
    int64_t lo, hi;
    txattn_visible_range(p, i, &lo, &hi);
    if (lo < hi) per_head += (double)row_pairs(hi - lo, row_kb);
    per_head += row_cost;
    i++;
  }
  return per_head * heads;
}

double banded_pairs_computed(const txattn_problem *p, int w, int np, int row_kb) {
  return vector_head(p, w, np, row_kb, 0.0, INFINITY);
}

double banded_vector_cost_pairs(const txattn_problem *p, int w, int np, int row_kb, double enough) {
  return vector_head(p, w, np, row_kb, BANDED_ROW_COST_PAIRS, enough);
}

double banded_scalar_cost_pairs(const txattn_problem *p, double enough) {
  const double heads = (double)p->batch * (double)p->heads_q;
  double per_head = 0.0;
  for (int64_t i = 0; i < p->n_q && per_head * heads < enough; i++) {
    int64_t lo, hi;
    txattn_visible_range(p, i, &lo, &hi);
    per_head += (double)(hi - lo) + BANDED_SCALAR_ROW_COST_PAIRS;
  }
  return per_head * heads;
}
