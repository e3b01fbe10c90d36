/* SPDX-License-Identifier: MIT */
/* The direct path of the tiled algorithm: at most TILED_DIRECT_ROWS query rows per (batch, kv head)
 * -- decode: n_q = 1 with a GQA group of up to 4 -- against K and V rows copied chunk by chunk,
 * without the tiled path's packing into panels. Included by tiled_algo.h (it uses that file's
 * helpers and register-block macros); its td_run is the ops table's run_direct.
 *
 * Why: with one query block of at most 4 rows per head, the tiled path packs (transposes) every key
 * block for a single use and runs 6-row micro-kernels over the 4 rows, and the packing dominates.
 * Here each K and V row is copied once into an L1 chunk buffer, a few rows at a time between the
 * micro-kernels of the chunk before, so that the copy's cache misses overlap their arithmetic
 * (loads whose values feed the FMAs right away do not overlap with them). The gain at decode
 * shapes, on one thread and two: docs/measurements.md.
 *
 * The rows are one register group of nr <= TILED_DIRECT_ROWS rows, nr a constant in each of the
 * chunk loop's copies (td_chunk): no padding rows are computed, so decode with one query head per
 * kv head does a quarter of the arithmetic of a 4-row group. Keys go in chunks of
 * TILED_DIRECT_CHUNK:
 *  0. the chunk's K and V rows are copied into scratch, each zero-padded to whole vectors, a few
 *     rows at a time between the micro-kernel calls of the chunk before (two sets of buffers):
 *     the copy's cache misses then overlap that chunk's arithmetic, and the micro-kernels read
 *     aligned rows from L1 with no column tails. 16-bit K and V are read as they are stored (half
 *     the bytes of fp32) and widened to fp32 in registers: by the copy, or, for K and V of one
 *     16-bit type and head sizes of whole vectors, by the micro-kernels reading the rows in place,
 *     the copier then at most prefetching them (TD_F16, TD_BF16 below: no store and reload of every
 *     element, which the copy's overlap of misses does not pay for at half the bytes);
 *  1. scores: dot products of the group's queries with TILED_DNK K rows at a time;
 *  2. online softmax exactly as the tiled path's (tl_softmax_rows);
 *  3. pv = pv * alpha + P V over the keys every row sees, TILED_DNT vectors of columns at a time
 *     (tl_pv_acc), then row by row over the ragged rest, so a key a row does not see is never
 *     multiplied into it; every TD_SPAN_KEYS keys pv is added into acc with Kahan's compensation and
 *     restarted from zero (td_flush), so that a long row's output does not drift.
 * Padding columns of V make padding columns of acc, which are never written out. Same semantics as
 * the tiled path: unscaled scores and maxima (modified scores with softcap or ALiBi, tl_modify_row
 * between steps 1 and 2), deferred normalisation, NaN spread over the row. */
#ifndef TILED_DIRECT_ALGO_H
#define TILED_DIRECT_ALGO_H

#define TD_RG  TILED_DIRECT_ROWS
#define TD_KC  TILED_DIRECT_CHUNK     /* keys per chunk where rows are copied */
#define TD_SLD TILED_DIRECT_CHUNK_MAX /* floats per row of the chunk's scores (s->s) */

/* How the chunk loop reads K and V, a constant in each of its instantiations:
 *  TD_COPY32  fp32 K and V, copied into the fp32 chunk buffers (the fp32 path);
 *  TD_COPY16  the same with rows of 16-bit types widened on the way (K and V of different types,
 *             or a head size with a column tail);
 *  TD_F16, TD_BF16  K and V both of that type, head sizes whole vectors: the micro-kernels read
 *             the rows in place, widen them in registers and prefetch the rows ahead (TD_PF);
 *  TD_BF16X2  bf16 K and V read in place 2 VEC_W elements at a time as their even and their odd
 *             elements (TL_BF16X2: one op a vector where widening takes two), head sizes whole pairs
 *             of vectors: the queries and the accumulators hold each pair of vectors' columns in
 *             that order too (td_load_rows, td_unpair_row). */
enum { TD_COPY32, TD_COPY16, TD_F16, TD_BF16, TD_BF16X2 };
#define TD_IN_PLACE(mode) ((mode) >= TD_F16)
/* The element type the micro-kernels read. */
#ifdef TL_BF16X2
#define TD_SRC_TYPE(mode)                                                                          \
  ((mode) == TD_F16      ? TXATTN_DTYPE_F16                                                        \
   : (mode) == TD_BF16   ? TXATTN_DTYPE_BF16                                                       \
   : (mode) == TD_BF16X2 ? TL_BF16X2                                                               \
                         : TXATTN_DTYPE_F32)
#else
#define TD_SRC_TYPE(mode)                                                                          \
  ((mode) == TD_F16 ? TXATTN_DTYPE_F16 : (mode) == TD_BF16 ? TXATTN_DTYPE_BF16 : TXATTN_DTYPE_F32)
