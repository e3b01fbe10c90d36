/* Geometry of a tiled call: block counts, packed sizes, scratch layout, key span and default block
 * sizes. Compiled without ISA flags; shared with plugins that drive the tiled algorithm themselves.
 */
#include <math.h>
#include <string.h>

#include "tiled_internal.h"
#include "visible_pieces.h"

#define TILED_ALIGN 64

static int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
static int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}
static size_t align_up(size_t n) {
  return (n + TILED_ALIGN - 1) / TILED_ALIGN * TILED_ALIGN;
}

/* Sizes are kept below 2^56 bytes so that no later product of them overflows. */
static int fits(int64_t n) {
  return n >= 0 && n < (INT64_C(1) << 56);
}

int tiled_geom_init(tiled_geom *g, const txattn_problem *p, const txattn_tensors *t,
                    const tiled_ops *ops, int64_t br, int64_t bc) {
  memset(g, 0, sizeof *g);
  g->p = p;
  g->t = t;
  g->group = p->heads_q / p->heads_kv;
  g->rows = p->n_q * g->group;
  g->br = round_up(br < ops->mr ? ops->mr : br, ops->mr);
  g->bc = round_up(bc < ops->kw ? ops->kw : bc, ops->kw);
  g->n_qblocks = ceil_div(g->rows, g->br);
  g->n_kblocks = ceil_div(p->n_kv, g->bc);
  g->dqk = p->d_qk;
  g->dv = p->d_v;
  g->dvp = round_up(p->d_v, ops->w);
  g->dqkp = round_up(p->d_qk, ops->w);
  g->direct = g->rows <= TILED_DIRECT_ROWS;
  g->scale2 = (float)(fabs((double)p->scale) * 1.4426950408889634); /* log2(e) */
  g->qsign = p->scale < 0 ? -1.0f : 1.0f;
  if (!fits(g->rows) || !fits(g->dqk + g->dvp) || g->bc > (INT64_C(1) << 24)) return 0;
  g->kv_block = g->bc * (g->dqk + g->dvp);
  if (!fits(g->kv_block) || (g->kv_block > 0 && g->n_kblocks > (INT64_C(1) << 54) / g->kv_block))
    return 0;
  return fits(g->br * (g->dqk + g->dvp) * 4) && fits(g->kv_block * 4);
}

/* The direct path's scratch (tiled_scratch says what each array holds). */
static size_t direct_scratch_bytes(const tiled_geom *g) {
  const size_t f = sizeof(float), r = TILED_DIRECT_ROWS, c = TILED_DIRECT_CHUNK;
  return align_up(r * (size_t)g->dqkp * f) + align_up(r * (size_t)g->dvp * f) +
         3 * align_up(r * f) + align_up(r * c * f) + align_up(2 * c * (size_t)g->dqkp * f) +
         align_up(2 * c * (size_t)g->dvp * f) + 2 * align_up(r * sizeof(int64_t));
}

size_t tiled_scratch_bytes(const tiled_geom *g, const tiled_ops *ops, int streaming) {
  const size_t f = sizeof(float), br = (size_t)g->br;
  if (g->direct) return direct_scratch_bytes(g);
  size_t n = align_up(br * (size_t)g->dqk * f) + align_up(br * (size_t)g->dvp * f);
  n += 3 * align_up(br * f) + align_up(br * (size_t)g->bc * f);
  n += align_up(br / (size_t)ops->mr * sizeof(tiled_span));
  n += 2 * align_up(br * sizeof(int64_t));
  if (streaming) n += align_up((size_t)g->kv_block * f);
  return n;
}

static void *take(char **cur, size_t bytes) {
  void *p = *cur;
  *cur += align_up(bytes);
  return p;
}

static void direct_scratch_carve(const tiled_geom *g, char *cur, tiled_scratch *s) {
  const size_t f = sizeof(float), r = TILED_DIRECT_ROWS, c = TILED_DIRECT_CHUNK;
  s->qp = take(&cur, r * (size_t)g->dqkp * f);
  s->acc = take(&cur, r * (size_t)g->dvp * f);
  s->m = take(&cur, r * f);
  s->l = take(&cur, r * f);
  s->alpha = take(&cur, r * f);
  s->s = take(&cur, r * c * f);
  s->kc = take(&cur, 2 * c * (size_t)g->dqkp * f);
  s->vc = take(&cur, 2 * c * (size_t)g->dvp * f);
  s->lo = take(&cur, r * sizeof(int64_t));
  s->hi = take(&cur, r * sizeof(int64_t));
  s->spans = NULL;
  s->kv = NULL;
}

