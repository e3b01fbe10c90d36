/* The banded vector kernel, written once over the shared vector layer (plugins/common) and compiled
 * per ISA (banded_<isa>.c with that ISA's flags). Include after:
 *   - vec_<isa>.h and vec_exp2.h: vf, VEC_W lanes, vf_* and vf_exp2;
 *   - vf_storeu(p, x): a vector at any address;
 *   - vf_sum_lanes(a): lane j of the result = the sum of the lanes of a[j], for j < VEC_W;
 *   - vf_lane_index(): lane l holds the float l;
 *   - vf_keep_range(x, i, a, e): x in the lanes where a <= i < e, -inf in the others;
 *   - the register blocks: BANDED_NP (K panels per group score block), BANDED_WSUM_MR x
 *     BANDED_WSUM_CB (rows x vectors of columns of a group's weighted sum), BANDED_ROW_KB x
 *     BANDED_ROW_CB (keys per score block and vectors of columns, one row alone);
 *   - BANDED_HEAD_FN: the name of the head function this ISA exports (banded.h).
 *
 * Rows go BANDED_MR = 4 at a time (a group) whenever the four see a key each and their windows
 * overlap (their union is at most twice the shortest range), else one by one. Why groups: once one
 * row's K and V spill L1, a row-at-a-time kernel is bound by loads from L2; in a group each loaded
 * K or V vector feeds 3 or 4 FMAs (the speed-up: docs/measurements.md).
 *
 * 1. Scores of a group, as in a GEMM: K is transposed once per head into panels of W keys (panel p
 *    holds keys [pW, pW + W), column c at p's c-th vector), packed as the rows reach them into a
 *    ring of panels; a register block of 4 rows x NP panels keeps 4 * NP accumulators (12 on AVX2:
 *    enough independent FMA chains to issue 2 FMAs per cycle, docs/measurements.md) of length
 *    d_qk, fed per column by NP panel loads and 4 broadcasts of q. Scores land as whole vectors of
 *    one row's keys. The group computes the union of its rows' panels; keys a row does not see get
 *    -inf, so a NaN in such a key's K never reaches the row. The last block of a union that is not
 *    a whole number of blocks overlaps the one before (recomputing equal scores) rather than
 *    running a narrower, latency-bound block.
 *    One row alone scores BANDED_ROW_KB keys at a time along d (one accumulator per key, q loaded
 *    once per column vector) and turns them into scores with vf_sum_lanes.
 * 2. Softmax per row: the max, then p = 2^((s - max) log2 e) with vf_exp2. Subtracting before
 *    scaling keeps the exponent's rounding relative to s - max (small for every weight that
 *    matters) rather than to s: folding log2 e into the scores would cost up to 2e-5 relative at
 *    scores of 300 (inputs x 100 with a power-of-two scale), over the tolerance. -inf gives p = +0;
 *    a NaN score gives a NaN p (vf_exp2 keeps it), so a NaN sum and a NaN row.
 * 3. Weighted sum: WSUM_MR rows x WSUM_CB vectors of output columns in registers; per key one load
 *    of each V vector feeds WSUM_MR FMAs. Keys only some rows of the block see (at most 3 at each
 *    end of a window) are added row by row, never with a zero weight: 0 * NaN would carry a NaN
 *    from a V row the output row does not see.
 * Rows with more than BANDED_VEC_CHUNK = 256 keys (causal, no mask, wide windows) sum each chunk of
 * 256 keys in float and the chunks in double (banded_rows.c says why, banded.h why 256); rows of
 * narrower windows are one chunk, and their output never leaves registers before the store.
 *
 * Row strides are arbitrary (0, or less than d, included): every key and value row is addressed on
 * its own and only the element stride (1) is assumed.
 */
#ifndef BANDED_ALGO_H
#define BANDED_ALGO_H

#include <math.h>

#include "banded.h"

