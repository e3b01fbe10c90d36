/* SPDX-License-Identifier: MIT */
/* One head of the banded vector kernel (banded_algo.h) for one pair of key and value types:
 * included by banded_algo.h once per pair with BANDED_KT and BANDED_VT their tokens (f32, f16,
 * bf16), and defines one_row_<KT>_<VT>, group_rows_<KT>_<VT> and head_<KT>_<VT>, which call the
 * functions of banded_algo_elem.h for those types directly. q and o go through q_rows / o_rows /
 * o_store (banded_algo.h), which use f32 tensors in place. */

#define KE_T      BANDED_CAT(banded_elem_, BANDED_KT)
#define VE_T      BANDED_CAT(banded_elem_, BANDED_VT)
#define KN(name)  BANDED_CAT(name##_, BANDED_KT)
#define VN(name)  BANDED_CAT(name##_, BANDED_VT)
#define KVN(name) BANDED_CAT(BANDED_CAT(name##_, BANDED_KT), BANDED_CAT(_, BANDED_VT))

/* The scores of the sink keys [0, n_sink) of rows i .. i + nm - 1 (q[m] their q rows) into the
   first floats of each score row (banded_sink_stride), and each row's max raised to theirs. With a
   mask tensor (one row) it applies to them too; returns whether it may hide one (mask_keys). */
static int KVN(sink_scores)(const banded_head *hd, int64_t i, int nm, const float *const *q,
                            float *sink_s, int64_t s_row, int64_t n_sink, float *max) {
  int hides = 0;
  for (int m = 0; m < nm; m++) {
    float *sm = sink_s + m * s_row, mx;
    KN(row_scores)(hd, q[m], (const KE_T *)hd->k, n_sink, sm, 0, i + m);
    if (hd->mask) hides |= mask_keys(hd, mask_row_of(hd, i + m), sm, n_sink, 0);
    rows_max(sm, 0, 0, round_up(n_sink, BW), 1, &mx);
    if (!(mx <= max[m])) max[m] = mx; /* a NaN row stays NaN through its own weights anyway */
  }
  return hides;
}

/* Whether the V rows of the keys a mask hides (score -inf) among the n from key0 are all finite. */
static int KVN(hidden_v_finite)(const banded_head *hd, const float *s, int64_t n, int64_t key0) {
  for (int64_t j = 0; j < n; j++)
    if (s[j] == -INFINITY &&
        !VN(row_finite)((const VE_T *)hd->v + (key0 + j) * hd->v_row, hd->p->d_v))
      return 0;
  return 1;
}

/* Row i's output o (fp32) where the mask hides a key whose V row holds an Inf or a NaN: every key
   not hidden (its score in s or the sink scores ss not -inf) weighted and summed in fp64, so that
   a hidden key's V never meets its zero weight; returns the sum of the weights. Rare (a cache with
   non-finite values under a mask), so plain loops. */
static double KVN(one_row_careful)(const banded_head *hd, const float *s, int64_t lo, int64_t n,
                                   const float *ss, int64_t n_sink, float max, float *o) {
  const int64_t d_v = hd->p->d_v;
  double *acc = banded_ws_acc(hd), sum = 0.0;
  for (int64_t c = 0; c < d_v; c++) acc[c] = 0.0;
  for (int part = 0; part < 2; part++) {
    const float *sp = part ? s : ss;
    const int64_t cnt = part ? n : n_sink, key0 = part ? lo : 0;
    for (int64_t j = 0; j < cnt; j++) {
      if (sp[j] == -INFINITY) continue;
      const double w = exp2((double)(sp[j] - max) * hd->exp2_scale);
      const VE_T *v = (const VE_T *)hd->v + (key0 + j) * hd->v_row;
      sum += w;
      for (int64_t c = 0; c < d_v; c++) acc[c] += w * VN(banded_one)(v + c);
    }
  }
  const double den = banded_denominator(hd, max, sum);
  for (int64_t c = 0; c < d_v; c++) o[c] = (float)(acc[c] / den);
  txattn_row_spread_nan(o, d_v);
  return sum;
}

/* Row i alone, over its visible keys: the sink keys [0, n_sink) and [lo, hi), lo < hi. A mask
   tensor is added to the scores before the max; a row it hides wholly gets zeros. */
