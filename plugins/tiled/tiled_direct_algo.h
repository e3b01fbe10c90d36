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
 *     aligned rows from L1 with no column tails;
 *  1. scores: dot products of the group's queries with TILED_DNK K rows at a time;
 *  2. online softmax exactly as the tiled path's (tl_softmax_rows);
 *  3. acc = acc * alpha + P V over the keys every row sees, TILED_DNT vectors of columns at a time
 *     (tl_pv_tile), then row by row over the ragged rest, so a key a row does not see is never
 *     multiplied into it.
 * Padding columns of V make padding columns of acc, which are never written out. Same semantics as
 * the tiled path: scores in base 2, deferred normalisation, NaN spread over the row. */
#ifndef TILED_DIRECT_ALGO_H
#define TILED_DIRECT_ALGO_H

#define TD_RG TILED_DIRECT_ROWS
#define TD_KC TILED_DIRECT_CHUNK

/* K and V of one (batch, kv head): row j at k + j * krow, v + j * vrow. */
typedef struct td_view {
  const float *k, *v;
  int64_t krow, vrow;
} td_view;

/* n floats of a row (any alignment) into dst (aligned), zero up to np. */
static void td_copy_row(const float *src, int64_t n, int64_t np, float *dst) {
  int64_t c = 0;
  for (; c + VEC_W <= n; c += VEC_W) vf_store(dst + c, vf_loadu(src + c));
  for (; c < n; c++) dst[c] = src[c];
  for (; c < np; c++) dst[c] = 0.0f;
}

/* Prefetches the cache lines of a row of len floats into every level (the chunk after next is
   copied soon). Always inlined: as a separate void function GCC may judge it free of side effects
   and delete its calls. */
TILED_INLINE void td_prefetch_row(const float *row, int64_t len) {
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
  const int64_t end = tl_min(cp->next + n, 2 * cp->nk), dqkp = g->dqkp;
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

/* Queries (times qsign) of rows [t0, t1) into s->qp, zero-padded to dqkp; ranges clipped to
   [k0, k1). */
static void td_load_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                         int64_t k0, int64_t k1, const tiled_scratch *s) {
  const txattn_tensors *t = g->t;
  const int64_t nr = t1 - t0, dqkp = g->dqkp;
  for (int64_t r = 0; r < nr; r++) {
    const int64_t row = t0 + r, i = row / g->group, h = kvh * g->group + row % g->group;
    const float *q = txattn_row(t->q, &t->q_layout, b, h, i);
    float *qr = s->qp + r * dqkp;
    int64_t lo, hi, c = 0;
    for (; c < g->dqk; c++) qr[c] = q[c] * g->qsign;
    for (; c < dqkp; c++) qr[c] = 0.0f;
    txattn_visible_range(g->p, i, &lo, &hi);
    s->lo[r] = tl_clamp(lo, k0, k1);
    s->hi[r] = tl_clamp(hi, k0, k1);
    s->m[r] = -INFINITY;
    s->l[r] = 0.0f;
  }
  memset(s->acc, 0, (size_t)(nr * g->dvp) * sizeof(float));
}

/* ---- 1. scores ---- */

/* s[r * sld + n] = q_r . k_n for nr rows and nk (at most TILED_DNK) K rows, both padded to dp
   floats. */
