/* SPDX-License-Identifier: MIT */
/* The tiled online-softmax algorithm (FlashAttention-2 style), written once over the vector layer.
 *
 * Included by each tiled_<isa>.c after its vec_<isa>.h (plugins/common), with TILED_BLOCKS naming
 * its register blocks in tiled_blocks.h (AVX2 for TILED_AVX2_*); defines the ISA's tiled_ops
 * table. See tiled_internal.h for the row stacking and packing, and vec_exp2.h for the exp. At
 * most TILED_DIRECT_ROWS rows per kv head (decode) take the direct path of tiled_direct_algo.h
 * instead (the table's run_direct), which shares this file's softmax and P V tile.
 *
 * Per query block (br stacked rows), for each key block that some row sees:
 *
 * 1. Scores S = Q K^T with the MR x (NRS * W) micro-kernel, K panel by K panel, for each group of
 *    MR rows that sees part of the panel: causal and window skipping come from the rows' visible
 *    ranges, never from scanning a mask.
 *
 * 2. Per row, with c = |scale| log2(e) (the exp is an exp2): the block max over its visible keys
 *    (edge lanes of a vector are set to -inf only in a block the row does not fully see), m' =
 *    max(m, block max), alpha = 2^((m - m') c), P = 2^((S - m') c) fused with the row sum, l' = l *
 *    alpha + sum. m and S are unscaled (q . k, q negated for a negative scale), so the max and the
 *    exponent come from the same stored scores: every exp2 argument is <= 0 and the max key weighs
 *    exactly 1, for any finite scale and any finite q . k (docs/error_bound.md, "Finite inputs").
 *
 * 3. acc = acc * alpha + P V with the MR x (NRV * W) micro-kernel over the keys every row of a
 *    group sees, then row by row over the ragged rest: a key a row cannot see is never multiplied
 *    into it, so an Inf or NaN there cannot leak in as 0 * Inf. P V is summed from zero over at most
 *    TILED_PV_SPAN keys and added into acc with a Kahan term per element (tl_pv_tile).
 *
 * Finally O = acc / l, or exact zeros when l == 0 (no visible key). The max only ever grows, so acc
 * is rescaled in the same pass that adds P V (alpha == 1 when the max does not grow) and divided
 * once at the end. A row whose max is still -inf after a block (nothing seen yet) uses 0 as its
 * reference, so -inf - -inf never makes a NaN; a NaN score becomes a NaN probability (vf_exp2 keeps
 * NaN) and reaches l and acc from there; a NaN in a visible v reaches its column of acc, and
 * txattn_row_spread_nan() then makes the whole row NaN, as the contract asks.
 */
#ifndef TILED_ALGO_H
#define TILED_ALGO_H

#include <float.h>
#include <math.h>
#include <string.h>

#include "tiled_blocks.h"
#include "tiled_internal.h"
#include "vec_exp2.h"
#include "mask_value.h"
#include "vec_rows_half.h"

#define TILED_CAT2(a, b) a##_##b
#define TILED_CAT(a, b)  TILED_CAT2(a, b)
#define TILED_BLOCK(x)   TILED_CAT(TILED_CAT(TILED, TILED_BLOCKS), x)
#define TILED_MR         TILED_BLOCK(MR)
#define TILED_NRS        TILED_BLOCK(NRS)
#define TILED_NRV        TILED_BLOCK(NRV)
#define TILED_DNK        TILED_BLOCK(DNK)
#define TILED_DNT        TILED_BLOCK(DNT)

_Static_assert(TILED_BLOCK(W) == VEC_W, "tiled_blocks.h disagrees with the vector layer's width");

#define TILED_OPS        TILED_CAT(tiled_ops, VEC_ISA)
#define TILED_KW         (TILED_NRS * VEC_W)
#define TILED_MAX2(a, b) ((a) > (b) ? (a) : (b))
/* The most rows and vectors of columns any P V tile or softmax group has (tiled or direct path). */
#define TILED_PV_ROWS TILED_MAX2(TILED_MR, TILED_DIRECT_ROWS)
#define TILED_PV_COLS TILED_MAX2(TILED_NRV, TILED_DNT)
#define TILED_INLINE  static inline __attribute__((always_inline))

static inline int64_t tl_min(int64_t a, int64_t b) {
  return a < b ? a : b;
}
static inline int64_t tl_max(int64_t a, int64_t b) {
  return a > b ? a : b;
}
static inline int64_t tl_clamp(int64_t x, int64_t lo, int64_t hi) {
  return tl_min(tl_max(x, lo), hi);
}

/* ---- element types ----
 * K and V are read in their own type only by the packing below and by the direct path (its row
 * copy, or its micro-kernels on 16-bit rows in place), Q by the row loaders; all of them widen to
 * fp32 exactly (half.h), so everything after computes as for fp32 tensors. The K/V readers take
 * the type as a constant (t below), each instantiated once per type, so that the f32
 * instantiation is the fp32 code as it was. */

/* Row i of head h of a tensor of element type t (a constant at every call). */
TILED_INLINE const void *tl_row_as(const void *base, const int t, const txattn_layout *l, int64_t b,
                                   int64_t h, int64_t i) {
  if (t == TXATTN_DTYPE_F32) return txattn_row(base, l, b, h, i);
  return txattn_row_of(base, (txattn_dtype)t, l, b, h, i);
}
/* Key `key`'s K or V row (base, layout l, type t) of (b, h): row key % P of its page when the
   problem is paged (g->page_size = P), else tl_row_as's. Every K and V row is read through it. */
TILED_INLINE const void *tl_kv_row(const tiled_geom *g, const void *base, const int t,
                                   const txattn_layout *l, int64_t b, int64_t h, int64_t key) {
  const int64_t P = g->page_size;
  if (P == 0) return tl_row_as(base, t, l, b, h, key);
  const int32_t *pages = g->t->block_table + b * g->p->max_pages;
  if ((P & (P - 1)) == 0) /* a shift and a mask, not a division per row */
    return tl_row_as(base, t, l, pages[key >> __builtin_ctzll((unsigned long long)P)], h,
                     key & (P - 1));
  return tl_row_as(base, t, l, pages[key / P], h, key % P);
}
/* Element c of a row of type t, widened exactly. */
TILED_INLINE float tl_elem_as(const void *row, const int t, int64_t c) {
  if (t == TXATTN_DTYPE_F32) return ((const float *)row)[c];
  const uint16_t x = ((const uint16_t *)row)[c];
  return t == TXATTN_DTYPE_F16 ? txh_f16_to_f32(x) : txh_bf16_to_f32(x);
}
/* VEC_W elements of a row of type t from element c, widened (any alignment). */
TILED_INLINE vf tl_loadu_as(const void *row, const int t, int64_t c) {
  if (t == TXATTN_DTYPE_F32) return vf_loadu((const float *)row + c);
  if (t == TXATTN_DTYPE_F16) return vf_loadu_f16((const uint16_t *)row + c);
  return vf_loadu_bf16((const uint16_t *)row + c);
}
/* Bytes before element n of a K or V row of type t (a constant at every call; TL_BF16X2 is bf16):
   exact where n starts a q8_0 or q4_0 block (strides); within a block, n % 32 (q4_0: half that)
   bytes past its start. */
TILED_INLINE int64_t tl_elem_bytes(const int t, int64_t n) {
  switch (t) {
  case TXATTN_DTYPE_F32:
    return 4 * n;
  case TXATTN_DTYPE_Q8_0:
    return n / 32 * (int64_t)sizeof(txattn_block_q8_0) + n % 32;
  case TXATTN_DTYPE_Q4_0:
    return n / 32 * (int64_t)sizeof(txattn_block_q4_0) + n % 32 / 2;
  case TXATTN_DTYPE_E4M3:
  case TXATTN_DTYPE_E5M2:
    return n;
  default:
    return 2 * n;
  }
}
/* The f16 at p (any alignment) in every lane. */
TILED_INLINE vf tl_bcast_f16(const void *p) {
  uint16_t h;
  memcpy(&h, p, sizeof h);
  return vf_set1_f16(h);
}
/* VEC_W values of a K or V row of type t (a constant) from element c (for q8_0 and q4_0 within
   one block), exactly, before the head's factor (tl_kv_scale): f32 and 16-bit as stored, q8_0 q
   and q4_0 q - 8 times the block's f16 scale, e5m2 as stored, e4m3 times 2^-8 (vf_loadu_e4m3). */
