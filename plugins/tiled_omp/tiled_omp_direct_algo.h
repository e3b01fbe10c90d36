/* The direct path (tiled_omp_direct.h) written once over the tiled vector layer; included by each
 * tiled_omp_direct_<isa>.c after its vec_<isa>.h, it defines tomp_direct_<isa>.
 *
 * Rows are taken in groups of TD_RG (padding rows: zero queries, the last row's range, results
 * discarded). Keys go in chunks of TOMP_DIRECT_CHUNK:
 *  0. the chunk's K and V rows are copied into scratch, each zero-padded to whole vectors, a few
 *     rows at a time between the micro-kernel calls of the chunk before (two sets of buffers):
 *     the copy's cache misses then overlap that chunk's arithmetic, and the micro-kernels read
 *     aligned rows from L1 with no column tails;
 * then per group of rows that sees part of the chunk:
 *  1. scores: dot products of the group's queries with TD_NK K rows at a time;
 *  2. online softmax exactly as in tiled_algo.h (base 2, edge lanes -inf, alpha per row);
 *  3. acc = acc * alpha + P V over the keys every row of the group sees, TD_NT vectors of columns
 *     at a time, then row by row over the ragged rest, so a key a row does not see is never
 *     multiplied into it.
 * Padding columns of V make padding columns of acc, which are never written out. */
#ifndef TILED_OMP_DIRECT_ALGO_H
#define TILED_OMP_DIRECT_ALGO_H

#include <math.h>
#include <string.h>

#include "tiled_omp_direct.h"
#include "tiled_vexp2.h"

#define TD_CAT2(a, b) a##_##b
#define TD_CAT(a, b)  TD_CAT2(a, b)
#define TD_FN         TD_CAT(tomp_direct, TILED_ISA)
#define TD_INLINE     static inline __attribute__((always_inline))
#define TD_RG         4 /* rows per register group */
#define TD_RGP        ((TD_RG + TILED_W - 1) / TILED_W * TILED_W)
#define TD_KC         TOMP_DIRECT_CHUNK
/* Register tiles. Scores: TD_RG rows x TD_NK keys of accumulators, TD_NK K vectors and a query
   vector; P V: TD_RG rows x TD_NT vectors of columns, TD_NT V vectors and a broadcast. For AVX2
   both fill the 16 ymm registers (12 accumulators: more chains than the 2 FMA pipes x 5 cycles of
   latency need); AVX-512 and NEON have 32 registers. */
#if TILED_W == 8
#define TD_NK 3
#define TD_NT 3
#elif TILED_W == 1
#define TD_NK 2
#define TD_NT 4
#else
#define TD_NK 4
#define TD_NT 6
#endif

static inline int64_t td_min(int64_t a, int64_t b) {
  return a < b ? a : b;
}
static inline int64_t td_max(int64_t a, int64_t b) {
  return a > b ? a : b;
}
static inline int64_t td_clamp(int64_t x, int64_t lo, int64_t hi) {
  return td_min(td_max(x, lo), hi);
}
static inline int64_t td_dqkp(const tiled_geom *g) {
  return (g->dqk + TILED_W - 1) / TILED_W * TILED_W;
}

/* K and V of one (batch, kv head): row j at k + j * krow, v + j * vrow. */
typedef struct td_view {
  const float *k, *v;
  int64_t krow, vrow;
} td_view;

/* n floats of a row (any alignment) into dst (aligned), zero up to np. */
static void td_copy_row(const float *src, int64_t n, int64_t np, float *dst) {
  int64_t c = 0;
  for (; c + TILED_W <= n; c += TILED_W) vf_store(dst + c, vf_loadu(src + c));
  for (; c < n; c++) dst[c] = src[c];
  for (; c < np; c++) dst[c] = 0.0f;
}

/* Prefetches the cache lines of a row of len floats. Always inlined: as a separate void function
   GCC may judge it free of side effects and delete its calls. */
TD_INLINE void td_prefetch_row(const float *row, int64_t len) {
  for (int64_t c = 0; c < len * (int64_t)sizeof(float); c += 64)
    __builtin_prefetch((const char *)row + c, 0, 3);
}

/* Step 0 of the chunk [c0, c0 + nk), done by td_copy_some() a few rows at a time: rows r < nk are
   K rows c0 + r into kc, the rest V rows into vc; the chunk after is prefetched on the way (keys
   below kend). */
