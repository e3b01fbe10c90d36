/* SPDX-License-Identifier: MIT */
/* The direct path of the tiled algorithm: at most TILED_DIRECT_ROWS query rows per (batch, kv head)
 * -- decode: n_q = 1 with a GQA group of up to 4 -- against K and V rows read where they are, chunk
 * by chunk, without the tiled path's packing into panels. Included by tiled_algo.h (it uses that
 * file's helpers and register-block macros); its td_run is the ops table's run_direct.
 *
 * Why: with one query block of at most 4 rows per head, the tiled path packs (transposes) every key
 * block for a single use and runs 6-row micro-kernels over the 4 rows, and the packing dominates.
 * Here the micro-kernels read each K and V row once, in its own type, widened to fp32 in registers.
 * The gain at decode shapes, on one thread and two: docs/measurements.md.
 *
 * The rows are one register group of nr <= TILED_DIRECT_ROWS rows, nr a constant in each of the
 * chunk loop's copies (td_chunk_as): no padding rows are computed, so decode with one query head
 * per kv head does a quarter of the arithmetic of a 4-row group. Keys go in chunks, each with a
 * table of its K and V rows' addresses (td_rows_of: one page-table lookup per page, so pages of any
 * size are read in place and a chunk may span several):
 *  0. the micro-kernels read the chunk's rows in place and prefetch, line by line as they load,
 *     the same lines of the next chunk's rows into L2 (the next chunk's row table: the right rows
 *     across pages, never past a page's end). Only rows with a column tail (head sizes not whole
 *     vectors) or K and V of two types are copied instead (TD_COPY): into zero-padded fp32 chunk
 *     buffers, a few rows at a time between the micro-kernel calls of the chunk before, so that the
 *     copy's cache misses overlap their arithmetic;
 *  1. scores: dot products of the group's queries with TILED_DNK K rows at a time;
 *  2. online softmax exactly as the tiled path's (tl_softmax_rows);
 *  3. pv = pv * alpha + P V over the keys every row sees, TILED_DNT vectors of columns at a time
 *     (td_pv_acc), then row by row over the ragged rest, so a key a row does not see is never
 *     multiplied into it; every TD_SPAN_KEYS keys pv is added into acc with Kahan's compensation and
 *     restarted from zero (td_flush), so that a long row's output does not drift.
 * Padding columns of V make padding columns of acc, which are never written out. Same semantics as
 * the tiled path in every mode: unscaled scores and maxima (modified scores with softcap, ALiBi or a
 * mask tensor, tl_modify_row and tl_mask_row between steps 1 and 2; a key the mask hides never
 * meets its V, td_pv_masked), sink keys in a pass of their own before each row's range (td_keys),
 * deferred normalisation, NaN spread over the row. */
#ifndef TILED_DIRECT_ALGO_H
#define TILED_DIRECT_ALGO_H

#define TD_RG  TILED_DIRECT_ROWS
#define TD_KC  TILED_DIRECT_CHUNK     /* keys per chunk where rows are copied */
#define TD_SLD TILED_DIRECT_CHUNK_MAX /* floats per row of the chunk's scores (s->s) */

/* How the chunk loop reads K and V, a constant in each of its instantiations:
 *  TD_COPY    rows copied into the fp32 chunk buffers, each widened from its own type (K and V of
 *             different types, or a head size with a column tail);
 *  TD_F32, TD_F16, TD_BF16, TD_Q8_0, TD_E4M3, TD_E5M2, TD_Q4_0  K and V both of that type,
 *             head sizes whole vectors: the micro-kernels read the rows in place, widen them in
 *             registers (q8_0 and q4_0 times each block's scale; fp8 without the head's factors,
 *             which td_run folds into the queries and the output: tl_loadu_unscaled) and
 *             prefetch the next chunk's;
 *  TD_BF16X2  bf16 K and V read in place 2 VEC_W elements at a time as their even and their odd
 *             elements (TL_BF16X2: one op a vector where widening takes two), head sizes whole pairs
 *             of vectors: the queries and the accumulators hold each pair of vectors' columns in
 *             that order too (td_load_rows, td_unpair_row). */
enum { TD_COPY, TD_F32, TD_F16, TD_BF16, TD_Q8_0, TD_E4M3, TD_E5M2, TD_Q4_0, TD_BF16X2 };
#define TD_IN_PLACE(mode) ((mode) != TD_COPY)
/* The element type the micro-kernels read (the chunk buffers' fp32 when copied). */
#ifdef TL_BF16X2
#define TD_BF16X2_TYPE TL_BF16X2
#else
#define TD_BF16X2_TYPE TXATTN_DTYPE_BF16 /* never used */
#endif
#define TD_SRC_TYPE(mode)                                                                          \
  ((mode) == TD_F16      ? TXATTN_DTYPE_F16                                                        \
   : (mode) == TD_BF16   ? TXATTN_DTYPE_BF16                                                       \
   : (mode) == TD_Q8_0   ? TXATTN_DTYPE_Q8_0                                                       \
   : (mode) == TD_E4M3   ? TXATTN_DTYPE_E4M3                                                       \
   : (mode) == TD_E5M2   ? TXATTN_DTYPE_E5M2                                                       \
   : (mode) == TD_Q4_0   ? TXATTN_DTYPE_Q4_0                                                       \
   : (mode) == TD_BF16X2 ? TD_BF16X2_TYPE                                                          \
                         : TXATTN_DTYPE_F32)
/* Rows of these types need not be aligned to lines (q8_0's 34-byte and q4_0's 18-byte blocks,
   token-major fp8 pages): their last line is prefetched apart. */
