/* SPDX-License-Identifier: MIT */
/* Geometry of a tiled call: block counts, packed sizes, scratch layout, key span and default block
 * sizes. Compiled without ISA flags; shared with plugins that drive the tiled algorithm themselves.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "mask_value.h"
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

/* Sizes are kept below 2^56 bytes so that no later product or sum of a few of them overflows. */
static int fits(int64_t n) {
  return n >= 0 && n < (INT64_C(1) << 56);
}

/* a * b * c when it fits (fits above), else -1: every size of the geometry is formed here or from
   values so checked. */
static int64_t checked3(int64_t a, int64_t b, int64_t c) {
  int64_t n;
  if (__builtin_mul_overflow(a, b, &n) || __builtin_mul_overflow(n, c, &n) || !fits(n)) return -1;
  return n;
}

/* Returns 0 (the kernel declines the problem) when any size of the geometry (rows, packed K/V of a
   head, a block's scratch) would not fit in 2^56 bytes; all are computed with overflow checks. */
int tiled_geom_init(tiled_geom *g, const txattn_problem *p, const txattn_tensors *t,
                    const tiled_ops *ops, int64_t br, int64_t bc) {
  memset(g, 0, sizeof *g);
  g->p = p;
  g->t = t;
  g->ops = ops;
  g->group = p->heads_q / p->heads_kv;
  if (checked3(p->n_q, g->group, 1) < 0 || !fits(br) || !fits(bc) || !fits(p->n_kv) ||
      !fits(p->d_qk) || !fits(p->d_v))
    return 0;
  g->rows = p->n_q * g->group;
  g->br = round_up(br < ops->mr ? ops->mr : br, ops->mr);
  g->bc = round_up(bc < ops->kw ? ops->kw : bc, ops->kw);
  g->n_qblocks = ceil_div(g->rows, g->br);
  g->n_kblocks = ceil_div(p->n_kv, g->bc);
  g->dqk = p->d_qk;
  g->dv = p->d_v;
  g->dvp = round_up(p->d_v, ops->w);
  g->dqkp = round_up(p->d_qk, ops->w);
  g->scale = p->scale;
  g->softcap = txattn_softcap_of(p);
  g->inv_softcap = g->softcap > 0.0f ? 1.0f / g->softcap : 0.0f;
  g->slopes = txattn_alibi_slopes_of(p, t);
  g->sinks = txattn_sinks_of(p, t);
  g->sink_keys = txattn_sink_keys_of(p);
  g->mask =
      TXATTN__HAS_FIELD(p, txattn_problem, mask_type) ? p->mask_tensor : TXATTN_MASK_TENSOR_NONE;
  g->mask_key = g->mask != TXATTN_MASK_TENSOR_NONE && t ? t->mask_layout.key : 0;
  g->page_size = txattn_page_size_of(p);
  g->modified = g->softcap > 0.0f ||
                (p->struct_size >= offsetof(txattn_problem, alibi) + sizeof p->alibi && p->alibi) ||
                g->mask != TXATTN_MASK_TENSOR_NONE;
  /* the direct (decode) path takes every modifier and mask tensors */
  g->direct = g->rows <= TILED_DIRECT_ROWS;
  g->scale2 = (float)((g->modified ? 1.0 : fabs((double)p->scale)) * 1.4426950408889634);
  g->qsign = p->scale < 0 && !g->modified ? -1.0f : 1.0f;
  g->lse_scale = g->modified ? 1.0 : fabs((double)p->scale);
  g->lse = txattn_lse_out(p, t);
  if (g->lse) g->lse_layout = t->lse_layout;
  if (!fits(g->dqkp + g->dvp) || g->bc > (INT64_C(1) << 24)) return 0;
  g->kv_block = checked3(g->bc, g->dqk + g->dvp, 1);
  return g->kv_block >= 0 && checked3(g->n_kblocks, g->kv_block, 4) >= 0 &&
         checked3(g->br, g->dqkp + g->dvp + g->bc, 4) >= 0 && checked3(g->kv_block, 4, 1) >= 0;
}

