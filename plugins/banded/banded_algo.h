/* SPDX-License-Identifier: MIT */
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
 * 2. Softmax per row: the max, then p = 2^((s - max) |scale| log2 e) with vf_exp2, the scores
 *    being sign(scale) q . k. Subtracting before scaling keeps the exponent's rounding relative to
 *    s - max (small for every weight that matters) rather than to s: folding log2 e into the
 *    scores would cost up to 2e-5 relative at scores of 300 (inputs x 100 with a power-of-two
 *    scale), over the tolerance; and since s - max <= 0, no finite dot product overflows at any
 *    scale the library accepts. -inf gives p = +0;
 *    a NaN score gives a NaN p (vf_exp2 keeps it), so a NaN sum and a NaN row.
 * 3. Weighted sum: WSUM_MR rows x WSUM_CB vectors of output columns in registers; per key one load
 *    of each V vector feeds WSUM_MR FMAs. Keys only some rows of the block see (at most 3 at each
 *    end of a window) are added row by row, never with a zero weight: 0 * NaN would carry a NaN
 *    from a V row the output row does not see.
 * Rows with more than BANDED_VEC_CHUNK = 256 keys (causal, no mask, wide windows) sum each chunk of
 * 256 keys in float and the chunks in double (banded_rows.c says why, banded.h why 256); rows of
 * narrower windows are one chunk, and their output never leaves registers before the store.
 *
 * Score modifiers (banded_head says what a modified score is): softcap and ALiBi modify each score
 * in registers as it leaves its block (mod_apply, before the keys a row does not see become -inf),
 * so they cost a tanh, or one fused multiply-add, per score and no extra pass; a sink logit is one
 * fp64 exp per row in its denominator (banded_denominator). Sink keys (StreamingLLM's first K keys
 * beside a window): a row sees [0, K) and its range [lo, hi) apart (txattn_visible_ranges), so only
 * those keys are computed: the K sink scores of each row in the first floats of its score row (a
 * row block of scores), their exponentials counted in the row's max and sum, their weighted sum
 * added after the range's (sink_wsum); a group takes rows with the same sink keys only.
 * A mask tensor (calls of fewer than MR rows, so one row at a time) is added to a row's scores
 * after the modifiers and before its max (mask_keys); where it hides a key whose V row is not
 * finite, the row is summed without the hidden keys (one_row_careful), else as without a mask.
 *
 * Row strides are arbitrary (0, or less than d, included): every key and value row is addressed on
 * its own and only the element stride (1) is assumed.
 *
 * 16-bit tensors: the functions that read K or V are compiled once per element type
 * (banded_algo_elem.h: the weighted sum, a row's scores, the packing of panels) and the row loop
 * once per pair of key and value types (banded_algo_head.h); the exported head function picks the
 * pair once per call. A 16-bit K or V element is widened as it is loaded, in registers, so a
 * narrow window reads half the bytes, and every operation after the load is the f32 one; the f32
 * pair is the f32 kernel itself (types are tested only where a row or a group of rows places its
 * q and o rows). 16-bit q rows are widened once per row into the workspace; a 16-bit o row is
 * computed in fp32 there (the NaN-row rule applied to it) and then rounded to nearest even into o.
 */
#ifndef BANDED_ALGO_H
#define BANDED_ALGO_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "banded.h"
#include "half.h"
#include "mask_value.h"
#include "vec_rows_half.h"

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

/* ---- element types ----
   banded_elem_<T>: the C type of an element; banded_load_<T>: VEC_W of them widened to fp32 (any
   address); banded_one_<T>: one widened. The token T names the copies of banded_algo_elem.h. */
#define BANDED_CAT_(a, b) a##b
#define BANDED_CAT(a, b)  BANDED_CAT_(a, b)
typedef float banded_elem_f32;
typedef uint16_t banded_elem_f16;
typedef uint16_t banded_elem_bf16;
static inline vf banded_load_f32(const float *p) {
  return vf_loadu(p);
}
static inline vf banded_load_f16(const uint16_t *p) {
  return vf_loadu_f16(p);
}
static inline vf banded_load_bf16(const uint16_t *p) {
  return vf_loadu_bf16(p);
}
static inline float banded_one_f32(const float *p) {
  return *p;
}
static inline float banded_one_f16(const uint16_t *p) {
  return txh_f16_to_f32(*p);
}
static inline float banded_one_bf16(const uint16_t *p) {
  return txh_bf16_to_f32(*p);
}

/* ---- the weighted sum (banded_algo_elem.h) ---- */

/* Keys [ja, jb) of a block of rows: row m's weight of key j is w[m * w_row + j], key j's value row
   v + j * v_row (elements of V's type); row m sees keys [lo[m], hi[m]), so every row sees
   [clo, chi). dst[m][c] = mul[m] * the row's sum, for the columns c of the block. */
typedef struct wsum_rows {
  const float *w;
  const void *v;
  int64_t w_row, v_row, ja, jb, clo, chi;
  const int64_t *lo, *hi;
  const float *mul;
} wsum_rows;

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

/* s[m * s_row + x] = 2^((s - max[m]) c) for x in [xa, xb) (multiples of BW), c = |scale| log2 e
   (banded_exp2_scale); sum[m] = the float sum of row m's new values. */
static void rows_exp(float *s, int64_t s_row, int64_t xa, int64_t xb, int nm, const float *max,
                     float c, float *sum) {
  const vf log2e = vf_set1(c);
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

/* ---- score modifiers ---- */

/* A head's softcap and ALiBi slope in vectors (banded_head says what a modified score is). */
typedef struct banded_mod {
  vf cap, inv, slope;
  int capped, alibi;
} banded_mod;

static inline banded_mod mod_of(const banded_head *hd) {
  return (banded_mod){.cap = vf_set1(hd->softcap),
                      .inv = vf_set1(hd->inv_softcap),
                      .slope = vf_set1(hd->slope),
                      .capped = hd->softcap > 0.0f,
                      .alibi = hd->alibi};
}

/* x = fl(scale q.k) of BW keys whose lane l is at key position pos(i) + rel + l: capped as
   c tanh(x fl(1/c)), then + m (j - pos(i)) in one fused multiply-add, as banded_modify_one and the
   tiled kernels compute them (j - pos is exact below 2^24). */
BANDED_INLINE vf mod_apply(const banded_mod *md, vf x, int64_t rel) {
  if (md->capped) x = vf_mul(md->cap, vf_tanh(vf_mul(x, md->inv)));
  if (md->alibi) x = vf_fma(md->slope, vf_add(vf_set1((float)rel), vf_lane_index()), x);
  return x;
}

/* ---- a mask tensor (the one-row path) ---- */

static inline const void *mask_row_of(const banded_head *hd, int64_t i) {
  return hd->mask0 + i * hd->mask_row;
}

/* s[x] += the mask's value of key key0 + x for x < n (txm_mask_value: -inf where a boolean mask
   hides the key, an additive one's value widened exactly), after the score modifiers, as the tiled
   kernels add it. Returns whether the mask may hide one of them: a boolean 0, an additive value
   not finite (+inf and NaN make the row NaN through the softmax; only -inf hides). */
static int mask_keys(const banded_head *hd, const void *mrow, float *s, int64_t n, int64_t key0) {
  const txattn_problem *p = hd->p;
  if (hd->t->mask_layout.key != 1) return txm_mask_add_keys(p, hd->t, mrow, s, n, key0);
  if (hd->mask == TXATTN_MASK_TENSOR_BOOL)
    return txm_mask_bool_keys(s, (const unsigned char *)mrow + key0, n);
  const txattn_dtype mt = p->mask_type;
  vf nf = vf_zero(); /* the sum of each value times 0: NaN iff a value is not finite */
  int64_t j = 0;
  for (; j + BW <= n; j += BW) {
    const vf mv = mt == TXATTN_DTYPE_F32   ? vf_loadu((const float *)mrow + key0 + j)
                  : mt == TXATTN_DTYPE_F16 ? vf_loadu_f16((const uint16_t *)mrow + key0 + j)
                                           : vf_loadu_bf16((const uint16_t *)mrow + key0 + j);
    vf_storeu(s + j, vf_add(vf_loadu(s + j), mv));
    nf = vf_fma(mv, vf_zero(), nf);
  }
  const int hides = txm_mask_add_keys(p, hd->t, mrow, s + j, n - j, key0 + j);
  return hides || !(vf_hsum(nf) == 0.0f);
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

/* The functions that read K or V, once per element type. */
#define BANDED_T        f32
#define BANDED_T_IS_F32 1
#include "banded_algo_elem.h"
#undef BANDED_T
#undef BANDED_T_IS_F32
#define BANDED_T        f16
#define BANDED_T_IS_F32 0
#include "banded_algo_elem.h"
#undef BANDED_T
#undef BANDED_T_IS_F32
#define BANDED_T        bf16
#define BANDED_T_IS_F32 0
#include "banded_algo_elem.h"
#undef BANDED_T
#undef BANDED_T_IS_F32

/* s[m * s_row + x * BW + lane] = sign(scale) (q[m] . key lane of panel pp[x]), for MR rows and NP
   panels (keys [j0, j0 + NP * BW) of the union): MR * NP accumulators over all d columns. Keys
   outside row m's [lo[m], hi[m]) become -inf in registers, and max[m] takes the row's max. */
BANDED_INLINE void panel_block(const float *const *q, const float *const *pp, int64_t d, vf scale,
                               int64_t j0, const int64_t *lo, const int64_t *hi, float *s,
                               int64_t s_row, vf *max, const banded_mod *md, const int64_t *rel,
                               const int NP) {
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
      vf sc = vf_mul(acc[m][x], scale);
      if (md) sc = mod_apply(md, sc, rel[m] + j0 + x * BW);
      sc = vf_keep_range(sc, vf_add(lane, vf_set1((float)(x * BW))), a, e);
      max[m] = vf_max(max[m], sc);
      vf_store(s + m * s_row + j0 + x * BW, sc);
    }
  }
}

/* Scores of MR rows over n_p panels from panel p0, keys outside each row's range -inf, and the
   rows' maxima: whole blocks of BANDED_NP panels, the last one overlapping its predecessor; fewer
   panels than a block in one narrower block. md (NULL: unmodified scores) modifies each row's
   scores, rel[m] being key 0 of the union's position relative to row m. */
BANDED_INLINE void group_scores_with(const banded_head *hd, const panels *pk, const float *const *q,
                                     int64_t p0, int64_t n_p, const int64_t *lo, const int64_t *hi,
                                     float *s, int64_t s_row, float *max, const banded_mod *md,
                                     const int64_t *rel) {
  const float *pp[BANDED_NP];
  const int64_t d = hd->p->d_qk;
  vf scale = vf_set1(md ? hd->p->scale : banded_score_sign(hd->p)), vmax[MR];
  for (int m = 0; m < MR; m++) vmax[m] = vf_set1(-INFINITY);
  if (n_p >= BANDED_NP) {
    for (int64_t x = 0; x < n_p; x += BANDED_NP) {
      int64_t b = min64(x, n_p - BANDED_NP);
      for (int y = 0; y < BANDED_NP; y++) pp[y] = panel(hd, pk, p0 + b + y);
      panel_block(q, pp, d, scale, b * BW, lo, hi, s, s_row, vmax, md, rel, BANDED_NP);
    }
  } else {
    for (int y = 0; y < n_p; y++) pp[y] = panel(hd, pk, p0 + y);
#if BANDED_NP > 3
    if (n_p == 3) panel_block(q, pp, d, scale, 0, lo, hi, s, s_row, vmax, md, rel, 3);
#endif
#if BANDED_NP > 2
    if (n_p == 2) panel_block(q, pp, d, scale, 0, lo, hi, s, s_row, vmax, md, rel, 2);
#endif
    if (n_p == 1) panel_block(q, pp, d, scale, 0, lo, hi, s, s_row, vmax, md, rel, 1);
  }
  for (int m = 0; m < MR; m++) max[m] = vf_hmax(vmax[m]);
}

/* group_scores_with, compiled apart for unmodified scores so that their blocks keep no check. */
static void group_scores(const banded_head *hd, const panels *pk, const float *const *q, int64_t p0,
                         int64_t n_p, const int64_t *lo, const int64_t *hi, float *s, int64_t s_row,
                         float *max, int64_t i) {
  if (!hd->modified) {
    group_scores_with(hd, pk, q, p0, n_p, lo, hi, s, s_row, max, NULL, NULL);
    return;
  }
  const banded_mod md = mod_of(hd);
  int64_t rel[MR];
  for (int m = 0; m < MR; m++) rel[m] = p0 * BW - (i + m + hd->pos_shift);
  group_scores_with(hd, pk, q, p0, n_p, lo, hi, s, s_row, max, &md, rel);
}

/* Asks the cache for n_rows rows of `bytes` bytes, `row` bytes apart. Always inlined: as a
   function of its own GCC 12 finds it "looping const" (a prefetch changes no memory) and deletes
   the call. */
BANDED_INLINE void prefetch_rows(const void *base, int64_t row, int64_t n_rows, int64_t bytes) {
  for (int64_t r = 0; r < n_rows; r++)
    for (int64_t c = 0; c < bytes; c += 64) __builtin_prefetch((const char *)base + r * row + c);
}

/* The rows a coming group reads first: the next group's q rows, and the K and V rows that enter
   the window of the group after it; not the output rows, which were slower to prefetch than to
   leave to the hardware (docs/measurements.md). ks, vs: bytes per K and V element. */
BANDED_INLINE void prefetch_next(const banded_head *hd, int64_t i, int64_t end, const int64_t ks,
                                 const int64_t vs) {
  const txattn_problem *p = hd->p;
  const int64_t qs = (int64_t)banded_elem_size(p->q_type);
  int64_t rows = min64(MR, max64(hd->row1 - i - MR, 0));
  int64_t keys = min64(MR, max64(p->n_kv - end - MR, 0));
  prefetch_rows((const char *)hd->q + (i + MR) * hd->q_row * qs, hd->q_row * qs, rows,
                p->d_qk * qs);
  prefetch_rows((const char *)hd->k + (end + MR) * hd->k_row * ks, hd->k_row * ks, keys,
                p->d_qk * ks);
  prefetch_rows((const char *)hd->v + (end + MR) * hd->v_row * vs, hd->v_row * vs, keys,
                p->d_v * vs);
}

/* ---- q and o rows ---- */

/* q[m] = query row i + m as fp32, for m < nm: in place for an f32 q, else widened into the
   workspace's q row m (once per row: the scores read it once per key block). */
static void q_rows(const banded_head *hd, int64_t i, int nm, const float **q) {
  const txattn_problem *p = hd->p;
  if (p->q_type == TXATTN_DTYPE_F32) {
    for (int m = 0; m < nm; m++) q[m] = (const float *)hd->q + (i + m) * hd->q_row;
    return;
  }
  for (int m = 0; m < nm; m++) {
    const uint16_t *src = (const uint16_t *)hd->q + (i + m) * hd->q_row;
    float *dst = banded_ws_q_rows(hd) + m * banded_q_stride(p);
    if (p->q_type == TXATTN_DTYPE_F16)
      vf_row_from_f16(src, p->d_qk, p->d_qk, dst);
    else
      vf_row_from_bf16(src, p->d_qk, p->d_qk, dst);
    q[m] = dst;
  }
}

/* o[m] = where output row i + m is computed in fp32: in place for an f32 o, else the workspace's
   o row m, which o_store then rounds into o. */
static void o_rows(const banded_head *hd, int64_t i, int nm, float **o) {
  const txattn_problem *p = hd->p;
  for (int m = 0; m < nm; m++)
    o[m] = p->o_type == TXATTN_DTYPE_F32 ? (float *)hd->o + (i + m) * hd->o_row
                                         : banded_ws_o_rows(hd) + m * banded_o_stride(p);
}

/* Rounds the fp32 rows o[m] (from o_rows, finished: NaN rows already whole) to nearest even into
   o's rows i + m when o is 16-bit; only the d_v elements of each row are written. */
static void o_store(const banded_head *hd, int64_t i, int nm, float *const *o) {
  const txattn_problem *p = hd->p;
  if (p->o_type == TXATTN_DTYPE_F32) return;
  for (int m = 0; m < nm; m++) {
    uint16_t *dst = (uint16_t *)hd->o + (i + m) * hd->o_row;
    if (p->o_type == TXATTN_DTYPE_F16)
      vf_row_to_f16(o[m], p->d_v, dst);
    else
      vf_row_to_bf16(o[m], p->d_v, dst);
  }
}

/* Row i sees no key: exact zeros, +0 in every type. */
static void o_zero(const banded_head *hd, int64_t i) {
  const txattn_problem *p = hd->p;
  if (p->o_type == TXATTN_DTYPE_F32) {
    float *o = (float *)hd->o + i * hd->o_row;
    for (int64_t c = 0; c < p->d_v; c++) o[c] = 0.0f;
  } else {
    uint16_t *o = (uint16_t *)hd->o + i * hd->o_row;
    for (int64_t c = 0; c < p->d_v; c++) o[c] = 0;
  }
}

/* ---- the row loop, once per pair of key and value types ---- */

#define BANDED_KT f32
#define BANDED_VT f32
#include "banded_algo_head.h"
#undef BANDED_KT
#undef BANDED_VT
#define BANDED_KT f32
#define BANDED_VT f16
#include "banded_algo_head.h"
#undef BANDED_KT
#undef BANDED_VT
#define BANDED_KT f32
#define BANDED_VT bf16
#include "banded_algo_head.h"
#undef BANDED_KT
#undef BANDED_VT
#define BANDED_KT f16
#define BANDED_VT f32
#include "banded_algo_head.h"
#undef BANDED_KT
#undef BANDED_VT
#define BANDED_KT f16
#define BANDED_VT f16
#include "banded_algo_head.h"
#undef BANDED_KT
#undef BANDED_VT
#define BANDED_KT f16
#define BANDED_VT bf16
#include "banded_algo_head.h"
#undef BANDED_KT
#undef BANDED_VT
#define BANDED_KT bf16
#define BANDED_VT f32
#include "banded_algo_head.h"
#undef BANDED_KT
#undef BANDED_VT
#define BANDED_KT bf16
#define BANDED_VT f16
#include "banded_algo_head.h"
#undef BANDED_KT
#undef BANDED_VT
#define BANDED_KT bf16
#define BANDED_VT bf16
#include "banded_algo_head.h"
#undef BANDED_KT
#undef BANDED_VT

/* The pair of key and value types picked once per call (the host hands only the types the
   descriptors declare; each txattn_dtype indexes its row and column). */
void BANDED_HEAD_FN(const banded_head *hd) {
  static void (*const heads[3][3])(const banded_head *) = {
      {head_f32_f32, head_f32_f16, head_f32_bf16},
      {head_f16_f32, head_f16_f16, head_f16_bf16},
      {head_bf16_f32, head_bf16_f16, head_bf16_bf16},
  };
  heads[hd->p->k_type][hd->p->v_type](hd);
}

#endif /* BANDED_ALGO_H */
