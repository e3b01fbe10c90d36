/* SPDX-License-Identifier: MIT */
/* txtune check: every usable kernel against txattn_reference on a battery of shapes, in the element
   types --dtype gives (one combination, or a few with --dtype all); then a planning pass on large
   shapes the battery cannot afford to run. The battery is a curated list that covers every rule of
   the contract (lengths, head sizes, masks and windows, GQA, strides, scale, large inputs and large
   logits, rows with no visible key, NaN propagation) rather than a cross product. Planning is what
   fails when a kernel's cache-derived defaults break its own declaration on a machine with other
   caches; it takes microseconds, so every shape is cheap. */
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "buffers.h"
#include "cmd_check.h"
#include "cmd_models.h"
#include "context_cli.h"
#include "json.h"
#include "kernels.h"
#include "problem_cli.h"
#include "text_table.h"
#include "timing.h"
#include "txattn/plugin.h"
#include "verify.h"

typedef struct check_case {
  txattn_problem p; /* as a caller would write it: zero fields take the defaults */
  tx_layout_kind layout;
  float input_scale; /* q, k and v are this times standard normal; 0 means 1 */
  tx_nan_site nan;   /* where a NaN is planted, if anywhere */
  int quick;         /* part of `txtune check --quick` */
  /* not 0: channel 0 of every q and k row is this value, as in models with an outlier channel;
     every score then carries a large common term that fp32 must round */
  float outlier;
} check_case;

/* The problem's text plus what else the case varies: "n=65 d=64 causal [b,n,h,d] x100". */
#define CASE_TEXT_MAX 160

typedef struct plan_stat { /* one kernel (or the dispatcher) over the planning shapes */
  int64_t planned, declined, failed;
  size_t first_shape; /* of the first failure */
  char first[400];    /* "TXATTN_E_PLUGIN: <message>" */
} plan_stat;