#define BW            VEC_W
#define MR            BANDED_MR
#define BANDED_INLINE static inline __attribute__((always_inline))
/* Loops over the registers of a block must unroll completely, or the block's accumulator array
   cannot live in registers: GCC otherwise stores it back on every iteration of the inner loop once
   the loop body passes its size limit for complete unrolling. */
#if defined(__clang__)
#define BANDED_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define BANDED_UNROLL _Pragma("GCC unroll 64")
#else
#define BANDED_UNROLL
#endif

#if BANDED_ROW_KB % BW != 0 || BANDED_ROW_KB > BANDED_PAD / 2 || BW > BANDED_MAX_W ||              \
    BANDED_VEC_CHUNK % BW != 0 || BANDED_WSUM_MR > MR
#error "banded_algo.h: block sizes must tile whole vectors and fit the workspace"
#endif

/* Array bounds for the register blocks. The block functions are always inlined with constant
   shapes, so their loops unroll and these arrays become registers. */
#define MAX2(a, b) ((a) > (b) ? (a) : (b))
enum { MAX_CB = MAX2(BANDED_WSUM_CB, BANDED_ROW_CB) };

static inline int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}
static inline int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
static inline int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* ---- the weighted sum ---- */

/* Keys [ja, jb) of a block of rows: row m's weight of key j is w[m * w_row + j], key j's value row
   v + j * v_row; row m sees keys [lo[m], hi[m]), so every row sees [clo, chi).
   dst[m][c] = mul[m] * the row's sum, for the columns c of the block. */
typedef struct wsum_rows {
  const float *w, *v;
  int64_t w_row, v_row, ja, jb, clo, chi;
  const int64_t *lo, *hi;
  const float *mul;
} wsum_rows;

/* acc[m][x] += w_m[j] * v_j[x * BW + lane], for the rows m < NM whose ok[m] is set (all rows if
   ok is NULL): one load of each V vector for all the rows when all take part. */
BANDED_INLINE void wsum_key(vf acc[][MAX_CB], const wsum_rows *a, const float *vj, int64_t j,
                            const int *ok, const int NM, const int NV) {
  if (ok == NULL) {
    vf wm[MR];
    for (int m = 0; m < NM; m++) wm[m] = vf_bcast(a->w + m * a->w_row + j);
    for (int x = 0; x < NV; x++) {
      vf vx = vf_loadu(vj + x * BW);
      for (int m = 0; m < NM; m++) acc[m][x] = vf_fma(wm[m], vx, acc[m][x]);
    }
  } else {
    for (int m = 0; m < NM; m++) {
      if (!ok[m]) continue;
      vf wm = vf_bcast(a->w + m * a->w_row + j);
      for (int x = 0; x < NV; x++) acc[m][x] = vf_fma(wm, vf_loadu(vj + x * BW), acc[m][x]);
    }
  }
}

/* Columns [col, col + NV * BW) of NM rows. */
BANDED_INLINE void wsum_cols(const wsum_rows *a, float *const *dst, int64_t col, const int NM,
                             const int NV) {
  vf acc[MR][MAX_CB];
  for (int m = 0; m < NM; m++)
    for (int x = 0; x < NV; x++) acc[m][x] = vf_zero();
  int64_t cs = max64(a->clo, a->ja), ce = min64(a->chi, a->jb);
  if (cs >= ce) cs = ce = a->jb; /* no key that every row sees: all checked */
  const float *v = a->v + col;
  for (int64_t j = a->ja; j < a->jb; j++) {
    if (j == cs) { /* the keys every row sees, without checks */
      for (; j < ce; j++) wsum_key(acc, a, v + j * a->v_row, j, NULL, NM, NV);
      if (j == a->jb) break;
    }
    int ok[MR];
    for (int m = 0; m < NM; m++) ok[m] = a->lo[m] <= j && j < a->hi[m];
    wsum_key(acc, a, v + j * a->v_row, j, ok, NM, NV);
  }
  for (int m = 0; m < NM; m++) {
    vf mul = vf_set1(a->mul[m]);
    for (int x = 0; x < NV; x++) vf_storeu(dst[m] + col + x * BW, vf_mul(acc[m][x], mul));
  }
}

