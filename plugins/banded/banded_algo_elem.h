/* SPDX-License-Identifier: MIT */
/* The parts of the banded vector kernel (banded_algo.h) that read K or V, for one element type:
 * included by banded_algo.h once per type with BANDED_T its token (f32, f16, bf16), and defines
 * NAME_<T> for each function below. Key and value rows are read in their own type and widened in
 * registers as they are loaded (vf_loadu_f16 / vf_loadu_bf16 of the vector layer; half.h's scalar
 * conversions for the columns past the last whole vector, which give the same values), so a 16-bit
 * window reads half the bytes; everything after the load is the f32 code. For f32 every load is
 * vf_loadu or a plain read, which makes these functions the f32 kernel's own. */

#define E_T      BANDED_CAT(banded_elem_, BANDED_T) /* the element's C type */
#define LD_T     BANDED_CAT(banded_load_, BANDED_T) /* VEC_W elements widened */
#define EL_T     BANDED_CAT(banded_one_, BANDED_T)  /* one element widened */
#define TN(name) BANDED_CAT(name##_, BANDED_T)

/* ---- the weighted sum ---- */

/* acc[m][x] += w_m[j] * v_j[x * BW + lane], for the rows m < NM whose ok[m] is set (all rows if
   ok is NULL): one load of each V vector for all the rows when all take part. */
BANDED_INLINE void TN(wsum_key)(vf acc[][MAX_CB], const wsum_rows *a, const E_T *vj, int64_t j,
                                const int *ok, const int NM, const int NV) {
  if (ok == NULL) {
    vf wm[MR];
    for (int m = 0; m < NM; m++) wm[m] = vf_bcast(a->w + m * a->w_row + j);
    for (int x = 0; x < NV; x++) {
      vf vx = LD_T(vj + x * BW);
      for (int m = 0; m < NM; m++) acc[m][x] = vf_fma(wm[m], vx, acc[m][x]);
    }
  } else {
    for (int m = 0; m < NM; m++) {
      if (!ok[m]) continue;
      vf wm = vf_bcast(a->w + m * a->w_row + j);
      for (int x = 0; x < NV; x++) acc[m][x] = vf_fma(wm, LD_T(vj + x * BW), acc[m][x]);
    }
  }
}

/* Columns [col, col + NV * BW) of NM rows. */
BANDED_INLINE void TN(wsum_cols)(const wsum_rows *a, float *const *dst, int64_t col, const int NM,
                                 const int NV) {
  vf acc[MR][MAX_CB];
  for (int m = 0; m < NM; m++)
    for (int x = 0; x < NV; x++) acc[m][x] = vf_zero();
  int64_t cs = max64(a->clo, a->ja), ce = min64(a->chi, a->jb);
  if (cs >= ce) cs = ce = a->jb; /* no key that every row sees: all checked */
  const E_T *v = (const E_T *)a->v + col;
  for (int64_t j = a->ja; j < a->jb; j++) {
    if (j == cs) { /* the keys every row sees, without checks */
      for (; j < ce; j++) TN(wsum_key)(acc, a, v + j * a->v_row, j, NULL, NM, NV);
      if (j == a->jb) break;
    }
    int ok[MR];
    for (int m = 0; m < NM; m++) ok[m] = a->lo[m] <= j && j < a->hi[m];
    TN(wsum_key)(acc, a, v + j * a->v_row, j, ok, NM, NV);
  }
  for (int m = 0; m < NM; m++) {
    vf mul = vf_set1(a->mul[m]);
    for (int x = 0; x < NV; x++) vf_storeu(dst[m] + col + x * BW, vf_mul(acc[m][x], mul));
  }
}

/* A column that fills no vector, one row at a time. */
static void TN(wsum_tail)(const wsum_rows *a, float *const *dst, int64_t col, int nm) {
  const E_T *v = a->v;
  for (int m = 0; m < nm; m++) {
    int64_t ja = max64(a->lo[m], a->ja), jb = min64(a->hi[m], a->jb);
    float sum = 0.0f;
    for (int64_t j = ja; j < jb; j++) sum += a->w[m * a->w_row + j] * EL_T(v + j * a->v_row + col);
    dst[m][col] = a->mul[m] * sum;
  }
}