#endif
/* 16-bit rows are prefetched this many chunks ahead of the chunk being copied (fp32 rows one): the
   same bytes in flight as fp32 rows one chunk ahead. */
#define TD_AHEAD16 2

/* K and V of one (batch, kv head), of element types kt, vt: row j at element (j - key0) * krow of
   k, (j - key0) * vrow of v; paged (P > 0), row j % P of page table[j / P], whose row 0 is at
   element page * kpage of k (vpage of v). */
typedef struct td_view {
  const void *k, *v;
  int64_t krow, vrow;
  txattn_dtype kt, vt;
  int64_t key0, P, kpage, vpage;
  const int32_t *table;
  int shift; /* log2(P) when P is a power of two (a shift and a mask per row), else -1 */
} td_view;

/* Key j's K (is_k) or V row in kv, elements of es bytes. */
TILED_INLINE const void *td_row(const td_view *kv, const int is_k, int64_t j, const int64_t es) {
  const unsigned char *base = is_k ? kv->k : kv->v;
  const int64_t row = is_k ? kv->krow : kv->vrow;
  if (kv->P == 0) return base + (j - kv->key0) * row * es;
  const int64_t page = kv->shift >= 0 ? kv->table[j >> kv->shift] : kv->table[j / kv->P];
  const int64_t r = kv->shift >= 0 ? j & (kv->P - 1) : j % kv->P;
  return base + (page * (is_k ? kv->kpage : kv->vpage) + r * row) * es;
}

/* n floats of a row (any alignment) into dst (aligned), zero up to np. */
static void td_copy_row(const float *src, int64_t n, int64_t np, float *dst) {
  int64_t c = 0;
  for (; c + VEC_W <= n; c += VEC_W) vf_store(dst + c, vf_loadu(src + c));
  for (; c < n; c++) dst[c] = src[c];
  for (; c < np; c++) dst[c] = 0.0f;
}

/* n 16-bit values of type t (f16, bf16) widened as td_copy_row copies floats. */
static void td_widen_row(const uint16_t *src, txattn_dtype t, int64_t n, int64_t np, float *dst) {
  if (t == TXATTN_DTYPE_F16)
    vf_row_from_f16(src, n, np, dst);
  else
    vf_row_from_bf16(src, n, np, dst);
}

/* Prefetches the cache lines of a row of len elements of size es into L2 (the chunk after next is
   copied soon; into L1 as well, they made the f32 decode 1.6x slower on Zen 4 at two threads).
   Always inlined: as a separate void function GCC may judge it free of side effects and delete its
   calls. */
TILED_INLINE void td_prefetch_row(const void *row, int64_t len, const int64_t es) {
  for (int64_t c = 0; c < len * es; c += 64) __builtin_prefetch((const char *)row + c, 0, 2);
}

/* Step 0 of the chunk [c0, c0 + nk), done by td_copy_some() a few rows at a time: rows r < nk are
   K rows c0 + r into kc, the rest V rows into vc; the chunk after is prefetched on the way (keys
   below kend). In place (TD_F16, TD_BF16) the chunk's rows are prefetched instead of copied. */
typedef struct td_copier {
  const tiled_geom *g;
  const td_view *kv;
  float *kc, *vc;
  int64_t c0, nk, next, kend;
  int64_t step; /* rows per micro-kernel call */
} td_copier;

/* The copy of the f32 path (TD_COPY32) and of 16-bit rows (TD_COPY16): the latter reads each row
   in its own type, so a 16-bit row costs half the bytes from memory, and widens it in registers on
   the way into the fp32 chunk (td_widen_row). */