TILED_INLINE vf tl_loadu_unscaled(const void *row, const int t, int64_t c) {
  const unsigned char *r = (const unsigned char *)row;
  if (t == TXATTN_DTYPE_Q8_0) {
    const unsigned char *blk = r + c / 32 * (int64_t)sizeof(txattn_block_q8_0);
    return vf_mul(vf_loadu_i8((const int8_t *)blk + 2 + c % 32), tl_bcast_f16(blk));
  }
  if (t == TXATTN_DTYPE_Q4_0) { /* the low nibbles hold values 0-15, the high ones 16-31 */
    const unsigned char *blk = r + c / 32 * (int64_t)sizeof(txattn_block_q4_0);
    uint8_t x[VEC_W];
    int8_t q[VEC_W];
    memcpy(x, blk + 2 + c % 16, sizeof x);
    if (c % 32 >= 16)
      for (int i = 0; i < VEC_W; i++) q[i] = (int8_t)((x[i] >> 4) - 8);
    else
      for (int i = 0; i < VEC_W; i++) q[i] = (int8_t)((x[i] & 0x0f) - 8);
    return vf_mul(vf_loadu_i8(q), tl_bcast_f16(blk));
  }
  if (t == TXATTN_DTYPE_E4M3) return vf_loadu_e4m3(r + c);
  if (t == TXATTN_DTYPE_E5M2) return vf_loadu_e5m2(r + c);
  return tl_loadu_as(row, t, c);
}
/* Whether tl_loadu2_fp8 widens rows of type t two vectors at a time (fp8 where the vector layer
   has its pair loads). */
#ifdef VF_HAVE_FP8X2
#define TL_FP8X2(t) ((t) == TXATTN_DTYPE_E4M3 || (t) == TXATTN_DTYPE_E5M2)
#else
#define TL_FP8X2(t) 0
#endif
/* Elements c .. c + 2 VEC_W of an fp8 row (TL_FP8X2) into *lo, *hi: tl_loadu_unscaled's values. */
TILED_INLINE void tl_loadu2_fp8(const void *row, const int t, int64_t c, vf *lo, vf *hi) {
#ifdef VF_HAVE_FP8X2
  if (t == TXATTN_DTYPE_E4M3)
    vf_loadu_e4m3x2((const uint8_t *)row + c, lo, hi);
  else
    vf_loadu_e5m2x2((const uint8_t *)row + c, lo, hi);
#else
  *lo = tl_loadu_unscaled(row, t, c);
  *hi = tl_loadu_unscaled(row, t, c + VEC_W);
#endif
}
/* The same values as every kernel computes on them (txattn_row_to_f32): fp8 times its head's factor
   sc (tl_kv_scale, in every lane), rounded to fp32 once: the product of the stored value and the
   head's scale, rounded once, as the factor's 2^8 for e4m3 moves no rounding (every such product is
   a normal fp32). */
TILED_INLINE vf tl_loadu_kv(const void *row, const int t, int64_t c, vf sc) {
  const vf x = tl_loadu_unscaled(row, t, c);
  return t == TXATTN_DTYPE_E4M3 || t == TXATTN_DTYPE_E5M2 ? vf_mul(x, sc) : x;
}
/* Element c of such a row, one value (txattn_row_to_f32's). */
TILED_INLINE float tl_elem_kv(const void *row, const int t, int64_t c, float sc) {
  const unsigned char *r = (const unsigned char *)row;
  if (t == TXATTN_DTYPE_Q8_0) {
    const unsigned char *blk = r + c / 32 * (int64_t)sizeof(txattn_block_q8_0);
    uint16_t h;
    memcpy(&h, blk, sizeof h);
    return (float)(int8_t)blk[2 + c % 32] * txh_f16_to_f32(h);
  }
  if (t == TXATTN_DTYPE_Q4_0) {
    const txattn_block_q4_0 *blk =
        (const txattn_block_q4_0 *)(r + c / 32 * (int64_t)sizeof(txattn_block_q4_0));
    return (float)txattn_q4_0_int(blk, c % 32) * txh_f16_to_f32(blk->d);
  }
  if (t == TXATTN_DTYPE_E4M3) return txattn_e4m3_value(r[c]) * 0x1p-8f * sc;
  if (t == TXATTN_DTYPE_E5M2) return txattn_e5m2_value(r[c]) * sc;
  return tl_elem_as(row, t, c);
}
/* n values of a K or V row of type t (any alignment; fp8 times sc) into dst (aligned), zero up to
   np. */
static void tl_widen_row(const void *src, txattn_dtype t, float sc, int64_t n, int64_t np,
                         float *dst) {
  int64_t c = 0;
  const vf scv = vf_set1(sc);
  if (t == TXATTN_DTYPE_F16)
    vf_row_from_f16(src, n, np, dst);
  else if (t == TXATTN_DTYPE_BF16)
    vf_row_from_bf16(src, n, np, dst);
  else {
    for (; c + VEC_W <= n; c += VEC_W) vf_store(dst + c, tl_loadu_kv(src, t, c, scv));
    for (; c < n; c++) dst[c] = tl_elem_kv(src, t, c, sc);
    for (; c < np; c++) dst[c] = 0.0f;
  }
}
/* The factor of KV head kvh's K (is_k) or V where that is fp8, else 1 (unused): what
   tl_loadu_unscaled's values are multiplied by, the head's fp32 scale (times 2^8 for e4m3: exact,
   as the scales an fp8 type takes keep 448 times them finite). */
static inline float tl_kv_scale(const tiled_geom *g, int is_k, int64_t kvh) {
  const float *sc = is_k ? txattn_k_scale_of(g->p, g->t) : txattn_v_scale_of(g->p, g->t);
  const txattn_dtype t = is_k ? g->p->k_type : g->p->v_type;
  return sc ? sc[kvh] * (t == TXATTN_DTYPE_E4M3 ? 256.0f : 1.0f) : 1.0f;
}
/* Where the vector layer has vf_loadu_bf16x2 and the direct path's P V tiles are whole pairs of
   vectors: the row "type" of bf16 K and V read 2 VEC_W elements at a time as their even and their odd
   elements (tiled_direct_algo.h, TD_BF16X2), so register 2 c + 1 of a row holds the odd elements of
   the columns whose even ones register 2 c holds. Not a txattn_dtype. */
#if defined(VF_HAVE_BF16X2) && TILED_DNT % 2 == 0
#define TL_BF16X2 0x7F
#endif
/* Element c of a row of (run-time) type t: the row loaders' Q, once per row. */
static inline float tl_elem(const void *row, txattn_dtype t, int64_t c) {
  switch (t) {
  case TXATTN_DTYPE_F16:
    return tl_elem_as(row, TXATTN_DTYPE_F16, c);
  case TXATTN_DTYPE_BF16:
    return tl_elem_as(row, TXATTN_DTYPE_BF16, c);
  default:
    return tl_elem_as(row, TXATTN_DTYPE_F32, c);
  }
}

/* ---- packing ---- */

/* Rows are prefetched this many keys ahead while packing: a decode call packs every key block straight
   from memory, and the hint keeps enough misses in flight (8 measured best, docs/measurements.md).
   Always inlined: as a separate void function
   GCC 12 judges it free of side effects and deletes its calls. */
#define TILED_PREFETCH_ROWS 8

TILED_INLINE void tl_prefetch_row(const tiled_geom *g, const void *base, const int t,
                                  const txattn_layout *l, int64_t b, int64_t kvh, int64_t key,
                                  int64_t len) {
  if (key >= g->p->n_kv) return;
  const char *row = tl_kv_row(g, base, t, l, b, kvh, key);
  const int64_t bytes = tl_elem_bytes(t, len);
  for (int64_t c = 0; c < bytes; c += 64) __builtin_prefetch(row + c, 0, 0);
  __builtin_prefetch(row + bytes - 1, 0, 0); /* rows not aligned to lines (q8_0's) */
}

/* Prefetches into L2 the cache lines of the `bytes` bytes at p (any alignment). Always inlined,
   as every function here that prefetches: GCC judges a separate void function of prefetches free
   of side effects and deletes its calls. */
TILED_INLINE void tl_prefetch_l2(const void *p, int64_t bytes) {
  for (int64_t c = 0; c < bytes; c += 64) __builtin_prefetch((const char *)p + c, 0, 2);
  __builtin_prefetch((const char *)p + bytes - 1, 0, 2);
}

/* Keys [key, key + W) of a K panel of type kt, all present: W x W transposes (a block of another
   type is widened into tmp first, fp8 times the head's scale), then the columns past the last full
   vector one by one. */