typedef struct td_copier {
  const tiled_geom *g;
  const td_view *kv;
  float *kc, *vc;
  int64_t c0, nk, next, kend;
  int64_t step; /* rows per micro-kernel call */
} td_copier;

static void td_copy_some(td_copier *cp, int64_t n) {
  const tiled_geom *g = cp->g;
  const int64_t end = td_min(cp->next + n, 2 * cp->nk), dqkp = td_dqkp(g);
  for (; cp->next < end; cp->next++) {
    const int64_t r = cp->next, j = r < cp->nk ? r : r - cp->nk, key = cp->c0 + j;
    const int64_t ahead = key + TD_KC;
    if (r < cp->nk) {
      if (ahead < cp->kend) td_prefetch_row(cp->kv->k + ahead * cp->kv->krow, g->dqk);
      td_copy_row(cp->kv->k + key * cp->kv->krow, g->dqk, dqkp, cp->kc + j * dqkp);
    } else {
      if (ahead < cp->kend) td_prefetch_row(cp->kv->v + ahead * cp->kv->vrow, g->dv);
      td_copy_row(cp->kv->v + key * cp->kv->vrow, g->dv, g->dvp, cp->vc + j * g->dvp);
    }
  }
}

/* Queries (times qsign) of rows [t0, t1) into s->q, zero-padded; ranges clipped to [k0, k1). */
static void td_load_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                         int64_t k0, int64_t k1, const tomp_direct_scratch *s) {
  const txattn_tensors *t = g->t;
  const int64_t nr = t1 - t0, nrp = (nr + TD_RG - 1) / TD_RG * TD_RG, dqkp = td_dqkp(g);
  for (int64_t r = 0; r < nrp; r++) {
    float *qr = s->q + r * dqkp;
    int64_t c = 0;
    if (r < nr) {
      const int64_t row = t0 + r, i = row / g->group, h = kvh * g->group + row % g->group;
      const float *q = txattn_row(t->q, &t->q_layout, b, h, i);
      int64_t lo, hi;
      for (; c < g->dqk; c++) qr[c] = q[c] * g->qsign;
      txattn_visible_range(g->p, i, &lo, &hi);
      s->lo[r] = td_clamp(lo, k0, k1);
      s->hi[r] = td_clamp(hi, k0, k1);
    } else {
      s->lo[r] = s->lo[nr - 1];
      s->hi[r] = s->hi[nr - 1];
    }
    for (; c < dqkp; c++) qr[c] = 0.0f;
    s->m[r] = -INFINITY;
    s->l[r] = 0.0f;
  }
  memset(s->acc, 0, (size_t)(nrp * g->dvp) * sizeof(float));
}

/* ---- 1. scores ---- */

/* s[r * sld + n] = q_r . k_n for the TD_RG rows and nk (at most TD_NK) K rows, both padded to
   dp floats. */
TD_INLINE void td_dot(const float *q, const float *k, int64_t dp, float *s, int64_t sld,
                      const int nk) {
  vf a[TD_RG][TD_NK];
#pragma GCC unroll 4
  for (int r = 0; r < TD_RG; r++)
    for (int n = 0; n < nk; n++) a[r][n] = vf_zero();
  for (int64_t c = 0; c < dp; c += TILED_W) {
    vf kv[TD_NK];
    for (int n = 0; n < nk; n++) kv[n] = vf_load(k + n * dp + c);
#pragma GCC unroll 4
    for (int r = 0; r < TD_RG; r++) {
      vf qv = vf_load(q + r * dp + c);
      for (int n = 0; n < nk; n++) a[r][n] = vf_fma(qv, kv[n], a[r][n]);
    }
  }
  for (int r = 0; r < TD_RG; r++)
    for (int n = 0; n < nk; n++) s[r * sld + n] = vf_hsum(a[r][n]);
}

/* Scores of group gi against the chunk's keys [ua, ub) (K rows in kc). */
static void td_group_scores(const tiled_geom *g, const tomp_direct_scratch *s, const float *kc,
                            int64_t gi, int64_t ua, int64_t ub, td_copier *cp) {
  const int64_t dqkp = td_dqkp(g);
  const float *q = s->q + gi * TD_RG * dqkp;
  float *srows = s->s + gi * TD_RG * TD_KC;
  int64_t j = ua;
  for (; j + TD_NK <= ub; j += TD_NK) {
    td_copy_some(cp, cp->step);
    td_dot(q, kc + j * dqkp, dqkp, srows + j, TD_KC, TD_NK);
  }
  for (; j < ub; j++) td_dot(q, kc + j * dqkp, dqkp, srows + j, TD_KC, 1);
}