static void KVN(one_row)(const banded_head *hd, int64_t i, int64_t n_sink, int64_t lo, int64_t hi) {
  int64_t n = hi - lo, n_f = round_up(n, BANDED_ROW_KB), rlo = 0, rhi = n;
  const float *q;
  float *s = banded_ws_scores(hd) + hd->sink_stride, *ss = s - hd->sink_stride, *o, max;
  double sum;
  int hides = 0;
  const VE_T *v = (const VE_T *)hd->v + lo * hd->v_row;
  q_rows(hd, i, 1, &q);
  KN(row_scores)(hd, q, (const KE_T *)hd->k + lo * hd->k_row, n, s, lo, i);
  if (hd->mask) hides = mask_keys(hd, mask_row_of(hd, i), s, n, lo);
  rows_max(s, 0, 0, n_f, 1, &max);
  if (n_sink > 0) hides |= KVN(sink_scores)(hd, i, 1, &q, ss, 0, n_sink, &max);
  if (hides && max == -INFINITY) {
    o_zero(hd, i);
    banded_lse_empty(hd, i);
    return;
  }
  o_rows(hd, i, 1, &o);
  if (hides && !(KVN(hidden_v_finite)(hd, s, n, lo) && KVN(hidden_v_finite)(hd, ss, n_sink, 0)))
    sum = KVN(one_row_careful)(hd, s, lo, n, ss, n_sink, max, o);
  else
    VN(rows_finish)(hd, s, 0, v, n_f, &rlo, &rhi, &max, &o, 1, &sum, n_sink);
  o_store(hd, i, 1, &o);
  banded_lse_put(hd, i, max, sum);
}

/* Rows i .. i + MR - 1 together if every one sees a key, all see the same sink keys and their
   union is at most twice the shortest range; returns 0 (nothing done) otherwise. */
static int KVN(group_rows)(const banded_head *hd, panels *pk, int64_t i) {
  const txattn_problem *p = hd->p;
  int64_t lo[MR], hi[MR], sink_hi[MR], base = INT64_MAX, end = 0, shortest = INT64_MAX;
  for (int m = 0; m < MR; m++) {
    txattn_visible_ranges(p, i + m, &sink_hi[m], &lo[m], &hi[m]);
    if (lo[m] >= hi[m] || sink_hi[m] != sink_hi[0]) return 0;
    base = min64(base, lo[m]);
    end = max64(end, hi[m]);
    shortest = min64(shortest, hi[m] - lo[m]);
  }
  if (end - base > 2 * shortest) return 0;
  int64_t p0 = base / BW, n_p = (end + BW - 1) / BW - p0, first = p0 * BW, n_f = n_p * BW;
  int64_t s_row = banded_score_stride(p);
  const float *q[MR];
  float *o[MR], *s = banded_ws_scores(hd) + hd->sink_stride, max[MR];
  double sum[MR];
  prefetch_next(hd, i, end, (int64_t)sizeof(KE_T), (int64_t)sizeof(VE_T));
  KN(pack_range)(hd, pk, p0, p0 + n_p);
  q_rows(hd, i, MR, q);
  o_rows(hd, i, MR, o);
  for (int m = 0; m < MR; m++) {
    lo[m] -= first;
    hi[m] -= first;
  }
  group_scores(hd, pk, q, p0, n_p, lo, hi, s, s_row, max, i);
  if (sink_hi[0] > 0) KVN(sink_scores)(hd, i, MR, q, s - hd->sink_stride, s_row, sink_hi[0], max);
  const VE_T *v = (const VE_T *)hd->v + first * hd->v_row;
  VN(rows_finish)(hd, s, s_row, v, n_f, lo, hi, max, o, MR, sum, sink_hi[0]);
  o_store(hd, i, MR, o);
  for (int m = 0; m < MR; m++) banded_lse_put(hd, i + m, max[m], sum[m]);
  return 1;
}

/* The ring starts empty whatever row0 is: pack_range packs from the first group's first panel. */
static void KVN(head)(const banded_head *hd) {
  const txattn_problem *p = hd->p;
  panels pk = {.buf = banded_ws_panels(hd), .n_slot = banded_panel_keys(p) / BW, .packed = 0};
  for (int64_t i = hd->row0; i < hd->row1;) {
    if (i + MR <= hd->row1 && KVN(group_rows)(hd, &pk, i)) {
      i += MR;
      continue;
    }
    int64_t sink_hi, lo, hi;
    txattn_visible_ranges(p, i, &sink_hi, &lo, &hi);
    if (lo < hi) {
      KVN(one_row)(hd, i, sink_hi, lo, hi);
    } else {
      o_zero(hd, i);
      banded_lse_empty(hd, i);
    }
    i++;
  }
}

#undef KE_T
#undef VE_T
#undef KN
#undef VN
#undef KVN
