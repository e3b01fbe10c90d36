/* SPDX-License-Identifier: MIT */
#include "battery.h"

#include <math.h>
#include <stdio.h>

#include "problem_cli.h"

#define INF    TXATTN_UNBOUNDED
#define NONE   TXATTN_MASK_NONE
#define CAUSAL TXATTN_MASK_CAUSAL
#define WINDOW TXATTN_MASK_WINDOW
#define ILV    TX_LAYOUT_INTERLEAVED
#define K_NAN(b, g, j, c)                                                                          \
  { TX_NAN_IN_K, b, g, j, c }
#define V_NAN(b, g, j, c)                                                                          \
  { TX_NAN_IN_V, b, g, j, c }

/* Fields: problem, layout, input scale, NaN site, quick, outlier. Window fields are {left, right}. */
static const tx_case cases[] = {
    /* sequence lengths, including the odd ones that leave tails in every blocking */
    {{.n_q = 1, .d_qk = 64}, 0, 0, {0}, 1, 0},
    {{.n_q = 2, .d_qk = 64}, 0, 0, {0}, 0, 0},
    {{.n_q = 3, .d_qk = 64}, 0, 0, {0}, 1, 0},
    {{.n_q = 7, .d_qk = 64}, 0, 0, {0}, 0, 0},
    {{.n_q = 17, .d_qk = 64}, 0, 0, {0}, 1, 0},
    {{.n_q = 64, .d_qk = 64}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 64}, 0, 0, {0}, 1, 0},
    {{.n_q = 257, .d_qk = 64}, 0, 0, {0}, 0, 0},
    {{.n_q = 1, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    {{.n_q = 2, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 1, 0},
    {{.n_q = 3, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    {{.n_q = 7, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 1, 0},
    {{.n_q = 17, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    {{.n_q = 64, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 1, 0},
    {{.n_q = 257, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    /* head sizes */
    {{.n_q = 33, .d_qk = 1}, 0, 0, {0}, 1, 0},
    {{.n_q = 33, .d_qk = 3}, 0, 0, {0}, 1, 0},
    {{.n_q = 33, .d_qk = 16}, 0, 0, {0}, 0, 0},
    {{.n_q = 33, .d_qk = 80}, 0, 0, {0}, 0, 0},
    {{.n_q = 33, .d_qk = 128}, 0, 0, {0}, 1, 0},
    {{.n_q = 65, .d_qk = 1, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 3, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 16, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 80, .mask = CAUSAL}, 0, 0, {0}, 1, 0},
    {{.n_q = 65, .d_qk = 128, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    /* d_v != d_qk */
    {{.n_q = 17, .d_qk = 64, .d_v = 16}, 0, 0, {0}, 1, 0},
    {{.n_q = 33, .d_qk = 16, .d_v = 80, .mask = CAUSAL}, 0, 0, {0}, 1, 0},
    {{.n_q = 7, .d_qk = 3, .d_v = 1, .mask = WINDOW, 1, 1}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 128, .d_v = 64, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    /* n_q != n_kv: decoding (n_q = 1), chunked prefill (n_q < n_kv), n_q > n_kv (rows with no key)
     */
    {{.n_q = 1, .n_kv = 257, .d_qk = 64}, 0, 0, {0}, 1, 0},
    {{.n_q = 1, .n_kv = 257, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    {{.n_q = 1, .n_kv = 1000, .d_qk = 64, .mask = WINDOW, 8, 0}, 0, 0, {0}, 0, 0},
    {{.heads_q = 8, .heads_kv = 2, .n_q = 1, .n_kv = 300, .d_qk = 128}, 0, 0, {0}, 1, 0},
    {{.n_q = 17, .n_kv = 65, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 1, 0},
    {{.n_q = 64, .n_kv = 257, .d_qk = 64, .mask = WINDOW, 8, 8}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .n_kv = 17, .d_qk = 64}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .n_kv = 17, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 1, 0},
    {{.n_q = 33, .n_kv = 7, .d_qk = 16, .mask = WINDOW, 2, 0}, 0, 0, {0}, 0, 0},
    {{.n_q = 9, .n_kv = 4, .d_qk = 16, .mask = WINDOW, 0, 0}, 0, 0, {0}, 1, 0},
    /* windows: zero, narrow, one-sided, unbounded sides, wider than n */
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, 0, 0}, 0, 0, {0}, 1, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, 1, 1}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, 8, 8}, 0, 0, {0}, 1, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, 8, 0}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, 0, 8}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, INF, 4}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, 4, INF}, 0, 0, {0}, 1, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, INF, INF}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, 100, 100}, 0, 0, {0}, 0, 0},
    {{.n_q = 257, .d_qk = 64, .mask = WINDOW, 1000, 0}, 0, 0, {0}, 0, 0},
    {{.n_q = 257, .d_qk = 64, .mask = WINDOW, 8, 8}, 0, 0, {0}, 1, 0},
    {{.n_q = 257, .d_qk = 32, .mask = WINDOW, 0, INF}, 0, 0, {0}, 0, 0},
    /* batch, GQA, MQA */
    {{.batch = 2, .heads_q = 3, .n_q = 17, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 1, 0},
    {{.batch = 2, .n_q = 65, .d_qk = 32}, 0, 0, {0}, 0, 0},
    {{.heads_q = 4, .heads_kv = 2, .n_q = 65, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 1, 0},
    {{.heads_q = 4, .heads_kv = 2, .n_q = 33, .d_qk = 64, .mask = WINDOW, 8, 8}, 0, 0, {0}, 0, 0},
    {{.heads_q = 4, .heads_kv = 1, .n_q = 33, .d_qk = 64, .mask = WINDOW, 8, 8}, 0, 0, {0}, 1, 0},
    {{.heads_q = 4, .heads_kv = 1, .n_q = 65, .d_qk = 64}, 0, 0, {0}, 0, 0},
    /* interleaved [b, n, h, d] strides */
    {{.heads_q = 4, .n_q = 65, .d_qk = 64}, ILV, 0, {0}, 1, 0},
    {{.batch = 2, .heads_q = 4, .heads_kv = 2, .n_q = 17, .n_kv = 33, .d_qk = 64, .mask = CAUSAL},
     ILV,
     0,
     {0},
     1,
     0},
    {{.heads_q = 2, .n_q = 65, .d_qk = 16, .mask = WINDOW, 8, 8}, ILV, 0, {0}, 0, 0},
    {{.heads_q = 4, .heads_kv = 1, .n_q = 17, .d_qk = 64, .d_v = 80}, ILV, 0, {0}, 0, 0},
    /* explicit scale */
    {{.n_q = 65, .d_qk = 64, .scale = 0.5f}, 0, 0, {0}, 1, 0},
    {{.n_q = 65, .d_qk = 64, .mask = CAUSAL, .scale = 2.0f}, 0, 0, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, 8, 8, .scale = 0.01f}, 0, 0, {0}, 0, 0},
    {{.n_q = 17, .d_qk = 64, .scale = -0.5f}, 0, 0, {0}, 0, 0},
    /* inputs x 100: scores in the thousands must not overflow the exponentials */
    {{.n_q = 65, .d_qk = 64}, 0, 100, {0}, 1, 0},
    {{.n_q = 257, .d_qk = 64, .mask = CAUSAL}, 0, 100, {0}, 0, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, 8, 8}, 0, 100, {0}, 0, 0},
    {{.n_q = 33, .d_qk = 128}, 0, 100, {0}, 1, 0},
    /* large logits: q and k x 8, 30 and 100 with fractions, so that fp32 scores round; the
       error bound of txattn_error_bound grows with them (docs/error_bound.md) */
    {{.n_q = 65, .d_qk = 64}, 0, 8, {0}, 1, 0},
    {{.n_q = 128, .d_qk = 64, .mask = CAUSAL}, 0, 8, {0}, 0, 0},
    {{.n_q = 257, .d_qk = 128, .mask = WINDOW, 16, 16}, 0, 8, {0}, 0, 0},
    {{.n_q = 128, .d_qk = 64, .mask = CAUSAL}, 0, 30, {0}, 1, 0},
    {{.n_q = 65, .d_qk = 128}, 0, 30, {0}, 0, 0},
    {{.n_q = 129, .d_qk = 64, .mask = WINDOW, 8, 8}, 0, 30, {0}, 0, 0},
    {{.heads_q = 4, .heads_kv = 2, .n_q = 97, .d_qk = 128, .mask = CAUSAL}, 0, 100, {0}, 0, 0},
    {{.n_q = 65, .n_kv = 257, .d_qk = 64}, 0, 100, {0}, 1, 0},
    /* an outlier channel: every score shares a large term whose rounding differs per key */
    {{.n_q = 128, .d_qk = 64}, 0, 0, {0}, 1, 100},
    {{.n_q = 65, .d_qk = 128, .mask = CAUSAL}, 0, 0, {0}, 0, 30},
    {{.n_q = 65, .d_qk = 256, .mask = WINDOW, 16, 16}, 0, 0, {0}, 0, 100},
    /* NaN propagation: rows that read the NaN through a visible key are NaN, the others stay finite
     */
    {{.n_q = 17, .d_qk = 64, .mask = CAUSAL}, 0, 0, K_NAN(0, 0, 5, 0), 1, 0},
    {{.n_q = 33, .d_qk = 64, .mask = WINDOW, 2, 2}, 0, 0, V_NAN(0, 0, 10, 3), 1, 0},
    {{.n_q = 7, .d_qk = 16}, 0, 0, K_NAN(0, 0, 0, 15), 0, 0},
    {{.batch = 2, .heads_q = 4, .heads_kv = 2, .n_q = 17, .d_qk = 64, .mask = CAUSAL},
     0,
     0,
     K_NAN(1, 1, 3, 7),
     0,
     0},
    {{.n_q = 1, .n_kv = 257, .d_qk = 64, .mask = WINDOW, 8, 0}, 0, 0, V_NAN(0, 0, 100, 0), 0, 0},
    {{.n_q = 65, .d_qk = 64, .mask = WINDOW, 1, 1}, 0, 0, V_NAN(0, 0, 30, 5), 0, 0},
    /* longer: the size the "about 5e-7" figure of an online-softmax kernel refers to */
    {{.n_q = 2048, .d_qk = 64}, 0, 0, {0}, 0, 0},
    {{.n_q = 1024, .d_qk = 64, .mask = CAUSAL}, 0, 0, {0}, 0, 0},
    {{.heads_q = 4, .heads_kv = 1, .n_q = 1, .n_kv = 4096, .d_qk = 128}, 0, 0, {0}, 0, 0},
};

size_t tx_battery_size(void) {
  return sizeof cases / sizeof cases[0];
}

const tx_case *tx_battery_get(size_t i) {
  return i < tx_battery_size() ? &cases[i] : NULL;
}

int tx_case_prepare(const tx_case *c, size_t index, const tx_dtypes *types, const tx_serving *sv,
                    const tx_modifier_args *mods, tx_buffers *b, char *err, size_t err_size) {
  txattn_problem p = TXATTN_PROBLEM_INIT, typed = c->p;
  const int ragged = sv && sv->n > 0, lse = sv && sv->lse;
  tx_dtypes_apply(types, &typed);
  if (mods) tx_modifier_apply(mods, &typed);
  if (ragged) {
    typed.batch = (int64_t)sv->n;
    typed.n_kv = sv->max_kv > 0 ? sv->max_kv : 1;
  }
  if (typed.k_type == TXATTN_DTYPE_Q8_0 || typed.v_type == TXATTN_DTYPE_Q8_0) {
    /* q8_0 rows are blocks of 32: a head size the blocks cannot hold is taken up to the next */
    typed.d_qk = (typed.d_qk + 31) / 32 * 32;
    typed.d_v = (typed.d_v + 31) / 32 * 32;
  }
  if (sv) { /* pages and packing, sized to the shape */
    tx_serving paging = *sv;
    paging.n = 0;
    paging.lse = 0;
    tx_serving_apply(&paging, &typed);
  }
  if (txattn_problem_resolve(&typed, &p) != TXATTN_OK) {
    snprintf(err, err_size, "battery shape %zu is invalid: %s", index, txattn_last_error());
    return -1;
  }
  /* packed rows are the interleaved buffers' rows */
  if (tx_buffers_alloc(b, &p, p.packed ? TX_LAYOUT_INTERLEAVED : c->layout, 1, err, err_size) != 0)
    return -1;
  if ((ragged || lse) && tx_buffers_serving(b, lse, ragged ? sv->kv_lens : NULL, ragged ? sv->n : 0,
                                            err, err_size) != 0) {
    tx_buffers_free(b);
    return -1;
  }
  tx_buffers_fill(b, UINT64_C(0x7478747565) + index, c->input_scale != 0 ? c->input_scale : 1.0f);
  if (c->outlier != 0) {
    for (int64_t bb = 0; bb < p.batch; bb++) {
      for (int64_t h = 0; h < p.heads_q; h++)
        for (int64_t i = 0; i < p.n_q; i++)
          tx_elem_put(b->q, p.q_type, &b->q_str, bb, h, i, 0, c->outlier);
      for (int64_t h = 0; h < p.heads_kv; h++)
        for (int64_t j = 0; j < p.n_kv; j++)
          tx_elem_put(b->k, p.k_type, &b->k_str, bb, h, j, 0, c->outlier);
    }
  }
  if (ragged) tx_buffers_fill_padding(b, NAN);
  tx_nan_site site = tx_case_nan(c, b);
  tx_plant_nan(b, &site);
  if (tx_buffers_page(b, UINT64_C(0x7061676573) + index, err, err_size) != 0) {
    tx_buffers_free(b);
    return -1;
  }
  return 0;
}

tx_nan_site tx_case_nan(const tx_case *c, const tx_buffers *b) {
  tx_nan_site site = c->nan;
  if (site.batch >= b->p.batch || site.key >= tx_buffers_sequence(b, site.batch).n_kv)
    site.where = TX_NAN_NONE;
  return site;
}

void tx_case_format(const tx_case *c, char *buf, size_t size) {
  int len = tx_problem_format(&c->p, buf, size);
  if (len < 0 || (size_t)len >= size) return;
  char extra[96] = "";
  size_t e = 0;
  if (c->layout == TX_LAYOUT_INTERLEAVED)
    e += (size_t)snprintf(extra + e, sizeof extra - e, " [b,n,h,d]");
  if (c->input_scale != 0 && c->input_scale != 1)
    e += (size_t)snprintf(extra + e, sizeof extra - e, " x%g", (double)c->input_scale);
  if (c->outlier != 0)
    e += (size_t)snprintf(extra + e, sizeof extra - e, " q,k[0]=%g", (double)c->outlier);
  if (c->nan.where != TX_NAN_NONE)
    snprintf(extra + e, sizeof extra - e, " NaN@%s[%lld,%lld,%lld,%lld]",
             c->nan.where == TX_NAN_IN_K ? "K" : "V", (long long)c->nan.batch,
             (long long)c->nan.head_kv, (long long)c->nan.key, (long long)c->nan.col);
  snprintf(buf + len, size - (size_t)len, "%s", extra);
}