TILED_INLINE void td_copy_some_as(td_copier *cp, int64_t n, const int mode) {
  const tiled_geom *g = cp->g;
  const td_view *kv = cp->kv;
  const int64_t end = tl_min(cp->next + n, 2 * cp->nk), dqkp = g->dqkp;
  for (; cp->next < end; cp->next++) {
    const int64_t r = cp->next, j = r < cp->nk ? r : r - cp->nk, key = cp->c0 + j;
    if (mode == TD_COPY32) {
      const int64_t ahead = key + TD_KC;
      if (r < cp->nk) {
        if (ahead < cp->kend) td_prefetch_row(td_row(kv, 1, ahead, 4), g->dqk, 4);
        td_copy_row(td_row(kv, 1, key, 4), g->dqk, dqkp, cp->kc + j * dqkp);
      } else {
        if (ahead < cp->kend) td_prefetch_row(td_row(kv, 0, ahead, 4), g->dv, 4);
        td_copy_row(td_row(kv, 0, key, 4), g->dv, g->dvp, cp->vc + j * g->dvp);
      }
      continue;
    }
    const int is_k = r < cp->nk;
    const txattn_dtype t = is_k ? kv->kt : kv->vt;
    const int64_t n_el = is_k ? g->dqk : g->dv, np = is_k ? dqkp : g->dvp;
    float *dst = is_k ? cp->kc + j * dqkp : cp->vc + j * g->dvp;
    if (t == TXATTN_DTYPE_F32) {
      if (key + TD_KC < cp->kend) td_prefetch_row(td_row(kv, is_k, key + TD_KC, 4), n_el, 4);
      td_copy_row(td_row(kv, is_k, key, 4), n_el, np, dst);
    } else {
      const int64_t ahead = key + TD_AHEAD16 * TD_KC;
      if (ahead < cp->kend) td_prefetch_row(td_row(kv, is_k, ahead, 2), n_el, 2);
      td_widen_row(td_row(kv, is_k, key, 2), t, n_el, np, dst);
    }
  }
}
static void td_copy_some(td_copier *cp, int64_t n) {
  td_copy_some_as(cp, n, TD_COPY32);
}
static void td_copy_some16(td_copier *cp, int64_t n) {
  td_copy_some_as(cp, n, TD_COPY16);
}
/* Reading rows in place, the micro-kernels prefetch each line they load TL_AHEAD_ROWS rows ahead
   into L2 (TD_PF), and the copier has nothing to do: on the Zen 4 VM 1.75x (AVX-512) and 1.1-1.2x
   (AVX2) faster at decode from memory than the copier's prefetches into L1 (or none), which made
   the AVX-512 loop slower than none (docs/measurements.md). */
#define TD_PF(mode) TD_IN_PLACE(mode)
/* Keys per chunk in each mode (tiled_internal.h). */
#define TD_CHUNK_KEYS(mode) (TD_IN_PLACE(mode) ? TILED_DIRECT_CHUNK_IN_PLACE : TD_KC)

TILED_INLINE void td_copy(td_copier *cp, int64_t n, const int mode) {
  if (mode == TD_COPY32)
    td_copy_some(cp, n);
  else if (mode == TD_COPY16)
    td_copy_some16(cp, n);
}

/* Element i of a row of type t (a constant) at base. */
TILED_INLINE const void *td_at(const void *base, const int t, int64_t i) {
  if (t == TXATTN_DTYPE_F32) return (const float *)base + i;
  return (const uint16_t *)base + i;
}

/* The n floats of x (n a multiple of 2 VEC_W), each 2 VEC_W as their even elements then their odd
   ones (td_pair_row), and back (td_unpair_row). */
static void td_pair_row(float *x, int64_t n) {
  float t[2 * VEC_W];
  for (int64_t c = 0; c < n; c += 2 * VEC_W) {
    for (int i = 0; i < VEC_W; i++) {
      t[i] = x[c + 2 * i];
      t[VEC_W + i] = x[c + 2 * i + 1];
    }
    memcpy(x + c, t, sizeof t);
  }
}
static void td_unpair_row(float *x, int64_t n) {
  float t[2 * VEC_W];
  for (int64_t c = 0; c < n; c += 2 * VEC_W) {
    for (int i = 0; i < VEC_W; i++) {
      t[2 * i] = x[c + i];
      t[2 * i + 1] = x[c + VEC_W + i];
    }
    memcpy(x + c, t, sizeof t);
  }
}

/* Queries (times qsign) of rows [t0, t1) into s->qp, zero-padded to dqkp, each 2 VEC_W columns as
   their even then their odd ones if pairs (TD_BF16X2); ranges clipped to [k0, k1). */
static void td_load_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                         int64_t k0, int64_t k1, const tiled_scratch *s, int pairs) {
  const txattn_tensors *t = g->t;
  const int64_t nr = t1 - t0, dqkp = g->dqkp;
  for (int64_t r = 0; r < nr; r++) {
    const int64_t row = t0 + r, i = row / g->group, h = kvh * g->group + row % g->group;
    const txattn_dtype qt = g->p->q_type;
    const void *q = txattn_row_of(t->q_data, qt, &t->q_layout, b, h, i);
    float *qr = s->qp + r * dqkp;
    int64_t lo, hi, c = 0;
    if (qt == TXATTN_DTYPE_F32)
      for (; c < g->dqk; c++) qr[c] = ((const float *)q)[c] * g->qsign;
    else
      for (; c < g->dqk; c++) qr[c] = tl_elem(q, qt, c) * g->qsign;
    for (; c < dqkp; c++) qr[c] = 0.0f;
    if (pairs) td_pair_row(qr, dqkp);
    int64_t sink_hi;
    txattn_visible_ranges(g->p, i, &sink_hi, &lo, &hi);
    s->lo[r] = tl_clamp(lo, k0, k1);
    s->hi[r] = tl_clamp(hi, k0, k1);
    s->lo2[r] = tl_clamp(0, k0, k1); /* the sink keys (td_run's first pass) */
    s->hi2[r] = tl_clamp(sink_hi, k0, k1);
    s->pos[r] = i + g->p->n_kv - g->p->n_q;
    s->slope[r] = g->slopes ? g->slopes[h] : 0.0f;
    if (g->mask) s->mrow[r] = txattn_mask_row(g->p, t, b, h, i);
    s->m[r] = -INFINITY;
    s->l[r] = 0.0;
  }
  memset(s->acc, 0, (size_t)(nr * g->dvp) * sizeof(float));
  memset(s->acc_c, 0, (size_t)(nr * g->dvp) * sizeof(float));
  memset(s->pv, 0, (size_t)(nr * g->dvp) * sizeof(float));
  for (int64_t r = 0; r < nr; r++) s->pv_alpha[r] = 1.0f;
}