/* A column that fills no vector, one row at a time. */
static void wsum_tail(const wsum_rows *a, float *const *dst, int64_t col, int nm) {
  for (int m = 0; m < nm; m++) {
    int64_t ja = max64(a->lo[m], a->ja), jb = min64(a->hi[m], a->jb);
    float sum = 0.0f;
    for (int64_t j = ja; j < jb; j++) sum += a->w[m * a->w_row + j] * a->v[j * a->v_row + col];
    dst[m][col] = a->mul[m] * sum;
  }
}

/* All d_v columns of NM rows: whole register blocks of CB vectors, then halves, then single
   vectors, then single columns. */
BANDED_INLINE void wsum_all(const wsum_rows *a, float *const *dst, int64_t d_v, const int NM,
                            const int CB) {
  int64_t c = 0;
  for (; c + CB * BW <= d_v; c += CB * BW) wsum_cols(a, dst, c, NM, CB);
  if (CB >= 4)
    for (; c + (CB / 2) * BW <= d_v; c += (CB / 2) * BW) wsum_cols(a, dst, c, NM, CB / 2);
  if (CB >= 2)
    for (; c + BW <= d_v; c += BW) wsum_cols(a, dst, c, NM, 1);
  for (; c < d_v; c++) wsum_tail(a, dst, c, NM);
}

/* The nm rows of a group (or one row) in blocks of BANDED_WSUM_MR rows, then one by one. */
static void wsum_group(const wsum_rows *a, float *const *dst, int64_t d_v, int nm) {
  int m = 0;
  for (; m + BANDED_WSUM_MR <= nm; m += BANDED_WSUM_MR) {
    wsum_rows b = *a;
    b.w += m * a->w_row;
    b.lo += m;
    b.hi += m;
    b.mul += m;
    b.clo = b.lo[0];
    b.chi = b.hi[0];
    for (int r = 1; r < BANDED_WSUM_MR; r++) {
      b.clo = max64(b.clo, b.lo[r]);
      b.chi = min64(b.chi, b.hi[r]);
    }
    wsum_all(&b, dst + m, d_v, BANDED_WSUM_MR, BANDED_WSUM_CB);
  }
  for (; m < nm; m++) {
    wsum_rows b = *a;
    b.w += m * a->w_row;
    b.lo += m;
    b.hi += m;
    b.mul += m;
    b.clo = b.lo[0];
    b.chi = b.hi[0];
    wsum_all(&b, dst + m, d_v, 1, BANDED_ROW_CB);
  }
}

/* ---- softmax ---- */

/* max[m] = the max of s[m * s_row + x] for x in [xa, xb) (multiples of BW). A NaN may or may not
   win (see vf_max): if one is present it reaches its row through its own weight anyway. */
static void rows_max(const float *s, int64_t s_row, int64_t xa, int64_t xb, int nm, float *max) {
  vf v[MR];
  for (int m = 0; m < nm; m++) v[m] = vf_set1(-INFINITY);
  for (int64_t x = xa; x < xb; x += BW)
    for (int m = 0; m < nm; m++) v[m] = vf_max(v[m], vf_load(s + m * s_row + x));
  for (int m = 0; m < nm; m++) max[m] = vf_hmax(v[m]);
}

/* s[m * s_row + x] = 2^((s - max[m]) log2 e) for x in [xa, xb) (multiples of BW); sum[m] = the
   float sum of row m's new values. */