TILED_INLINE void tl_pack_k_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t key,
                                 float *dst, const int kt) {
  const txattn_tensors *t = g->t;
  int64_t c = 0;
  if (kt == TXATTN_DTYPE_F32) {
    const float *rows[VEC_W];
    for (int r = 0; r < VEC_W; r++) {
      rows[r] = tl_kv_row(g, t->k, kt, &t->k_layout, b, kvh, key + r);
      tl_prefetch_row(g, t->k, kt, &t->k_layout, b, kvh, key + r + TILED_PREFETCH_ROWS, g->dqk);
    }
    for (; c + VEC_W <= g->dqk; c += VEC_W) vf_transpose(rows, c, dst + c * TILED_KW, TILED_KW);
    for (; c < g->dqk; c++)
      for (int r = 0; r < VEC_W; r++) dst[c * TILED_KW + r] = rows[r][c];
    return;
  }
  const void *rows[VEC_W];
  _Alignas(64) float tmp[VEC_W * VEC_W];
  const float *tr[VEC_W];
  const float sc = tl_kv_scale(g, 1, kvh);
  const vf scv = vf_set1(sc);
  for (int r = 0; r < VEC_W; r++) {
    rows[r] = tl_kv_row(g, t->k_data, kt, &t->k_layout, b, kvh, key + r);
    tl_prefetch_row(g, t->k_data, kt, &t->k_layout, b, kvh, key + r + TILED_PREFETCH_ROWS, g->dqk);
    tr[r] = tmp + r * VEC_W;
  }
  for (; c + VEC_W <= g->dqk; c += VEC_W) {
    for (int r = 0; r < VEC_W; r++) vf_store(tmp + r * VEC_W, tl_loadu_kv(rows[r], kt, c, scv));
    vf_transpose(tr, 0, dst + c * TILED_KW, TILED_KW);
  }
  for (; c < g->dqk; c++)
    for (int r = 0; r < VEC_W; r++) dst[c * TILED_KW + r] = tl_elem_kv(rows[r], kt, c, sc);
}

/* K of keys [k0, k0 + nk) as panels of KW keys, each [dqk][KW], zero beyond nk so that padded
   scores are finite. */
TILED_INLINE void tl_pack_k_as(const tiled_geom *g, int64_t b, int64_t kvh, int64_t k0, int64_t nk,
                               float *dst, const int kt) {
  const txattn_tensors *t = g->t;
  const int64_t dqk = g->dqk, npanels = (nk + TILED_KW - 1) / TILED_KW;
  const float sc = tl_kv_scale(g, 1, kvh);
  for (int64_t pn = 0; pn < npanels; pn++) {
    float *panel = dst + pn * TILED_KW * dqk;
    for (int64_t jj = 0; jj < TILED_KW; jj += VEC_W) {
      const int64_t j = pn * TILED_KW + jj;
      if (j + VEC_W <= nk) {
        tl_pack_k_rows(g, b, kvh, k0 + j, panel + jj, kt);
        continue;
      }
      for (int64_t r = 0; r < VEC_W; r++) {
        const void *row =
            j + r < nk ? tl_kv_row(g, t->k_data, kt, &t->k_layout, b, kvh, k0 + j + r) : NULL;
        for (int64_t c = 0; c < dqk; c++)
          panel[c * TILED_KW + jj + r] = row ? tl_elem_kv(row, kt, c, sc) : 0.0f;
      }
    }
  }
}

/* V of the same keys as panels of NRV vectors of columns, each [bc][NRV * W] (the last one
   narrower), zero beyond d_v. */
TILED_INLINE void tl_pack_v_as(const tiled_geom *g, int64_t b, int64_t kvh, int64_t k0, int64_t nk,
                               float *dst, const int vt) {
  const txattn_tensors *t = g->t;
  const float sc = tl_kv_scale(g, 0, kvh);
  const vf scv = vf_set1(sc);
  for (int64_t j = 0; j < nk; j++) {
    const void *row = tl_kv_row(g, t->v_data, vt, &t->v_layout, b, kvh, k0 + j);
    tl_prefetch_row(g, t->v_data, vt, &t->v_layout, b, kvh, k0 + j + TILED_PREFETCH_ROWS, g->dv);
    for (int64_t col = 0; col < g->dvp; col += TILED_NRV * VEC_W) {
      const int64_t wt = tl_min(TILED_NRV * VEC_W, g->dvp - col), nv = tl_min(wt, g->dv - col);
      float *dv = dst + col * g->bc + j * wt;
      int64_t c = 0;
      for (; c + VEC_W <= nv; c += VEC_W) vf_store(dv + c, tl_loadu_kv(row, vt, col + c, scv));
      for (; c < nv; c++) dv[c] = tl_elem_kv(row, vt, col + c, sc);
      for (; c < wt; c++) dv[c] = 0.0f;
    }
  }
}

/* One instantiation of the K and the V packing per element type. */
#define TILED_PACK_TYPE(name, type)                                                                \
  __attribute__((noinline)) static void tl_pack_k_##name(                                          \
      const tiled_geom *g, int64_t b, int64_t kvh, int64_t k0, int64_t nk, float *dst) {           \
    tl_pack_k_as(g, b, kvh, k0, nk, dst, type);                                                    \
  }                                                                                                \
  __attribute__((noinline)) static void tl_pack_v_##name(                                          \
      const tiled_geom *g, int64_t b, int64_t kvh, int64_t k0, int64_t nk, float *dst) {           \
    tl_pack_v_as(g, b, kvh, k0, nk, dst, type);                                                    \
  }
TILED_PACK_TYPE(f32, TXATTN_DTYPE_F32)
TILED_PACK_TYPE(f16, TXATTN_DTYPE_F16)
TILED_PACK_TYPE(bf16, TXATTN_DTYPE_BF16)
TILED_PACK_TYPE(q8_0, TXATTN_DTYPE_Q8_0)
TILED_PACK_TYPE(e4m3, TXATTN_DTYPE_E4M3)
TILED_PACK_TYPE(e5m2, TXATTN_DTYPE_E5M2)
TILED_PACK_TYPE(q4_0, TXATTN_DTYPE_Q4_0)

/* One packed key block: both micro-kernels then stream contiguous, aligned fp32 panels. Strides (0
   included), interleaved layouts and element types are only ever read here. */
static void tl_pack_block(const tiled_geom *g, int64_t b, int64_t kvh, int64_t k0, int64_t nk,
                          float *dst) {
  float *vdst = dst + g->bc * g->dqk;
  switch (g->p->k_type) {
  case TXATTN_DTYPE_F16:
    tl_pack_k_f16(g, b, kvh, k0, nk, dst);
    break;
  case TXATTN_DTYPE_BF16:
#ifdef TILED_QK_PAIRS /* tiled_avx512bf16.c: K as bf16 pairs for vdpbf16ps */
    tlp_pack_k(g, b, kvh, k0, nk, dst);
#else
    tl_pack_k_bf16(g, b, kvh, k0, nk, dst);
#endif
    break;
  case TXATTN_DTYPE_Q8_0:
    tl_pack_k_q8_0(g, b, kvh, k0, nk, dst);
    break;
  case TXATTN_DTYPE_E4M3:
    tl_pack_k_e4m3(g, b, kvh, k0, nk, dst);
    break;
  case TXATTN_DTYPE_E5M2:
    tl_pack_k_e5m2(g, b, kvh, k0, nk, dst);
    break;
  case TXATTN_DTYPE_Q4_0:
    tl_pack_k_q4_0(g, b, kvh, k0, nk, dst);
    break;
  default:
    tl_pack_k_f32(g, b, kvh, k0, nk, dst);
    break;
  }
  switch (g->p->v_type) {
  case TXATTN_DTYPE_F16:
    tl_pack_v_f16(g, b, kvh, k0, nk, vdst);
    break;
  case TXATTN_DTYPE_BF16:
    tl_pack_v_bf16(g, b, kvh, k0, nk, vdst);
    break;
  case TXATTN_DTYPE_Q8_0:
    tl_pack_v_q8_0(g, b, kvh, k0, nk, vdst);
    break;
  case TXATTN_DTYPE_E4M3:
    tl_pack_v_e4m3(g, b, kvh, k0, nk, vdst);
    break;
  case TXATTN_DTYPE_E5M2:
    tl_pack_v_e5m2(g, b, kvh, k0, nk, vdst);
    break;
  case TXATTN_DTYPE_Q4_0:
    tl_pack_v_q4_0(g, b, kvh, k0, nk, vdst);
    break;
  default:
    tl_pack_v_f32(g, b, kvh, k0, nk, vdst);
    break;
  }
}

static void tl_pack_kv(const tiled_geom *g, int64_t b, int64_t kvh, int64_t kb0, int64_t kb1,
                       float *head) {
  for (int64_t kb = kb0; kb < kb1; kb++) {
    int64_t k0 = kb * g->bc;
    tl_pack_block(g, b, kvh, k0, tl_min(g->bc, g->p->n_kv - k0), head + kb * g->kv_block);
  }
}

