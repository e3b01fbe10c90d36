/* SPDX-License-Identifier: MIT */
/* What the banded kernels cost, for the dispatcher's fallback estimate
 * (txattn_kernel_desc.cost_pairs): for the vector kernels the decisions of banded_algo.h replayed on
 * the visible ranges alone; banded.scalar computes exactly the visible pairs. Both add their
 * per-row work (banded.h). */
#include <math.h>

#include "banded.h"
#include "visible_pieces.h"

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

/* Rows [i, i1) one by one: row blocks padded past each row's last key, plus row_cost a row. */
static double single_rows(const txattn_problem *p, int64_t i, int64_t i1, int row_kb,
                          double row_cost) {
  double pairs = 0.0;
  for (; i < i1; i++) {
    int64_t lo, hi;
    txattn_visible_range(p, i, &lo, &hi);
    if (lo < hi) pairs += (double)row_pairs(hi - lo, row_kb);
    pairs += row_cost;
  }
  return pairs;
}

/* Where the loop stands at row i, in the piece [i, end) of rows (visible_pieces.h) whose visible
   range is `width` keys at i and grows by `slope` (-1, 0 or 1) a row: the rows before which every
   group from i on is taken as a group, its count growing by the same amount every `period`
   groups; i itself (none) when that is not known. With a constant width a group's shape repeats
   with its panels' alignment. A growing range (start fixed, end moving) takes every group as a
   group once a row sees MR - 1 keys or more (union width + MR - 1 <= twice the shortest) and rounds
   its panels to blocks once it sees np x w (n_p >= np): from then on the count grows by the same
   panels every period. A shrinking one (end fixed at n_kv) keeps both while its group's shortest row
   sees max(2 MR - 2, np x w) keys or more. */
static int64_t settled_end(int64_t i, int64_t end, int64_t width, int slope, int w, int np) {
  const int64_t panels = (int64_t)np * w;
  if (slope > 0) return width >= (panels > BANDED_MR - 1 ? panels : BANDED_MR - 1) ? end : i;
  if (slope < 0) {
    const int64_t need = (panels > 2 * BANDED_MR - 2 ? panels : 2 * BANDED_MR - 2) + BANDED_MR - 1;
    const int64_t last = i + width - need; /* the last group start whose rows all see enough */
    if (last < i) return i;
    return last + BANDED_MR < end ? last + BANDED_MR : end;
  }
  return end;
}

/* The pairs of one query head (every head does the same: K and V are read per query head) plus
   row_cost a row, counted from row 0 until the call's total (per head times heads) reaches enough:
   a count cut short is still a lower bound. Within a piece of rows whose range ends each stay or
   move with the row (visible_pieces.h) the loop's groups repeat (settled_end): they are summed
   from the first period + 1, so the count costs O(pieces x period) groups whatever n; where a
   piece's rows go one by one (a constant width too narrow for groups), all of them are alike. */
static double vector_head(const txattn_problem *p, int w, int np, int row_kb, double row_cost,
                          double enough) {
  const double heads = (double)p->batch * (double)p->heads_q;
  const int64_t period = (int64_t)w * np / visible_gcd(BANDED_MR, (int64_t)w * np);
  int64_t starts[VISIBLE_PIECES_MAX];
  const int pieces = visible_pieces(p, starts);
  double per_head = 0.0;
  int piece = 0;
  for (int64_t i = 0; i < p->n_q && per_head * heads < enough;) {
    while (piece + 1 < pieces && starts[piece + 1] <= i) piece++;
    const int64_t end = piece + 1 < pieces ? starts[piece + 1] : p->n_q;
    int64_t lo, hi, lo1, hi1;
    txattn_visible_range(p, i, &lo, &hi);
    txattn_visible_range(p, i + 1 < end ? i + 1 : i, &lo1, &hi1);
    const int slope = (int)((hi1 - lo1) - (hi - lo));
    const int64_t g = i + BANDED_MR <= p->n_q ? group_pairs(p, i, w, np) : -1;
    if (g >= 0) {
      const int64_t stop = lo < hi ? settled_end(i, end, hi - lo, slope, w, np) : i;
      const int64_t n_groups = (stop - i) / BANDED_MR;
      if (n_groups > period) { /* group q period + k counts f(k) + q (f(period) - f(0)) */
        const int64_t whole_periods = n_groups / period, rest = n_groups % period;
        double first = 0.0, head = 0.0;
        for (int64_t k = 0; k < period; k++) {
          const double f = (double)group_pairs(p, i + k * BANDED_MR, w, np);
          first += f;
          head += k < rest ? f : 0.0;
        }
        const double rise = (double)group_pairs(p, i + period * BANDED_MR, w, np) - (double)g;
        const double q = (double)whole_periods;
        per_head += q * first + rise * (double)period * q * (q - 1) / 2 + head +
                    (double)rest * q * rise + (double)(n_groups * BANDED_MR) * row_cost;
        i += n_groups * BANDED_MR;
        continue;
      }
      per_head += (double)g + BANDED_MR * row_cost;
      i += BANDED_MR;
      continue;
    }
    if (slope == 0 && i + BANDED_MR <= end) { /* every group left in the piece goes row by row */
      const int64_t rows = end - BANDED_MR + 1 - i;
      per_head += (double)rows * single_rows(p, i, i + 1, row_kb, row_cost);
      i += rows;
      continue;
    }
    per_head += single_rows(p, i, i + 1, row_kb, row_cost);
    i++;
  }
  return per_head * heads;
}

double banded_pairs_computed(const txattn_problem *p, int w, int np, int row_kb) {
  return vector_head(p, w, np, row_kb, 0.0, INFINITY);
}

/* The sink keys' pairs, at most K a row beside the mask's range (txattn_visible_ranges). */
static double sink_pairs(const txattn_problem *p) {
  return (double)txattn_sink_keys_of(p) * (double)p->n_q * (double)p->batch * (double)p->heads_q;
}

double banded_vector_cost_pairs(const txattn_problem *p, int w, int np, int row_kb, double enough) {
  return vector_head(p, w, np, row_kb, BANDED_ROW_COST_PAIRS, enough) + sink_pairs(p);
}

/* The visible pairs of the rows plus the scalar kernel's per-row cost: a piece's ranges
   (visible_pieces.h) have widths in arithmetic progression, so each piece sums in closed form. */
double banded_scalar_cost_pairs(const txattn_problem *p, double enough) {
  (void)enough; /* O(pieces) anyway */
  int64_t starts[VISIBLE_PIECES_MAX];
  const int pieces = visible_pieces(p, starts);
  double per_head = (double)p->n_q * BANDED_SCALAR_ROW_COST_PAIRS;
  for (int k = 0; k < pieces; k++) {
    const int64_t a = starts[k], b = k + 1 < pieces ? starts[k + 1] : p->n_q;
    int64_t lo, hi, lo_b, hi_b;
    txattn_visible_range(p, a, &lo, &hi);
    txattn_visible_range(p, b - 1, &lo_b, &hi_b);
    per_head +=
        (double)(b - a) * (double)((hi - lo) + (hi_b - lo_b)) / 2; /* first + last, halved */
  }
  return per_head * (double)p->batch * (double)p->heads_q + sink_pairs(p);
}