/* The direct path's scratch (tiled_scratch says what each array holds). */
static size_t direct_scratch_bytes(const tiled_geom *g) {
  const size_t f = sizeof(float), r = TILED_DIRECT_ROWS, c = TILED_DIRECT_CHUNK;
  return align_up(r * (size_t)g->dqkp * f) + 3 * align_up(r * (size_t)g->dvp * f) +
         3 * align_up(r * f) + align_up(r * sizeof(double)) +
         align_up(r * TILED_DIRECT_CHUNK_MAX * f) + align_up(2 * c * (size_t)g->dqkp * f) +
         align_up(2 * c * (size_t)g->dvp * f) + 5 * align_up(r * sizeof(int64_t)) +
         align_up(r * f) + align_up(r * sizeof(void *));
}

size_t tiled_scratch_bytes(const tiled_geom *g, const tiled_ops *ops, int streaming) {
  const size_t f = sizeof(float), br = (size_t)g->br;
  if (g->direct) return direct_scratch_bytes(g);
  size_t n = align_up(br * (size_t)g->dqk * f) + 2 * align_up(br * (size_t)g->dvp * f);
  n += 2 * align_up(br * f) + align_up(br * sizeof(double)) + align_up(br * (size_t)g->bc * f);
  n += align_up(br / (size_t)ops->mr * sizeof(tiled_span));
  n += 5 * align_up(br * sizeof(int64_t)) + align_up(br * f) + align_up(br * sizeof(void *));
  if (g->mask && g->br * g->n_kblocks <= TILED_MASK_SUMMARY)
    n += align_up(br * (size_t)g->n_kblocks);
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
  s->acc_c = take(&cur, r * (size_t)g->dvp * f);
  s->pv = take(&cur, r * (size_t)g->dvp * f);
  s->pv_alpha = take(&cur, r * f);
  s->m = take(&cur, r * f);
  s->l = take(&cur, r * sizeof(double));
  s->alpha = take(&cur, r * f);
  s->s = take(&cur, r * TILED_DIRECT_CHUNK_MAX * f);
  s->kc = take(&cur, 2 * c * (size_t)g->dqkp * f);
  s->vc = take(&cur, 2 * c * (size_t)g->dvp * f);
  s->lo = take(&cur, r * sizeof(int64_t));
  s->hi = take(&cur, r * sizeof(int64_t));
  s->spans = NULL;
  s->kv = NULL;
  s->pos = take(&cur, r * sizeof(int64_t));
  s->slope = take(&cur, r * f);
  s->lo2 = take(&cur, r * sizeof(int64_t));
  s->hi2 = take(&cur, r * sizeof(int64_t));
  s->mrow = take(&cur, r * sizeof(void *));
  s->msum = NULL;
}

void tiled_scratch_carve(const tiled_geom *g, const tiled_ops *ops, int streaming, void *mem,
                         tiled_scratch *s) {
  const size_t f = sizeof(float), br = (size_t)g->br;
  char *cur = mem;
  if (g->direct) {
    direct_scratch_carve(g, cur, s);
    return;
  }
  s->kc = s->vc = s->pv = s->pv_alpha = NULL;
  s->qp = take(&cur, br * (size_t)g->dqk * f);
  s->acc = take(&cur, br * (size_t)g->dvp * f);
  s->acc_c = take(&cur, br * (size_t)g->dvp * f);
  s->m = take(&cur, br * f);
  s->l = take(&cur, br * sizeof(double));
  s->alpha = take(&cur, br * f);
  s->s = take(&cur, br * (size_t)g->bc * f);
  s->spans = take(&cur, br / (size_t)ops->mr * sizeof(tiled_span));
  s->lo = take(&cur, br * sizeof(int64_t));
  s->hi = take(&cur, br * sizeof(int64_t));
  s->lo2 = take(&cur, br * sizeof(int64_t));
  s->hi2 = take(&cur, br * sizeof(int64_t));
  s->pos = take(&cur, br * sizeof(int64_t));
  s->slope = take(&cur, br * f);
  s->mrow = take(&cur, br * sizeof(void *));
  s->msum = g->mask && g->br * g->n_kblocks <= TILED_MASK_SUMMARY
                ? take(&cur, br * (size_t)g->n_kblocks)
                : NULL;
  s->kv = streaming ? take(&cur, (size_t)g->kv_block * f) : NULL;
}

/* Rounded up to 64 bytes, so that what follows it in a workspace stays aligned. */
size_t tiled_packed_head_bytes(const tiled_geom *g) {
  return align_up((size_t)g->n_kblocks * (size_t)g->kv_block * sizeof(float));
}