#define TD_8BIT(t)                                                                                 \
  ((t) == TXATTN_DTYPE_Q8_0 || (t) == TXATTN_DTYPE_E4M3 || (t) == TXATTN_DTYPE_E5M2 ||             \
   (t) == TXATTN_DTYPE_Q4_0)
/* Keys per chunk in each mode (tiled_internal.h). */
#define TD_CHUNK_KEYS(mode) (TD_IN_PLACE(mode) ? TILED_DIRECT_CHUNK_IN_PLACE : TD_KC)
/* Copied rows are prefetched this many chunks ahead of the chunk being copied (fp32 rows one,
   narrower ones two: about the same bytes in flight). */
#define TD_AHEAD_COPY(t) ((t) == TXATTN_DTYPE_F32 ? 1 : 2)

/* K and V of one (batch, kv head), of element types kt, vt, addressed in bytes: key j's K row at
   k + j * krow (V's at v + j * vrow); paged (P > 0), row j % P of page table[j / P], whose row 0
   is at k + page * kpage (v + page * vpage). ksc, vsc: the head's fp8 scales (else unused). */
typedef struct td_view {
  const unsigned char *k, *v;
  int64_t krow, vrow, kpage, vpage, P;
  txattn_dtype kt, vt;
  const int32_t *table;
  float ksc, vsc;
} td_view;

/* The K and V rows of keys [j, j + n): kr[i] and vr[i] for key j + i, one page-table lookup (and
   division) per page. */
static void td_rows_of(const td_view *kv, int64_t j, int64_t n, const void **kr, const void **vr) {
  for (int64_t i = 0; i < n;) {
    const int64_t key = j + i;
    int64_t run = n - i;
    const unsigned char *k = kv->k + key * kv->krow, *v = kv->v + key * kv->vrow;
    if (kv->P > 0) {
      const int64_t page = kv->table[key / kv->P], r = key % kv->P;
      run = tl_min(run, kv->P - r);
      k = kv->k + page * kv->kpage + r * kv->krow;
      v = kv->v + page * kv->vpage + r * kv->vrow;
    }
    for (int64_t x = 0; x < run; x++, i++) {
      kr[i] = k + x * kv->krow;
      vr[i] = v + x * kv->vrow;
    }
  }
}

/* Step 0 where rows are copied (TD_COPY), done by td_copy_some() a few rows at a time: rows
   r < nk are K rows k[r] into kc, the rest V rows v[r - nk] into vc, each widened from its type and
   zero-padded; the rows pk, pv (npf of them) of a chunk further on are prefetched on the way. */
typedef struct td_copier {
  const tiled_geom *g;
  const td_view *kv;
  float *kc, *vc;
  int64_t nk, next, npf;
  int64_t step; /* rows per micro-kernel call */
  const void *k[TD_KC], *v[TD_KC], *pk[TD_KC], *pv[TD_KC];
} td_copier;