static void rows_exp(float *s, int64_t s_row, int64_t xa, int64_t xb, int nm, const float *max,
                     float *sum) {
  const vf log2e = vf_set1(1.44269504088896341f);
  vf vmax[MR], acc[MR];
  for (int m = 0; m < nm; m++) {
    vmax[m] = vf_set1(max[m]);
    acc[m] = vf_zero();
  }
  for (int64_t x = xa; x < xb; x += BW)
    for (int m = 0; m < nm; m++) {
      float *sx = s + m * s_row + x;
      vf p = vf_exp2(vf_mul(vf_sub(vf_load(sx), vmax[m]), log2e));
      vf_store(sx, p);
      acc[m] = vf_add(acc[m], p);
    }
  for (int m = 0; m < nm; m++) sum[m] = vf_hsum(acc[m]);
}

/* nm rows whose scores s (row m at s + m * s_row, n_f floats, a multiple of BW; keys row m does not
   see are -inf) and maxima are in place: softmax, then the weighted sum of the value rows
   v + j * v_row over [lo[m], hi[m]) into out[m]. */
static void rows_finish(const banded_head *hd, float *s, int64_t s_row, const float *v, int64_t n_f,
                        const int64_t *lo, const int64_t *hi, const float *max, float *const *out,
                        int nm) {
  const int64_t d_v = hd->p->d_v;
  float sum[MR], mul[MR];
  int64_t widest = 0, first = INT64_MAX, last = 0;
  for (int m = 0; m < nm; m++) {
    widest = max64(widest, hi[m] - lo[m]);
    first = min64(first, lo[m]);
    last = max64(last, hi[m]);
  }
  wsum_rows a = {
      .w = s, .v = v, .w_row = s_row, .v_row = hd->v_row, .lo = lo, .hi = hi, .mul = mul};
  if (widest <= BANDED_VEC_CHUNK) { /* one float sum per row: straight into the output */
    rows_exp(s, s_row, 0, n_f, nm, max, sum);
    for (int m = 0; m < nm; m++) mul[m] = 1.0f / sum[m];
    a.ja = first;
    a.jb = last;
    wsum_group(&a, out, d_v, nm);
  } else {
    double *acc = banded_ws_acc(hd), total[MR] = {0};
    float *part[MR];
    for (int m = 0; m < nm; m++) {
      part[m] = banded_ws_part(hd) + m * d_v;
      mul[m] = 1.0f;
    }
    for (int64_t c = 0; c < nm * d_v; c++) acc[c] = 0.0;
    for (int64_t j = 0; j < n_f; j += BANDED_VEC_CHUNK) {
      rows_exp(s, s_row, j, min64(j + BANDED_VEC_CHUNK, n_f), nm, max, sum);
      a.ja = max64(j, first);
      a.jb = min64(j + BANDED_VEC_CHUNK, last);
      wsum_group(&a, part, d_v, nm);
      for (int m = 0; m < nm; m++) total[m] += sum[m];
      for (int64_t c = 0; c < nm * d_v; c++) acc[c] += part[0][c];
    }
    for (int m = 0; m < nm; m++)
      for (int64_t c = 0; c < d_v; c++) out[m][c] = (float)(acc[m * d_v + c] / total[m]);
  }
  for (int m = 0; m < nm; m++) txattn_row_spread_nan(out[m], d_v);
}

/* ---- one row alone ---- */

/* The dot products over columns [c, d) (a tail shorter than a vector) of BW keys. */
static vf tail_dots(const float *q, const float *const *kp, int64_t c, int64_t d) {
  float t[BW];
  for (int j = 0; j < BW; j++) {
    float a = 0.0f;
    for (int64_t x = c; x < d; x++) a += q[x] * kp[j][x];
    t[j] = a;
  }
  return vf_loadu(t);
}