/* Query rows [t0, t1) (negated if the scale is negative: exact) into s->qp, their visible ranges
   clipped to [kr0, kr1) into s->lo/hi, and m, l, acc reset. Rows up to the next multiple of MR are
   padding: zero queries with the last row's range, so they never narrow a group's common range;
   their results are discarded. */
static void tl_load_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                         int64_t kr0, int64_t kr1, const tiled_scratch *s) {
  const txattn_tensors *t = g->t;
  const int64_t dqk = g->dqk, nr = t1 - t0, nrp = (nr + TILED_MR - 1) / TILED_MR * TILED_MR;
  for (int64_t r = 0; r < nrp; r++) {
    float *qg = s->qp + (r / TILED_MR) * TILED_MR * dqk + r % TILED_MR;
    if (r < nr) {
      int64_t row = t0 + r, i = row / g->group, h = kvh * g->group + row % g->group, lo, hi;
      const txattn_dtype qt = g->p->q_type;
      const void *q = txattn_row_of(t->q_data, qt, &t->q_layout, b, h, i);
      if (qt == TXATTN_DTYPE_F32)
        for (int64_t c = 0; c < dqk; c++) qg[c * TILED_MR] = ((const float *)q)[c] * g->qsign;
#ifdef TILED_QK_PAIRS
      else if (qt == TXATTN_DTYPE_BF16) /* as bf16 pairs (tiled_avx512bf16.c) */
        tlp_load_q(qg - r % TILED_MR, r % TILED_MR, q, dqk, g->qsign);
#endif
      else /* widened here, once per row block */
        for (int64_t c = 0; c < dqk; c++) qg[c * TILED_MR] = tl_elem(q, qt, c) * g->qsign;
      int64_t sink_hi;
      txattn_visible_ranges(g->p, i, &sink_hi, &lo, &hi);
      s->lo[r] = tl_clamp(lo, kr0, kr1);
      s->hi[r] = tl_clamp(hi, kr0, kr1);
      if (s->pos) {
        s->pos[r] = i + g->p->n_kv - g->p->n_q;
        s->slope[r] = g->slopes ? g->slopes[h] : 0.0f;
      }
      if (g->mask) s->mrow[r] = txattn_mask_row(g->p, t, b, h, i);
      if (g->vis && s->msum)
        memcpy(s->msum + r * g->n_kblocks,
               g->vis + ((b * g->vis_b + h * g->vis_h) * g->p->n_q + i) * g->n_kblocks,
               (size_t)g->n_kblocks);
      if (g->sink_keys > 0) { /* the sink keys' pass first (tl_process_all) */
        s->lo2[r] = s->lo[r];
        s->hi2[r] = s->hi[r];
        s->lo[r] = tl_clamp(0, kr0, kr1);
        s->hi[r] = tl_clamp(sink_hi, kr0, kr1);
      }
    } else {
      for (int64_t c = 0; c < dqk; c++) qg[c * TILED_MR] = 0.0f;
      s->lo[r] = s->lo[nr - 1];
      s->hi[r] = s->hi[nr - 1];
      if (s->pos) {
        s->pos[r] = s->pos[nr - 1];
        s->slope[r] = s->slope[nr - 1];
      }
      if (g->mask) s->mrow[r] = s->mrow[nr - 1];
      if (g->vis && s->msum)
        memcpy(s->msum + r * g->n_kblocks, s->msum + (nr - 1) * g->n_kblocks, (size_t)g->n_kblocks);
      if (g->sink_keys > 0) {
        s->lo2[r] = s->lo2[nr - 1];
        s->hi2[r] = s->hi2[nr - 1];
      }
    }
    s->m[r] = -INFINITY;
    s->l[r] = 0.0;
  }
  memset(s->acc, 0, (size_t)(nrp * g->dvp) * sizeof(float));
  memset(s->acc_c, 0, (size_t)(nrp * g->dvp) * sizeof(float));
}

/* ---- micro-kernels ---- */

/* S[r][0 .. KW) = sum_c q[c][r] * panel[c][0 .. KW) for the MR rows of a group. */
static void tl_scores_panel(const float *qg, const float *panel, int64_t dqk, float *srow,
                            int64_t sld) {
  vf acc[TILED_MR][TILED_NRS];
#pragma GCC unroll 8
  for (int r = 0; r < TILED_MR; r++)
#pragma GCC unroll 4
    for (int n = 0; n < TILED_NRS; n++) acc[r][n] = vf_zero();
  for (int64_t c = 0; c < dqk; c++) {
    vf kv[TILED_NRS];
#pragma GCC unroll 4
    for (int n = 0; n < TILED_NRS; n++) kv[n] = vf_load(panel + c * TILED_KW + n * VEC_W);
#pragma GCC unroll 8
    for (int r = 0; r < TILED_MR; r++) {
      vf qb = vf_bcast(qg + c * TILED_MR + r);
#pragma GCC unroll 4
      for (int n = 0; n < TILED_NRS; n++) acc[r][n] = vf_fma(qb, kv[n], acc[r][n]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < TILED_MR; r++)
#pragma GCC unroll 4
    for (int n = 0; n < TILED_NRS; n++) vf_store(srow + r * sld + n * VEC_W, acc[r][n]);
}

/* o[r][n] += sum_{j in [j0, j1)} p[r][j] v[j][n W ..] for mr rows and nrv vectors of columns of
   fp32 V rows vld floats apart, aligned to the vector size: the key loop of tl_pv_tile. */
TILED_INLINE void tl_pv_keys(vf o[TILED_PV_ROWS][TILED_PV_COLS], const float *p, int64_t pld,
                             const float *v, int64_t vld, int64_t j0, int64_t j1, const int mr,
                             const int nrv) {
  for (int64_t j = j0; j < j1; j++) {
    vf vv[TILED_PV_COLS];
#pragma GCC unroll 8
    for (int n = 0; n < nrv; n++) vv[n] = vf_load(v + j * vld + n * VEC_W);
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
      vf pb = vf_bcast(p + r * pld + j);
#pragma GCC unroll 8
      for (int n = 0; n < nrv; n++) o[r][n] = vf_fma(pb, vv[n], o[r][n]);
    }
  }
}

/* z with infinities replaced by +-FLT_MAX (NaN stays NaN). */
TILED_INLINE vf tl_clamp_finite(vf z) {
  return vf_min(vf_set1(FLT_MAX), vf_max(vf_set1(-FLT_MAX), z));
}

/* acc + x with Kahan's compensation c (acc and c first scaled by a unless a is 1), for one vector:
   the true sum is acc - c. c is always finite (or NaN with acc): where acc becomes infinite (an
   infinite V, or an fp32 overflow), Kahan's (t - s) - y would be Inf - Inf, and a NaN c would turn
   the next add's infinite acc into NaN, unlike the reference. The clamps change no finite step. */
TILED_INLINE void tl_kahan_add(float *acc, float *cmp, vf x, vf a, int scale) {
  vf s = vf_load(acc), c = vf_load(cmp);
  if (scale) {
    s = vf_mul(s, a);
    c = vf_mul(c, a);
  }
  const vf y = vf_sub(x, c), t = vf_add(s, y);
  /* with t clamped, an infinite t gives an infinite c, never Inf - Inf */
  vf_store(cmp, tl_clamp_finite(vf_sub(vf_sub(tl_clamp_finite(t), s), y)));
  vf_store(acc, t);
}

/* The tiled path's P V: acc[r][0 .. nrv W) = acc * alpha[r] (if alpha) + sum_{j in [j0, j1)}
   p[r][j] v[j][0 .. nrv W) for mr rows (fp32 V rows vld floats apart, aligned). The keys go in spans
   of at most TILED_PV_SPAN, each summed from zero in registers and added to acc with Kahan's
   compensation, kept per element in cmp (same layout as acc, scaled by alpha with it; the true sum
   is acc - cmp, tl_fold_acc): a running output taking one fp32 rounding per key drifts by about
   n_kv u relative when V has a mean far from 0, this by about TILED_PV_SPAN u (docs/error_bound.md,
   the bound on O). */
#define TILED_PV_SPAN 256
TILED_INLINE void tl_pv_tile(float *acc, float *cmp, int64_t ald, const float *alpha,
                             const float *p, int64_t pld, const float *v, int64_t vld, int64_t j0,
                             int64_t j1, const int mr, const int nrv) {
  vf o[TILED_PV_ROWS][TILED_PV_COLS];
  int64_t j = j0;
  int first = 1;
  do {
    const int64_t je = tl_min(j1, j + TILED_PV_SPAN);
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 8
      for (int n = 0; n < nrv; n++) o[r][n] = vf_zero();
    tl_pv_keys(o, p, pld, v, vld, j, je, mr, nrv);
    j = je;
    int scale = 0; /* alpha is exactly 1 for every row unless some max grew: nothing to scale */
    if (first && alpha)
#pragma GCC unroll 8
      for (int r = 0; r < mr; r++) scale |= alpha[r] != 1.0f;
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
      vf a = scale ? vf_bcast(alpha + r) : vf_set1(1.0f);
#pragma GCC unroll 8
      for (int n = 0; n < nrv; n++)
        tl_kahan_add(acc + r * ald + n * VEC_W, cmp + r * ald + n * VEC_W, o[r][n], a, scale);
    }
    first = 0;
  } while (j < j1);
}