static void td_copy_some(td_copier *cp, int64_t n) {
  const tiled_geom *g = cp->g;
  const td_view *kv = cp->kv;
  const int64_t end = tl_min(cp->next + n, 2 * cp->nk);
  for (; cp->next < end; cp->next++) {
    const int64_t r = cp->next, is_k = r < cp->nk, j = is_k ? r : r - cp->nk;
    const txattn_dtype t = is_k ? kv->kt : kv->vt;
    const int64_t n_el = is_k ? g->dqk : g->dv, np = is_k ? g->dqkp : g->dvp;
    if (j < cp->npf) tl_prefetch_l2(is_k ? cp->pk[j] : cp->pv[j], tl_elem_bytes(t, n_el));
    tl_widen_row(is_k ? cp->k[j] : cp->v[j], t, is_k ? kv->ksc : kv->vsc, n_el, np,
                 is_k ? cp->kc + j * np : cp->vc + j * np);
  }
}
TILED_INLINE void td_copy(td_copier *cp, int64_t n, const int mode) {
  if (mode == TD_COPY) td_copy_some(cp, n);
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

/* Queries times qf (qsign times K's factor where td_run folds it, rounded once) of rows [t0, t1)
   into s->qp, zero-padded to dqkp, each 2 VEC_W columns as their even then their odd ones if pairs
   (TD_BF16X2); ranges clipped to [k0, k1). Returns 0 if a finite query element times qf overflowed
   (a factor that cannot be folded), else 1. */
static int td_load_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                        int64_t k0, int64_t k1, const tiled_scratch *s, int pairs, float qf) {
  const txattn_tensors *t = g->t;
  const int64_t nr = t1 - t0, dqkp = g->dqkp;
  int ok = 1;
  for (int64_t r = 0; r < nr; r++) {
    const int64_t row = t0 + r, i = row / g->group, h = kvh * g->group + row % g->group;
    const txattn_dtype qt = g->p->q_type;
    const void *q = txattn_row_of(t->q_data, qt, &t->q_layout, b, h, i);
    float *qr = s->qp + r * dqkp;
    int64_t lo, hi, c = 0;
    if (qt == TXATTN_DTYPE_F32)
      for (; c < g->dqk; c++) qr[c] = ((const float *)q)[c] * qf;
    else
      for (; c < g->dqk; c++) qr[c] = tl_elem(q, qt, c) * qf;
    for (c = 0; qf != g->qsign && c < g->dqk; c++) /* isinf(qr) while q is finite */
      ok &= !(isinf(qr[c]) &&
              isfinite(qt == TXATTN_DTYPE_F32 ? ((const float *)q)[c] : tl_elem(q, qt, c)));
    for (c = g->dqk; c < dqkp; c++) qr[c] = 0.0f;
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
  return ok;
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

/* The byte offset within a row of type t of the line boundary in the VEC_W elements from element c
   (vectors of at most 64 bytes hold at most one), or -1 if none: where the micro-kernels reading
   rows in place prefetch, so that each line of a line-aligned row is prefetched once. */
TILED_INLINE int64_t td_line_in(const int t, int64_t c) {
  const int64_t line = (tl_elem_bytes(t, c) + 63) / 64 * 64;
  return line < tl_elem_bytes(t, c + VEC_W) ? line : -1;
}

/* K rows per score tile of nr rows of fp32 or q8_0 K read in place: where the 16-way reduction
   exists, as many as fill its 16 accumulators (one row: 16 keys, two: 8), so that a decode with
   little or no GQA ends a tile in one reduction rather than one per key; else TILED_DNK. 16-bit K
   measured 15-20% slower so (16 rows read at once instead of 4), fp8 no faster. */
#ifdef VF_HAVE_HSUM16
#define TD_NK(nr) ((nr) == 1 ? 16 : (nr) == 2 ? 8 : TILED_DNK)
#define TD_NK_MAX 16
#else
#define TD_NK(nr) TILED_DNK
#define TD_NK_MAX TILED_DNK
#endif

/* a[r * nk + n] += q_r[0 .. W) k0[n] + q_r[W .. 2W) k1[n] for the nr rows q_r = q + r * dp: a step
   of two vectors of td_dot's columns, the first's FMA first. */
TILED_INLINE void td_fma2(vf *a, const float *q, int64_t dp, const vf *k0, const vf *k1,
                          const int nr, const int nk) {
#pragma GCC unroll 8
  for (int r = 0; r < nr; r++) {
    const vf q0 = vf_load(q + r * dp), q1 = vf_load(q + r * dp + VEC_W);
#pragma GCC unroll 16
    for (int n = 0; n < nk; n++)
      a[r * nk + n] = vf_fma(q1, k1[n], vf_fma(q0, k0[n], a[r * nk + n]));
  }
}

/* s[r * sld + n] = q_r . k_n for nr rows and nk (at most TD_NK_MAX) K rows kr[n], both padded to
   dp floats, of type kt (a constant): fp32 (the chunk buffers' or in place), or 16-bit read in
   place; if pf, each line of the rows pk[n] (the next chunk's) as the same line of kr[n] is read.
   a[r * nk + n] accumulates q_r . k_n. */
TILED_INLINE void td_dot(const float *q, const void *const *kr, const void *const *pk, int64_t dp,
                         float *s, int64_t sld, const int nr, const int nk, const int kt,
                         const int pf) {
  vf a[TD_RG * TILED_DNK > TD_NK_MAX ? TD_RG * TILED_DNK : TD_NK_MAX];
#pragma GCC unroll 16
  for (int i = 0; i < nr * nk; i++) a[i] = vf_zero();
#ifdef TL_BF16X2
  if (kt == TL_BF16X2) { /* even then odd elements, as the queries' columns (td_load_rows) */
    for (int64_t c = 0; c < dp; c += 2 * VEC_W) {
      vf ke[TD_NK_MAX], ko[TD_NK_MAX];
#pragma GCC unroll 16
      for (int n = 0; n < nk; n++) {
        vf_loadu_bf16x2((const uint16_t *)kr[n] + c, &ke[n], &ko[n]);
        if (pf) __builtin_prefetch((const uint16_t *)pk[n] + c, 0, 2); /* 64 bytes a step */
      }
      td_fma2(a, q + c, dp, ke, ko, nr, nk);
    }
  } else
#endif
  {
    int64_t c0 = 0;
    /* fp8 two vectors a load (tl_loadu2_fp8), the FMAs in the same order */
    for (; TL_FP8X2(kt) && c0 + 2 * VEC_W <= dp; c0 += 2 * VEC_W) {
      vf k0[TD_NK_MAX], k1[TD_NK_MAX];
      const int64_t l0 = pf ? td_line_in(kt, c0) : -1, l1 = pf ? td_line_in(kt, c0 + VEC_W) : -1;
      const int end = pf && c0 + 2 * VEC_W == dp;
#pragma GCC unroll 16
      for (int n = 0; n < nk; n++) {
        tl_loadu2_fp8(kr[n], kt, c0, &k0[n], &k1[n]);
        if (l0 >= 0) __builtin_prefetch((const char *)pk[n] + l0, 0, 2);
        if (l1 >= 0) __builtin_prefetch((const char *)pk[n] + l1, 0, 2);
        if (end) __builtin_prefetch((const char *)pk[n] + dp - 1, 0, 2);
      }
      td_fma2(a, q + c0, dp, k0, k1, nr, nk);
    }
    /* q8_0 a block at a time, its scale widened once for the block's vectors */
    for (int64_t cb = c0; cb < dp; cb += kt == TXATTN_DTYPE_Q8_0 ? 32 : VEC_W) {
      const int64_t ce = kt == TXATTN_DTYPE_Q8_0 ? cb + 32 : cb + VEC_W;
      vf bs[TD_NK_MAX];
#pragma GCC unroll 16
      for (int n = 0; n < nk; n++)
        bs[n] = kt == TXATTN_DTYPE_Q8_0 ? tl_bcast_f16((const char *)kr[n] + tl_elem_bytes(kt, cb))
                                        : vf_zero();
#pragma GCC unroll 4
      for (int64_t c = cb; c < ce; c += VEC_W) {
        vf kv[TD_NK_MAX];
        const int64_t line = pf ? td_line_in(kt, c) : -1;
        const int end = pf && TD_8BIT(kt) && c + VEC_W == dp; /* the last line of the row */
#pragma GCC unroll 16
        for (int n = 0; n < nk; n++) {
          kv[n] = kt == TXATTN_DTYPE_Q8_0
                      ? vf_mul(vf_loadu_i8((const int8_t *)kr[n] + tl_elem_bytes(kt, c) + 2), bs[n])
                      : tl_loadu_unscaled(kr[n], kt, c);
          if (line >= 0) __builtin_prefetch((const char *)pk[n] + line, 0, 2);
          if (end) __builtin_prefetch((const char *)pk[n] + tl_elem_bytes(kt, dp) - 1, 0, 2);
        }
#pragma GCC unroll 8
        for (int r = 0; r < nr; r++) {
          vf qv = vf_load(q + r * dp + c);
#pragma GCC unroll 16
          for (int n = 0; n < nk; n++) a[r * nk + n] = vf_fma(qv, kv[n], a[r * nk + n]);
        }
      }
    }
  }
#ifdef VF_HAVE_HSUM16
  if (nr * nk == 16) { /* lane r * nk + n of the reduction is q_r . k_n */
    const vf x = vf_hsum16(a);
    if (nr == 1)
      vf_storeu(s, x);
    else if (nr == 2)
      vf_store2x8(s, sld, x);
    else
      vf_store4x4(s, sld, x);
    return;
  }
#endif
#pragma GCC unroll 4
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 16
    for (int n = 0; n < nk; n++) s[r * sld + n] = vf_hsum(a[r * nk + n]);
}

/* A share of the copy (TD_COPY) between two micro-kernel calls. */
TILED_INLINE void td_copy_step(td_copier *cp, const int mode) {
  if (mode == TD_COPY) td_copy_some(cp, cp->step);
}

/* Scores of the nr rows against the chunk's keys [ua, ub) (K rows kr, the next chunk's pk). */
TILED_INLINE void td_scores(const tiled_geom *g, const tiled_scratch *s, const void *const *kr,
                            const void *const *pk, int64_t ua, int64_t ub, td_copier *cp,
                            const int nr, const int mode) {
  const int kt = TD_SRC_TYPE(mode), pf = TD_IN_PLACE(mode);
  const int nk = mode == TD_F32 || mode == TD_Q8_0 ? TD_NK(nr) : TILED_DNK;
  int64_t j = ua;
  for (; j + nk <= ub; j += nk) {
    td_copy_step(cp, mode);
    td_dot(s->qp, kr + j, pk + j, g->dqkp, s->s + j, TD_SLD, nr, nk, kt, pf);
  }
  for (; nk > TILED_DNK && j + TILED_DNK <= ub; j += TILED_DNK)
    td_dot(s->qp, kr + j, pk + j, g->dqkp, s->s + j, TD_SLD, nr, TILED_DNK, kt, pf);
  for (; j < ub; j++) td_dot(s->qp, kr + j, pk + j, g->dqkp, s->s + j, TD_SLD, nr, 1, kt, pf);
}

/* ---- 3. acc = acc * alpha + P V ---- */

/* acc[r][0 .. nrv W) = acc * alpha[r] (if alpha) + sum_{j in [j0, j1)} p[r][j] v_j[col ..
   col + nrv W) for mr rows, one fp32 FMA per key into acc: the sum over a span of a few chunks
   (td_flush). mr and nrv are constants at every call, so the accumulators live in registers. V
   rows vr[j] of type vt (a constant), widened in registers; if pf, the lines of the next chunk's
   rows pv[j] are prefetched as td_dot's. */
TILED_INLINE void td_pv_acc(float *acc, int64_t ald, const float *alpha, const float *p,
                            const void *const *vr, const void *const *pv, int64_t col, int64_t dp,
                            int64_t j0, int64_t j1, const int mr, const int nrv, const int vt,
                            const int pf) {
  vf o[TILED_PV_ROWS][TILED_PV_COLS];
  int64_t line[TILED_PV_COLS];
  /* the last line of a row where that is apart (td_dot) */
  const int64_t end = pf && TD_8BIT(vt) && col + nrv * VEC_W == dp ? tl_elem_bytes(vt, dp) - 1 : -1;
#pragma GCC unroll 8
  for (int n = 0; n < nrv; n++) line[n] = pf ? td_line_in(vt, col + n * VEC_W) : -1;
#pragma GCC unroll 8
  for (int r = 0; r < mr; r++) {
    vf a = alpha ? vf_bcast(alpha + r) : vf_set1(1.0f);
#pragma GCC unroll 8
    for (int n = 0; n < nrv; n++) {
      o[r][n] = vf_load(acc + r * ald + n * VEC_W);
      if (alpha) o[r][n] = vf_mul(o[r][n], a);
    }
  }
  for (int64_t j = j0; j < j1; j++) {
    vf vv[TILED_PV_COLS], bs = vf_zero();
#pragma GCC unroll 8
    for (int n = 0; n < nrv; n++) {
#ifdef TL_BF16X2
      if (vt == TL_BF16X2) { /* nrv is even: the odd case only keeps the compiler content */
        if (n + 1 == nrv && n % 2 == 0)
          vv[n] = vf_zero();
        else if (n % 2 == 0) {
          vf_loadu_bf16x2((const uint16_t *)vr[j] + col + n * VEC_W, &vv[n], &vv[n + 1]);
          if (pf) __builtin_prefetch((const uint16_t *)pv[j] + col + n * VEC_W, 0, 2);
        }
        continue;
      }
#endif
      if (TL_FP8X2(vt)) { /* pairs of vectors a load, a last odd one alone */
        if (n % 2 == 0 && n + 1 < nrv)
          tl_loadu2_fp8(vr[j], vt, col + n * VEC_W, &vv[n], &vv[n + 1]);
        else if (n % 2 == 0)
          vv[n] = tl_loadu_unscaled(vr[j], vt, col + n * VEC_W);
      } else if (vt == TXATTN_DTYPE_Q8_0 && TILED_DNT * VEC_W % 32 == 0 && 2 * VEC_W % 32 == 0) {
        /* tiles start at whole q8_0 blocks (every tile but a last single vector is a whole
           number of blocks wide here): the block's scale widened once for its vectors */
        const int64_t c = col + n * VEC_W;
        const char *blk = (const char *)vr[j] + tl_elem_bytes(vt, c / 32 * 32);
        if (n * VEC_W % 32 == 0) bs = tl_bcast_f16(blk);
        vv[n] = vf_mul(vf_loadu_i8((const int8_t *)blk + 2 + c % 32), bs);
      } else {
        vv[n] = tl_loadu_unscaled(vr[j], vt, col + n * VEC_W);
      }
      if (line[n] >= 0) __builtin_prefetch((const char *)pv[j] + line[n], 0, 2);
    }
    if (end >= 0) __builtin_prefetch((const char *)pv[j] + end, 0, 2);
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
      vf pb = vf_bcast(p + r * TD_SLD + j);
#pragma GCC unroll 8
      for (int n = 0; n < nrv; n++) o[r][n] = vf_fma(pb, vv[n], o[r][n]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < mr; r++)
#pragma GCC unroll 8
    for (int n = 0; n < nrv; n++) vf_store(acc + r * ald + n * VEC_W, o[r][n]);
}

/* Every column of mr rows (acc, alpha, p at the rows' first), keys [j0, j1) of the chunk (V rows
   vr, the next chunk's pv). */
TILED_INLINE void td_pv_rows(const tiled_geom *g, float *acc, const float *alpha, const float *p,
                             const void *const *vr, const void *const *pv, int64_t j0, int64_t j1,
                             const int mr, td_copier *cp, const int mode) {
  const int vt = TD_SRC_TYPE(mode), pf = TD_IN_PLACE(mode);
  const int64_t dvp = g->dvp, full = dvp / VEC_W;
  int64_t col = 0;
#define TD_PV_TILE(nrv)                                                                            \
  td_pv_acc(acc + col * VEC_W, dvp, alpha, p, vr, pv, col * VEC_W, dvp, j0, j1, mr, nrv, vt, pf)
  for (; col + TILED_DNT <= full; col += TILED_DNT) {
    td_copy_step(cp, mode);
    TD_PV_TILE(TILED_DNT);
  }
  /* The narrower rest as tiles of 4, 2 and 1 vectors (each a pass over the keys): head sizes are
     mostly whole tiles plus 4 or 2 vectors, and a tile of every width made twice the code. */
  _Static_assert(TILED_DNT < 8, "the rest is at most 7 vectors");
#if TILED_DNT > 4
  if (full - col >= 4) {
    TD_PV_TILE(4);
    col += 4;
  }
#endif
#if TILED_DNT > 2
  if (full - col >= 2) {
    TD_PV_TILE(2);
    col += 2;
  }
#endif
  if (full - col >= 1) TD_PV_TILE(1);
#undef TD_PV_TILE
}

/* One row's P V over keys [j0, j1) of the chunk (its ragged keys, a masked row's runs of shown
   keys), out of line: inlined at each call site of every row count's chunk loop, these single-row
   copies were most of the direct path's code and compile time, for calls made at most a few times
   per row and chunk. */
static __attribute__((noinline)) void td_pv_one(const tiled_geom *g, float *acc, const float *p,
                                                const void *const *vr, const void *const *pv,
                                                int64_t j0, int64_t j1, td_copier *cp, int mode) {
  switch (mode) {
#define TD_PV_ONE(m)                                                                               \
  case m:                                                                                          \
    td_pv_rows(g, acc, NULL, p, vr, pv, j0, j1, 1, cp, m);                                         \
    break;
    TD_PV_ONE(TD_COPY)
    TD_PV_ONE(TD_F32)
    TD_PV_ONE(TD_F16)
    TD_PV_ONE(TD_BF16)
    TD_PV_ONE(TD_Q8_0)
    TD_PV_ONE(TD_E4M3)
    TD_PV_ONE(TD_E5M2)
    TD_PV_ONE(TD_Q4_0)
#ifdef TL_BF16X2
    TD_PV_ONE(TD_BF16X2)
#endif
#undef TD_PV_ONE
  default:
    break;
  }
}

/* The nr rows' common keys [sp->ca, sp->cb) as one tile (which also applies alpha to every
   column), then each row's ragged keys. */
TILED_INLINE void td_pv(const tiled_geom *g, const tiled_scratch *s, const void *const *vr,
                        const void *const *pv, td_copier *cp, const tiled_span *sp, int64_t c0,
                        int64_t nk, const int nr, const int mode) {
  const int64_t dvp = g->dvp;
  const int common = sp->ca < sp->cb;
  td_pv_rows(g, s->pv, s->alpha, s->s, vr, pv, common ? sp->ca : 0, common ? sp->cb : 0, nr, cp,
             mode);
  if (common && sp->ga == sp->ca && sp->gb == sp->cb) return; /* no ragged keys */
  for (int64_t r = 0; r < nr; r++) {
    int64_t a, b;
    float *acc = s->pv + r * dvp;
    const float *p = s->s + r * TD_SLD;
    tl_row_keys(s, r, c0, nk, &a, &b);
    if (common) {
      if (a < sp->ca) td_pv_one(g, acc, p, vr, pv, a, sp->ca, cp, mode);
      if (sp->cb < b) td_pv_one(g, acc, p, vr, pv, sp->cb, b, cp, mode);
    } else if (a < b) {
      td_pv_one(g, acc, p, vr, pv, a, b, cp, mode);
    }
  }
}

/* td_pv where the mask tensor hides keys of the chunk: each row rescaled, then its runs of keys the
   mask shows added, so that a hidden key's V (an Inf, a NaN) never meets its zero weight. */
static void td_pv_masked(const tiled_geom *g, const tiled_scratch *s, const void *const *vr,
                         const void *const *pv, td_copier *cp, int64_t c0, int64_t nk, int64_t nr,
                         int mode) {
  for (int64_t r = 0; r < nr; r++) {
    float *acc = s->pv + r * g->dvp;
    int64_t a, b;
    for (int64_t c = 0; c < g->dvp; c++) acc[c] *= s->alpha[r];
    tl_row_keys(s, r, c0, nk, &a, &b);
    for (int64_t j = a; j < b;) {
      int64_t e = j;
      while (e < b && txm_mask_value(g->p, g->t, s->mrow[r], c0 + e) != -INFINITY) e++;
      if (e > j) td_pv_one(g, acc, s->s + r * TD_SLD, vr, pv, j, e, cp, mode);
      j = e + 1; /* past the hidden key at e (or b) */
    }
  }
}

/* ---- drivers ---- */

/* Steps 1b and 2 for the chunk's nr rows, their scores in s->s: the modifiers (softcap, ALiBi, the
   mask: as the tiled path) and the online softmax. Out of line: they depend on neither the mode
   nor the row count, and a copy in every chunk loop cost compile time and code for nothing.
   Returns whether the mask tensor hides a key of the chunk from some row. */
static int td_softmax_chunk(const tiled_geom *g, const tiled_scratch *s, int64_t c0, int64_t nk,
                            int64_t nr) {
  int hides = 0;
  for (int64_t r = 0; g->modified && r < nr; r++) {
    int64_t a, b;
    tl_row_keys(s, r, c0, nk, &a, &b);
    if (a >= b) continue;
    tl_modify_row(g, s->s + r * TD_SLD, a, b, c0, s->slope[r], s->pos[r]);
    if (!g->mask) continue;
    hides |= tl_mask_row(g, s->s + r * TD_SLD, s->mrow[r], a, b, c0);
  }
  tl_softmax_rows(g, s, 0, nr, TD_SLD, c0, nk);
  for (int64_t r = 0; r < nr; r++) s->pv_alpha[r] *= s->alpha[r];
  return hides;
}

/* The chunk [c0, c0 + nk) for nr rows, its K and V rows kr, vr (the next chunk's pk, pv, or the
   chunk buffers where copied): scores, softmax and P V if some row sees part of it, while cp copies
   the next chunk (TD_COPY). */
TILED_INLINE void td_chunk_rows(const tiled_geom *g, const tiled_scratch *s, const void *const *kr,
                                const void *const *vr, const void *const *pk, const void *const *pv,
                                td_copier *cp, int64_t c0, int64_t nk, const int nr,
                                const int mode) {
  const tiled_span sp = tl_rows_span(s, 0, nr, c0, nk);
  if (sp.ga < sp.gb) { /* else m, l, acc unchanged */
    td_scores(g, s, kr, pk, sp.ga, sp.gb, cp, nr, mode);
    const int hides = td_softmax_chunk(g, s, c0, nk, nr);
    if (hides)
      td_pv_masked(g, s, vr, pv, cp, c0, nk, nr, mode);
    else
      td_pv(g, s, vr, pv, cp, &sp, c0, nk, nr, mode);
  }
  if (mode == TD_COPY) td_copy_some(cp, 2 * cp->nk); /* what the micro-kernels left */
}

/* The chunk loop in each mode, a copy of td_chunk_rows for each row count. */
#define TD_CHUNK_MODE(name, mode)                                                                  \
  static void name(const tiled_geom *g, const tiled_scratch *s, const void *const *kr,             \
                   const void *const *vr, const void *const *pk, const void *const *pv,            \
                   td_copier *cp, int64_t c0, int64_t nk, int64_t nr) {                            \
    _Static_assert(TD_RG == 4, "a case for every row count up to TILED_DIRECT_ROWS");              \
    switch (nr) {                                                                                  \
    case 1:                                                                                        \
      td_chunk_rows(g, s, kr, vr, pk, pv, cp, c0, nk, 1, mode);                                    \
      break;                                                                                       \
    case 2:                                                                                        \
      td_chunk_rows(g, s, kr, vr, pk, pv, cp, c0, nk, 2, mode);                                    \
      break;                                                                                       \
    case 3:                                                                                        \
      td_chunk_rows(g, s, kr, vr, pk, pv, cp, c0, nk, 3, mode);                                    \
      break;                                                                                       \
    default:                                                                                       \
      td_chunk_rows(g, s, kr, vr, pk, pv, cp, c0, nk, 4, mode);                                    \
      break;                                                                                       \
    }                                                                                              \
  }
TD_CHUNK_MODE(td_chunk_copy, TD_COPY)
TD_CHUNK_MODE(td_chunk_f32, TD_F32)
TD_CHUNK_MODE(td_chunk_f16, TD_F16)
TD_CHUNK_MODE(td_chunk_bf16, TD_BF16)
TD_CHUNK_MODE(td_chunk_q8_0, TD_Q8_0)
TD_CHUNK_MODE(td_chunk_e4m3, TD_E4M3)
TD_CHUNK_MODE(td_chunk_e5m2, TD_E5M2)
TD_CHUNK_MODE(td_chunk_q4_0, TD_Q4_0)
#ifdef TL_BF16X2
TD_CHUNK_MODE(td_chunk_bf16x2, TD_BF16X2)
#endif

/* A copier of the chunk [c0, c0 + nk) into kc, vc, prefetching the rows of the chunk
   TD_AHEAD_COPY chunks after it (keys below kend), its copy spread over `calls` micro-kernel
   calls. */
static void td_copier_init(td_copier *cp, const tiled_geom *g, const td_view *kv, float *kc,
                           float *vc, int64_t c0, int64_t nk, int64_t kend, int64_t calls) {
  const int64_t ahead = TD_KC * (kv->kt == TXATTN_DTYPE_F32 && kv->vt == TXATTN_DTYPE_F32 ? 1 : 2);
  cp->g = g;
  cp->kv = kv;
  cp->kc = kc;
  cp->vc = vc;
  cp->nk = nk;
  cp->next = 0;
  cp->step = (2 * nk + calls - 1) / calls;
  cp->npf = tl_clamp(kend - (c0 + ahead), 0, nk);
  td_rows_of(kv, c0, nk, cp->k, cp->v);
  td_rows_of(kv, c0 + ahead, cp->npf, cp->pk, cp->pv);
}

/* Chunks of [ja, jb) in mode: read in place, each chunk's row table made while the one before is
   computed (and its rows prefetched by that one's loads: two chunks ahead measured no faster); or
   copied, each chunk while the one before is computed (two sets of buffers), the copy spread
   evenly over the chunk's micro-kernel calls (for d = 128 in AVX2, 32 rows over 6 score and 6 P V
   calls: 3 rows a call): the fastest spread measured (docs/measurements.md). */
TILED_INLINE void td_chunks(const tiled_geom *g, const td_view *kv, const tiled_scratch *s,
                            int64_t nr, int64_t ja, int64_t jb, const int mode) {
  const int64_t ck = TD_CHUNK_KEYS(mode);
  /* in place: a chunk's row table and the next's; copied: the two buffers' rows */
  const void *kr[2][TD_SLD], *vr[2][TD_SLD];
  td_copier cp[2];
  const int64_t kcs = TD_KC * g->dqkp, vcs = TD_KC * g->dvp;
  const int64_t calls =
      (TD_KC + TILED_DNK - 1) / TILED_DNK + (g->dvp / VEC_W + TILED_DNT - 1) / TILED_DNT;
  if (mode == TD_COPY) {
    for (int b = 0; b < 2; b++)
      for (int64_t x = 0; x < TD_KC; x++) {
        kr[b][x] = s->kc + b * kcs + x * g->dqkp;
        vr[b][x] = s->vc + b * vcs + x * g->dvp;
      }
    td_copier_init(&cp[0], g, kv, s->kc, s->vc, ja, tl_min(ck, jb - ja), jb, calls);
    td_copy_some(&cp[0], 2 * cp[0].nk);
  } else {
    td_rows_of(kv, ja, tl_min(ck, jb - ja), kr[0], vr[0]);
  }
  for (int64_t c0 = ja, i = 0; c0 < jb; c0 += ck, i++) {
    const int cur = (int)(i & 1), nx = 1 - cur;
    const int64_t nc = tl_min(ck, jb - c0), nn = tl_clamp(jb - c0 - ck, 0, ck);
    if (mode == TD_COPY) {
      td_copier_init(&cp[nx], g, kv, s->kc + nx * kcs, s->vc + nx * vcs, c0 + ck, nn, jb, calls);
    } else {
      td_rows_of(kv, c0 + ck, nn, kr[nx], vr[nx]);
      for (int64_t x = nn; x < nc; x++) { /* no next row: prefetch the row itself (in cache) */
        kr[nx][x] = kr[cur][x];
        vr[nx][x] = vr[cur][x];
      }
    }
    const void *const *k = kr[cur], *const *v = vr[cur], *const *pk = kr[nx], *const *pv = vr[nx];
    if (mode == TD_COPY)
      td_chunk_copy(g, s, k, v, pk, pv, &cp[nx], c0, nc, nr);
    else if (mode == TD_F32)
      td_chunk_f32(g, s, k, v, pk, pv, NULL, c0, nc, nr);
    else if (mode == TD_F16)
      td_chunk_f16(g, s, k, v, pk, pv, NULL, c0, nc, nr);
    else if (mode == TD_Q8_0)
      td_chunk_q8_0(g, s, k, v, pk, pv, NULL, c0, nc, nr);
    else if (mode == TD_E4M3)
      td_chunk_e4m3(g, s, k, v, pk, pv, NULL, c0, nc, nr);
    else if (mode == TD_E5M2)
      td_chunk_e5m2(g, s, k, v, pk, pv, NULL, c0, nc, nr);
    else if (mode == TD_Q4_0)
      td_chunk_q4_0(g, s, k, v, pk, pv, NULL, c0, nc, nr);
#ifdef TL_BF16X2
    else if (mode == TD_BF16X2)
      td_chunk_bf16x2(g, s, k, v, pk, pv, NULL, c0, nc, nr);
#endif
    else
      td_chunk_bf16(g, s, k, v, pk, pv, NULL, c0, nc, nr);
    if (i % (TD_SPAN_KEYS / ck) == TD_SPAN_KEYS / ck - 1) td_flush(g, s, nr);
  }
}

/* Every row's keys [lo, hi) in the mode the element types and the head sizes allow (fp8 in place
   only where td_run folded the factors: fold). */
static void td_keys(const tiled_geom *g, const td_view *kv, const tiled_scratch *s, int64_t nr,
                    int pairs, int fold) {
  const txattn_dtype kt = kv->kt, vt = kv->vt;
  int64_t ja = g->p->n_kv, jb = 0;
  for (int64_t r = 0; r < nr; r++) {
    if (s->lo[r] < s->hi[r]) {
      ja = tl_min(ja, s->lo[r]);
      jb = tl_max(jb, s->hi[r]);
    }
  }
  if (ja >= jb) return;
  /* in place: K and V of one type, no column tails */
  const int in_place = kt == vt && g->dqk % VEC_W == 0 && g->dv % VEC_W == 0;
  if (pairs)
    td_chunks(g, kv, s, nr, ja, jb, TD_BF16X2);
  else if (in_place && kt == TXATTN_DTYPE_F32)
    td_chunks(g, kv, s, nr, ja, jb, TD_F32);
  else if (in_place && kt == TXATTN_DTYPE_F16)
    td_chunks(g, kv, s, nr, ja, jb, TD_F16);
  else if (in_place && kt == TXATTN_DTYPE_BF16)
    td_chunks(g, kv, s, nr, ja, jb, TD_BF16);
  else if (in_place && kt == TXATTN_DTYPE_Q8_0)
    td_chunks(g, kv, s, nr, ja, jb, TD_Q8_0);
  else if (in_place && kt == TXATTN_DTYPE_Q4_0)
    td_chunks(g, kv, s, nr, ja, jb, TD_Q4_0);
  else if (fold && kt == TXATTN_DTYPE_E4M3)
    td_chunks(g, kv, s, nr, ja, jb, TD_E4M3);
  else if (fold && kt == TXATTN_DTYPE_E5M2)
    td_chunks(g, kv, s, nr, ja, jb, TD_E5M2);
  else
    td_chunks(g, kv, s, nr, ja, jb, TD_COPY);
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
  /* paged: the pool's page 0 at head kvh and the sequence's row of the block table */
  const td_view kv = {txattn_row_of(t->k_data, kt, &t->k_layout, P ? 0 : b, kvh, 0),
                      txattn_row_of(t->v_data, vt, &t->v_layout, P ? 0 : b, kvh, 0),
                      tl_elem_bytes(kt, t->k_layout.row),
                      tl_elem_bytes(vt, t->v_layout.row),
                      P ? tl_elem_bytes(kt, t->k_layout.batch) : 0,
                      P ? tl_elem_bytes(vt, t->v_layout.batch) : 0,
                      P,
                      kt,
                      vt,
                      P ? t->block_table + b * g->p->max_pages : NULL,
                      tl_kv_scale(g, 1, kvh),
                      tl_kv_scale(g, 0, kvh)};
  int pairs = 0;
#ifdef TL_BF16X2
  pairs = kt == TXATTN_DTYPE_BF16 && vt == TXATTN_DTYPE_BF16 && g->dqk % (2 * VEC_W) == 0 &&
          g->dv % (2 * VEC_W) == 0;
#endif
  /* fp8 K and V read in place compute on their unscaled values: K's factor multiplies the queries
     (each rounded once, as each k would be) unless that overflows, V's the output, once
     (docs/error_bound.md, "8-bit K and V") */
  int fold = (kt == TXATTN_DTYPE_E4M3 || kt == TXATTN_DTYPE_E5M2) && kt == vt &&
             g->dqk % VEC_W == 0 && g->dv % VEC_W == 0;
  if (!td_load_rows(g, b, kvh, t0, t1, k0, k1, s, pairs, fold ? g->qsign * kv.ksc : g->qsign)) {
    fold = 0; /* rows read as copies, each value times its factor */
    td_load_rows(g, b, kvh, t0, t1, k0, k1, s, pairs, g->qsign);
  }
  if (g->sink_keys > 0) { /* the sink keys first: the online softmax takes keys in any order */
    td_swap_ranges(s, nr);
    td_keys(g, &kv, s, nr, pairs, fold);
    td_flush(g, s, nr);
    td_swap_ranges(s, nr);
  }
  td_keys(g, &kv, s, nr, pairs, fold);
  td_flush(g, s, nr);
  for (int64_t r = 0; pairs && r < nr; r++) {
    td_unpair_row(s->acc + r * g->dvp, g->dvp);
    td_unpair_row(s->acc_c + r * g->dvp, g->dvp);
  }
  for (int64_t i = 0; fold && i < nr * g->dvp; i++) { /* the compensated sum times V's factor */
    s->acc[i] = (s->acc[i] - s->acc_c[i]) * kv.vsc;
    s->acc_c[i] = 0.0f;
  }
  if (out)
    tl_write_partials(g, s, nr, out);
  else {
    tl_fold_acc(s->acc, s->acc_c, nr, g->dvp);
    tiled_write_rows(g, b, kvh, t0, t1, s->acc, s->m, s->l);
  }
}

#endif /* TILED_DIRECT_ALGO_H */