/* s[x] = scale * (q . kp[x]) for x < BANDED_ROW_KB: one accumulator per key along d. */
BANDED_INLINE void row_block(const float *q, const float *const *kp, int64_t d, vf scale,
                             float *s) {
  vf acc[BANDED_ROW_KB];
  for (int x = 0; x < BANDED_ROW_KB; x++) acc[x] = vf_zero();
  int64_t c = 0;
  for (; c + BW <= d; c += BW) {
    vf qc = vf_loadu(q + c);
    for (int x = 0; x < BANDED_ROW_KB; x++) acc[x] = vf_fma(qc, vf_loadu(kp[x] + c), acc[x]);
  }
  for (int g = 0; g < BANDED_ROW_KB / BW; g++) {
    vf sum = vf_sum_lanes(acc + g * BW);
    if (c < d) sum = vf_add(sum, tail_dots(q, kp + g * BW, c, d));
    vf_store(s + g * BW, vf_mul(sum, scale));
  }
}

/* q . k for one key, two accumulators so the chain is half as long. */
static float dot1(const float *q, const float *k, int64_t d) {
  vf a0 = vf_zero(), a1 = vf_zero();
  int64_t c = 0;
  for (; c + 2 * BW <= d; c += 2 * BW) {
    a0 = vf_fma(vf_loadu(q + c), vf_loadu(k + c), a0);
    a1 = vf_fma(vf_loadu(q + c + BW), vf_loadu(k + c + BW), a1);
  }
  if (c + BW <= d) {
    a0 = vf_fma(vf_loadu(q + c), vf_loadu(k + c), a0);
    c += BW;
  }
  float s = vf_hsum(vf_add(a0, a1));
  for (; c < d; c++) s += q[c] * k[c];
  return s;
}

/* Row i alone, over its visible keys [lo, hi), lo < hi: whole blocks of keys, then the last few
   keys one by one if they are fewer than a quarter block, else one more block whose missing keys
   repeat key hi - 1 (their scores become -inf padding). */
static void one_row(const banded_head *hd, int64_t i, int64_t lo, int64_t hi) {
  const txattn_problem *p = hd->p;
  int64_t n = hi - lo, n_f = round_up(n, BANDED_ROW_KB), rlo = 0, rhi = n, j = 0;
  const float *q = hd->q + i * hd->q_row, *k = hd->k + lo * hd->k_row, *kp[BANDED_ROW_KB];
  float *s = banded_ws_scores(hd), *o = hd->o + i * hd->o_row, max;
  vf scale = vf_set1(p->scale);
  for (; j < n; j += BANDED_ROW_KB) {
    if (n - j < BANDED_ROW_KB / 4) break;
    for (int x = 0; x < BANDED_ROW_KB; x++) kp[x] = k + min64(j + x, n - 1) * hd->k_row;
    row_block(q, kp, p->d_qk, scale, s + j);
  }
  for (; j < n; j++) s[j] = p->scale * dot1(q, k + j * hd->k_row, p->d_qk);
  for (j = n; j < n_f; j++) s[j] = -INFINITY;
  rows_max(s, 0, 0, n_f, 1, &max);
  rows_finish(hd, s, 0, hd->v + lo * hd->v_row, n_f, &rlo, &rhi, &max, &o, 1);
}

/* ---- groups of MR rows ---- */

/* The transposed keys of one head: panel p in slot p % n_slot, panels below `packed` done. */
typedef struct panels {
  float *buf;
  int64_t n_slot, packed;
} panels;

static float *panel(const banded_head *hd, const panels *pk, int64_t p) {
  return pk->buf + (p % pk->n_slot) * hd->p->d_qk * BW;
}

/* Packs panels [p_lo, p_hi) not packed yet; those below p_lo are never needed again (ranges only
   move forward). Keys past n_kv repeat the last key: their scores are masked. */
static void pack_range(const banded_head *hd, panels *pk, int64_t p_lo, int64_t p_hi) {
  const int64_t d = hd->p->d_qk, n_kv = hd->p->n_kv;
  for (int64_t p = max64(pk->packed, p_lo); p < p_hi; p++) {
    const float *src[BW];
    float *dst = panel(hd, pk, p);
    for (int r = 0; r < BW; r++) src[r] = hd->k + min64(p * BW + r, n_kv - 1) * hd->k_row;
    int64_t c = 0;
    for (; c + BW <= d; c += BW) vf_transpose(src, c, dst + c * BW, BW);
    for (; c < d; c++)
      for (int r = 0; r < BW; r++) dst[c * BW + r] = src[r][c];
  }
  pk->packed = max64(pk->packed, p_hi);
}