/* All d_v columns of NM rows: whole register blocks of CB vectors, then halves, then single
   vectors, then single columns. */
BANDED_INLINE void TN(wsum_all)(const wsum_rows *a, float *const *dst, int64_t d_v, const int NM,
                                const int CB) {
  int64_t c = 0;
  for (; c + CB * BW <= d_v; c += CB * BW) TN(wsum_cols)(a, dst, c, NM, CB);
  if (CB >= 4)
    for (; c + (CB / 2) * BW <= d_v; c += (CB / 2) * BW) TN(wsum_cols)(a, dst, c, NM, CB / 2);
  if (CB >= 2)
    for (; c + BW <= d_v; c += BW) TN(wsum_cols)(a, dst, c, NM, 1);
  for (; c < d_v; c++) TN(wsum_tail)(a, dst, c, NM);
}

/* The nm rows of a group (or one row) in blocks of BANDED_WSUM_MR rows, then one by one. */
static void TN(wsum_group)(const wsum_rows *a, float *const *dst, int64_t d_v, int nm) {
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
    TN(wsum_all)(&b, dst + m, d_v, BANDED_WSUM_MR, BANDED_WSUM_CB);
  }
  for (; m < nm; m++) {
    wsum_rows b = *a;
    b.w += m * a->w_row;
    b.lo += m;
    b.hi += m;
    b.mul += m;
    b.clo = b.lo[0];
    b.chi = b.hi[0];
    TN(wsum_all)(&b, dst + m, d_v, 1, BANDED_ROW_CB);
  }
}

/* The weighted sum of the sink keys [0, n_sink) of nm rows into the workspace's part rows (row m
   at part + m * d_v), mul[m] times each: their weights at w + m * w_row, every row seeing all. */
static void TN(sink_wsum)(const banded_head *hd, const float *w, int64_t w_row, int64_t n_sink,
                          const float *mul, int nm, float *const *part) {
  int64_t lo[MR] = {0}, hi[MR];
  for (int m = 0; m < nm; m++) hi[m] = n_sink;
  wsum_rows b = {.w = w,
                 .v = hd->v,
                 .w_row = w_row,
                 .v_row = hd->v_row,
                 .ja = 0,
                 .jb = n_sink,
                 .lo = lo,
                 .hi = hi,
                 .mul = mul};
  TN(wsum_group)(&b, part, hd->p->d_v, nm);
}

/* nm rows whose scores s (row m at s + m * s_row, n_f floats, a multiple of BW; keys row m does not
   see are -inf) and maxima are in place: softmax, then the weighted sum of the value rows
   v + j * v_row over [lo[m], hi[m]) into out[m] (fp32 rows); row_sum[m] = the sum of row m's
   weights, as its output was divided by it (for its lse). With n_sink > 0 every row also sees the
   sink keys [0, n_sink), whose scores are at s - hd->sink_stride (padded with -inf to whole
   vectors) and count in the maxima already. A sink logit joins each row's denominator. */