/* acc = acc - cmp (the compensated sums) for nr rows of ld floats, before they are written or
   merged. cmp is finite wherever acc is not NaN (tl_kahan_add), so an infinite acc stays the same
   infinity, as in the reference. */
static void tl_fold_acc(float *acc, const float *cmp, int64_t nr, int64_t ld) {
  for (int64_t i = 0; i < nr * ld; i++) acc[i] -= cmp[i];
}

/* tl_pv_tile on the V panel of columns [col, col + NRV W) (narrower for the last panel). */
TILED_INLINE void tl_pv_panel(const tiled_geom *g, float *acc, float *cmp, const float *alpha,
                              const float *p, const float *vblk, int64_t col, int64_t j0,
                              int64_t j1, const int mr) {
  const int64_t dvp = g->dvp, bc = g->bc;
  const float *v = vblk + col * bc;
  switch (tl_min(TILED_NRV, (dvp - col) / VEC_W)) {
  case TILED_NRV:
    tl_pv_tile(acc + col, cmp + col, dvp, alpha, p, bc, v, TILED_NRV * VEC_W, j0, j1, mr,
               TILED_NRV);
    break;
#if TILED_NRV > 3
  case 3:
    tl_pv_tile(acc + col, cmp + col, dvp, alpha, p, bc, v, 3 * VEC_W, j0, j1, mr, 3);
    break;
#endif
#if TILED_NRV > 2
  case 2:
    tl_pv_tile(acc + col, cmp + col, dvp, alpha, p, bc, v, 2 * VEC_W, j0, j1, mr, 2);
    break;
#endif
#if TILED_NRV > 1
  case 1:
    tl_pv_tile(acc + col, cmp + col, dvp, alpha, p, bc, v, VEC_W, j0, j1, mr, 1);
    break;
#endif
  default:
    break;
  }
}

/* One row's keys [j0, j1) across all columns (the ragged edges of a group's common range). */
static void tl_pv_row(const tiled_geom *g, float *acc, float *cmp, const float *p,
                      const float *vblk, int64_t j0, int64_t j1) {
  if (j0 >= j1) return;
  for (int64_t col = 0; col < g->dvp; col += TILED_NRV * VEC_W)
    tl_pv_panel(g, acc, cmp, NULL, p, vblk, col, j0, j1, 1);
}

/* ---- online softmax of one row over its visible keys [a, b) of the block ---- */

/* The max over [a, b); the lanes of the edge vectors outside [a, b) are set to -inf first, so the
   exp pass below may run over whole vectors. */
static float tl_row_max(float *srow, int64_t a, int64_t b) {
  const int64_t av = a / VEC_W * VEC_W, bv = (b + VEC_W - 1) / VEC_W * VEC_W;
  for (int64_t c = av; c < a; c++) srow[c] = -INFINITY;
  for (int64_t c = b; c < bv; c++) srow[c] = -INFINITY;
  vf mx = vf_set1(-INFINITY);
  for (int64_t c = av; c < bv; c += VEC_W) mx = vf_max(mx, vf_load(srow + c));
  return vf_hmax(mx);
}

/* srow[c] = 2^((srow[c] - ref) * scale2) over the vectors covering [a, b); returns their sum. ref is
   the max of the same stored scores, so srow[c] - ref <= 0 exactly (0 for the max: a weight of 1)
   whatever the magnitudes, and the rounding is relative to s - max, not to s (the fused s * scale2
   - ref rounded the product apart from the max: arguments up to ulp(max) / 2 > 0, 2^16384 at
   scale 1e10). Always inlined: GCC puts it out of line once the direct path calls it too, which
   costs time (docs/measurements.md). */
TILED_INLINE float tl_row_exp(float *srow, int64_t a, int64_t b, float scale2, float ref) {
  const int64_t av = a / VEC_W * VEC_W, bv = (b + VEC_W - 1) / VEC_W * VEC_W;
  const vf r = vf_set1(ref), sc = vf_set1(scale2);
  vf sum0 = vf_zero(), sum1 = vf_zero();
  int64_t c = av;
  for (; c + 2 * VEC_W <= bv; c += 2 * VEC_W) {
    vf p0 = vf_exp2_weight(vf_mul(vf_sub(vf_load(srow + c), r), sc));
    vf p1 = vf_exp2_weight(vf_mul(vf_sub(vf_load(srow + c + VEC_W), r), sc));
    vf_store(srow + c, p0);
    vf_store(srow + c + VEC_W, p1);
    sum0 = vf_add(sum0, p0);
    sum1 = vf_add(sum1, p1);
  }
  if (c < bv) {
    vf p0 = vf_exp2_weight(vf_mul(vf_sub(vf_load(srow + c), r), sc));
    vf_store(srow + c, p0);
    sum0 = vf_add(sum0, p0);
  }
  return vf_hsum(vf_add(sum0, sum1));
}

/* Row r's visible keys within the block [k0, k0 + nk), relative to k0 (empty: *a >= *b). */
static void tl_row_keys(const tiled_scratch *s, int64_t r, int64_t k0, int64_t nk, int64_t *a,
                        int64_t *b) {
  *a = tl_clamp(s->lo[r] - k0, 0, nk);
  *b = tl_clamp(s->hi[r] - k0, 0, nk);
}

/* What rows [r0, r0 + nr) see of the block: the union [ga, gb) (empty if no row sees anything) and
   the common part [ca, cb) every row sees (empty if some row's range differs too much). */
static tiled_span tl_rows_span(const tiled_scratch *s, int64_t r0, int64_t nr, int64_t k0,
                               int64_t nk) {
  tiled_span sp = {nk, 0, 0, nk};
  for (int64_t r = r0; r < r0 + nr; r++) {
    int64_t a, b;
    tl_row_keys(s, r, k0, nk, &a, &b);
    if (a < b) {
      sp.ga = tl_min(sp.ga, a);
      sp.gb = tl_max(sp.gb, b);
    }
    sp.ca = tl_max(sp.ca, a);
    sp.cb = tl_min(sp.cb, b);
  }
  return sp;
}

/* Step 2 for rows [r0, r0 + nr) (nr a constant at every call), their scores sld apart: updates m
   and l, turns S into P, writes alpha per row. */
TILED_INLINE void tl_softmax_rows(const tiled_geom *g, const tiled_scratch *s, int64_t r0,
                                  const int nr, int64_t sld, int64_t k0, int64_t nk) {
  enum { PAD = (TILED_PV_ROWS + VEC_W - 1) / VEC_W * VEC_W }; /* rows padded to whole vectors */
  _Alignas(64) float mold[PAD], ref[PAD], alpha[PAD];
  int64_t a[TILED_PV_ROWS], b[TILED_PV_ROWS];
  const int nrp = (nr + VEC_W - 1) / VEC_W * VEC_W;
  float *srows = s->s + r0 * sld;
  for (int r = 0; r < nrp; r++) mold[r] = ref[r] = 0.0f;
  for (int r = 0; r < nr; r++) {
    float m = s->m[r0 + r], mnew = m;
    tl_row_keys(s, r0 + r, k0, nk, &a[r], &b[r]);
    if (a[r] < b[r]) {
      float bm = tl_row_max(srows + r * sld, a[r], b[r]); /* unscaled, as m */
      if (bm > mnew) mnew = bm; /* a NaN bm is left out: its NaN scores reach l through P */
    }
    mold[r] = m;
    ref[r] = mnew == -INFINITY ? 0.0f : mnew;
    s->m[r0 + r] = mnew;
  }
  for (int r = 0; r < nrp; r += VEC_W)
    vf_store(alpha + r, vf_exp2_weight(vf_mul(vf_sub(vf_load(mold + r), vf_load(ref + r)),
                                              vf_set1(g->scale2))));
  for (int r = 0; r < nr; r++) {
    float sum = a[r] < b[r] ? tl_row_exp(srows + r * sld, a[r], b[r], g->scale2, ref[r]) : 0.0f;
    s->l[r0 + r] = s->l[r0 + r] * (double)alpha[r] + (double)sum; /* fp64: tiled_scratch.l */
    s->alpha[r0 + r] = alpha[r];
  }
}