/* acc = acc * pv_alpha + pv with Kahan's compensation (tl_kahan_add) for the nr rows, and pv, the
   sum of P V over the last TD_SPAN_KEYS keys at most (whole chunks, scaled by each chunk's alpha as
   acc was before), restarted from zero: acc then errs by about TD_SPAN_KEYS u relative however
   long the row (docs/error_bound.md, the bound on O), and the chunks' FMAs are as without
   compensation. */
#define TD_SPAN_KEYS 128
_Static_assert(TD_SPAN_KEYS % TILED_DIRECT_CHUNK_IN_PLACE == 0 &&
                   TD_SPAN_KEYS % TILED_DIRECT_CHUNK == 0 &&
                   TILED_DIRECT_CHUNK_MAX >= TILED_DIRECT_CHUNK_IN_PLACE &&
                   TILED_DIRECT_CHUNK_MAX >= TILED_DIRECT_CHUNK,
               "chunks divide the P V span and fit the score rows");
static void td_flush(const tiled_geom *g, const tiled_scratch *s, int64_t nr) {
  const int64_t dvp = g->dvp;
  for (int64_t r = 0; r < nr; r++) {
    const float al = s->pv_alpha[r];
    const vf a = vf_set1(al);
    float *pv = s->pv + r * dvp;
    for (int64_t c = 0; c < dvp; c += VEC_W) {
      tl_kahan_add(s->acc + r * dvp + c, s->acc_c + r * dvp + c, vf_load(pv + c), a, al != 1.0f);
      vf_store(pv + c, vf_zero());
    }
    s->pv_alpha[r] = 1.0f;
  }
}

/* ---- 1. scores ---- */

/* s[r * sld + n] = q_r . k_n for nr rows and nk (at most TILED_DNK) K rows, both padded to dp
   floats; K rows kld elements apart, of type kt (a constant): aligned fp32, or 16-bit read in
   place. */
TILED_INLINE void td_dot(const float *q, const void *k, int64_t kld, int64_t dp, float *s,
                         int64_t sld, const int nr, const int nk, const int kt, const int pf) {
  vf a[TD_RG][TILED_DNK];
#pragma GCC unroll 8
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 8
    for (int n = 0; n < nk; n++) a[r][n] = vf_zero();
#ifdef TL_BF16X2
  if (kt == TL_BF16X2) { /* even then odd elements, as the queries' columns (td_load_rows) */
    for (int64_t c = 0; c < dp; c += 2 * VEC_W) {
      vf ke[TILED_DNK], ko[TILED_DNK];
#pragma GCC unroll 8
      for (int n = 0; n < nk; n++) {
        vf_loadu_bf16x2((const uint16_t *)k + n * kld + c, &ke[n], &ko[n]);
        if (pf) tl_prefetch_ahead16((const uint16_t *)k + n * kld + c, kld);
      }
#pragma GCC unroll 8
      for (int r = 0; r < nr; r++) {
        vf qe = vf_load(q + r * dp + c), qo = vf_load(q + r * dp + c + VEC_W);
#pragma GCC unroll 8
        for (int n = 0; n < nk; n++) a[r][n] = vf_fma(qo, ko[n], vf_fma(qe, ke[n], a[r][n]));
      }
    }
  } else
#endif
    for (int64_t c = 0; c < dp; c += VEC_W) {
      vf kv[TILED_DNK];
#pragma GCC unroll 8
      for (int n = 0; n < nk; n++) {
        kv[n] = kt == TXATTN_DTYPE_F32 ? vf_load((const float *)k + n * kld + c)
                                       : tl_loadu_as((const uint16_t *)k + n * kld, kt, c);
        if (pf && kt != TXATTN_DTYPE_F32 && c * 2 % 64 == 0) /* a line of 16-bit values */
          tl_prefetch_ahead16((const uint16_t *)k + n * kld + c, kld);
      }
#pragma GCC unroll 8
      for (int r = 0; r < nr; r++) {
        vf qv = vf_load(q + r * dp + c);
#pragma GCC unroll 8
        for (int n = 0; n < nk; n++) a[r][n] = vf_fma(qv, kv[n], a[r][n]);
      }
    }
#ifdef VF_HAVE_HSUM16
  _Static_assert(TILED_DNK == 4 && TD_RG == 4, "a[][] is 16 vectors in a row");
  if (nr == 4 && nk == 4) {
    vf_store4x4(s, sld, vf_hsum16(&a[0][0]));
    return;
  }
#endif
#pragma GCC unroll 8
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 8
    for (int n = 0; n < nk; n++) s[r * sld + n] = vf_hsum(a[r][n]);
}