static void TN(rows_finish)(const banded_head *hd, float *s, int64_t s_row, const E_T *v,
                            int64_t n_f, const int64_t *lo, const int64_t *hi, const float *max,
                            float *const *out, int nm, double *row_sum, int64_t n_sink) {
  const int64_t d_v = hd->p->d_v;
  float sum[MR], mul[MR], sink_sum[MR] = {0}, *sink_s = s - hd->sink_stride, *part[MR];
  int64_t widest = 0, first = INT64_MAX, last = 0;
  for (int m = 0; m < nm; m++) {
    widest = max64(widest, hi[m] - lo[m]);
    first = min64(first, lo[m]);
    last = max64(last, hi[m]);
    part[m] = banded_ws_part(hd) + m * d_v;
  }
  if (n_sink > 0)
    rows_exp(sink_s, s_row, 0, round_up(n_sink, BW), nm, max, hd->exp2_scale, sink_sum);
  wsum_rows a = {
      .w = s, .v = v, .w_row = s_row, .v_row = hd->v_row, .lo = lo, .hi = hi, .mul = mul};
  if (widest <= BANDED_VEC_CHUNK) { /* one float sum per row: straight into the output */
    rows_exp(s, s_row, 0, n_f, nm, max, hd->exp2_scale, sum);
    for (int m = 0; m < nm; m++) {
      sum[m] += sink_sum[m];
      mul[m] = hd->sink == -INFINITY ? 1.0f / sum[m]
                                     : (float)(1.0 / banded_denominator(hd, max[m], sum[m]));
      row_sum[m] = sum[m];
    }
    a.ja = first;
    a.jb = last;
    TN(wsum_group)(&a, out, d_v, nm);
    if (n_sink > 0) {
      TN(sink_wsum)(hd, sink_s, s_row, n_sink, mul, nm, part);
      for (int m = 0; m < nm; m++)
        for (int64_t c = 0; c < d_v; c++) out[m][c] += part[m][c];
    }
  } else {
    double *acc = banded_ws_acc(hd), total[MR] = {0};
    for (int m = 0; m < nm; m++) mul[m] = 1.0f;
    for (int64_t c = 0; c < nm * d_v; c++) acc[c] = 0.0;
    for (int64_t j = 0; j < n_f; j += BANDED_VEC_CHUNK) {
      rows_exp(s, s_row, j, min64(j + BANDED_VEC_CHUNK, n_f), nm, max, hd->exp2_scale, sum);
      a.ja = max64(j, first);
      a.jb = min64(j + BANDED_VEC_CHUNK, last);
      TN(wsum_group)(&a, part, d_v, nm);
      for (int m = 0; m < nm; m++) total[m] += sum[m];
      for (int64_t c = 0; c < nm * d_v; c++) acc[c] += part[0][c];
    }
    if (n_sink > 0) {
      TN(sink_wsum)(hd, sink_s, s_row, n_sink, mul, nm, part);
      for (int m = 0; m < nm; m++) total[m] += sink_sum[m];
      for (int64_t c = 0; c < nm * d_v; c++) acc[c] += part[0][c];
    }
    for (int m = 0; m < nm; m++) {
      double den = banded_denominator(hd, max[m], total[m]);
      for (int64_t c = 0; c < d_v; c++) out[m][c] = (float)(acc[m * d_v + c] / den);
      row_sum[m] = total[m];
    }
  }
  for (int m = 0; m < nm; m++) txattn_row_spread_nan(out[m], d_v);
}

/* Whether the d elements of value row v are all finite (the sum of each times 0 is then 0). */
static int TN(row_finite)(const E_T *v, int64_t d) {
  vf acc = vf_zero();
  int64_t c = 0;
  for (; c + BW <= d; c += BW) acc = vf_fma(LD_T(v + c), vf_zero(), acc);
  float t = vf_hsum(acc);
  for (; c < d; c++) t += EL_T(v + c) * 0.0f;
  return t == 0.0f;
}

/* ---- scores of one row alone ---- */

/* The dot products over columns [c, d) (a tail shorter than a vector) of BW keys. */
static vf TN(tail_dots)(const float *q, const E_T *const *kp, int64_t c, int64_t d) {
  float t[BW];
  for (int j = 0; j < BW; j++) {
    float a = 0.0f;
    for (int64_t x = c; x < d; x++) a += q[x] * EL_T(kp[j] + x);
    t[j] = a;
  }
  return vf_loadu(t);
}

/* s[x] = scale * (q . kp[x]) for x < BANDED_ROW_KB: one accumulator per key along d. */
BANDED_INLINE void TN(row_block)(const float *q, const E_T *const *kp, int64_t d, vf scale,
                                 float *s) {
  vf acc[BANDED_ROW_KB];
  for (int x = 0; x < BANDED_ROW_KB; x++) acc[x] = vf_zero();
  int64_t c = 0;
  for (; c + BW <= d; c += BW) {
    vf qc = vf_loadu(q + c);
    for (int x = 0; x < BANDED_ROW_KB; x++) acc[x] = vf_fma(qc, LD_T(kp[x] + c), acc[x]);
  }
  for (int g = 0; g < BANDED_ROW_KB / BW; g++) {
    vf sum = vf_sum_lanes(acc + g * BW);
    if (c < d) sum = vf_add(sum, TN(tail_dots)(q, kp + g * BW, c, d));
    vf_store(s + g * BW, vf_mul(sum, scale));
  }
}