typedef struct plan_pass {
  int quick;
  tx_dtypes types;           /* the element types every shape is planned in */
  const unsigned char *skip; /* kernels left out (they decline the types), NULL: none */
  size_t n_shapes;           /* planned (the --quick subset, or all) */
  plan_stat *stats;          /* one per selected kernel (unusable ones stay zero) */
  plan_stat dispatcher;
} plan_pass;

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
static const check_case cases[] = {
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

#define N_CASES (sizeof cases / sizeof cases[0])

/* The NaN the case plants in b (prepared by case_prepare): its site, or none when a ragged
   batch left it out. */
static tx_nan_site case_nan(const check_case *c, const tx_buffers *b) {
  tx_nan_site site = c->nan;
  if (site.batch >= b->p.batch || site.key >= tx_buffers_sequence(b, site.batch).n_kv)
    site.where = TX_NAN_NONE;
  return site;
}

/* Allocates the case's tensors in the element types `types` (b->p: the case resolved, in them),
   fills them (seeded by the case's index, so every run sees the same data, rounded to the types)
   and plants the NaN. With sv (NULL: none) the call has sv->lse and, with kv lengths, is ragged:
   a batch of one sequence per length with the case's n_q queries each, n_kv the longest, the keys
   past each kv_len NaN (so that reading one fails), a NaN site outside the batch dropped. With
   mods (NULL: none) the case gets those score modifiers. Returns 0, or -1 with the reason in
   err. */
static int case_prepare(const check_case *c, size_t index, const tx_dtypes *types,
                        const tx_serving *sv, const tx_modifier_args *mods, tx_buffers *b,
                        char *err, size_t err_size) {
  txattn_problem p = TXATTN_PROBLEM_INIT, typed = c->p;
  const int ragged = sv && sv->n > 0, lse = sv && sv->lse;
  tx_dtypes_apply(types, &typed);
  if (mods) tx_modifier_apply(mods, &typed);
  if (ragged) {
    typed.batch = (int64_t)sv->n;
    typed.n_kv = sv->max_kv > 0 ? sv->max_kv : 1;
    if (sv->n_q_lens) typed.n_q = sv->max_q > 0 ? sv->max_q : 1; /* rows per sequence: --q-lens */
  }
  if (txattn_dtype_block(typed.k_type) == 32 || txattn_dtype_block(typed.v_type) == 32) {
    /* q8_0 and q4_0 rows are blocks of 32: a head size they cannot hold is taken up to the next */
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
  if (((ragged || lse) && tx_buffers_serving(b, lse, ragged ? sv->kv_lens : NULL,
                                             ragged ? sv->n : 0, err, err_size) != 0) ||
      (ragged && sv->n_q_lens && tx_buffers_q_lens(b, sv->q_lens, sv->n_q_lens, err, err_size))) {
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
  tx_nan_site site = case_nan(c, b);
  tx_plant_nan(b, &site);
  if (tx_buffers_page(b, UINT64_C(0x7061676573) + index, err, err_size) != 0) {
    tx_buffers_free(b);
    return -1;
  }
  return 0;
}

static void case_format(const check_case *c, char *buf, size_t size) {
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

#define NONE   TXATTN_MASK_NONE
#define CAUSAL TXATTN_MASK_CAUSAL
#define WINDOW TXATTN_MASK_WINDOW

typedef struct plan_shape {
  txattn_problem p;
  int quick; /* part of `txtune check --quick` */
} plan_shape;

/* n x d x {none, causal, a centred window of 300 keys}, then what the grid leaves out: d_v !=
   d_qk, GQA 32/8, decoding against a long KV cache and Mistral's one-sided window. The quick ones
   cover each n, each d and each kind once. */
#define GRID(n, d, qn, qc, qw)                                                                     \
  {{.n_q = n, .d_qk = d}, qn}, {{.n_q = n, .d_qk = d, .mask = CAUSAL}, qc}, {                      \
    {.n_q = n, .d_qk = d, .mask = WINDOW, .window_left = 150, .window_right = 150}, qw             \
  }
static const plan_shape plan_shapes[] = {
    GRID(4096, 64, 1, 1, 1),
    GRID(4096, 128, 1, 1, 0),
    GRID(4096, 256, 1, 1, 0),
    GRID(16384, 64, 0, 0, 0),
    GRID(16384, 128, 0, 1, 1),
    GRID(16384, 256, 0, 0, 0),
    GRID(65536, 64, 0, 1, 0),
    GRID(65536, 128, 0, 0, 0),
    GRID(65536, 256, 0, 0, 1),
    {{.n_q = 4096, .d_qk = 128, .d_v = 64, .mask = CAUSAL}, 1},
    {{.n_q = 16384, .d_qk = 64, .d_v = 256}, 0},
    {{.heads_q = 32, .heads_kv = 8, .n_q = 4096, .d_qk = 128, .mask = CAUSAL}, 1},
    {{.heads_q = 32, .heads_kv = 8, .n_q = 16384, .d_qk = 128, .mask = CAUSAL}, 0},
    {{.heads_q = 32, .heads_kv = 8, .n_q = 65536, .d_qk = 64, .mask = CAUSAL}, 0},
    {{.heads_q = 32, .heads_kv = 8, .n_q = 1, .n_kv = 4096, .d_qk = 128, .mask = CAUSAL}, 0},
    {{.heads_q = 32, .heads_kv = 8, .n_q = 1, .n_kv = 65536, .d_qk = 128, .mask = CAUSAL}, 1},
    {{.n_q = 16384, .d_qk = 128, .mask = WINDOW, .window_left = 299, .window_right = 0}, 0},
};
#define N_SHAPES (sizeof plan_shapes / sizeof plan_shapes[0])

static txattn_problem typed_shape(const plan_pass *pp, size_t shape) {
  txattn_problem p = plan_shapes[shape].p;
  tx_dtypes_apply(&pp->types, &p);
  return p;
}

/* "n=4096 d=64 causal" (and the pass's types, when not f32) */
static void plan_shape_format(const plan_pass *pp, size_t shape, char *buf, size_t size) {
  txattn_problem p = typed_shape(pp, shape);
  tx_problem_format(&p, buf, size);
}

static void fail(plan_stat *st, size_t shape, txattn_status s) {
  if (st->failed++ == 0) {
    st->first_shape = shape;
    snprintf(st->first, sizeof st->first, "%s: %s", txattn_status_name(s), txattn_last_error());
  }
}

static void say(const plan_pass *pp, int verbose, const char *who, size_t shape,
                const plan_stat *st) {
  char label[160];
  if (!verbose) return;
  plan_shape_format(pp, shape, label, sizeof label);
  printf("  %-20s  plan %-40s  FAIL: %s\n", who, label, st->first);
}

static int skipped(const plan_pass *pp, const tx_kernel_sel *sel, size_t k) {
  return !sel[k].info.usable || (pp->skip && pp->skip[k]);
}

/* Plans each usable kernel of sel (but those skip[k] marks, if skip is not NULL; it must outlive
   out), and the dispatcher (kernel NULL), on every shape (with quick, the quick ones) in the
   element types `types`. A kernel passes a shape when it plans or declines it
   (TXATTN_E_UNSUPPORTED); the dispatcher must plan. With verbose, one line per failure on stdout.
   Returns 0, or -1 when out of memory. */
static int plan_pass_run(txattn_context *ctx, const tx_kernel_sel *sel, size_t n_sel,
                         const tx_dtypes *types, const unsigned char *skip, int quick, int verbose,
                         plan_pass *out) {
  memset(out, 0, sizeof *out);
  out->quick = quick;
  out->types = *types;
  out->skip = skip;
  out->stats = calloc(n_sel ? n_sel : 1, sizeof *out->stats);
  if (!out->stats) return -1;
  for (size_t i = 0; i < N_SHAPES; i++) {
    if (quick && !plan_shapes[i].quick) continue;
    out->n_shapes++;
    txattn_plan *plan = NULL;
    txattn_problem p = typed_shape(out, i);
    for (size_t k = 0; k < n_sel; k++) {
      if (skipped(out, sel, k)) continue;
      plan_stat *st = &out->stats[k];
      txattn_status s = txattn_plan_create(ctx, &p, sel[k].info.name, &plan);
      txattn_plan_free(plan);
      plan = NULL;
      if (s == TXATTN_OK) {
        st->planned++;
      } else if (s == TXATTN_E_UNSUPPORTED) {
        st->declined++;
      } else {
        int64_t before = st->failed;
        fail(st, i, s);
        if (before == 0) say(out, verbose, sel[k].info.name, i, st);
      }
    }
    txattn_status s = txattn_plan_create(ctx, &p, NULL, &plan);
    txattn_plan_free(plan);
    if (s == TXATTN_OK) {
      out->dispatcher.planned++;
    } else {
      int64_t before = out->dispatcher.failed;
      fail(&out->dispatcher, i, s);
      if (before == 0) say(out, verbose, "(the dispatcher)", i, &out->dispatcher);
    }
  }
  return 0;
}

static void plan_pass_free(plan_pass *pp) {
  free(pp->stats);
  pp->stats = NULL;
}

/* Whether kernel k (or, k == SIZE_MAX, the dispatcher) failed a shape. */
static int plan_pass_failed(const plan_pass *pp, size_t k) {
  if (k == SIZE_MAX) return pp->dispatcher.failed > 0;
  return pp->stats && pp->stats[k].failed > 0;
}

static void row(const plan_pass *pp, tx_table *t, const char *name, const plan_stat *st,
                int dispatcher) {
  char planned[24], declined[24], failed[24], label[160];
  snprintf(planned, sizeof planned, "%lld", (long long)st->planned);
  snprintf(declined, sizeof declined, "%lld", (long long)st->declined);
  snprintf(failed, sizeof failed, "%lld", (long long)st->failed);
  const char *cells[] = {name, planned, dispatcher ? NULL : declined, failed,
                         st->failed ? "FAIL" : "PASS"};
  tx_table_add(t, cells);
  if (st->failed) {
    plan_shape_format(pp, st->first_shape, label, sizeof label);
    tx_table_note(t, "%lld failed; first: %s: %s", (long long)st->failed, label, st->first);
  }
}

/* The planning table and its failures (text). */
static void plan_pass_print(const plan_pass *pp, const tx_kernel_sel *sel, size_t n_sel) {
  printf("\nplanning on %zu large shape%s (n 4096..65536, d up to 256, GQA 32/8, decode; plans "
         "only, nothing runs):\n",
         pp->n_shapes, pp->n_shapes == 1 ? "" : "s");
  tx_table t;
  tx_table_init(&t, "KERNEL|>PLANNED|>DECLINED|>FAILED|RESULT");
  for (size_t k = 0; k < n_sel; k++)
    if (!skipped(pp, sel, k)) row(pp, &t, sel[k].info.name, &pp->stats[k], 0);
  row(pp, &t, "(the dispatcher)", &pp->dispatcher, 1);
  tx_table_print(&t, stdout, "");
  tx_table_free(&t);
}

static void json_stat(const plan_pass *pp, tx_json *j, const plan_stat *st) {
  char label[160];
  tx_json_kv_int(j, "planned", st->planned);
  tx_json_kv_int(j, "declined", st->declined);
  tx_json_kv_int(j, "failed", st->failed);
  if (st->failed) plan_shape_format(pp, st->first_shape, label, sizeof label);
  tx_json_kv_string(j, "first_failure_shape", st->failed ? label : NULL);
  tx_json_kv_string(j, "first_failure", st->failed ? st->first : NULL);
}

/* The pass's fields of kernel k's JSON object (inside it), and the pass as the top-level
   "planning" object. */
static void plan_pass_json_kernel(tx_json *j, const plan_pass *pp, size_t k) {
  tx_json_kv_object(j, "planning");
  json_stat(pp, j, &pp->stats[k]);
  tx_json_end_object(j);
}

static void plan_pass_json(tx_json *j, const plan_pass *pp) {
  tx_json_kv_object(j, "planning");
  tx_json_kv_int(j, "shapes", (int64_t)pp->n_shapes);
  tx_json_kv_object(j, "dispatcher");
  json_stat(pp, j, &pp->dispatcher);
  tx_json_end_object(j);
  tx_json_end_object(j);
}

/* --dtype all: fp32, 16-bit K and V (the KV cache of decode), every tensor 16-bit, and a mix with
   a 16-bit output of another type than its inputs. */
static const char *const all_types[] = {"f32", "kv=f16", "kv=bf16",
                                        "f16", "bf16",   "q,k,v,o=f32,bf16,f16,f16"};
#define N_ALL_TYPES (sizeof all_types / sizeof all_types[0])
#define MAX_COMBOS  N_ALL_TYPES

typedef struct check_opts {
  tx_strlist kernels;
  int quick, verbose, json;
  const char *dtype;
  tx_serving_args serving;
  tx_modifier_args mods;
  tx_context_args ctx;
} check_opts;

typedef enum outcome { OUT_PASS, OUT_FAIL, OUT_SKIP } outcome;

typedef struct result { /* one kernel on one shape */
  size_t case_index, kernel;
  outcome out;
  double rel_error, lse_error; /* lse_error: with --lse, max|lse - lse_ref|; else NaN */
  char msg[320];
} result;

typedef struct kstat { /* one kernel over the battery, in one type combination */
  int64_t run, skipped, failed;
  double max_error;     /* -1 until a shape was compared */
  double max_lse_error; /* with --lse: over the shapes compared; -1 until one was */
  size_t worst_case;
  const result *first_failure;
} kstat;

/* The battery and the planning pass in one combination of element types. */
typedef struct combo {
  tx_dtypes types;
  char name[40];           /* "kv=f16" */
  unsigned char *declines; /* per kernel: the library refuses it these types */
  char (*declines_why)[80];
  size_t n_takes; /* usable kernels that take the types */
  kstat *stats;
  result *results; /* n_cases x n_sel, in run order */
  size_t n_results;
  int64_t ref_failures;
  char ref_failure[512];
  plan_pass plans; /* the planning pass on large shapes  */
} combo;

typedef struct check_run {
  check_opts o;
  tx_opt run_opts[5], serving_opts[TX_SERVING_N_OPTS], mod_opts[TX_MODIFIER_N_OPTS],
      ctx_opts[TX_CONTEXT_N_OPTS];
  tx_opt_group groups[4];
  tx_cmd_spec spec;
  tx_serving serving; /* --kv-lens and --lse */
  txattn_context *ctx;
  tx_kernel_sel *sel;
  size_t n_sel, n_cases;
  combo combos[MAX_COMBOS];
  size_t n_combos;
  int label_width, name_width;
} check_run;

static const char about[] =
    "Runs every usable kernel (or those --kernel names) on a battery of shapes and compares each\n"
    "output with the fp64 txattn_reference within txattn_error_bound; then asks each kernel and\n"
    "the dispatcher for a plan on large shapes, which are not run. --dtype runs it all with\n"
    "tensors of those element types (f32, f16, bf16: one for all four, Q,K,V,O, or kv=T for K and\n"
    "V with q and o f32); --dtype all in f32, kv=f16, kv=bf16, f16, bf16 and\n"
    "q,k,v,o=f32,bf16,f16,f16. A kernel that does not take the types is listed as declining them,\n"
    "not as failing. --lse also checks the log-sum-exp of every row (a kernel without\n"
    "TXATTN_KERNEL_LSE declines it); --kv-lens L1,L2,... makes every shape a ragged batch of\n"
    "one sequence per length, each with the shape's queries against its L keys (the keys past\n"
    "L are NaN, so reading one fails). --softcap, --alibi, --sinks and --sink-keys give every\n"
    "shape those score modifiers (a kernel that does not compute one declines it).\n"
    "What passes: docs/inspect.md. `txtune check --model NAME` checks every attention layer of\n"
    "a model of the catalogue instead (txtune models; `txtune check --model x --help`).\n"
    "Exit status: 0 all passed; 1 a kernel failed or could not be checked; 2 usage error.";

/* Returns -1 to go on, else the exit code (help printed, or a usage error). */
static int parse(check_run *r, int argc, char **argv) {
  check_opts *o = &r->o;
  r->run_opts[0] =
      tx_opt_list("kernel", &o->kernels, "NAME[,NAME...]", "check only these kernels (repeatable)");
  r->run_opts[1] = tx_opt_flag("quick", &o->quick, "a smaller battery");
  r->run_opts[2] = tx_opt_string("dtype", &o->dtype, "TYPES|all",
                                 "element types of q,k,v,o: " TX_DTYPE_HELP "; all: a few");
  r->run_opts[3] = tx_opt_flag("verbose", &o->verbose, "one line per kernel and shape");
  r->run_opts[4] = tx_opt_flag("json", &o->json, "one JSON object on stdout");
  tx_context_args_init(&o->ctx);
  tx_context_opts(&o->ctx, r->ctx_opts);
  tx_serving_args_init(&o->serving);
  tx_serving_opts(&o->serving, r->serving_opts);
  r->serving_opts[0].help = "every shape as a ragged batch: a sequence per length (0 allowed)";
  r->groups[0] = (tx_opt_group){"Options", r->run_opts, 5};
  r->groups[1] = (tx_opt_group){"Serving calls", r->serving_opts, TX_SERVING_N_OPTS};
  tx_modifier_args_init(&o->mods);
  tx_modifier_opts(&o->mods, r->mod_opts);
  r->groups[2] = (tx_opt_group){"Score modifiers (every shape)", r->mod_opts, TX_MODIFIER_N_OPTS};
  r->groups[3] = (tx_opt_group){"Library", r->ctx_opts, TX_CONTEXT_N_OPTS};
  r->spec =
      (tx_cmd_spec){"check",
                    "[--kernel NAME] [--quick] [--dtype TYPES|all] [--kv-lens L1,L2,...] "
                    "[--lse] [--softcap C] [--alibi] [--sinks] [--sink-keys K] [--doc-lens L1,...] "
                    "[--bias relative] [--verbose] "
                    "[--threads T] [--json]",
                    about, r->groups, 4};
  int rc = tx_args_parse_cmd(&r->spec, argc, argv);
  if (rc >= 0) return rc;
  if ((rc = tx_serving_from_args(&r->spec, &o->serving, &r->serving)) != 0) return rc;
  if ((rc = tx_modifier_parse(&r->spec, &o->mods)) != 0) return rc;
  const char *one = o->dtype ? o->dtype : "f32";
  int all = strcmp(one, "all") == 0;
  r->n_combos = all ? N_ALL_TYPES : 1;
  for (size_t i = 0; i < r->n_combos; i++) {
    combo *c = &r->combos[i];
    if (!tx_dtypes_parse(all ? all_types[i] : one, &c->types))
      return tx_args_usage_error(&r->spec, "--dtype expects %s, or all; got '%s'", TX_DTYPE_HELP,
                                 one);
    tx_dtypes_format(&c->types, c->name, sizeof c->name);
  }
  return -1;
}

static int case_selected(const check_run *r, size_t i) {
  return !r->o.quick || cases[i].quick;
}

static int single(const check_run *r) {
  return r->n_combos == 1;
}

/* The label of a shape: the case, and its types where several combinations are run. */
static void label_of(const check_run *r, const combo *c, size_t case_index, char *buf,
                     size_t size) {
  case_format(&cases[case_index], buf, size);
  size_t len = strlen(buf);
  if (!single(r) && !tx_dtypes_all_f32(&c->types)) tx_appendf(buf, size, &len, " %s", c->name);
}

static void print_verbose(const check_run *r, const combo *c, const result *res) {
  char label[CASE_TEXT_MAX + 48];
  label_of(r, c, res->case_index, label, sizeof label);
  const char *name = r->sel[res->kernel].info.name;
  if (res->out == OUT_SKIP)
    printf("  %-*s  %-*s  %9s  skipped: %s\n", r->name_width, name, r->label_width, label, "-",
           res->msg);
  else
    printf("  %-*s  %-*s  %9.2e  %s%s%s\n", r->name_width, name, r->label_width, label,
           res->rel_error, res->out == OUT_PASS ? "ok" : "FAIL", *res->msg ? ": " : "", res->msg);
  fflush(stdout);
}

static void record(check_run *r, combo *c, result *res) {
  kstat *k = &c->stats[res->kernel];
  if (res->out == OUT_SKIP) {
    k->skipped++;
  } else {
    k->run++;
    if (res->out == OUT_FAIL && k->failed++ == 0) k->first_failure = res;
    if (isfinite(res->lse_error) && res->lse_error > k->max_lse_error)
      k->max_lse_error = res->lse_error;
    if (isfinite(res->rel_error) && res->rel_error > k->max_error) {
      k->max_error = res->rel_error;
      k->worst_case = res->case_index;
    }
  }
  if (r->o.verbose && !r->o.json) print_verbose(r, c, res);
}

/* One kernel on one prepared shape (b->p: the case in the combination's types). */
static void check_kernel(check_run *r, const check_case *c, tx_buffers *b, result *res) {
  const char *name = r->sel[res->kernel].info.name;
  txattn_plan *plan = NULL;
  tx_fill_value(b->o, b->p.o_type, b->o_len, TX_POISON);
  if (b->lse) tx_fill_value(b->lse, TXATTN_DTYPE_F32, b->lse_len, TX_POISON);
  txattn_status s = txattn_plan_create(r->ctx, &b->p, name, &plan);
  if (s == TXATTN_E_UNSUPPORTED) {
    res->out = OUT_SKIP;
    snprintf(res->msg, sizeof res->msg, "%s", txattn_last_error());
    return;
  }
  if (s == TXATTN_OK) s = txattn_plan_execute(plan, &b->t);
  if (s != TXATTN_OK) {
    res->out = OUT_FAIL;
    snprintf(res->msg, sizeof res->msg, "%s: %s", txattn_status_name(s), txattn_last_error());
  } else {
    tx_verdict v;
    tx_nan_site site = case_nan(c, b);
    tx_verify(b, b->o, b->o_ref, &site, &v);
    res->rel_error = v.rel_error;
    res->lse_error = v.lse_error;
    res->out = tx_verdict_pass(&v) ? OUT_PASS : OUT_FAIL;
    tx_verdict_explain(&v, res->msg, sizeof res->msg);
  }
  txattn_plan_free(plan);
}

/* The oracle must itself obey the contract, or no comparison with it means anything. */
static int reference_ok(check_run *r, combo *co, const check_case *c, size_t index, tx_buffers *b) {
  char label[CASE_TEXT_MAX + 48], why[256] = "";
  txattn_status s = tx_buffers_reference(b);
  if (s != TXATTN_OK) {
    snprintf(why, sizeof why, "%s: %s", txattn_status_name(s), txattn_last_error());
  } else {
    tx_verdict v;
    tx_nan_site site = case_nan(c, b);
    tx_verify(b, b->o_ref, NULL, &site, &v);
    if (v.violations == 0) return 1;
    snprintf(why, sizeof why, "%s", v.first);
  }
  label_of(r, co, index, label, sizeof label);
  if (co->ref_failures++ == 0)
    snprintf(co->ref_failure, sizeof co->ref_failure, "shape %zu (%s): %s", index, label, why);
  if (!r->o.json) fprintf(stderr, "txtune check: txattn_reference fails on %s: %s\n", label, why);
  return 0;
}

static const tx_serving *serving_of(const check_run *r) {
  return r->serving.n || r->serving.lse || r->serving.page_size || r->serving.packed ? &r->serving
                                                                                     : NULL;
}

static int runs(const check_run *r, const combo *c, size_t k) {
  return r->sel[k].info.usable && !c->declines[k];
}

static int run_case(check_run *r, combo *co, size_t index) {
  const check_case *c = &cases[index];
  tx_buffers b;
  char err[256];
  if (case_prepare(c, index, &co->types, serving_of(r), &r->o.mods, &b, err, sizeof err) != 0) {
    fprintf(stderr, "txtune check: %s\n", err);
    return -1;
  }
  if (reference_ok(r, co, c, index, &b))
    for (size_t k = 0; k < r->n_sel; k++) {
      if (!runs(r, co, k)) continue;
      result *res = &co->results[co->n_results++];
      *res = (result){.case_index = index, .kernel = k, .rel_error = NAN, .lse_error = NAN};
      check_kernel(r, c, &b, res);
      record(r, co, res);
    }
  tx_buffers_free(&b);
  return 0;
}

static void set_widths(check_run *r) {
  char label[CASE_TEXT_MAX + 48];
  r->label_width = r->name_width = 0;
  for (size_t ci = 0; ci < r->n_combos; ci++)
    for (size_t i = 0; i < r->n_cases; i++) {
      label_of(r, &r->combos[ci], i, label, sizeof label);
      if (case_selected(r, i) && (int)strlen(label) > r->label_width)
        r->label_width = (int)strlen(label);
    }
  for (size_t k = 0; k < r->n_sel; k++)
    if ((int)strlen(r->sel[k].info.name) > r->name_width)
      r->name_width = (int)strlen(r->sel[k].info.name);
}

static size_t count_selected(const check_run *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_cases; i++) n += (size_t)case_selected(r, i);
  return n;
}

/* A kernel that cannot run here is a note, even when named (the check fails when no kernel is
   left: overall_pass); one that declines the types is not checked in them and does not fail. */
static int kernel_failed(const check_run *r, const combo *c, size_t k) {
  if (!r->sel[k].info.usable || c->declines[k]) return 0;
  return c->stats[k].failed > 0 || plan_pass_failed(&c->plans, k);
}

/* A combination no kernel takes is reported and passes: nothing of it could run. */
static int combo_pass(const check_run *r, const combo *c) {
  int pass = c->ref_failures == 0 && (c->n_takes == 0 || !plan_pass_failed(&c->plans, SIZE_MAX));
  for (size_t k = 0; k < r->n_sel; k++)
    if (kernel_failed(r, c, k)) pass = 0;
  return pass;
}

static size_t n_usable_of(const check_run *r) {
  size_t n = 0;
  for (size_t k = 0; k < r->n_sel; k++) n += (size_t)r->sel[k].info.usable;
  return n;
}

/* Passes when some kernel is usable, every combination passes and something was checked: where
   every kernel declines the types, nothing was verified, which is a failure (*n_checked counts the
   checks of kernels that take them). A combination that no kernel takes, beside others that ran,
   fails nothing. */
static int overall_pass(const check_run *r, size_t *n_checked) {
  int pass = 1;
  *n_checked = 0;
  for (size_t i = 0; i < r->n_combos; i++) {
    pass &= combo_pass(r, &r->combos[i]);
    *n_checked += r->combos[i].n_takes;
  }
  return pass && n_usable_of(r) > 0 && *n_checked > 0;
}

static void summary_row(const check_run *r, const combo *c, tx_table *t, size_t k) {
  const kstat *s = &c->stats[k];
  const txattn_kernel_info *info = &r->sel[k].info;
  char run[24], skipped[24], err[24], worst[CASE_TEXT_MAX] = "";
  if (!info->usable) {
    const char *state = "not usable";
    const char *cells[] = {info->name, NULL, NULL, NULL, NULL, state};
    tx_table_add(t, cells);
    tx_table_note(t, "not usable: %s", info->why_unusable ? info->why_unusable : "?");
    return;
  }
  if (c->declines[k]) {
    const int lse = strncmp(c->declines_why[k], "it does not write lse", 21) == 0;
    const char *cells[] = {info->name, NULL, NULL,
                           NULL,       NULL, lse ? "declines lse" : "declines the types"};
    tx_table_add(t, cells);
    tx_table_note(t, "%s", c->declines_why[k]);
    return;
  }
  snprintf(run, sizeof run, "%lld", (long long)s->run);
  snprintf(skipped, sizeof skipped, "%lld", (long long)s->skipped);
  snprintf(err, sizeof err, "%.2e", s->max_error);
  int compared = s->max_error >= 0;
  if (compared) case_format(&cases[s->worst_case], worst, sizeof worst);
  const char *res = s->failed                        ? "FAIL"
                    : plan_pass_failed(&c->plans, k) ? "FAIL (planning)"
                    : s->run                         ? "PASS"
                                                     : "no shape applies";
  const char *cells[] = {info->name, run, skipped, compared ? err : NULL, compared ? worst : NULL,
                         res};
  tx_table_add(t, cells);
  if (s->failed) {
    char label[CASE_TEXT_MAX];
    case_format(&cases[s->first_failure->case_index], label, sizeof label);
    tx_table_note(t, "%lld failed; first: %s: %s", (long long)s->failed, label,
                  s->first_failure->msg);
  }
}

static void print_combo(const check_run *r, const combo *c) {
  if (!single(r))
    printf("\n%s (q, k, v, o: %s, %s, %s, %s)%s\n", c->name, txattn_dtype_name(c->types.t[0]),
           txattn_dtype_name(c->types.t[1]), txattn_dtype_name(c->types.t[2]),
           txattn_dtype_name(c->types.t[3]),
           c->n_takes ? ":" : ": no kernel checked here takes these types");
  tx_table t;
  tx_table_init(&t, "KERNEL|>SHAPES|>SKIPPED|>MAX ERROR|WORST SHAPE|RESULT");
  for (size_t k = 0; k < r->n_sel; k++) summary_row(r, c, &t, k);
  if (r->n_sel) {
    printf("\n");
    tx_table_print(&t, stdout, "");
  }
  tx_table_free(&t);
  if (c->n_takes) plan_pass_print(&c->plans, r->sel, r->n_sel);
  if (c->ref_failures)
    printf("\ntxattn_reference broke the contract on %lld shapes; first: %s\n",
           (long long)c->ref_failures, c->ref_failure);
}

/* "name why; ..." of the kernels that failed (into failed) and of those named that cannot run here
   (into unusable). */
static void failures(const check_run *r, char *failed, char *unusable, size_t size) {
  failed[0] = unusable[0] = '\0';
  for (size_t k = 0; k < r->n_sel; k++) {
    char *list = r->sel[k].info.usable ? failed : unusable;
    int64_t shapes = 0;
    int plans = 0;
    for (size_t i = 0; i < r->n_combos; i++)
      if (kernel_failed(r, &r->combos[i], k)) {
        shapes += r->combos[i].stats[k].failed;
        plans |= plan_pass_failed(&r->combos[i].plans, k);
      }
    if (!r->sel[k].info.usable && !r->sel[k].requested) continue;
    if (r->sel[k].info.usable && !shapes && !plans) continue;
    char why[160];
    if (!r->sel[k].info.usable)
      snprintf(why, sizeof why, "cannot run here (%s)", r->sel[k].info.why_unusable);
    else if (shapes)
      snprintf(why, sizeof why, "failed %lld shape%s of the battery%s", (long long)shapes,
               shapes == 1 ? "" : "s", plans ? " and planning large shapes" : "");
    else
      snprintf(why, sizeof why, "failed to plan large shapes");
    size_t used = strlen(list);
    tx_appendf(list, size, &used, "%s%s %s", used ? "; " : "", r->sel[k].info.name, why);
  }
}

/* The last line: PASS or FAIL, with what failed and why; *note gets the named kernels that cannot
   run here when others could be checked ("" if none). */
static void verdict(const check_run *r, double seconds, char *line, size_t size, char *note,
                    size_t note_size) {
  size_t n_checked, n_failed = 0, n_kernels = 0;
  int pass = overall_pass(r, &n_checked);
  for (size_t k = 0; k < r->n_sel; k++) {
    int failed = 0, checked = 0;
    for (size_t i = 0; i < r->n_combos; i++) {
      failed |= kernel_failed(r, &r->combos[i], k);
      checked |= runs(r, &r->combos[i], k);
    }
    n_failed += (size_t)failed;
    n_kernels += (size_t)checked;
  }
  char in[64] = "", failed[600], unusable[600];
  if (single(r) && !tx_dtypes_all_f32(&r->combos[0].types))
    snprintf(in, sizeof in, " in %s", r->combos[0].name);
  else if (!single(r))
    snprintf(in, sizeof in, " in %zu type combinations", r->n_combos);
  failures(r, failed, unusable, sizeof failed);
  snprintf(note, note_size, "%s", n_usable_of(r) > 0 ? unusable : "");
  if (n_usable_of(r) == 0)
    snprintf(line, size, "FAIL: no usable kernel to check%s%s",
             *unusable ? ": " : " (see 'txtune list')", unusable);
  else if (n_checked == 0)
    snprintf(line, size, "FAIL: every kernel checked declines the types%s%s: nothing was run", in,
             r->serving.lse ? " or lse" : "");
  else if (pass)
    snprintf(line, size, "PASS: %zu kernel%s exact on %zu shapes%s (%.1f s)", n_kernels,
             n_kernels == 1 ? "" : "s", count_selected(r), in, seconds);
  else
    snprintf(line, size, "FAIL: %zu of %zu kernels failed%s%s%s%s (%.1f s)", n_failed, r->n_sel, in,
             *failed ? ": " : "", failed,
             single(r) && plan_pass_failed(&r->combos[0].plans, SIZE_MAX)
                 ? "; the dispatcher failed to plan"
                 : "",
             seconds);
}

static void print_text(const check_run *r, double seconds) {
  for (size_t i = 0; i < r->n_combos; i++) print_combo(r, &r->combos[i]);
  char line[1400], note[600];
  verdict(r, seconds, line, sizeof line, note, sizeof note);
  if (*note) printf("\nnote: %s: not checked\n", note);
  printf("\n%s\n", line);
}

static void json_kernel(tx_json *j, const check_run *r, const combo *c, size_t k) {
  const kstat *s = &c->stats[k];
  const txattn_kernel_info *info = &r->sel[k].info;
  char worst[CASE_TEXT_MAX];
  tx_json_begin_object(j);
  tx_json_kv_string(j, "name", info->name);
  tx_json_kv_bool(j, "usable", info->usable);
  tx_json_kv_string(j, "why_unusable", info->usable ? NULL : info->why_unusable);
  tx_json_kv_string(j, "declines_types",
                    info->usable && c->declines[k] ? c->declines_why[k] : NULL);
  tx_json_kv_int(j, "shapes_run", s->run);
  tx_json_kv_int(j, "skipped", s->skipped);
  tx_json_kv_int(j, "failed", s->failed);
  int compared = s->max_error >= 0;
  tx_json_kv_double(j, "max_rel_error", compared ? s->max_error : NAN);
  if (r->serving.lse)
    tx_json_kv_double(j, "max_lse_error", s->max_lse_error >= 0 ? s->max_lse_error : NAN);
  if (compared) case_format(&cases[s->worst_case], worst, sizeof worst);
  tx_json_kv_string(j, "worst_shape", compared ? worst : NULL);
  char label[CASE_TEXT_MAX];
  if (s->failed) case_format(&cases[s->first_failure->case_index], label, sizeof label);
  tx_json_kv_string(j, "first_failure_shape", s->failed ? label : NULL);
  tx_json_kv_string(j, "first_failure", s->failed ? s->first_failure->msg : NULL);
  if (runs(r, c, k) && c->plans.stats) plan_pass_json_kernel(j, &c->plans, k);
  tx_json_kv_bool(j, "pass", !kernel_failed(r, c, k));
  tx_json_end_object(j);
}

static void json_results(tx_json *j, const check_run *r, const combo *c) {
  static const char *const names[] = {"pass", "fail", "skipped"};
  char label[CASE_TEXT_MAX];
  tx_json_kv_array(j, "results");
  for (size_t i = 0; i < c->n_results; i++) {
    const result *res = &c->results[i];
    case_format(&cases[res->case_index], label, sizeof label);
    tx_json_begin_object(j);
    tx_json_kv_string(j, "kernel", r->sel[res->kernel].info.name);
    tx_json_kv_string(j, "shape", label);
    tx_json_kv_string(j, "result", names[res->out]);
    tx_json_kv_double(j, "rel_error", res->rel_error);
    tx_json_kv_string(j, "message", *res->msg ? res->msg : NULL);
    tx_json_end_object(j);
  }
  tx_json_end_array(j);
}

/* The fields of one combination: inline in the top-level object with one, else an object of
   "combinations". */
static void json_combo(tx_json *j, const check_run *r, const combo *c) {
  tx_json_kv_string(j, "dtype", c->name);
  static const char *const tensors[4] = {"q", "k", "v", "o"};
  tx_json_kv_object(j, "types");
  for (int i = 0; i < 4; i++) tx_json_kv_string(j, tensors[i], txattn_dtype_name(c->types.t[i]));
  tx_json_end_object(j);
  tx_json_kv_int(j, "kernels_taking_types", (int64_t)c->n_takes);
  tx_json_kv_string(j, "reference_failure", c->ref_failures ? c->ref_failure : NULL);
  tx_json_kv_array(j, "kernels");
  for (size_t k = 0; k < r->n_sel; k++) json_kernel(j, r, c, k);
  tx_json_end_array(j);
  if (r->o.verbose) json_results(j, r, c);
  if (c->plans.stats) plan_pass_json(j, &c->plans);
}

static void print_json(const check_run *r, double seconds) {
  tx_json j;
  size_t n_checked;
  tx_json_init(&j, stdout);
  tx_json_begin_object(&j);
  tx_json_kv_double(&j, "tolerance", TXATTN_EXACT_TOLERANCE);
  tx_json_kv_int(&j, "threads", txattn_context_threads(r->ctx));
  tx_json_kv_bool(&j, "quick", r->o.quick);
  tx_json_kv_int(&j, "shapes", (int64_t)count_selected(r));
  tx_json_kv_bool(&j, "lse", r->serving.lse);
  tx_json_key(&j, "kv_lens"); /* null: not ragged */
  if (r->serving.n) {
    tx_json_begin_array(&j);
    for (size_t i = 0; i < r->serving.n; i++) tx_json_int(&j, r->serving.kv_lens[i]);
    tx_json_end_array(&j);
  } else {
    tx_json_null(&j);
  }
  tx_json_kv_double(&j, "seconds", seconds);
  if (single(r)) {
    json_combo(&j, r, &r->combos[0]);
  } else {
    tx_json_kv_array(&j, "combinations");
    for (size_t i = 0; i < r->n_combos; i++) {
      tx_json_begin_object(&j);
      json_combo(&j, r, &r->combos[i]);
      tx_json_kv_bool(&j, "pass", combo_pass(r, &r->combos[i]));
      tx_json_end_object(&j);
    }
    tx_json_end_array(&j);
  }
  tx_json_kv_bool(&j, "pass", overall_pass(r, &n_checked));
  tx_json_end_object(&j);
  tx_json_finish(&j);
}

/* Which usable kernels the library refuses the combination's types, asked on the first shape;
   with --lse, also those that do not write lse (no TXATTN_KERNEL_LSE), which the library refuses
   such a call. */
static void find_declines(check_run *r, combo *c) {
  txattn_problem p = TXATTN_PROBLEM_INIT;
  txattn_problem_resolve(&cases[0].p, &p);
  tx_dtypes_apply(&c->types, &p);
  for (size_t k = 0; k < r->n_sel; k++) {
    if (!r->sel[k].info.usable) continue;
    if (r->serving.lse && !(r->sel[k].info.flags & TXATTN_KERNEL_LSE)) {
      c->declines[k] = 1;
      snprintf(c->declines_why[k], sizeof c->declines_why[k],
               "it does not write lse (no TXATTN_KERNEL_LSE)");
    } else {
      c->declines[k] = (unsigned char)tx_kernel_declines_types(
          r->ctx, r->sel[k].info.name, &p, c->declines_why[k], sizeof c->declines_why[k]);
    }
    c->n_takes += !c->declines[k];
  }
}

static int combo_alloc(check_run *r, combo *c) {
  size_t n = r->n_sel ? r->n_sel : 1;
  c->stats = calloc(n, sizeof *c->stats);
  c->results = calloc(r->n_cases * n, sizeof *c->results);
  c->declines = calloc(n, 1);
  c->declines_why = calloc(n, sizeof *c->declines_why);
  if (!c->stats || !c->results || !c->declines || !c->declines_why) return -1;
  for (size_t k = 0; k < r->n_sel; k++) /* none yet */
    c->stats[k].max_error = c->stats[k].max_lse_error = -1;
  return 0;
}

static void combo_free(combo *c) {
  free(c->stats);
  free(c->results);
  free(c->declines);
  free(c->declines_why);
  plan_pass_free(&c->plans);
}

static int run_combo(check_run *r, combo *c) {
  find_declines(r, c);
  for (size_t i = 0; i < r->n_cases && c->n_takes; i++)
    if (case_selected(r, i) && run_case(r, c, i) != 0) return TX_EXIT_FAIL;
  if (c->n_takes && plan_pass_run(r->ctx, r->sel, r->n_sel, &c->types, c->declines, r->o.quick,
                                  r->o.verbose && !r->o.json, &c->plans) != 0) {
    fprintf(stderr, "txtune check: out of memory\n");
    return TX_EXIT_FAIL;
  }
  return 0;
}

static int run_battery(check_run *r) {
  r->n_cases = N_CASES;
  for (size_t i = 0; i < r->n_combos; i++)
    if (combo_alloc(r, &r->combos[i]) != 0) {
      fprintf(stderr, "txtune check: out of memory\n");
      return TX_EXIT_FAIL;
    }
  set_widths(r);
  if (!r->o.json) {
    char in[96] = "";
    if (!single(r))
      snprintf(in, sizeof in, ", in %zu combinations of element types", r->n_combos);
    else if (!tx_dtypes_all_f32(&r->combos[0].types))
      snprintf(in, sizeof in, ", in %s", r->combos[0].name);
    printf("txtune check: %zu shapes per kernel%s, %d thread%s, exact when max|O - O_ref| <= "
           "max|V| * max(%g, (3 + sqrt(d_qk)) * 2^-24 * L)%s\n",
           count_selected(r), in, txattn_context_threads(r->ctx),
           txattn_context_threads(r->ctx) == 1 ? "" : "s", TXATTN_EXACT_TOLERANCE,
           single(r) && tx_dtypes_all_f32(&r->combos[0].types)
               ? ""
               : " (+ an ulp of o's type at max|V| for a 16-bit o)");
    char kv[400];
    tx_serving_format(&r->serving, kv, sizeof kv);
    if (*kv)
      printf("  serving calls:%s%s%s\n", kv,
             r->serving.n ? "; every shape a ragged batch, one sequence per length with the "
                            "shape's n_q queries"
                          : "",
             r->serving.lse ? "; lse within txattn_lse_error_bound (docs/error_bound.md, "
                              "\"The bound on lse\")"
                            : "");
  }
  double t0 = tx_clock();
  for (size_t i = 0; i < r->n_combos && n_usable_of(r); i++) {
    int rc = run_combo(r, &r->combos[i]);
    if (rc) return rc;
  }
  double seconds = tx_clock() - t0;
  size_t n_checked;
  const int pass = overall_pass(r, &n_checked);
  if (r->o.json) {
    print_json(r, seconds);
    char line[1400], note[600];
    verdict(r, seconds, line, sizeof line, note, sizeof note);
    fflush(stdout);
    if (!pass) fprintf(stderr, "txtune check: %s\n", line); /* stdout is the JSON's */
  } else {
    print_text(r, seconds);
  }
  return pass ? TX_EXIT_OK : TX_EXIT_FAIL;
}

static int run(check_run *r, int argc, char **argv) {
  int rc = parse(r, argc, argv);
  if (rc >= 0) return rc;
  if ((rc = tx_context_open("check", &r->o.ctx, &r->ctx)) != 0) return rc;
  if ((rc = tx_kernels_select(&r->spec, r->ctx, &r->o.kernels, &r->sel, &r->n_sel)) != 0) return rc;
  return run_battery(r);
}

int tx_cmd_check(int argc, char **argv) {
  if (tx_model_requested(argc, argv)) return tx_model_run("check", argc, argv);
  check_run r;
  memset(&r, 0, sizeof r);
  int rc = run(&r, argc, argv);
  for (size_t i = 0; i < r.n_combos; i++) combo_free(&r.combos[i]);
  free(r.sel);
  txattn_context_free(r.ctx);
  tx_strlist_free(&r.o.kernels);
  return rc;
}