/* Step 2 for the MR rows of group gi. */
static void tl_softmax_group(const tiled_geom *g, const tiled_scratch *s, int64_t gi, int64_t k0,
                             int64_t nk) {
  tl_softmax_rows(g, s, gi * TILED_MR, TILED_MR, g->bc, k0, nk);
}

/* ---- score modifiers ---- */

/* The modified scores of one row over the vectors covering [a, b) of a block starting at key k0:
   x = fl(scale s), then c tanh(x / c) (softcap, as c vf_tanh(x fl(1/c))), then + m (j - pos) in
   one fused multiply-add (ALiBi; j - pos is exact below 2^24). docs/error_bound.md, "Score
   modifiers", bounds the error of each step. */
TILED_INLINE void tl_modify_row(const tiled_geom *g, float *srow, int64_t a, int64_t b, int64_t k0,
                                float slope, int64_t pos) {
  _Alignas(64) static const float iota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  _Static_assert(VEC_W <= 16, "iota holds 16 lanes");
  const int64_t av = a / VEC_W * VEC_W, bv = (b + VEC_W - 1) / VEC_W * VEC_W;
  const vf sc = vf_set1(g->scale), cap = vf_set1(g->softcap), inv = vf_set1(g->inv_softcap),
           m = vf_set1(slope), lanes = vf_load(iota);
  const int capped = g->softcap > 0.0f, alibi = g->slopes != NULL;
  for (int64_t c = av; c < bv; c += VEC_W) {
    vf x = vf_mul(vf_load(srow + c), sc);
    if (capped) x = vf_mul(cap, vf_tanh(vf_mul(x, inv)));
    if (alibi) x = vf_fma(m, vf_add(vf_set1((float)(k0 + c - pos)), lanes), x);
    vf_store(srow + c, x);
  }
}

/* ---- mask tensors ---- */

/* srow[j - k0] += the mask's value of key j, for j in [k0 + a, k0 + b) (exactly those keys: the
   mask holds no others): a boolean mask sets the hidden scores to -inf, an additive one adds its
   value (widened exactly). Contiguous rows (key stride 1) go by vectors. Returns whether the mask
   may hide one of those keys: a boolean 0, an additive value not finite (-inf hides; +inf and NaN
   only cost the careful P V path). An additive mask is known to hide nothing once it has been
   read, so the pass that adds it tells, not the summary. */
TILED_INLINE int tl_mask_row(const tiled_geom *g, float *srow, const void *mrow, int64_t a,
                             int64_t b, int64_t k0) {
  if (g->mask_key != 1) return txm_mask_add_keys(g->p, g->t, mrow, srow + a, b - a, k0 + a);
  if (g->mask == TXATTN_MASK_TENSOR_BOOL)
    return txm_mask_bool_keys(srow + a, (const unsigned char *)mrow + k0 + a, b - a);
  const txattn_dtype mt = g->p->mask_type;
  const unsigned char *m = (const unsigned char *)mrow + k0 * (mt == TXATTN_DTYPE_F32 ? 4 : 2);
  vf nf = vf_zero(); /* the sum of each value times 0: NaN iff a value is not finite */
  int64_t j = a;
  for (; j + VEC_W <= b; j += VEC_W) {
    const vf mv = tl_loadu_as(m, mt, j);
    vf x = vf_add(vf_loadu(srow + j), mv);
    nf = vf_fma(mv, vf_zero(), nf);
    _Alignas(64) float buf[VEC_W];
    vf_store(buf, x);
    memcpy(srow + j, buf, sizeof buf);
  }
  int hides = vf_hsum(nf) != 0.0f;
  for (; j < b; j++) {
    const float x = tl_elem(m, mt, j);
    hides |= !isfinite(x);
    srow[j] += x;
  }
  return hides;
}

/* tiled_ops.bool_scan: with AVX-512 BW or AVX2, the bytes' max (some key shown if it is not 0)
   and min (some key hidden if it is 0) over 4 vectors at a time; else 8 bytes at a time as words.
   The summary streams the mask from memory through this loop, so it is kept lean. */
static unsigned tl_bool_scan(const unsigned char *m, int64_t j0, int64_t j1, unsigned want) {
  unsigned seen = 0;
  int64_t j = j0;
#if defined(__AVX512BW__) || defined(__AVX2__)
#if defined(__AVX512BW__)
  typedef __m512i vb;
#define TL_VB_LOAD(p)  _mm512_loadu_si512((const void *)(p))
#define TL_VB_MAX      _mm512_max_epu8
#define TL_VB_MIN      _mm512_min_epu8
#define TL_VB_SHOWS(x) (_mm512_test_epi8_mask(x, x) != 0)
#define TL_VB_HIDES(x) (_mm512_test_epi8_mask(x, x) != ~(__mmask64)0)
#else
  typedef __m256i vb;
#define TL_VB_LOAD(p)  _mm256_loadu_si256((const __m256i *)(p))
#define TL_VB_MAX      _mm256_max_epu8
#define TL_VB_MIN      _mm256_min_epu8
#define TL_VB_SHOWS(x) (!_mm256_testz_si256(x, x))
#define TL_VB_HIDES(x) (_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, _mm256_setzero_si256())) != 0)
#endif
  const int64_t n = (int64_t)sizeof(vb);
  for (; j + 4 * n <= j1 && (seen & want) != want; j += 4 * n) {
    const vb a = TL_VB_LOAD(m + j), b = TL_VB_LOAD(m + j + n), c = TL_VB_LOAD(m + j + 2 * n),
             d = TL_VB_LOAD(m + j + 3 * n);
    const vb hi = TL_VB_MAX(TL_VB_MAX(a, b), TL_VB_MAX(c, d)),
             lo = TL_VB_MIN(TL_VB_MIN(a, b), TL_VB_MIN(c, d));
    seen |= (TL_VB_SHOWS(hi) ? TILED_MASK_SHOWS : 0u) | (TL_VB_HIDES(lo) ? TILED_MASK_HIDES : 0u);
  }
#undef TL_VB_LOAD
#undef TL_VB_MAX
#undef TL_VB_MIN
#undef TL_VB_SHOWS
#undef TL_VB_HIDES
#endif
  const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
  for (; j + 8 <= j1 && (seen & want) != want; j += 8) {
    uint64_t w;
    memcpy(&w, m + j, sizeof w);
    /* (w - ones) & ~w & highs is not 0 exactly when some byte of w is 0 */
    seen |= (w ? TILED_MASK_SHOWS : 0u) | ((w - ones) & ~w & highs ? TILED_MASK_HIDES : 0u);
  }
  for (; j < j1 && (seen & want) != want; j++) seen |= m[j] ? TILED_MASK_SHOWS : TILED_MASK_HIDES;
  return seen;
}

/* s->msum for rows [0, nrp) over their ranges [lo, hi) (and [lo2, hi2) with sink keys), where the
   call has no summary of its own (g->vis, copied by tl_load_rows): each row's mask read once, in
   order. */
static void tl_mask_summary(const tiled_geom *g, const tiled_scratch *s, int64_t nrp) {
  const int64_t nkb = g->n_kblocks, bc = g->bc;
  memset(s->msum, 0, (size_t)(nrp * nkb));
  for (int64_t r = 0; r < nrp; r++) {
    const int64_t ranges[2][2] = {
        {s->lo[r], s->hi[r]}, {g->sink_keys > 0 ? s->lo2[r] : 0, g->sink_keys > 0 ? s->hi2[r] : 0}};
    for (int k = 0; k < 2; k++)
      for (int64_t j = ranges[k][0]; j < ranges[k][1];) {
        const int64_t kb = j / bc, e = tl_min((kb + 1) * bc, ranges[k][1]);
        s->msum[r * nkb + kb] |= (unsigned char)tiled_mask_bits(g, s->mrow[r], j, e);
        j = e;
      }
  }
}

/* Drops from the block every group whose rows the mask shows none of their keys of it: a tile all
   hidden costs its rows' summary bytes (else a scan of its mask), not its scores. */
static void tl_mask_skip(const tiled_geom *g, const tiled_scratch *s, int64_t k0, int64_t nk,
                         int64_t ngr) {
  for (int64_t gi = 0; gi < ngr; gi++) {
    tiled_span *sp = &s->spans[gi];
    if (sp->ga >= sp->gb) continue;
    int any = 0;
    for (int64_t r = gi * TILED_MR; r < (gi + 1) * TILED_MR && !any; r++) {
      int64_t a, b;
      tl_row_keys(s, r, k0, nk, &a, &b);
      if (a >= b) continue;
      any = (s->msum ? s->msum[r * g->n_kblocks + k0 / g->bc]
                     : tiled_mask_scan(g, s->mrow[r], k0 + a, k0 + b, TILED_MASK_SHOWS)) &
            TILED_MASK_SHOWS;
    }
    if (!any) *sp = (tiled_span){nk, 0, 0, nk};
  }
}