void tiled_scratch_carve(const tiled_geom *g, const tiled_ops *ops, int streaming, void *mem,
                         tiled_scratch *s) {
  const size_t f = sizeof(float), br = (size_t)g->br;
  char *cur = mem;
  if (g->direct) {
    direct_scratch_carve(g, cur, s);
    return;
  }
  s->kc = s->vc = NULL;
  s->qp = take(&cur, br * (size_t)g->dqk * f);
  s->acc = take(&cur, br * (size_t)g->dvp * f);
  s->m = take(&cur, br * f);
  s->l = take(&cur, br * f);
  s->alpha = take(&cur, br * f);
  s->s = take(&cur, br * (size_t)g->bc * f);
  s->spans = take(&cur, br / (size_t)ops->mr * sizeof(tiled_span));
  s->lo = take(&cur, br * sizeof(int64_t));
  s->hi = take(&cur, br * sizeof(int64_t));
  s->kv = streaming ? take(&cur, (size_t)g->kv_block * f) : NULL;
}

/* Rounded up to 64 bytes, so that what follows it in a workspace stays aligned. */
size_t tiled_packed_head_bytes(const tiled_geom *g) {
  return align_up((size_t)g->n_kblocks * (size_t)g->kv_block * sizeof(float));
}

/* Visible ranges only move forward with the query position (txattn_visible_range), so the keys any
   row sees run from the first non-empty row's start to the last row's end. O(log n_q). */
void tiled_key_span(const tiled_geom *g, int64_t *kb0, int64_t *kb1) {
  const int64_t first = visible_first_row(g->p);
  int64_t lo, hi, a, last;
  if (first == g->p->n_q) {
    *kb0 = *kb1 = 0;
    return;
  }
  txattn_visible_range(g->p, first, &lo, &hi);
  txattn_visible_range(g->p, g->p->n_q - 1, &a, &last);
  *kb0 = lo / g->bc;
  *kb1 = ceil_div(last, g->bc);
}

/* The hull [*lo, *hi) of the visible ranges of positions [i0, i1] (empty: *lo >= *hi). Rows with
   no key come first (txattn_visible_range), so the hull runs from the first non-empty row's start
   to the last row's end. */
static void positions_hull(const txattn_problem *p, int64_t i0, int64_t i1, int64_t *lo,
                           int64_t *hi) {
  int64_t a, b;
  txattn_visible_range(p, i1, &a, hi);
  *lo = *hi;
  for (int64_t i = i0; i <= i1; i++) {
    txattn_visible_range(p, i, &a, &b);
    if (a < b) {
      *lo = a;
      return;
    }
  }
}

/* The panels (of kw keys) the hull of rows [t0, t1) touches, times step x kw. */
static double group_pairs(const tiled_geom *g, int64_t t0, int64_t t1, int64_t step, int64_t kw) {
  int64_t lo, hi;
  positions_hull(g->p, t0 / g->group, (t1 - 1) / g->group, &lo, &hi);
  return lo < hi ? (double)(step * kw) * (double)(ceil_div(hi, kw) - lo / kw) : 0.0;
}

/* Scores are computed per register group of mr stacked rows and K panel of kw keys that some row of
   the group sees (panels lie on a grid of kw keys from key 0, block_k being a multiple of kw), so
   the count depends on neither block size: per group, the panels its rows' hull touches. The direct
   path computes its rows (no padding rows) against the hull of their keys. Every (batch, kv head)
   has the same geometry.
   Within a piece of positions (visible_pieces.h) each end of the hull is constant or moves with the
   position, so P groups later (P x mr stacked rows a multiple of group x kw: positions P x mr /
   group later, a whole number of panels) a group touches the same panels, or as many more as the
   ends moved apart: the groups' counts grow by the same amount every P groups. The groups inside
   one piece are summed from its first P + 1, the others counted one by one: O(pieces x P) groups
   whatever n. */
double tiled_pairs_computed(const tiled_geom *g, const tiled_ops *ops) {
  const int64_t step = g->direct ? g->rows : ops->mr, kw = g->direct ? 1 : ops->kw;
  const int64_t groups = ceil_div(g->rows, step), whole = g->rows / step;
  const int64_t period = g->group * kw / visible_gcd(step, g->group * kw);
  int64_t starts[VISIBLE_PIECES_MAX];
  const int pieces = visible_pieces(g->p, starts);
  double per_head = 0.0;
  int piece = 0;
  for (int64_t b = 0; b < groups;) {
    const int64_t t0 = b * step, first = t0 / g->group;
    while (piece + 1 < pieces && starts[piece + 1] <= first) piece++;
    const int64_t end = piece + 1 < pieces ? starts[piece + 1] : g->p->n_q;
    /* groups b.. whose last position is before the piece's end, whole groups only */
    int64_t inside = end * g->group / step;
    inside = inside < whole ? inside : whole;
    if (inside - b >
        period) { /* group b + q period + k counts f(b + k) + q (f(b + period) - f(b)) */
      const int64_t whole_periods = (inside - b) / period, rest = (inside - b) % period;
      double sum = 0.0, head = 0.0;
      for (int64_t k = 0; k < period; k++) {
        const double f = group_pairs(g, (b + k) * step, (b + k + 1) * step, step, kw);
        sum += f;
        head += k < rest ? f : 0.0;
      }
      const double rise = group_pairs(g, (b + period) * step, (b + period + 1) * step, step, kw) -
                          group_pairs(g, b * step, (b + 1) * step, step, kw);
      const double q = (double)whole_periods;
      per_head +=
          q * sum + rise * (double)period * q * (q - 1) / 2 + head + (double)rest * q * rise;
      b = inside;
      continue;
    }
    per_head += group_pairs(g, t0, t0 + step < g->rows ? t0 + step : g->rows, step, kw);
    b++;
  }
  return per_head * (double)g->p->batch * (double)g->p->heads_kv;
}