/* Scores of the nr rows against the chunk's keys [ua, ub) (K rows at kc, kld elements apart). */
TILED_INLINE void td_scores(const tiled_geom *g, const tiled_scratch *s, const void *kc,
                            int64_t kld, int64_t ua, int64_t ub, td_copier *cp, const int nr,
                            const int mode) {
  const int kt = TD_SRC_TYPE(mode);
  const int64_t dqkp = g->dqkp;
  if (!TD_IN_PLACE(mode)) kld = dqkp; /* the chunk buffer's rows: one value with the queries' */
  int64_t j = ua;
  for (; j + TILED_DNK <= ub; j += TILED_DNK) {
    td_copy(cp, cp->step, mode);
    td_dot(s->qp, td_at(kc, kt, j * kld), kld, dqkp, s->s + j, TD_SLD, nr, TILED_DNK, kt,
           TD_PF(mode));
  }
  for (; j < ub; j++)
    td_dot(s->qp, td_at(kc, kt, j * kld), kld, dqkp, s->s + j, TD_SLD, nr, 1, kt, TD_PF(mode));
}

/* ---- 3. acc = acc * alpha + P V ---- */

/* Every column of mr rows (acc, alpha, p at the rows' first), keys [j0, j1) of the chunk whose
   V rows (dvp columns each, vld elements apart) start at v. */
TILED_INLINE void td_pv_rows(const tiled_geom *g, float *acc, const float *alpha, const float *p,
                             const void *v, int64_t vld, int64_t j0, int64_t j1, const int mr,
                             td_copier *cp, const int mode) {
  const int vt = TD_SRC_TYPE(mode);
  const int64_t dvp = g->dvp, full = dvp / VEC_W;
  int64_t col = 0;
/* fp32 chunks through tl_pv_acc itself (through tl_pv_acc_as, GCC unrolls the fp32 path's loops
   otherwise), 16-bit rows in place through tl_pv_acc_as */
#define TD_PV_TILE(nrv)                                                                            \
  do {                                                                                             \
    if (vt == TXATTN_DTYPE_F32)                                                                    \
      tl_pv_acc(acc + col * VEC_W, dvp, alpha, p, TD_SLD, (const float *)v + col * VEC_W, dvp, j0, \
                j1, mr, nrv);                                                                      \
    else                                                                                           \
      tl_pv_acc_as(acc + col * VEC_W, dvp, alpha, p, TD_SLD, (const uint16_t *)v + col * VEC_W,    \
                   vld, j0, j1, mr, nrv, vt, TD_PF(mode));                                         \
  } while (0)
  for (; col + TILED_DNT <= full; col += TILED_DNT) {
    td_copy(cp, cp->step, mode);
    TD_PV_TILE(TILED_DNT);
  }
  switch (full - col) { /* the narrower last tile */
#if TILED_DNT > 5
  case 5:
    TD_PV_TILE(5);
    break;
#endif
#if TILED_DNT > 4
  case 4:
    TD_PV_TILE(4);
    break;
#endif
#if TILED_DNT > 3
  case 3:
    TD_PV_TILE(3);
    break;
#endif
#if TILED_DNT > 2
  case 2:
    TD_PV_TILE(2);
    break;
#endif
  case 1:
    TD_PV_TILE(1);
    break;
  default:
    break;
  }
#undef TD_PV_TILE
}

/* The nr rows' common keys [sp->ca, sp->cb) as one tile (which also applies alpha to every
   column), then each row's ragged keys. */
TILED_INLINE void td_pv(const tiled_geom *g, const tiled_scratch *s, const void *vc, int64_t vld,
                        td_copier *cp, const tiled_span *sp, int64_t c0, int64_t nk, const int nr,
                        const int mode) {
  const int64_t dvp = g->dvp;
  const int common = sp->ca < sp->cb;
  td_pv_rows(g, s->pv, s->alpha, s->s, vc, vld, common ? sp->ca : 0, common ? sp->cb : 0, nr, cp,
             mode);
  if (common && sp->ga == sp->ca && sp->gb == sp->cb) return; /* no ragged keys */
  for (int64_t r = 0; r < nr; r++) {
    int64_t a, b;
    float *pv = s->pv + r * dvp;
    const float *p = s->s + r * TD_SLD;
    tl_row_keys(s, r, c0, nk, &a, &b);
    if (common) {
      if (a < sp->ca) td_pv_rows(g, pv, NULL, p, vc, vld, a, sp->ca, 1, cp, mode);
      if (sp->cb < b) td_pv_rows(g, pv, NULL, p, vc, vld, sp->cb, b, 1, cp, mode);
    } else if (a < b) {
      td_pv_rows(g, pv, NULL, p, vc, vld, a, b, 1, cp, mode);
    }
  }
}