/* ---- 2. online softmax (as tl_row_max, tl_row_exp and tl_softmax_group in tiled_algo.h) ---- */

static float td_row_max(float *srow, int64_t a, int64_t b) {
  const int64_t av = a / TILED_W * TILED_W, bv = (b + TILED_W - 1) / TILED_W * TILED_W;
  for (int64_t c = av; c < a; c++) srow[c] = -INFINITY;
  for (int64_t c = b; c < bv; c++) srow[c] = -INFINITY;
  vf mx = vf_set1(-INFINITY);
  for (int64_t c = av; c < bv; c += TILED_W) mx = vf_max(mx, vf_load(srow + c));
  return vf_hmax(mx);
}

static float td_row_exp(float *srow, int64_t a, int64_t b, float scale2, float ref) {
  const int64_t av = a / TILED_W * TILED_W, bv = (b + TILED_W - 1) / TILED_W * TILED_W;
  const vf r = vf_set1(-ref), sc = vf_set1(scale2);
  vf sum = vf_zero();
  for (int64_t c = av; c < bv; c += TILED_W) {
    vf p = vf_exp2(vf_fma(vf_load(srow + c), sc, r));
    vf_store(srow + c, p);
    sum = vf_add(sum, p);
  }
  return vf_hsum(sum);
}

/* Row r's visible keys within the chunk [c0, c0 + nk), relative to c0. */
static void td_row_keys(const tomp_direct_scratch *s, int64_t r, int64_t c0, int64_t nk, int64_t *a,
                        int64_t *b) {
  *a = td_clamp(s->lo[r] - c0, 0, nk);
  *b = td_clamp(s->hi[r] - c0, 0, nk);
}

static void td_softmax_group(const tiled_geom *g, const tomp_direct_scratch *s, int64_t gi,
                             int64_t c0, int64_t nk) {
  _Alignas(64) float mold[TD_RGP], ref[TD_RGP], alpha[TD_RGP];
  int64_t a[TD_RG], b[TD_RG];
  const int64_t r0 = gi * TD_RG;
  float *srows = s->s + r0 * TD_KC;
  for (int r = 0; r < TD_RGP; r++) mold[r] = ref[r] = 0.0f;
  for (int r = 0; r < TD_RG; r++) {
    float m = s->m[r0 + r], mnew = m;
    td_row_keys(s, r0 + r, c0, nk, &a[r], &b[r]);
    if (a[r] < b[r]) {
      float bm = td_row_max(srows + r * TD_KC, a[r], b[r]) * g->scale2; /* scale2 >= 0 */
      if (bm > mnew) mnew = bm; /* a NaN bm is left out: its NaN scores reach l through P */
    }
    mold[r] = m;
    ref[r] = mnew == -INFINITY ? 0.0f : mnew;
    s->m[r0 + r] = mnew;
  }
  for (int r = 0; r < TD_RGP; r += TILED_W)
    vf_store(alpha + r, vf_exp2(vf_sub(vf_load(mold + r), vf_load(ref + r))));
  for (int r = 0; r < TD_RG; r++) {
    float sum = a[r] < b[r] ? td_row_exp(srows + r * TD_KC, a[r], b[r], g->scale2, ref[r]) : 0.0f;
    s->l[r0 + r] = s->l[r0 + r] * alpha[r] + sum;
    s->alpha[r0 + r] = alpha[r];
  }
}

/* ---- 3. acc = acc * alpha + P V ---- */

/* mr rows x nt vectors of columns: acc (ld ald) times alpha (if given) plus keys [j0, j1) of p
   (ld pld) times the V rows (stride vrow). mr and nt are constants at every call, so the
   accumulators live in registers. */