TILED_INLINE void td_dot(const float *q, const float *k, int64_t dp, float *s, int64_t sld,
                         const int nr, const int nk) {
  vf a[TD_RG][TILED_DNK];
#pragma GCC unroll 8
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 8
    for (int n = 0; n < nk; n++) a[r][n] = vf_zero();
  for (int64_t c = 0; c < dp; c += VEC_W) {
    vf kv[TILED_DNK];
#pragma GCC unroll 8
    for (int n = 0; n < nk; n++) kv[n] = vf_load(k + n * dp + c);
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++) {
      vf qv = vf_load(q + r * dp + c);
#pragma GCC unroll 8
      for (int n = 0; n < nk; n++) a[r][n] = vf_fma(qv, kv[n], a[r][n]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < nr; r++)
#pragma GCC unroll 8
    for (int n = 0; n < nk; n++) s[r * sld + n] = vf_hsum(a[r][n]);
}

/* Scores of the nr rows against the chunk's keys [ua, ub) (K rows in kc). */
TILED_INLINE void td_scores(const tiled_geom *g, const tiled_scratch *s, const float *kc,
                            int64_t ua, int64_t ub, td_copier *cp, const int nr) {
  const int64_t dqkp = g->dqkp;
  int64_t j = ua;
  for (; j + TILED_DNK <= ub; j += TILED_DNK) {
    td_copy_some(cp, cp->step);
    td_dot(s->qp, kc + j * dqkp, dqkp, s->s + j, TD_KC, nr, TILED_DNK);
  }
  for (; j < ub; j++) td_dot(s->qp, kc + j * dqkp, dqkp, s->s + j, TD_KC, nr, 1);
}

/* ---- 3. acc = acc * alpha + P V ---- */

/* Every column of mr rows (acc, alpha, p at the rows' first), keys [j0, j1) of the chunk whose
   V rows (dvp floats each) start at v. */
TILED_INLINE void td_pv_rows(const tiled_geom *g, float *acc, const float *alpha, const float *p,
                             const float *v, int64_t j0, int64_t j1, const int mr, td_copier *cp) {
  const int64_t dvp = g->dvp, full = dvp / VEC_W;
  int64_t col = 0;
  for (; col + TILED_DNT <= full; col += TILED_DNT) {
    td_copy_some(cp, cp->step);
    tl_pv_tile(acc + col * VEC_W, dvp, alpha, p, TD_KC, v + col * VEC_W, dvp, j0, j1, mr,
               TILED_DNT);
  }
  switch (full - col) { /* the narrower last tile */
#if TILED_DNT > 5
  case 5:
    tl_pv_tile(acc + col * VEC_W, dvp, alpha, p, TD_KC, v + col * VEC_W, dvp, j0, j1, mr, 5);
    break;
#endif
#if TILED_DNT > 4
  case 4:
    tl_pv_tile(acc + col * VEC_W, dvp, alpha, p, TD_KC, v + col * VEC_W, dvp, j0, j1, mr, 4);
    break;
#endif
#if TILED_DNT > 3
  case 3:
    tl_pv_tile(acc + col * VEC_W, dvp, alpha, p, TD_KC, v + col * VEC_W, dvp, j0, j1, mr, 3);
    break;
#endif
#if TILED_DNT > 2
  case 2:
    tl_pv_tile(acc + col * VEC_W, dvp, alpha, p, TD_KC, v + col * VEC_W, dvp, j0, j1, mr, 2);
    break;
#endif
  case 1:
    tl_pv_tile(acc + col * VEC_W, dvp, alpha, p, TD_KC, v + col * VEC_W, dvp, j0, j1, mr, 1);
    break;
  default:
    break;
  }
}

/* The nr rows' common keys [sp->ca, sp->cb) as one tile (which also applies alpha to every
   column), then each row's ragged keys. */
TILED_INLINE void td_pv(const tiled_geom *g, const tiled_scratch *s, const float *vc, td_copier *cp,
                        const tiled_span *sp, int64_t c0, int64_t nk, const int nr) {
  const int64_t dvp = g->dvp;
  const int common = sp->ca < sp->cb;
  td_pv_rows(g, s->acc, s->alpha, s->s, vc, common ? sp->ca : 0, common ? sp->cb : 0, nr, cp);
  if (common && sp->ga == sp->ca && sp->gb == sp->cb) return; /* no ragged keys */
  for (int64_t r = 0; r < nr; r++) {
    int64_t a, b;
    float *acc = s->acc + r * dvp;
    const float *p = s->s + r * TD_KC;
    tl_row_keys(s, r, c0, nk, &a, &b);
    if (common) {
      if (a < sp->ca) td_pv_rows(g, acc, NULL, p, vc, a, sp->ca, 1, cp);
      if (sp->cb < b) td_pv_rows(g, acc, NULL, p, vc, sp->cb, b, 1, cp);
    } else if (a < b) {
      td_pv_rows(g, acc, NULL, p, vc, a, b, 1, cp);
    }
  }
}

/* ---- drivers ---- */

/* The chunk [c0, c0 + nk), already in kc and vc, for nr rows: scores, softmax and P V if some row
   sees part of it, while cp copies the next chunk. */
TILED_INLINE void td_chunk_rows(const tiled_geom *g, const tiled_scratch *s, const float *kc,
                                const float *vc, td_copier *cp, int64_t c0, int64_t nk,
                                const int nr) {
  const tiled_span sp = tl_rows_span(s, 0, nr, c0, nk);
  if (sp.ga < sp.gb) { /* else m, l, acc unchanged */
    td_scores(g, s, kc, sp.ga, sp.gb, cp, nr);
    tl_softmax_rows(g, s, 0, nr, TD_KC, c0, nk);
    td_pv(g, s, vc, cp, &sp, c0, nk, nr);
  }
  td_copy_some(cp, 2 * cp->nk); /* what the micro-kernels left */
}

static void td_chunk(const tiled_geom *g, const tiled_scratch *s, const float *kc, const float *vc,
                     td_copier *cp, int64_t c0, int64_t nk, int64_t nr) {
  _Static_assert(TD_RG == 4, "td_chunk has a case for every row count up to TILED_DIRECT_ROWS");
  switch (nr) {
  case 1:
    td_chunk_rows(g, s, kc, vc, cp, c0, nk, 1);
    break;
  case 2:
    td_chunk_rows(g, s, kc, vc, cp, c0, nk, 2);
    break;
  case 3:
    td_chunk_rows(g, s, kc, vc, cp, c0, nk, 3);
    break;
  default:
    td_chunk_rows(g, s, kc, vc, cp, c0, nk, 4);
    break;
  }
}

/* Chunks of [ja, jb), each copied while the one before is computed (two sets of buffers). The
   copy is spread evenly over the chunk's micro-kernel calls (for d = 128 in AVX2, 32 rows over 6
   score and 6 P V calls: 3 rows a call), with the chunk after prefetched: the fastest spread
   measured (docs/measurements.md). */
static void td_chunks(const tiled_geom *g, const td_view *kv, const tiled_scratch *s, int64_t nr,
                      int64_t ja, int64_t jb) {
  const int64_t kcs = TD_KC * g->dqkp, vcs = TD_KC * g->dvp;
  const int64_t calls =
      (TD_KC + TILED_DNK - 1) / TILED_DNK + (g->dvp / VEC_W + TILED_DNT - 1) / TILED_DNT;
  td_copier cp = {.g = g,
                  .kv = kv,
                  .kc = s->kc,
                  .vc = s->vc,
                  .c0 = ja,
                  .nk = tl_min(TD_KC, jb - ja),
                  .kend = jb};
  td_copy_some(&cp, 2 * cp.nk);
  for (int64_t c0 = ja, i = 0; c0 < jb; c0 += TD_KC, i++) {
    const int64_t next = c0 + TD_KC, cur = i & 1, nk = next < jb ? tl_min(TD_KC, jb - next) : 0;
    td_copier nx = {.g = g,
                    .kv = kv,
                    .kc = s->kc + (1 - cur) * kcs,
                    .vc = s->vc + (1 - cur) * vcs,
                    .c0 = next,
                    .nk = nk,
                    .kend = jb,
                    .step = (2 * nk + calls - 1) / calls};
    td_chunk(g, s, s->kc + cur * kcs, s->vc + cur * vcs, &nx, c0, tl_min(TD_KC, jb - c0), nr);
  }
}

static void td_run(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1, int64_t k0,
                   int64_t k1, const tiled_partial *out, const tiled_scratch *s) {
  const txattn_tensors *t = g->t;
  const int64_t nr = t1 - t0;
  const td_view kv = {txattn_row(t->k, &t->k_layout, b, kvh, 0),
                      txattn_row(t->v, &t->v_layout, b, kvh, 0), t->k_layout.row, t->v_layout.row};
  int64_t ja = k1, jb = k0;
  td_load_rows(g, b, kvh, t0, t1, k0, k1, s);
  for (int64_t r = 0; r < nr; r++) {
    if (s->lo[r] < s->hi[r]) {
      ja = tl_min(ja, s->lo[r]);
      jb = tl_max(jb, s->hi[r]);
    }
  }
  if (ja < jb) td_chunks(g, &kv, s, nr, ja, jb);
  if (out)
    tl_write_partials(g, s, nr, out);
  else
    tiled_write_rows(g, b, kvh, t0, t1, s->acc, s->l);
}

#endif /* TILED_DIRECT_ALGO_H */