/* td_pv where the mask tensor hides keys of the chunk: each row rescaled, then its runs of keys the
   mask shows added, so that a hidden key's V (an Inf, a NaN) never meets its zero weight. */
TILED_INLINE void td_pv_masked(const tiled_geom *g, const tiled_scratch *s, const void *vc,
                               int64_t vld, td_copier *cp, int64_t c0, int64_t nk, const int nr,
                               const int mode) {
  for (int64_t r = 0; r < nr; r++) {
    float *pv = s->pv + r * g->dvp;
    int64_t a, b;
    for (int64_t c = 0; c < g->dvp; c++) pv[c] *= s->alpha[r];
    tl_row_keys(s, r, c0, nk, &a, &b);
    for (int64_t j = a; j < b;) {
      int64_t e = j;
      while (e < b && txm_mask_value(g->p, g->t, s->mrow[r], c0 + e) != -INFINITY) e++;
      if (e > j) td_pv_rows(g, pv, NULL, s->s + r * TD_SLD, vc, vld, j, e, 1, cp, mode);
      j = e + 1; /* past the hidden key at e (or b) */
    }
  }
}

/* ---- drivers ---- */

/* The chunk [c0, c0 + nk), already in kc and vc (or read in place there), for nr rows: scores,
   softmax and P V if some row sees part of it, while cp copies (prefetches) the next chunk. */
TILED_INLINE void td_chunk_rows(const tiled_geom *g, const tiled_scratch *s, const void *kc,
                                const void *vc, td_copier *cp, int64_t c0, int64_t nk, const int nr,
                                const int mode) {
  /* row strides in place (in the chunk buffers, td_scores and td_pv_rows use dqkp and dvp) */
  const int64_t kld = TD_IN_PLACE(mode) ? cp->kv->krow : 0,
                vld = TD_IN_PLACE(mode) ? cp->kv->vrow : 0;
  const tiled_span sp = tl_rows_span(s, 0, nr, c0, nk);
  if (sp.ga < sp.gb) { /* else m, l, acc unchanged */
    td_scores(g, s, kc, kld, sp.ga, sp.gb, cp, nr, mode);
    int hides = 0; /* whether the mask tensor hides a key of the chunk from some row */
    for (int r = 0; g->modified && r < nr; r++) { /* softcap, ALiBi, the mask: as the tiled path */
      int64_t a, b;
      tl_row_keys(s, r, c0, nk, &a, &b);
      if (a >= b) continue;
      tl_modify_row(g, s->s + r * TD_SLD, a, b, c0, s->slope[r], s->pos[r]);
      if (!g->mask) continue;
      tl_mask_row(g, s->s + r * TD_SLD, s->mrow[r], a, b, c0);
      hides |= (tiled_mask_scan(g, s->mrow[r], c0 + a, c0 + b, TILED_MASK_HIDES) &
                TILED_MASK_HIDES) != 0;
    }
    tl_softmax_rows(g, s, 0, nr, TD_SLD, c0, nk);
    for (int r = 0; r < nr; r++) s->pv_alpha[r] *= s->alpha[r];
    if (hides)
      td_pv_masked(g, s, vc, vld, cp, c0, nk, nr, mode);
    else
      td_pv(g, s, vc, vld, cp, &sp, c0, nk, nr, mode);
  }
  td_copy(cp, 2 * cp->nk, mode); /* what the micro-kernels left */
}

TILED_INLINE void td_chunk_as(const tiled_geom *g, const tiled_scratch *s, const void *kc,
                              const void *vc, td_copier *cp, int64_t c0, int64_t nk, int64_t nr,
                              const int mode) {
  _Static_assert(TD_RG == 4, "td_chunk has a case for every row count up to TILED_DIRECT_ROWS");
  switch (nr) {
  case 1:
    td_chunk_rows(g, s, kc, vc, cp, c0, nk, 1, mode);
    break;
  case 2:
    td_chunk_rows(g, s, kc, vc, cp, c0, nk, 2, mode);
    break;
  case 3:
    td_chunk_rows(g, s, kc, vc, cp, c0, nk, 3, mode);
    break;
  default:
    td_chunk_rows(g, s, kc, vc, cp, c0, nk, 4, mode);
    break;
  }
}
/* The chunk loop in each mode. */
#define TD_CHUNK_MODE(name, mode)                                                                  \
  static void name(const tiled_geom *g, const tiled_scratch *s, const void *kc, const void *vc,    \
                   td_copier *cp, int64_t c0, int64_t nk, int64_t nr) {                            \
    td_chunk_as(g, s, kc, vc, cp, c0, nk, nr, mode);                                               \
  }