/* The mask's planes: one per batch and query head where its strides are not 0. */
static int64_t mask_planes(const tiled_geom *g, int64_t *vis_b, int64_t *vis_h) {
  const txattn_mask_layout *l = &g->t->mask_layout;
  *vis_h = l->head != 0 ? 1 : 0;
  *vis_b = l->batch != 0 ? (l->head != 0 ? g->p->heads_q : 1) : 0;
  return (l->batch != 0 ? g->p->batch : 1) * (l->head != 0 ? g->p->heads_q : 1);
}

/* Sized for a plane per batch and head whatever the strides: the workspace is sized without them. */
size_t tiled_mask_summary_bytes(const tiled_geom *g) {
  if (!g->mask || g->direct) return 0;
  const int64_t n = checked3(checked3(g->p->batch, g->p->heads_q, 1), g->p->n_q, g->n_kblocks);
  return n < 0 || n > TILED_MASK_SUMMARY ? 0 : align_up((size_t)n);
}

unsigned tiled_mask_scan(const tiled_geom *g, const void *row, int64_t j0, int64_t j1,
                         unsigned want) {
  unsigned seen = 0;
  if (g->mask == TXATTN_MASK_TENSOR_BOOL && g->mask_key == 1)
    return g->ops->bool_scan(row, j0, j1, want);
  for (int64_t j = j0; j < j1 && (seen & want) != want; j++)
    seen |= txm_mask_value(g->p, g->t, row, j) != -INFINITY ? TILED_MASK_SHOWS : TILED_MASK_HIDES;
  return seen;
}

unsigned tiled_mask_bits(const tiled_geom *g, const void *row, int64_t j0, int64_t j1) {
  if (g->mask == TXATTN_MASK_TENSOR_BOOL) return tiled_mask_scan(g, row, j0, j1, TILED_MASK_BOTH);
  return tiled_mask_scan(g, row, j0, j1, TILED_MASK_SHOWS) | TILED_MASK_HIDES;
}

/* Prefetches a boolean row's first lines in [j0, j1) and the first lines of each later page: the
   hardware prefetcher starts a stream only after a few misses in a page, and the summary reads the
   rows' ranges one after another. */
static void prefetch_row(const unsigned char *row, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1 && j < j0 + 512; j += 64) __builtin_prefetch(row + j);
  for (int64_t j = (j0 / 4096 + 1) * 4096; j < j1; j += 4096) {
    __builtin_prefetch(row + j);
    __builtin_prefetch(row + j + 64);
  }
}

void tiled_mask_summarise(tiled_geom *g, unsigned char *mem) {
  const txattn_problem *p = g->p;
  const int64_t nkb = g->n_kblocks, bc = g->bc;
  const int64_t planes = mask_planes(g, &g->vis_b, &g->vis_h);
  const int64_t heads = g->vis_h ? p->heads_q : 1;
  memset(mem, 0, (size_t)(planes * p->n_q * nkb));
  for (int64_t pl = 0; pl < planes; pl++) {
    const int64_t b = pl / heads, h = pl % heads;
    for (int64_t i = 0; i < p->n_q; i++) {
      unsigned char *out = mem + (pl * p->n_q + i) * nkb;
      const void *row = txattn_mask_row(p, g->t, b, h, i);
      int64_t ranges[2][2] = {{0, 0}, {0, 0}};
      txattn_visible_ranges(p, i, &ranges[0][1], &ranges[1][0], &ranges[1][1]);
      if (g->mask == TXATTN_MASK_TENSOR_BOOL && g->mask_key == 1 && i + 1 < p->n_q) {
        int64_t sink, lo, hi;
        txattn_visible_ranges(p, i + 1, &sink, &lo, &hi);
        prefetch_row(txattn_mask_row(p, g->t, b, h, i + 1), lo, hi);
      }
      for (int k = 0; k < 2; k++)
        for (int64_t j = ranges[k][0]; j < ranges[k][1];) {
          const int64_t kb = j / bc,
                        e = (kb + 1) * bc < ranges[k][1] ? (kb + 1) * bc : ranges[k][1];
          out[kb] |= (unsigned char)tiled_mask_bits(g, row, j, e);
          j = e;
        }
    }
  }
  g->vis = mem;
}