/* Whether the mask tensor may hide row r some key of the block at k0 (with no summary, it may). */
static int tl_mask_hides(const tiled_geom *g, const tiled_scratch *s, int64_t r, int64_t k0) {
  return !s->msum || (s->msum[r * g->n_kblocks + k0 / g->bc] & TILED_MASK_HIDES);
}

/* Whether V's packed block (nk keys) is all finite: where it is not, a key the mask hides must not
   be multiplied into a row as 0 * Inf (tl_group_pv_masked). */
static int tl_v_finite(const tiled_geom *g, const float *vblk, int64_t nk) {
  vf acc0 = vf_zero(), acc1 = vf_zero(); /* sums of x * 0: NaN iff some x is Inf or NaN */
  const vf zero = vf_zero();
  for (int64_t col = 0; col < g->dvp; col += TILED_NRV * VEC_W) {
    const int64_t wt = tl_min(TILED_NRV * VEC_W, g->dvp - col), n = nk * wt;
    const float *x = vblk + col * g->bc;
    int64_t c = 0;
    for (; c + 2 * VEC_W <= n; c += 2 * VEC_W) {
      acc0 = vf_add(acc0, vf_mul(vf_load(x + c), zero));
      acc1 = vf_add(acc1, vf_mul(vf_load(x + c + VEC_W), zero));
    }
    for (; c < n; c += VEC_W) acc0 = vf_add(acc0, vf_mul(vf_load(x + c), zero));
  }
  return vf_hsum(vf_add(acc0, acc1)) == 0.0f;
}

/* Every row of the groups that see the block: their scores modified, where the problem has
   softcap, ALiBi or a mask tensor, before the softmax reads them. A boolean mask that hides none of
   the row's keys of the block adds nothing to its scores and is not read. Returns whether the mask
   may hide a key of the block from one of those rows. */
static int tl_modify_rows(const tiled_geom *g, const tiled_scratch *s, int64_t k0, int64_t nk,
                          int64_t ngr) {
  int hides = 0;
  for (int64_t gi = 0; gi < ngr; gi++) {
    if (s->spans[gi].ga >= s->spans[gi].gb) continue;
    for (int64_t r = gi * TILED_MR; r < (gi + 1) * TILED_MR; r++) {
      int64_t a, b;
      tl_row_keys(s, r, k0, nk, &a, &b);
      if (a >= b) continue;
      tl_modify_row(g, s->s + r * g->bc, a, b, k0, s->slope[r], s->pos[r]);
      /* a boolean row the summary shows wholly is not read; an additive row is always added,
         and hides what its values hide */
      if (g->mask == TXATTN_MASK_TENSOR_BOOL ? tl_mask_hides(g, s, r, k0) : g->mask != 0)
        hides |= tl_mask_row(g, s->s + r * g->bc, s->mrow[r], a, b, k0);
    }
  }
  return hides;
}

/* ---- the query block against one key block ---- */

/* Prefetches into L2 the additive mask's values of keys [j, j + TILED_KW) (those below n_kv) for
   the rows of group gi. */
TILED_INLINE void tl_prefetch_mask(const tiled_geom *g, const tiled_scratch *s, int64_t gi,
                                   int64_t j) {
  const int64_t es = g->p->mask_type == TXATTN_DTYPE_F32 ? 4 : 2,
                bytes = tl_min(TILED_KW, g->p->n_kv - j) * es;
  for (int64_t r = gi * TILED_MR; bytes > 0 && r < (gi + 1) * TILED_MR; r++)
    tl_prefetch_l2((const char *)s->mrow[r] + j * es, bytes);
}

/* Step 1: each K panel is used by every row group that sees part of it before the next is touched,
   so the panel stays in L1 and only the queries (one broadcast per row and k step) come from L2.
   With an additive mask (the block's keys from k0), each call also prefetches its rows' mask values
   of the panel, which tl_modify_rows adds once the block's scores are done: the read then overlaps
   the arithmetic instead of stalling that pass (T5's bias, measured: docs/measurements.md). */
static void tl_block_scores(const tiled_geom *g, const tiled_scratch *s, const float *kblk,
                            int64_t ngr, int64_t ua, int64_t ub, int64_t k0) {
  const int64_t dqk = g->dqk, bc = g->bc;
  const int pf = g->mask && g->mask != TXATTN_MASK_TENSOR_BOOL && g->mask_key == 1;
  for (int64_t pn = ua / TILED_KW; pn * TILED_KW < ub; pn++) {
    for (int64_t gi = 0; gi < ngr; gi++) {
      const tiled_span *sp = &s->spans[gi];
      if (sp->ga >= sp->gb || sp->gb <= pn * TILED_KW || sp->ga >= (pn + 1) * TILED_KW) continue;
      if (pf) tl_prefetch_mask(g, s, gi, k0 + pn * TILED_KW);
#ifdef TILED_QK_PAIRS
      tlp_scores(g, s->qp + gi * TILED_MR * dqk, kblk, pn,
                 s->s + gi * TILED_MR * bc + pn * TILED_KW, bc);
#else
      tl_scores_panel(s->qp + gi * TILED_MR * dqk, kblk + pn * TILED_KW * dqk, dqk,
                      s->s + gi * TILED_MR * bc + pn * TILED_KW, bc);
#endif
    }
  }
}

/* Step 3 for group gi: acc = acc * alpha + P V over the keys every row of the group sees, V panel
   by V panel with the group's P rows staying in L1 (no slower than V panel outer, group inner, and
   sometimes faster: docs/measurements.md); then the ragged keys row by row, after their row has been rescaled. */
static void tl_group_pv(const tiled_geom *g, const tiled_scratch *s, const float *vblk, int64_t k0,
                        int64_t nk, int64_t gi) {
  const int64_t dvp = g->dvp, bc = g->bc, r0 = gi * TILED_MR;
  const tiled_span *sp = &s->spans[gi];
  const int64_t j0 = sp->ca < sp->cb ? sp->ca : 0, j1 = sp->ca < sp->cb ? sp->cb : 0;
  for (int64_t col = 0; col < dvp; col += TILED_NRV * VEC_W)
    tl_pv_panel(g, s->acc + r0 * dvp, s->acc_c + r0 * dvp, s->alpha + r0, s->s + r0 * bc, vblk, col,
                j0, j1, TILED_MR);
  if (sp->ga == sp->ca && sp->gb == sp->cb) return; /* no ragged keys */
  for (int64_t r = r0; r < r0 + TILED_MR; r++) {
    int64_t a, b;
    float *acc = s->acc + r * dvp, *cmp = s->acc_c + r * dvp;
    const float *p = s->s + r * bc;
    tl_row_keys(s, r, k0, nk, &a, &b);
    if (sp->ca < sp->cb) {
      tl_pv_row(g, acc, cmp, p, vblk, a, sp->ca);
      tl_pv_row(g, acc, cmp, p, vblk, sp->cb, b);
    } else {
      tl_pv_row(g, acc, cmp, p, vblk, a, b);
    }
  }
}

/* tl_group_pv where V's block holds an Inf or NaN and a mask tensor hides keys: each row of the
   group rescaled, then its runs of keys the mask shows added one by one. */
static void tl_group_pv_masked(const tiled_geom *g, const tiled_scratch *s, const float *vblk,
                               int64_t k0, int64_t nk, int64_t gi) {
  const int64_t dvp = g->dvp, bc = g->bc;
  for (int64_t r = gi * TILED_MR; r < (gi + 1) * TILED_MR; r++) {
    float *acc = s->acc + r * dvp, *cmp = s->acc_c + r * dvp;
    for (int64_t c = 0; c < dvp; c++) {
      acc[c] *= s->alpha[r];
      cmp[c] *= s->alpha[r];
    }
    int64_t a, b;
    tl_row_keys(s, r, k0, nk, &a, &b);
    for (int64_t j = a; j < b;) {
      if (txm_mask_value(g->p, g->t, s->mrow[r], k0 + j) == -INFINITY) {
        j++;
        continue;
      }
      int64_t e = j + 1;
      while (e < b && txm_mask_value(g->p, g->t, s->mrow[r], k0 + e) != -INFINITY) e++;
      tl_pv_row(g, acc, cmp, s->s + r * bc, vblk, j, e);
      j = e;
    }
  }
}