TD_CHUNK_MODE(td_chunk, TD_COPY32)
TD_CHUNK_MODE(td_chunk16, TD_COPY16)
TD_CHUNK_MODE(td_chunk_f16, TD_F16)
TD_CHUNK_MODE(td_chunk_bf16, TD_BF16)
#ifdef TL_BF16X2
TD_CHUNK_MODE(td_chunk_bf16x2, TD_BF16X2)
#endif

/* Chunks of [ja, jb), each copied while the one before is computed (two sets of buffers). The
   copy is spread evenly over the chunk's micro-kernel calls (for d = 128 in AVX2, 32 rows over 6
   score and 6 P V calls: 3 rows a call), with the chunk after prefetched: the fastest spread
   measured (docs/measurements.md). */
TILED_INLINE void td_chunks(const tiled_geom *g, const td_view *kv, const tiled_scratch *s,
                            int64_t nr, int64_t ja, int64_t jb, const int mode) {
  const int64_t kcs = TD_KC * g->dqkp, vcs = TD_KC * g->dvp, ck = TD_CHUNK_KEYS(mode);
  const int64_t calls =
      (TD_KC + TILED_DNK - 1) / TILED_DNK + (g->dvp / VEC_W + TILED_DNT - 1) / TILED_DNT;
  td_copier cp = {.g = g,
                  .kv = kv,
                  .kc = s->kc,
                  .vc = s->vc,
                  .c0 = ja,
                  .nk = tl_min(TD_KC, jb - ja),
                  .kend = jb};
  td_copy(&cp, 2 * cp.nk, mode);
  for (int64_t c0 = ja, i = 0; c0 < jb; c0 += ck, i++) {
    const int64_t next = c0 + ck, cur = i & 1, nk = next < jb ? tl_min(ck, jb - next) : 0;
    td_copier nx = {.g = g,
                    .kv = kv,
                    .kc = s->kc + (1 - cur) * kcs,
                    .vc = s->vc + (1 - cur) * vcs,
                    .c0 = next,
                    .nk = nk,
                    .kend = jb,
                    .step = (2 * nk + calls - 1) / calls};
    const int64_t nc = tl_min(ck, jb - c0);
    if (mode == TD_COPY32)
      td_chunk(g, s, s->kc + cur * kcs, s->vc + cur * vcs, &nx, c0, nc, nr);
    else if (mode == TD_COPY16)
      td_chunk16(g, s, s->kc + cur * kcs, s->vc + cur * vcs, &nx, c0, nc, nr);
    else if (mode == TD_F16)
      td_chunk_f16(g, s, (const uint16_t *)kv->k + (c0 - kv->key0) * kv->krow,
                   (const uint16_t *)kv->v + (c0 - kv->key0) * kv->vrow, &nx, c0, nc, nr);
#ifdef TL_BF16X2
    else if (mode == TD_BF16X2)
      td_chunk_bf16x2(g, s, (const uint16_t *)kv->k + (c0 - kv->key0) * kv->krow,
                      (const uint16_t *)kv->v + (c0 - kv->key0) * kv->vrow, &nx, c0, nc, nr);
#endif
    else
      td_chunk_bf16(g, s, (const uint16_t *)kv->k + (c0 - kv->key0) * kv->krow,
                    (const uint16_t *)kv->v + (c0 - kv->key0) * kv->vrow, &nx, c0, nc, nr);
    if (i % (TD_SPAN_KEYS / ck) == TD_SPAN_KEYS / ck - 1) td_flush(g, s, nr);
  }
}

/* td_chunks over [ja, jb) of a paged view: rows read in place (whole pages of at least a chunk)
   go page by page, the view based at each page's first key and pv flushed after each; copied rows
   go through td_row, chunks crossing pages. */
TILED_INLINE void td_chunks_paged(const tiled_geom *g, const td_view *kv, const tiled_scratch *s,
                                  int64_t nr, int64_t ja, int64_t jb, const int mode) {
  if (kv->P == 0 || !TD_IN_PLACE(mode)) {
    td_chunks(g, kv, s, nr, ja, jb, mode);
    return;
  }
  const int64_t es = (int64_t)sizeof(uint16_t);
  for (int64_t j = ja; j < jb;) {
    const int64_t end = tl_min(jb, (j / kv->P + 1) * kv->P);
    td_view pg = *kv;
    pg.P = 0;
    pg.key0 = j;
    pg.k = td_row(kv, 1, j, es);
    pg.v = td_row(kv, 0, j, es);
    td_chunks(g, &pg, s, nr, j, end, mode);
    td_flush(g, s, nr);
    j = end;
  }
}