/* s[m * s_row + x * BW + lane] = scale * (q[m] . key lane of panel pp[x]), for MR rows and NP
   panels (keys [j0, j0 + NP * BW) of the union): MR * NP accumulators over all d columns. Keys
   outside row m's [lo[m], hi[m]) become -inf in registers, and max[m] takes the row's max. */
BANDED_INLINE void panel_block(const float *const *q, const float *const *pp, int64_t d, vf scale,
                               int64_t j0, const int64_t *lo, const int64_t *hi, float *s,
                               int64_t s_row, vf *max, const int NP) {
  vf acc[MR][BANDED_NP];
  for (int m = 0; m < MR; m++)
    for (int x = 0; x < NP; x++) acc[m][x] = vf_zero();
  for (int64_t c = 0; c < d; c++) {
    vf kv[BANDED_NP];
    for (int x = 0; x < NP; x++) kv[x] = vf_load(pp[x] + c * BW);
    for (int m = 0; m < MR; m++) {
      vf qm = vf_bcast(q[m] + c);
      for (int x = 0; x < NP; x++) acc[m][x] = vf_fma(qm, kv[x], acc[m][x]);
    }
  }
  /* Without branches and unrolled, so that acc stays in registers. */
  const vf lane = vf_lane_index();
  BANDED_UNROLL
  for (int m = 0; m < MR; m++) {
    vf a = vf_set1((float)min64(max64(lo[m] - j0, -1), NP * BW + 1));
    vf e = vf_set1((float)min64(max64(hi[m] - j0, -1), NP * BW + 1));
    BANDED_UNROLL
    for (int x = 0; x < NP; x++) {
      vf sc = vf_keep_range(vf_mul(acc[m][x], scale), vf_add(lane, vf_set1((float)(x * BW))), a, e);
      max[m] = vf_max(max[m], sc);
      vf_store(s + m * s_row + j0 + x * BW, sc);
    }
  }
}

/* Scores of MR rows over n_p panels from panel p0, keys outside each row's range -inf, and the
   rows' maxima: whole blocks of BANDED_NP panels, the last one overlapping its predecessor; fewer
   panels than a block in one narrower block. */
static void group_scores(const banded_head *hd, const panels *pk, const float *const *q, int64_t p0,
                         int64_t n_p, const int64_t *lo, const int64_t *hi, float *s, int64_t s_row,
                         float *max) {
  const float *pp[BANDED_NP];
  const int64_t d = hd->p->d_qk;
  vf scale = vf_set1(hd->p->scale), vmax[MR];
  for (int m = 0; m < MR; m++) vmax[m] = vf_set1(-INFINITY);
  if (n_p >= BANDED_NP) {
    for (int64_t x = 0; x < n_p; x += BANDED_NP) {
      int64_t b = min64(x, n_p - BANDED_NP);
      for (int y = 0; y < BANDED_NP; y++) pp[y] = panel(hd, pk, p0 + b + y);
      panel_block(q, pp, d, scale, b * BW, lo, hi, s, s_row, vmax, BANDED_NP);
    }
  } else {
    for (int y = 0; y < n_p; y++) pp[y] = panel(hd, pk, p0 + y);
#if BANDED_NP > 3
    if (n_p == 3) panel_block(q, pp, d, scale, 0, lo, hi, s, s_row, vmax, 3);
#endif
#if BANDED_NP > 2
    if (n_p == 2) panel_block(q, pp, d, scale, 0, lo, hi, s, s_row, vmax, 2);
#endif
    if (n_p == 1) panel_block(q, pp, d, scale, 0, lo, hi, s, s_row, vmax, 1);
  }
  for (int m = 0; m < MR; m++) max[m] = vf_hmax(vmax[m]);
}