TD_INLINE void td_pv_tile(float *acc, int64_t ald, const float *alpha, const float *p, int64_t pld,
                          const float *v, int64_t vrow, int64_t j0, int64_t j1, const int mr,
                          const int nt) {
  vf o[TD_RG][TD_NT];
  for (int r = 0; r < mr; r++) {
    vf a = alpha ? vf_bcast(alpha + r) : vf_set1(1.0f);
    for (int n = 0; n < nt; n++) {
      o[r][n] = vf_load(acc + r * ald + n * TILED_W);
      if (alpha) o[r][n] = vf_mul(o[r][n], a);
    }
  }
  for (int64_t j = j0; j < j1; j++) {
    vf vv[TD_NT];
    for (int n = 0; n < nt; n++) vv[n] = vf_load(v + j * vrow + n * TILED_W);
    for (int r = 0; r < mr; r++) {
      vf pb = vf_bcast(p + r * pld + j);
      for (int n = 0; n < nt; n++) o[r][n] = vf_fma(pb, vv[n], o[r][n]);
    }
  }
  for (int r = 0; r < mr; r++)
    for (int n = 0; n < nt; n++) vf_store(acc + r * ald + n * TILED_W, o[r][n]);
}

/* Every column of mr rows (acc, alpha, p at the rows' first), keys [j0, j1) of the chunk whose
   V rows (dvp floats each) start at v. */
TD_INLINE void td_pv_rows(const tiled_geom *g, float *acc, const float *alpha, const float *p,
                          const float *v, int64_t vrow, int64_t j0, int64_t j1, const int mr,
                          td_copier *cp) {
  const int64_t dvp = g->dvp, full = dvp / TILED_W;
  int64_t col = 0;
  for (; col + TD_NT <= full; col += TD_NT) {
    td_copy_some(cp, cp->step);
    td_pv_tile(acc + col * TILED_W, dvp, alpha, p, TD_KC, v + col * TILED_W, vrow, j0, j1, mr,
               TD_NT);
  }
  switch (full - col) { /* the narrower last tile */
#if TD_NT > 5
  case 5:
    td_pv_tile(acc + col * TILED_W, dvp, alpha, p, TD_KC, v + col * TILED_W, vrow, j0, j1, mr, 5);
    break;
#endif
#if TD_NT > 4
  case 4:
    td_pv_tile(acc + col * TILED_W, dvp, alpha, p, TD_KC, v + col * TILED_W, vrow, j0, j1, mr, 4);
    break;
#endif
#if TD_NT > 3
  case 3:
    td_pv_tile(acc + col * TILED_W, dvp, alpha, p, TD_KC, v + col * TILED_W, vrow, j0, j1, mr, 3);
    break;
#endif
#if TD_NT > 2
  case 2:
    td_pv_tile(acc + col * TILED_W, dvp, alpha, p, TD_KC, v + col * TILED_W, vrow, j0, j1, mr, 2);
    break;
#endif
  case 1:
    td_pv_tile(acc + col * TILED_W, dvp, alpha, p, TD_KC, v + col * TILED_W, vrow, j0, j1, mr, 1);
    break;
  default:
    break;
  }
}

/* Group gi: its common keys as one tile (which also applies alpha to every column), then each
   row's ragged keys. */
static void td_group_pv(const tiled_geom *g, const tomp_direct_scratch *s, const float *vc,
                        td_copier *cp, int64_t gi, int64_t c0, int64_t nk) {
  const int64_t r0 = gi * TD_RG, dvp = g->dvp;
  int64_t ca = 0, cb = nk, ga = nk, gb = 0;
  for (int64_t r = r0; r < r0 + TD_RG; r++) {
    int64_t a, b;
    td_row_keys(s, r, c0, nk, &a, &b);
    ca = td_max(ca, a);
    cb = td_min(cb, b);
    if (a < b) {
      ga = td_min(ga, a);
      gb = td_max(gb, b);
    }
  }
  const int common = ca < cb;
  td_pv_rows(g, s->acc + r0 * dvp, s->alpha + r0, s->s + r0 * TD_KC, vc, dvp, common ? ca : 0,
             common ? cb : 0, TD_RG, cp);
  if (common && ga == ca && gb == cb) return; /* no ragged keys */
  for (int64_t r = r0; r < r0 + TD_RG; r++) {
    int64_t a, b;
    float *acc = s->acc + r * dvp;
    const float *p = s->s + r * TD_KC;
    td_row_keys(s, r, c0, nk, &a, &b);
    if (common) {
      if (a < ca) td_pv_rows(g, acc, NULL, p, vc, dvp, a, ca, 1, cp);
      if (cb < b) td_pv_rows(g, acc, NULL, p, vc, dvp, cb, b, 1, cp);
    } else if (a < b) {
      td_pv_rows(g, acc, NULL, p, vc, dvp, a, b, 1, cp);
    }
  }
}