static void tl_block(const tiled_geom *g, const tiled_scratch *s, const float *kvblk, int64_t k0,
                     int64_t nk, int64_t ngr) {
  int64_t ua = nk, ub = 0;
  for (int64_t gi = 0; gi < ngr; gi++)
    s->spans[gi] = tl_rows_span(s, gi * TILED_MR, TILED_MR, k0, nk);
  if (g->mask) tl_mask_skip(g, s, k0, nk, ngr);
  for (int64_t gi = 0; gi < ngr; gi++) {
    if (s->spans[gi].ga < s->spans[gi].gb) {
      ua = tl_min(ua, s->spans[gi].ga);
      ub = tl_max(ub, s->spans[gi].gb);
    }
  }
  if (ua >= ub) return; /* no row sees this block */
  tl_block_scores(g, s, kvblk, ngr, ua, ub, k0);
  const int hides = g->modified && tl_modify_rows(g, s, k0, nk, ngr);
  for (int64_t gi = 0; gi < ngr; gi++)
    if (s->spans[gi].ga < s->spans[gi].gb) tl_softmax_group(g, s, gi, k0, nk);
  const float *vblk = kvblk + g->bc * g->dqk;
  const int masked_pv = hides && !tl_v_finite(g, vblk, nk);
  for (int64_t gi = 0; gi < ngr; gi++) {
    if (s->spans[gi].ga >= s->spans[gi].gb) continue;
    if (masked_pv)
      tl_group_pv_masked(g, s, vblk, k0, nk, gi);
    else
      tl_group_pv(g, s, vblk, k0, nk, gi);
  }
}

/* Whether some group of rows sees a key of the block that the mask tensor shows (tl_mask_skip). */
static int tl_mask_sees(const tiled_geom *g, const tiled_scratch *s, int64_t k0, int64_t nk,
                        int64_t ngr) {
  int any = 0;
  for (int64_t gi = 0; gi < ngr; gi++)
    s->spans[gi] = tl_rows_span(s, gi * TILED_MR, TILED_MR, k0, nk);
  tl_mask_skip(g, s, k0, nk, ngr);
  for (int64_t gi = 0; gi < ngr && !any; gi++) any = s->spans[gi].ga < s->spans[gi].gb;
  return any;
}

/* Rows [t0, t1) (loaded by tl_load_rows) against every key block they see. */
static void tl_process_rows(const tiled_geom *g, const float *kv, int64_t b, int64_t kvh,
                            int64_t nr, const tiled_scratch *s) {
  const int64_t ngr = (nr + TILED_MR - 1) / TILED_MR;
  int64_t ja = g->p->n_kv, jb = 0;
  for (int64_t r = 0; r < nr; r++) {
    if (s->lo[r] < s->hi[r]) {
      ja = tl_min(ja, s->lo[r]);
      jb = tl_max(jb, s->hi[r]);
    }
  }
  for (int64_t kb = ja / g->bc; kb * g->bc < jb; kb++) {
    const int64_t k0 = kb * g->bc, nk = tl_min(g->bc, g->p->n_kv - k0);
    const float *kvblk = kv ? kv + kb * g->kv_block : s->kv;
    if (!kv && g->mask && !tl_mask_sees(g, s, k0, nk, ngr)) continue; /* not packed for nothing */
    if (!kv) tl_pack_block(g, b, kvh, k0, nk, s->kv);
    tl_block(g, s, kvblk, k0, nk, ngr);
  }
}

/* tl_process_rows over the sink keys (the ranges tl_load_rows left in lo, hi), then over each
   row's own range (lo2, hi2): the online softmax takes keys in any order. */
static void tl_process_all(const tiled_geom *g, const float *kv, int64_t b, int64_t kvh, int64_t nr,
                           const tiled_scratch *s) {
  if (s->msum && !g->vis) tl_mask_summary(g, s, (nr + TILED_MR - 1) / TILED_MR * TILED_MR);
  tl_process_rows(g, kv, b, kvh, nr, s);
  if (g->sink_keys == 0) return;
  const int64_t nrp = (nr + TILED_MR - 1) / TILED_MR * TILED_MR;
  int again = 0;
  for (int64_t r = 0; r < nrp; r++) {
    again |= s->lo2[r] < s->hi2[r];
    s->lo[r] = s->lo2[r];
    s->hi[r] = s->hi2[r];
    s->lo2[r] = s->hi2[r] = 0;
  }
  if (again) tl_process_rows(g, kv, b, kvh, nr, s);
}

/* ---- drivers ---- */

static void tl_run_qblocks(const tiled_geom *g, const float *kv, int64_t b, int64_t kvh,
                           int64_t qb0, int64_t qb1, const tiled_scratch *s) {
  for (int64_t qb = qb0; qb < qb1; qb++) {
    const int64_t t0 = qb * g->br, t1 = tl_min(t0 + g->br, g->rows);
    tl_load_rows(g, b, kvh, t0, t1, 0, g->p->n_kv, s);
    tl_process_all(g, kv, b, kvh, t1 - t0, s);
    tl_fold_acc(s->acc, s->acc_c, t1 - t0, g->dvp);
    tiled_write_rows(g, b, kvh, t0, t1, s->acc, s->m, s->l);
  }
}

/* The first nr rows' (m, l, acc) into out, for the split-KV merge (acc folded first). */
static void tl_write_partials(const tiled_geom *g, const tiled_scratch *s, int64_t nr,
                              const tiled_partial *out) {
  tl_fold_acc(s->acc, s->acc_c, nr, g->dvp);
  for (int64_t r = 0; r < nr; r++) {
    out->m[r] = s->m[r];
    out->l[r] = (float)s->l[r]; /* the merge adds one term per partial */
    memcpy(out->acc + r * out->ld, s->acc + r * g->dvp, (size_t)g->dv * sizeof(float));
  }
}

static void tl_run_krange(const tiled_geom *g, const float *kv, int64_t b, int64_t kvh, int64_t t0,
                          int64_t t1, int64_t k0, int64_t k1, const tiled_partial *out,
                          const tiled_scratch *s) {
  tl_load_rows(g, b, kvh, t0, t1, k0, k1, s);
  tl_process_all(g, kv, b, kvh, t1 - t0, s);
  tl_write_partials(g, s, t1 - t0, out);
}

/* The direct path (few rows per kv head): this ISA's own td_run, or the one the including file
   names in TILED_RUN_DIRECT (tiled_avx512bf16.c: tiled.avx512's, which uses no Q K^T tile). */
#ifndef TILED_RUN_DIRECT
#include "tiled_direct_algo.h"
#define TILED_RUN_DIRECT td_run
#endif

/* y = f(x) over n floats, VEC_W at a time (for tests and measurements). */
TILED_INLINE void tl_map_array(const float *x, float *y, size_t n, vf (*f)(vf)) {
  size_t i = 0;
  for (; i + VEC_W <= n; i += VEC_W) {
    _Alignas(64) float buf[VEC_W];
    memcpy(buf, x + i, sizeof buf);
    vf_store(buf, f(vf_load(buf)));
    memcpy(y + i, buf, sizeof buf);
  }
  if (i < n) {
    _Alignas(64) float buf[VEC_W] = {0};
    memcpy(buf, x + i, (n - i) * sizeof(float));
    vf_store(buf, f(vf_load(buf)));
    memcpy(y + i, buf, (n - i) * sizeof(float));
  }
}
static void tl_exp2_array(const float *x, float *y, size_t n) {
  tl_map_array(x, y, n, vf_exp2);
}
static void tl_tanh_array(const float *x, float *y, size_t n) {
  tl_map_array(x, y, n, vf_tanh);
}

static void tl_narrow_row(const float *src, int64_t n, void *dst, txattn_dtype type) {
  if (type == TXATTN_DTYPE_F16)
    vf_row_to_f16(src, n, dst);
  else
    vf_row_to_bf16(src, n, dst);
}

/* A file that includes this one for its static functions alone (tests/bf16dp) defines
   TILED_NO_OPS_TABLE. */
#ifndef TILED_NO_OPS_TABLE
const tiled_ops TILED_OPS = {
    .isa = VEC_ISA_ENUM,
    .w = VEC_W,
    .mr = TILED_MR,
    .kw = TILED_KW,
    .pack_kv = tl_pack_kv,
    .run_qblocks = tl_run_qblocks,
    .run_krange = tl_run_krange,
    .run_direct = TILED_RUN_DIRECT,
    .exp2_array = tl_exp2_array,
    .tanh_array = tl_tanh_array,
    .narrow_row = tl_narrow_row,
    .bool_scan = tl_bool_scan,
};
#endif

#endif /* TILED_ALGO_H */