/* Every row's keys [lo, hi) in the mode the element types and the head sizes allow. */
static void td_keys(const tiled_geom *g, const td_view *kvp, const tiled_scratch *s, int64_t nr,
                    int pairs, int whole_pages) {
  const td_view kv = *kvp;
  const txattn_dtype kt = g->p->k_type, vt = g->p->v_type;
  int64_t ja = g->p->n_kv, jb = 0;
  for (int64_t r = 0; r < nr; r++) {
    if (s->lo[r] < s->hi[r]) {
      ja = tl_min(ja, s->lo[r]);
      jb = tl_max(jb, s->hi[r]);
    }
  }
  if (ja < jb) {
    /* no column tails */
    const int whole = g->dqk % VEC_W == 0 && g->dv % VEC_W == 0 && whole_pages;
    if (kt == TXATTN_DTYPE_F32 && vt == TXATTN_DTYPE_F32)
      td_chunks(g, &kv, s, nr, ja, jb, TD_COPY32);
    else if (pairs)
      td_chunks_paged(g, &kv, s, nr, ja, jb, TD_BF16X2);
    else if (whole && kt == TXATTN_DTYPE_F16 && vt == TXATTN_DTYPE_F16)
      td_chunks_paged(g, &kv, s, nr, ja, jb, TD_F16);
    else if (whole && kt == TXATTN_DTYPE_BF16 && vt == TXATTN_DTYPE_BF16)
      td_chunks_paged(g, &kv, s, nr, ja, jb, TD_BF16);
    else
      td_chunks(g, &kv, s, nr, ja, jb, TD_COPY16);
  }
}

/* Swaps each row's ranges [lo, hi) and [lo2, hi2). */
static void td_swap_ranges(const tiled_scratch *s, int64_t nr) {
  for (int64_t r = 0; r < nr; r++) {
    const int64_t lo = s->lo[r], hi = s->hi[r];
    s->lo[r] = s->lo2[r];
    s->hi[r] = s->hi2[r];
    s->lo2[r] = lo;
    s->hi2[r] = hi;
  }
}

static void td_run(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1, int64_t k0,
                   int64_t k1, const tiled_partial *out, const tiled_scratch *s) {
  const txattn_tensors *t = g->t;
  const int64_t nr = t1 - t0, P = g->page_size;
  const txattn_dtype kt = g->p->k_type, vt = g->p->v_type;
  /* paged: the pool's page 0 at head kvh, the sequence's row of the block table */
  const td_view kv = {txattn_row_of(t->k_data, kt, &t->k_layout, P ? 0 : b, kvh, 0),
                      txattn_row_of(t->v_data, vt, &t->v_layout, P ? 0 : b, kvh, 0),
                      t->k_layout.row,
                      t->v_layout.row,
                      kt,
                      vt,
                      0,
                      P,
                      t->k_layout.batch,
                      t->v_layout.batch,
                      P ? t->block_table + b * g->p->max_pages : NULL,
                      P > 0 && (P & (P - 1)) == 0 ? __builtin_ctzll((unsigned long long)P) : -1};
  int pairs = 0;
  /* in place only on pages of whole chunks: smaller ones are copied through td_row */
  const int whole_pages = P == 0 || P >= TILED_DIRECT_CHUNK_IN_PLACE;
#ifdef TL_BF16X2
  pairs = kt == TXATTN_DTYPE_BF16 && vt == TXATTN_DTYPE_BF16 && g->dqk % (2 * VEC_W) == 0 &&
          g->dv % (2 * VEC_W) == 0 && whole_pages;
#endif
  td_load_rows(g, b, kvh, t0, t1, k0, k1, s, pairs);
  if (g->sink_keys > 0) { /* the sink keys first: the online softmax takes keys in any order */
    td_swap_ranges(s, nr);
    td_keys(g, &kv, s, nr, pairs, whole_pages);
    td_flush(g, s, nr);
    td_swap_ranges(s, nr);
  }
  td_keys(g, &kv, s, nr, pairs, whole_pages);
  td_flush(g, s, nr);
  for (int64_t r = 0; pairs && r < nr; r++) {
    td_unpair_row(s->acc + r * g->dvp, g->dvp);
    td_unpair_row(s->acc_c + r * g->dvp, g->dvp);
  }
  if (out)
    tl_write_partials(g, s, nr, out);
  else {
    tl_fold_acc(s->acc, s->acc_c, nr, g->dvp);
    tiled_write_rows(g, b, kvh, t0, t1, s->acc, s->m, s->l);
  }
}

#endif /* TILED_DIRECT_ALGO_H */