/* q . k for one key, two accumulators so the chain is half as long. */
static float TN(dot1)(const float *q, const E_T *k, int64_t d) {
  vf a0 = vf_zero(), a1 = vf_zero();
  int64_t c = 0;
  for (; c + 2 * BW <= d; c += 2 * BW) {
    a0 = vf_fma(vf_loadu(q + c), LD_T(k + c), a0);
    a1 = vf_fma(vf_loadu(q + c + BW), LD_T(k + c + BW), a1);
  }
  if (c + BW <= d) {
    a0 = vf_fma(vf_loadu(q + c), LD_T(k + c), a0);
    c += BW;
  }
  float s = vf_hsum(vf_add(a0, a1));
  for (; c < d; c++) s += q[c] * EL_T(k + c);
  return s;
}

/* s[j] = sign(scale) (q . k_j) for the n keys from key row k (n >= 1), s[j] = -inf from n up to
   n rounded up to BANDED_ROW_KB: whole blocks of keys, then the last few keys one by one if they
   are fewer than a quarter block, else one more block whose missing keys repeat the last key
   (their scores become -inf padding). With softcap or ALiBi the scores are modified (banded_head)
   for row i, key j being at position key0 + j. */
static void TN(row_scores)(const banded_head *hd, const float *q, const E_T *k, int64_t n, float *s,
                           int64_t key0, int64_t i) {
  const txattn_problem *p = hd->p;
  const E_T *kp[BANDED_ROW_KB];
  int64_t n_f = round_up(n, BANDED_ROW_KB), j = 0;
  vf scale = vf_set1(banded_score_sign(p));
  for (; j < n; j += BANDED_ROW_KB) {
    if (n - j < BANDED_ROW_KB / 4) break;
    for (int x = 0; x < BANDED_ROW_KB; x++) kp[x] = k + min64(j + x, n - 1) * hd->k_row;
    TN(row_block)(q, kp, p->d_qk, scale, s + j);
  }
  for (; j < n; j++) s[j] = banded_score_sign(p) * TN(dot1)(q, k + j * hd->k_row, p->d_qk);
  if (hd->modified) {
    const banded_mod md = mod_of(hd);
    const vf abs_scale = vf_set1(hd->abs_scale);
    const int64_t rel = key0 - (i + hd->pos_shift);
    for (j = 0; j < n; j += BW)
      vf_store(s + j, mod_apply(&md, vf_mul(vf_load(s + j), abs_scale), rel + j));
  }
  for (j = n; j < n_f; j++) s[j] = -INFINITY;
}

/* ---- transposed key panels ---- */

/* Packs panels [p_lo, p_hi) not packed yet; those below p_lo are never needed again (ranges only
   move forward). Keys past n_kv repeat the last key: their scores are masked. A 16-bit W x W block
   is widened row by row into `wide` (in L1), then transposed as an f32 one. */
static void TN(pack_range)(const banded_head *hd, panels *pk, int64_t p_lo, int64_t p_hi) {
  const int64_t d = hd->p->d_qk, n_kv = hd->p->n_kv;
  for (int64_t p = max64(pk->packed, p_lo); p < p_hi; p++) {
    const E_T *src[BW];
    float *dst = panel(hd, pk, p);
    for (int r = 0; r < BW; r++)
      src[r] = (const E_T *)hd->k + min64(p * BW + r, n_kv - 1) * hd->k_row;
    int64_t c = 0;
#if BANDED_T_IS_F32
    for (; c + BW <= d; c += BW) vf_transpose(src, c, dst + c * BW, BW);
#else
    float wide[BW * BW];
    const float *rows[BW];
    for (int r = 0; r < BW; r++) rows[r] = wide + r * BW;
    for (; c + BW <= d; c += BW) {
      for (int r = 0; r < BW; r++) vf_storeu(wide + r * BW, LD_T(src[r] + c));
      vf_transpose(rows, 0, dst + c * BW, BW);
    }
#endif
    for (; c < d; c++)
      for (int r = 0; r < BW; r++) dst[c * BW + r] = EL_T(src[r] + c);
  }
  pk->packed = max64(pk->packed, p_hi);
}

#undef E_T
#undef LD_T
#undef EL_T
#undef TN