/* Visible ranges only move forward with the query position (txattn_visible_range), so the keys any
   row sees run from the first non-empty row's start to the last row's end. O(log n_q). */
void tiled_key_span(const tiled_geom *g, int64_t *kb0, int64_t *kb1) {
  const int64_t first = visible_first_row(g->p);
  int64_t lo, hi, a, last;
  if (first == g->p->n_q && g->sink_keys == 0) {
    *kb0 = *kb1 = 0;
    return;
  }
  if (first == g->p->n_q) {
    *kb0 = 0;
    *kb1 = ceil_div(g->sink_keys, g->bc);
    return;
  }
  txattn_visible_range(g->p, first, &lo, &hi);
  txattn_visible_range(g->p, g->p->n_q - 1, &a, &last);
  *kb0 = lo / g->bc;
  *kb1 = ceil_div(last, g->bc);
  if (g->sink_keys > 0) { /* every row sees keys [0, K) too */
    *kb0 = 0;
    if (ceil_div(g->sink_keys, g->bc) > *kb1) *kb1 = ceil_div(g->sink_keys, g->bc);
  }
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

double tiled_problem_cost_pairs(const txattn_problem *p, const tiled_ops *ops, int64_t br,
                                int64_t bc) {
  tiled_geom g;
  if (tiled_geom_init(&g, p, NULL, ops, br, bc)) return tiled_cost_pairs(&g, ops);
  const double rows = (double)p->batch * (double)p->heads_q * (double)p->n_q;
  return rows * ((double)p->n_kv + TILED_ROW_COST_PAIRS);
}

/* A block size from a rule's estimate v: v rounded down to a multiple of step, then kept within
   [step, hi rounded down to a multiple of step], so the result is a valid value of a tunable
   declared as [step, >= hi] in steps of step whatever v (0, negative, huge) is. */
static int64_t block_within(int64_t v, int64_t step, int64_t hi) {
  int64_t top = hi / step * step;
  if (top < step) top = step;
  v = v / step * step;
  return v < step ? step : v > top ? top : v;
}

/* The rule, fitted on tiled.avx2 with a 512 KiB L2 and an 8 MiB L3 share (no mask; txtune profile
 * refines it per machine): block_k keys of packed K and V (block_k x (d_qk + d_v) floats) fill L2,
 * at most 512 keys; block_q rows of scores, queries and accumulators (block_q x (block_k + d_qk +
 * d_v) floats) take a quarter of L2 beside them, or half when a head's packed K/V exceeds half the
 * L3 share (each query block then streams it from memory, and more rows pay off), at most 256
 * rows. Unknown caches count as 512 KiB L2 and 8 MiB L3. Larger caches than the largest the rule
 * has run on count as those (below). Neither block exceeds what the problem has; each is a
 * multiple of its register block within the declared range (TILED_BLOCK_Q_MAX, TILED_BLOCK_K_MAX)
 * whatever the caches. Figures: docs/measurements.md. */
void tiled_default_blocks(const txattn_problem *p, const txattn_machine *m, int mr, int kw,
                          int64_t *br, int64_t *bc) {
  int64_t l2 = m && m->l2_bytes > 0 ? m->l2_bytes : TILED_RULE_L2_UNKNOWN;
  int64_t l3 = m && m->l3_bytes > 0 ? m->l3_bytes : TILED_RULE_L3_UNKNOWN;
  /* At most the largest measured: 1 MiB L2 and a 16 MiB L3 share; bigger caches get those tiles,
     which also ran best on a 2 MiB L2 (docs/measurements.md). */
  if (l2 > TILED_RULE_L2_MAX) l2 = TILED_RULE_L2_MAX;
  if (l3 > TILED_RULE_L3_MAX) l3 = TILED_RULE_L3_MAX;
  /* floats per key of packed K and V; d_qk, d_v <= INT64_MAX / 4 (the tensors' bytes fit) */
  const int64_t width = p->d_qk + p->d_v;
  const int64_t k = block_within(l2 / 4 / width, kw, TILED_RULE_BLOCK_K);
  /* a head's packed K/V (n_kv x width x 4 bytes) beyond half the L3 share, without overflow */
  const int64_t share = p->n_kv > l3 / 8 / width ? l2 / 2 : l2 / 4;
  const int64_t q = block_within(share / 4 / (k + width), mr, TILED_RULE_BLOCK_Q);
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