double tiled_cost_pairs(const tiled_geom *g, const tiled_ops *ops) {
  const double rows = (double)g->p->batch * (double)g->p->heads_q * (double)g->p->n_q;
  return tiled_pairs_computed(g, ops) + (g->direct ? 0.0 : TILED_ROW_COST_PAIRS * rows);
}

/* The rule, fitted to measurements of tiled.avx2 on Zen 2 (32 KiB L1d, 512 KiB L2, 8 MiB L3 share;
 * no mask; the tuner refines it per machine):
 *  - block_k: the largest packed K and V block (bc * (d_qk + d_v) floats) that fits in L2, at most
 *    512 keys. Large blocks amortise each row's per-block softmax work and each accumulator tile's
 *    load and store: at n = 4096, d = 64 ran at 80.7 / 83.3 / 85.2 GFLOP/s with 128 / 256 / 512
 *    keys (1024: 82.9), d = 128 at 88.6 / 90.6 / 90.7, and d = 256 at 90.7 with 128 keys against
 *    94.7 with 256. An earlier rule took half of L2 (256 keys at d = 128); two profiles found 512
 *    faster at every d = 128 class (geometric mean over about 130 points 1.010-1.017), and 15
 *    interleaved runs (h 2, n 1024 and 4096, no mask and causal) gave (42, 512), this rule's
 *    blocks, 0.971-0.990 of the time of (60, 256); block_q from 42 to 84 rows at 512 keys within
 *    1.6%.
 *  - block_q: the query block's scores, queries and accumulators (br * (bc + d_qk + d_v) floats)
 *    take a quarter of L2 beside the K/V block (n = 4096, d = 128: 90.6 / 91.7 / 91.4 / 87.9
 *    GFLOP/s with 30 / 60 / 90 / 120 rows; d = 64 flat from 30 to 180 rows), or half of L2 when the
 *    packed K/V of a head exceeds half the L3 share: each query block streams it from memory
 *    again, so more rows per block pay off (n = 16384, d = 128: 75.7 with 60 rows, 83.6 with 126;
 *    d = 64: 72.8 with 48 rows, 76.6 with 102).
 * Neither exceeds what the problem has. Unknown caches count as 512 KiB L2 and 8 MiB L3. */
void tiled_default_blocks(const txattn_problem *p, const txattn_machine *m, int mr, int kw,
                          int64_t *br, int64_t *bc) {
  const int64_t l2 = m && m->l2_bytes > 0 ? m->l2_bytes : 512 * 1024;
  const int64_t l3 = m && m->l3_bytes > 0 ? m->l3_bytes : 8 * 1024 * 1024;
  const int64_t width = (p->d_qk + p->d_v) * (int64_t)sizeof(float);
  int64_t k = l2 / width, q;
  if (k > 512) k = 512;
  k = k < kw ? kw : k / kw * kw;
  q = (p->n_kv * width > l3 / 2 ? l2 / 2 : l2 / 4) / ((k + p->d_qk + p->d_v) * 4);
  q = q > 256 ? 256 : q < mr ? mr : q / mr * mr;
  /* never more than the problem has: small problems keep a small workspace */
  int64_t blocks[2] = {q, k};
  tiled_fit_blocks(p, mr, kw, blocks);
  *br = blocks[0];
  *bc = blocks[1];
}

/* A block at least as long as what it blocks (the stacked rows, the keys) is one block of all of
   them, whatever its length beyond: the same call as the block rounded up to the register block
   (mr rows, kw keys), bit for bit, only with a larger workspace. Shorter blocks stay: another
   length cuts the rows or keys elsewhere. */
void tiled_fit_blocks(const txattn_problem *p, int mr, int kw, int64_t *blocks) {
  const int64_t rows = round_up(p->n_q * (p->heads_q / p->heads_kv), mr);
  const int64_t keys = round_up(p->n_kv, kw);
  if (blocks[0] > rows) blocks[0] = rows;
  if (blocks[1] > keys) blocks[1] = keys;
}