/* ---- drivers ---- */

/* The chunk [c0, c0 + nk), already in kc and vc: scores, softmax and P V of each group that sees
   part of it, while cp copies the next chunk. */
static void td_chunk(const tiled_geom *g, const tomp_direct_scratch *s, const float *kc,
                     const float *vc, td_copier *cp, int64_t ngr, int64_t c0, int64_t nk) {
  for (int64_t gi = 0; gi < ngr; gi++) {
    int64_t ua = nk, ub = 0;
    for (int64_t r = gi * TD_RG; r < (gi + 1) * TD_RG; r++) {
      int64_t a, b;
      td_row_keys(s, r, c0, nk, &a, &b);
      if (a < b) {
        ua = td_min(ua, a);
        ub = td_max(ub, b);
      }
    }
    if (ua >= ub) continue; /* m, l, acc unchanged */
    td_group_scores(g, s, kc, gi, ua, ub, cp);
    td_softmax_group(g, s, gi, c0, nk);
    td_group_pv(g, s, vc, cp, gi, c0, nk);
  }
  td_copy_some(cp, 2 * cp->nk); /* what the micro-kernels left */
}

/* Chunks of [ja, jb), each copied while the one before is computed (two sets of buffers). The
   copy is spread evenly over one group's micro-kernel calls (for d = 128 in AVX2, 32 rows over 6
   score and 6 P V calls: 3 rows a call, which measured best; 2 or 5 rows a call, or no prefetch of
   the chunk after, were 3-20% slower). */
static void td_chunks(const tiled_geom *g, const td_view *kv, const tomp_direct_scratch *s,
                      int64_t ngr, int64_t ja, int64_t jb) {
  const int64_t kcs = TD_KC * td_dqkp(g), vcs = TD_KC * g->dvp;
  const int64_t calls = (TD_KC + TD_NK - 1) / TD_NK + (g->dvp / TILED_W + TD_NT - 1) / TD_NT;
  td_copier cp = {.g = g,
                  .kv = kv,
                  .kc = s->kc,
                  .vc = s->vc,
                  .c0 = ja,
                  .nk = td_min(TD_KC, jb - ja),
                  .kend = jb};
  td_copy_some(&cp, 2 * cp.nk);
  for (int64_t c0 = ja, i = 0; c0 < jb; c0 += TD_KC, i++) {
    const int64_t next = c0 + TD_KC, cur = i & 1, nk = next < jb ? td_min(TD_KC, jb - next) : 0;
    td_copier nx = {.g = g,
                    .kv = kv,
                    .kc = s->kc + (1 - cur) * kcs,
                    .vc = s->vc + (1 - cur) * vcs,
                    .c0 = next,
                    .nk = nk,
                    .kend = jb,
                    .step = (2 * nk + calls - 1) / calls};
    td_chunk(g, s, s->kc + cur * kcs, s->vc + cur * vcs, &nx, ngr, c0, td_min(TD_KC, jb - c0));
  }
}

static void td_run(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1, int64_t k0,
                   int64_t k1, const tiled_partial *out, const tomp_direct_scratch *s) {
  const txattn_tensors *t = g->t;
  const int64_t nr = t1 - t0, ngr = (nr + TD_RG - 1) / TD_RG;
  const td_view kv = {txattn_row(t->k, &t->k_layout, b, kvh, 0),
                      txattn_row(t->v, &t->v_layout, b, kvh, 0), t->k_layout.row, t->v_layout.row};
  int64_t ja = k1, jb = k0;
  td_load_rows(g, b, kvh, t0, t1, k0, k1, s);
  for (int64_t r = 0; r < nr; r++) {
    if (s->lo[r] < s->hi[r]) {
      ja = td_min(ja, s->lo[r]);
      jb = td_max(jb, s->hi[r]);
    }
  }
  if (ja < jb) td_chunks(g, &kv, s, ngr, ja, jb);
  if (!out) {
    tiled_write_rows(g, b, kvh, t0, t1, s->acc, s->l);
    return;
  }
  for (int64_t r = 0; r < nr; r++) {
    out->m[r] = s->m[r];
    out->l[r] = s->l[r];
    memcpy(out->acc + r * out->ld, s->acc + r * g->dvp, (size_t)g->dv * sizeof(float));
  }
}

const tomp_direct_fn TD_FN = td_run;

#endif /* TILED_OMP_DIRECT_ALGO_H */