/* Asks the cache for n_rows rows of d floats. Always inlined: as a function of its own GCC 12 finds
   it "looping const" (a prefetch changes no memory) and deletes the call. */
BANDED_INLINE void prefetch_rows(const float *base, int64_t row, int64_t n_rows, int64_t d) {
  for (int64_t r = 0; r < n_rows; r++)
    for (int64_t c = 0; c < d; c += 16) __builtin_prefetch(base + r * row + c);
}

/* The rows a coming group reads first: the next group's q rows, and the K and V rows that enter
   the window of the group after it; not the output rows, which were slower to prefetch than to
   leave to the hardware (docs/measurements.md). */
BANDED_INLINE void prefetch_next(const banded_head *hd, int64_t i, int64_t end) {
  const txattn_problem *p = hd->p;
  int64_t rows = min64(MR, max64(hd->row1 - i - MR, 0));
  int64_t keys = min64(MR, max64(p->n_kv - end - MR, 0));
  prefetch_rows(hd->q + (i + MR) * hd->q_row, hd->q_row, rows, p->d_qk);
  prefetch_rows(hd->k + (end + MR) * hd->k_row, hd->k_row, keys, p->d_qk);
  prefetch_rows(hd->v + (end + MR) * hd->v_row, hd->v_row, keys, p->d_v);
}

/* Rows i .. i + MR - 1 together if every one sees a key and their union is at most twice the
   shortest range; returns 0 (nothing done) otherwise. */
static int group_rows(const banded_head *hd, panels *pk, int64_t i) {
  const txattn_problem *p = hd->p;
  int64_t lo[MR], hi[MR], base = INT64_MAX, end = 0, shortest = INT64_MAX;
  for (int m = 0; m < MR; m++) {
    txattn_visible_range(p, i + m, &lo[m], &hi[m]);
    if (lo[m] >= hi[m]) return 0;
    base = min64(base, lo[m]);
    end = max64(end, hi[m]);
    shortest = min64(shortest, hi[m] - lo[m]);
  }
  if (end - base > 2 * shortest) return 0;
  int64_t p0 = base / BW, n_p = (end + BW - 1) / BW - p0, first = p0 * BW, n_f = n_p * BW;
  int64_t s_row = banded_score_stride(p);
  const float *q[MR];
  float *o[MR], *s = banded_ws_scores(hd), max[MR];
  prefetch_next(hd, i, end);
  pack_range(hd, pk, p0, p0 + n_p);
  for (int m = 0; m < MR; m++) {
    q[m] = hd->q + (i + m) * hd->q_row;
    o[m] = hd->o + (i + m) * hd->o_row;
    lo[m] -= first;
    hi[m] -= first;
  }
  group_scores(hd, pk, q, p0, n_p, lo, hi, s, s_row, max);
  rows_finish(hd, s, s_row, hd->v + first * hd->v_row, n_f, lo, hi, max, o, MR);
  return 1;
}

/* The ring starts empty whatever row0 is: pack_range packs from the first group's first panel. */
void BANDED_HEAD_FN(const banded_head *hd) {
  const txattn_problem *p = hd->p;
  panels pk = {.buf = banded_ws_panels(hd), .n_slot = banded_panel_keys(p) / BW, .packed = 0};
  for (int64_t i = hd->row0; i < hd->row1;) {
    if (i + MR <= hd->row1 && group_rows(hd, &pk, i)) {
      i += MR;
      continue;
    }
    int64_t lo, hi;
    txattn_visible_range(p, i, &lo, &hi);
    if (lo < hi) {
      one_row(hd, i, lo, hi);
    } else { /* no visible key: exact zeros */
      float *o = hd->o + i * hd->o_row;
      for (int64_t c = 0; c < p->d_v; c++) o[c] = 0.0f;
    }
    i++;
  }
}

#endif /* BANDED_ALGO_H */
