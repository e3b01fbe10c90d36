/* SPDX-License-Identifier: MIT */
/* Edge cases of the shipped plugins' own code paths, beyond the battery of test_kernels.c.
 *
 * A NaN in a V row whose score is -inf: the key is visible, its weight exp(-inf - max) is 0, and
 * 0 * NaN is NaN, so the contract's whole-row NaN rule (txattn.h; txattn_reference agrees) makes
 * the row NaN. A kernel must not drop the key because its weight is 0 -- in particular the split-KV
 * merge of tiled_omp, when every key of one partial has score -inf (that partial's max is -inf).
 * And a row whose every visible key scores -inf: each weight exp(-inf - -inf) is NaN (0 / 0) in the
 * reference, so the row is NaN, not the zeros of a row that sees no key.
 * The split-KV path is forced through the test build of tiled_omp (see
 * plugins/tiled_omp/CMakeLists.txt: a team for any work, the smallest blocks), whose plugin
 * directory TXATTN_TEST_TEAM_PLUGIN_DIR names.
 *
 * The kernels' own cost of a call (cost_pairs, for the dispatcher's fallback estimate: the score
 * pairs they compute plus a fixed cost per row), read from the plugins' descriptors, against a
 * brute-force count of the pairs from the test oracle's visibility, and on long problems (which the
 * kernels count a period of groups at a time) against a count group by group.
 *
 * A threaded kernel that names its one-thread twin (one_thread_same_as, which txtune profile then
 * leaves to the twin on one thread) gives the twin's bits there. And a kernel that fits its tunables
 * to a problem (fit_tunables) gives with the fitted ones the bits of the ones given. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attn_case.h"
#include "banded.h"
#include "oracle.h"
#include "tiled_internal.h"
#include "test_context.h"
#include "txattn/plugin.h"
#include "txattn/txattn.h"

TestSuite(plugin_cases, .init = test_env_clean, .fini = test_check_leaks, .timeout = 300);

/* Contiguous tensors of a problem with one query position (decode). */
struct minus_inf_case {
  txattn_problem p;
  float *q, *k, *v, *o;
};

/* Every key before the last `finite` keys has k[0] = -inf, and every query q[0] > 0, so those keys
   score -inf while the last ones score finite values; key nan_key's V row holds a NaN (none if
   nan_key < 0). Whatever ranges of keys a kernel splits the row into, the first one holds only
   -inf scores. */
static void minus_inf_case_init(struct minus_inf_case *c, int64_t heads_q, int64_t heads_kv,
                                int64_t n_kv, int64_t finite, int64_t nan_key) {
  const int64_t d = 8;
  memset(c, 0, sizeof *c);
  c->p = (txattn_problem){
      .heads_q = heads_q, .heads_kv = heads_kv, .n_q = 1, .n_kv = n_kv, .d_qk = d, .d_v = d};
  c->q = malloc((size_t)(heads_q * d) * sizeof(float));
  c->k = malloc((size_t)(heads_kv * n_kv * d) * sizeof(float));
  c->v = malloc((size_t)(heads_kv * n_kv * d) * sizeof(float));
  c->o = malloc((size_t)(heads_q * d) * sizeof(float));
  cr_assert(c->q && c->k && c->v && c->o, "out of memory");
  for (int64_t h = 0; h < heads_q; h++)
    for (int64_t x = 0; x < d; x++) c->q[h * d + x] = 0.5f + 0.125f * (float)((h + x) % 3);
  for (int64_t h = 0; h < heads_kv; h++) {
    for (int64_t j = 0; j < n_kv; j++) {
      float *k = c->k + (h * n_kv + j) * d, *v = c->v + (h * n_kv + j) * d;
      for (int64_t x = 0; x < d; x++) {
        k[x] = (float)((j * 7 + x * 3 + h) % 11 - 5) / 8.0f;
        v[x] = (float)((j * 5 + x + h) % 13 - 6) / 8.0f;
      }
      if (j < n_kv - finite) k[0] = -INFINITY;
      if (j == nan_key) v[1] = NAN;
    }
  }
}

static void minus_inf_case_free(struct minus_inf_case *c) {
  free(c->q);
  free(c->k);
  free(c->v);
  free(c->o);
}

/* Every row of the output must be NaN, and so must txattn_reference's. */
static void check_all_nan(const struct minus_inf_case *c, const char *who) {
  for (int64_t x = 0; x < c->p.heads_q * c->p.d_v; x++)
    cr_assert(isnan(c->o[x]), "%s: heads %lld/%lld, n_kv %lld: o[head %lld][%lld] = %g, not NaN",
              who, (long long)c->p.heads_q, (long long)c->p.heads_kv, (long long)c->p.n_kv,
              (long long)(x / c->p.d_v), (long long)(x % c->p.d_v), (double)c->o[x]);
}

/* Runs every usable kernel of ctx whose name starts with prefix ("" for all) on c; returns how
   many ran. Kernels that may decline a problem (test_kernel_takes_every_problem) may. */
static int run_kernels(txattn_context *ctx, struct minus_inf_case *c, const char *prefix) {
  struct kernel_list l;
  const txattn_tensors t = {.q = c->q, .k = c->k, .v = c->v, .o = c->o};
  int ran = 0;
  test_kernel_list(ctx, &l);
  for (size_t i = 0; i < l.n; i++) {
    const char *name = l.k[i].name;
    txattn_plan *plan = NULL;
    if (!l.k[i].usable || strncmp(name, prefix, strlen(prefix)) != 0) continue;
    txattn_status s = txattn_plan_create(ctx, &c->p, name, &plan);
    if (s == TXATTN_E_UNSUPPORTED && !test_kernel_takes_every_problem(name)) continue;
    cr_assert_eq(s, TXATTN_OK, "plan_create(%s): %s", name, txattn_last_error());
    for (int64_t x = 0; x < c->p.heads_q * c->p.d_v; x++) c->o[x] = 0.0f;
    s = txattn_plan_execute(plan, &t);
    txattn_plan_free(plan);
    cr_assert_eq(s, TXATTN_OK, "execute(%s): %s", name, txattn_last_error());
    check_all_nan(c, name);
    ran++;
  }
  return ran;
}

/* Decode with one kv head (the direct path, one row per kv head) and with 8 query heads on it (the
   tiled path: 8 stacked rows, two query blocks of the test build's smallest block_q). */
static const int64_t shapes[][2] = {{1, 1}, {8, 1}};

static void check_reference(struct minus_inf_case *c) {
  const txattn_tensors t = {.q = c->q, .k = c->k, .v = c->v, .o = c->o};
  cr_assert_eq(txattn_reference(&c->p, &t), TXATTN_OK, "reference: %s", txattn_last_error());
  check_all_nan(c, "txattn_reference");
}

/* Each shape with keys [0, n_kv - finite) scoring -inf and a NaN in V at nan_key. */
static void run_shapes(txattn_context *ctx, const char *prefix, int64_t n_kv, int64_t finite,
                       int64_t nan_key) {
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    struct minus_inf_case c;
    minus_inf_case_init(&c, shapes[s][0], shapes[s][1], n_kv, finite, nan_key);
    check_reference(&c);
    cr_assert_gt(run_kernels(ctx, &c, prefix), 0, "no usable %s kernel", prefix);
    minus_inf_case_free(&c);
  }
}

Test(plugin_cases, split_kv_merge_keeps_a_nan_read_at_a_minus_inf_score) {
  for (int threads = 2; threads <= 3; threads++) {
    txattn_context *ctx = test_context_at(TXATTN_TEST_TEAM_PLUGIN_DIR, threads);
    run_shapes(ctx, "tiled_omp", 256, 8, 3);
    txattn_context_free(ctx);
  }
}

/* A long run of -inf keys before the finite ones: whole key blocks of the tiled kernels, and a
   chunk of more than 256 keys of banded's vector kernels. */
Test(plugin_cases, every_kernel_keeps_a_nan_read_at_a_minus_inf_score) {
  for (int threads = 1; threads <= 2; threads++) {
    txattn_context *ctx = test_context(threads);
    run_shapes(ctx, "", 2048, 16, 700);
    txattn_context_free(ctx);
  }
}

Test(plugin_cases, a_row_whose_every_score_is_minus_inf_is_nan) {
  for (int threads = 1; threads <= 2; threads++) {
    txattn_context *ctx = test_context(threads);
    run_shapes(ctx, "", 300, 0, 7);
    run_shapes(ctx, "", 300, 0, -1);
    txattn_context_free(ctx);
  }
  txattn_context *ctx = test_context_at(TXATTN_TEST_TEAM_PLUGIN_DIR, 2);
  run_shapes(ctx, "tiled_omp", 256, 0, 3);
  run_shapes(ctx, "tiled_omp", 256, 0, -1);
  txattn_context_free(ctx);
}

/* ---- cost_pairs ---- */

/* A plugin of the build tree, opened by hand to read its descriptors. Never closed: tiled_omp's
   OpenMP runtime keeps allocations that would look leaked once it is unloaded. */
struct plugin {
  void *handle;
  const txattn_plugin_desc *desc;
};

static void plugin_open(struct plugin *pl, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/txattn_%s.so", TXATTN_TEST_PLUGIN_BUILD_DIR, name);
  pl->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  cr_assert(pl->handle != NULL, "dlopen(%s): %s", path, dlerror());
  txattn_plugin_entry_fn entry;
  *(void **)&entry = dlsym(pl->handle, TXATTN_PLUGIN_ENTRY_SYMBOL);
  cr_assert(entry != NULL, "%s has no entry", path);
  pl->desc = entry(TXATTN_PLUGIN_ABI_VERSION);
  cr_assert(pl->desc != NULL, "%s declined ABI %u", path, (unsigned)TXATTN_PLUGIN_ABI_VERSION);
}

/* What a tiled kernel computes, counted the slow way: scores go per register group of mr stacked
   rows (all query heads of a kv head, position-major) and K panel of kw keys from key 0, for every
   panel some row of the group sees a key of. At most 4 rows per kv head take the direct path
   (TILED_DIRECT_ROWS in plugins/tiled/tiled_internal.h), which computes those rows against every
   key one of them sees. Every (batch, kv head) does the same. */
static double brute_tiled_pairs(const txattn_problem *p, int64_t mr, int64_t kw) {
  const int64_t group = p->heads_q / p->heads_kv, rows = p->n_q * group;
  const int direct = rows <= 4;
  const int64_t step = direct ? rows : mr, width = direct ? 1 : kw;
  double n = 0.0;
  for (int64_t t0 = 0; t0 < rows; t0 += step) {
    for (int64_t j0 = 0; j0 < p->n_kv; j0 += width) {
      int seen = 0;
      for (int64_t t = t0; t < t0 + step && t < rows && !seen; t++)
        for (int64_t j = j0; j < j0 + width && j < p->n_kv && !seen; j++)
          seen = oracle_visible(p, t / group, j);
      n += seen ? (double)(step * width) : 0.0;
    }
  }
  return n * (double)p->batch * (double)p->heads_kv;
}

static double visible_pairs(const txattn_problem *p) {
  double n = 0.0;
  for (int64_t i = 0; i < p->n_q; i++) n += (double)oracle_visible_count(p, i);
  return n * (double)p->batch * (double)p->heads_q;
}

/* batch, heads_q, heads_kv, n_q, n_kv, d_qk, d_v, mask, window_left, window_right, scale */
#define SHAPE(b, hq, hkv, nq, nkv, dqk, dv, m, wl, wr, s)                                          \
  {                                                                                                \
    .batch = b, .heads_q = hq, .heads_kv = hkv, .n_q = nq, .n_kv = nkv, .d_qk = dqk, .d_v = dv,    \
    .mask = m, .window_left = wl, .window_right = wr, .scale = s                                   \
  }

/* Every default filled in, as the host passes problems to a descriptor. */
static const txattn_problem pair_shapes[] = {
    SHAPE(1, 1, 1, 100, 100, 64, 64, TXATTN_MASK_NONE, 0, 0, 0.125f),
    SHAPE(1, 1, 1, 257, 257, 64, 64, TXATTN_MASK_CAUSAL, 0, 0, 0.125f),
    SHAPE(2, 4, 4, 300, 300, 16, 16, TXATTN_MASK_WINDOW, 8, 8, 0.25f),
    SHAPE(1, 2, 2, 200, 200, 16, 16, TXATTN_MASK_WINDOW, TXATTN_UNBOUNDED, 3, 0.25f),
    SHAPE(1, 1, 1, 40, 100, 32, 32, TXATTN_MASK_CAUSAL, 0, 0, 0.125f),    /* chunked prefill */
    SHAPE(1, 1, 1, 65, 17, 32, 32, TXATTN_MASK_CAUSAL, 0, 0, 0.125f),     /* rows with no key */
    SHAPE(1, 3, 3, 70, 20, 8, 8, TXATTN_MASK_WINDOW, 2, 0, 0.25f),        /* rows with no key */
    SHAPE(1, 8, 2, 33, 33, 64, 64, TXATTN_MASK_CAUSAL, 0, 0, 0.125f),     /* GQA */
    SHAPE(2, 8, 2, 1, 1000, 128, 128, TXATTN_MASK_CAUSAL, 0, 0, 0.0625f), /* decode: direct path */
    SHAPE(1, 4, 4, 3, 500, 64, 64, TXATTN_MASK_WINDOW, 100, 0, 0.125f),   /* 3 rows: direct path */
    SHAPE(1, 8, 8, 2, 64, 64, 32, TXATTN_MASK_NONE, 0, 0, 0.125f),        /* 2 rows: direct path */
    SHAPE(1, 1, 1, 1, 2048, 64, 64, TXATTN_MASK_WINDOW, 16, 16, 0.125f),  /* 1 row, 17 keys */
};

/* Tiled kernels (single-thread and OpenMP): the cost, with the default block sizes and with the
   smallest ones, equals the brute-force count of computed pairs plus TILED_ROW_COST_PAIRS a row on
   the blocked path; it never undercounts the visible pairs. */
Test(plugin_cases, tiled_cost_pairs_is_the_computed_panels_plus_the_row_cost) {
  const char *plugins[] = {"tiled", "tiled_omp"};
  for (size_t pi = 0; pi < 2; pi++) {
    struct plugin pl;
    plugin_open(&pl, plugins[pi]);
    for (size_t k = 0; k < pl.desc->n_kernels; k++) {
      const txattn_kernel_desc *kd = pl.desc->kernels[k];
      cr_assert(TXATTN_KERNEL_DESC_HAS(kd, cost_pairs) && kd->cost_pairs != NULL,
                "%s declares no cost_pairs", kd->name);
      cr_assert_eq(kd->n_tunables, 2, "%s: expected block_q and block_k", kd->name);
      const int64_t mr = kd->tunables[0].multiple_of, kw = kd->tunables[1].multiple_of;
      for (size_t s = 0; s < sizeof pair_shapes / sizeof pair_shapes[0]; s++) {
        const txattn_problem *p = &pair_shapes[s];
        const double rows = (double)(p->batch * p->heads_q * p->n_q);
        const int direct = p->n_q * (p->heads_q / p->heads_kv) <= TILED_DIRECT_ROWS;
        const double want =
            brute_tiled_pairs(p, mr, kw) + (direct ? 0 : TILED_ROW_COST_PAIRS * rows);
        int64_t tun[2];
        kd->default_tunables(p, NULL, tun);
        const int64_t smallest[2] = {mr, kw};
        const double got = kd->cost_pairs(p, tun), got_small = kd->cost_pairs(p, smallest);
        cr_expect_eq(got, want, "%s, shape %zu, blocks %lld x %lld: cost %.0f, brute force %.0f",
                     kd->name, s, (long long)tun[0], (long long)tun[1], got, want);
        cr_expect_eq(got_small, want, "%s, shape %zu, smallest blocks: cost %.0f, brute force %.0f",
                     kd->name, s, got_small, want);
        cr_expect_geq(got, visible_pairs(p), "%s, shape %zu: fewer pairs than visible", kd->name,
                      s);
      }
    }
  }
}

/* banded.scalar computes exactly the visible pairs, and adds its row cost; the vector kernels count
   their padding, never fewer than the visible pairs, and pad little: at most one block of panels
   per group and one row block per row (4 x 4 panels of up to 16 keys, 16 keys), beside their row
   cost. */
Test(plugin_cases, banded_cost_pairs_is_the_computed_pairs_plus_the_row_cost) {
  struct plugin pl;
  plugin_open(&pl, "banded");
  for (size_t k = 0; k < pl.desc->n_kernels; k++) {
    const txattn_kernel_desc *kd = pl.desc->kernels[k];
    const int has = TXATTN_KERNEL_DESC_HAS(kd, cost_pairs) && kd->cost_pairs != NULL;
    const int scalar = strcmp(kd->name, "banded.scalar") == 0;
    cr_assert(has, "%s declares no cost_pairs", kd->name);
    for (size_t s = 0; s < sizeof pair_shapes / sizeof pair_shapes[0]; s++) {
      const txattn_problem *p = &pair_shapes[s];
      const double got = kd->cost_pairs(p, NULL), vis = visible_pairs(p);
      const double rows = (double)(p->batch * p->heads_q * p->n_q);
      const double slack = scalar ? 0.0 : rows * (4.0 * 16.0 + 16.0);
      const double fixed = rows * (scalar ? BANDED_SCALAR_ROW_COST_PAIRS : BANDED_ROW_COST_PAIRS);
      cr_expect(got >= vis + fixed && got <= vis + fixed + slack,
                "%s, shape %zu: cost %.0f pairs, %.0f visible + %.0f for the rows", kd->name, s,
                got, vis, fixed);
    }
  }
}

/* ---- cost_pairs of long problems: O(1) in n, the same count ---- */

/* The kernels count a long problem's groups a period at a time (plugins/common/visible_pieces.h);
   here every group is counted one by one, from the rows' visible ranges, as the kernels walk them:
   a tiled group of mr stacked rows touches the kw-key panels of its rows' hull; a banded group of
   BANDED_MR rows is one group when its rows all see keys and its union is at most twice its
   shortest row, else its first row goes alone and the next group starts one row later. */
static double groups_tiled(const txattn_problem *p, int64_t mr, int64_t kw) {
  const int64_t group = p->heads_q / p->heads_kv, rows = p->n_q * group;
  double n = 0.0;
  for (int64_t t0 = 0; t0 < rows; t0 += mr) {
    const int64_t t1 = t0 + mr < rows ? t0 + mr : rows;
    int64_t lo = -1, hi = -1;
    for (int64_t i = t0 / group; i <= (t1 - 1) / group; i++) {
      int64_t a, b;
      txattn_visible_range(p, i, &a, &b);
      if (a < b && lo < 0) lo = a;
      if (a < b) hi = b;
    }
    if (lo >= 0) n += (double)(mr * kw) * (double)((hi + kw - 1) / kw - lo / kw);
  }
  return n * (double)p->batch * (double)p->heads_kv;
}

static double groups_banded(const txattn_problem *p, int64_t w, int64_t np, int64_t row_kb) {
  double n = 0.0;
  for (int64_t i = 0; i < p->n_q;) {
    int64_t base = INT64_MAX, end = 0, shortest = INT64_MAX, a, b;
    int whole = i + BANDED_MR <= p->n_q;
    for (int64_t m = 0; m < BANDED_MR && whole; m++) {
      txattn_visible_range(p, i + m, &a, &b);
      whole = a < b;
      base = a < base ? a : base;
      end = b > end ? b : end;
      shortest = b - a < shortest ? b - a : shortest;
    }
    if (whole && end - base <= 2 * shortest) {
      const int64_t panels = (end + w - 1) / w - base / w;
      n += (double)(BANDED_MR * w * (panels >= np ? (panels + np - 1) / np * np : panels));
      i += BANDED_MR;
      continue;
    }
    txattn_visible_range(p, i, &a, &b);
    const int64_t k = b - a, rest = k % row_kb;
    if (k > 0) n += (double)(rest > 0 && rest >= row_kb / 4 ? (k / row_kb + 1) * row_kb : k);
    i++;
  }
  return n * (double)p->batch * (double)p->heads_q;
}

static double visible_by_rows(const txattn_problem *p) {
  double n = 0.0;
  for (int64_t i = 0; i < p->n_q; i++) {
    int64_t a, b;
    txattn_visible_range(p, i, &a, &b);
    n += (double)(b - a);
  }
  return n * (double)p->batch * (double)p->heads_q;
}

/* Long shapes whose pieces (rows that see no key, ranges that grow, move or shrink) each span many
   periods of groups; GQA stacks heads into the tiled groups. */
static const txattn_problem long_shapes[] = {
    SHAPE(1, 1, 1, 20000, 20000, 64, 64, TXATTN_MASK_NONE, 0, 0, 0.125f),
    SHAPE(1, 1, 1, 20011, 20011, 64, 64, TXATTN_MASK_CAUSAL, 0, 0, 0.125f),
    SHAPE(2, 8, 2, 9001, 9001, 32, 32, TXATTN_MASK_WINDOW, 129, 129, 0.25f),
    SHAPE(1, 4, 1, 15000, 6000, 16, 16, TXATTN_MASK_WINDOW, 700, 3, 0.25f), /* rows with no key */
    SHAPE(1, 3, 3, 12000, 17000, 16, 16, TXATTN_MASK_CAUSAL, 0, 0, 0.25f),  /* chunked prefill */
    SHAPE(1, 2, 2, 10000, 10000, 16, 16, TXATTN_MASK_WINDOW, TXATTN_UNBOUNDED, 40, 0.25f),
    SHAPE(1, 1, 1, 10000, 10000, 16, 16, TXATTN_MASK_WINDOW, 2, 0,
          0.25f), /* too narrow for groups */
    SHAPE(1, 6, 2, 8000, 8000, 16, 16, TXATTN_MASK_WINDOW, 1025, 1025, 0.25f),
};

/* The banded vector kernels' panel width, panels a block and row block (banded.h), by ISA. */
static const struct {
  const char *isa;
  int64_t w, np, row_kb;
} banded_isas[] = {
    {"avx2", BANDED_AVX2_W, BANDED_AVX2_NP, BANDED_AVX2_ROW_KB},
    {"avx512", BANDED_AVX512_W, BANDED_AVX512_NP, BANDED_AVX512_ROW_KB},
    {"neon", BANDED_NEON_W, BANDED_NEON_NP, BANDED_NEON_ROW_KB},
};

static int banded_blocks(const char *isa, int64_t *w, int64_t *np, int64_t *row_kb) {
  for (size_t i = 0; i < sizeof banded_isas / sizeof banded_isas[0]; i++)
    if (strcmp(isa, banded_isas[i].isa) == 0) {
      *w = banded_isas[i].w, *np = banded_isas[i].np, *row_kb = banded_isas[i].row_kb;
      return 1;
    }
  return 0;
}

Test(plugin_cases, long_problems_cost_the_same_pairs_as_counted_group_by_group) {
  const char *plugins[] = {"tiled", "tiled_omp", "banded", "banded_omp"};
  for (size_t pi = 0; pi < 4; pi++) {
    struct plugin pl;
    plugin_open(&pl, plugins[pi]);
    const int tiled = pi < 2;
    for (size_t k = 0; k < pl.desc->n_kernels; k++) {
      const txattn_kernel_desc *kd = pl.desc->kernels[k];
      const char *isa = strchr(kd->name, '.') + 1;
      for (size_t s = 0; s < sizeof long_shapes / sizeof long_shapes[0]; s++) {
        const txattn_problem *p = &long_shapes[s];
        const double rows = (double)(p->batch * p->heads_q * p->n_q);
        double want, got;
        int64_t w, np, row_kb;
        if (tiled) {
          int64_t tun[2], smallest[2];
          kd->default_tunables(p, NULL, tun);
          smallest[0] = kd->tunables[0].multiple_of, smallest[1] = kd->tunables[1].multiple_of;
          want = groups_tiled(p, smallest[0], smallest[1]) + TILED_ROW_COST_PAIRS * rows;
          got = kd->cost_pairs(p, tun);
          cr_expect_eq(kd->cost_pairs(p, smallest), got, "%s, shape %zu: the blocks changed it",
                       kd->name, s);
        } else if (banded_blocks(isa, &w, &np, &row_kb)) {
          want = groups_banded(p, w, np, row_kb) + BANDED_ROW_COST_PAIRS * rows;
          got = kd->cost_pairs(p, NULL);
        } else { /* banded.scalar: the visible pairs */
          want = visible_by_rows(p) + BANDED_SCALAR_ROW_COST_PAIRS * rows;
          got = kd->cost_pairs(p, NULL);
        }
        cr_expect_eq(got, want, "%s, long shape %zu: cost %.0f, counted group by group %.0f",
                     kd->name, s, got, want);
      }
    }
  }
}

/* ---- one_thread_same_as: a threaded kernel's twin on one thread ---- */

/* What the profile leaves to the twin must be the twin's loop: on one thread the two give the same
   bits, on problems that take each code path (dense, causal, windows that straddle blocks, GQA,
   decode, strided tensors, odd sizes), each with its default tunables (which must be the same). */
static const struct shape twin_shapes[] = {
    {.heads_q = 2, .n_q = 37, .d_qk = 16, .mask = TXATTN_MASK_NONE},
    {.heads_q = 3,
     .n_q = 300,
     .d_qk = 64,
     .mask = TXATTN_MASK_CAUSAL,
     .layout = LAYOUT_INTERLEAVED},
    {.batch = 2,
     .heads_q = 4,
     .heads_kv = 2,
     .n_q = 257,
     .d_qk = 32,
     .d_v = 24,
     .mask = TXATTN_MASK_WINDOW,
     .left = 70,
     .right = 9,
     .layout = LAYOUT_PADDED},
    {.heads_q = 8, .heads_kv = 2, .n_q = 1, .n_kv = 1000, .d_qk = 64, .mask = TXATTN_MASK_CAUSAL},
    {.heads_q = 1,
     .n_q = 700,
     .n_kv = 650,
     .d_qk = 128,
     .mask = TXATTN_MASK_WINDOW,
     .left = 129,
     .right = 129,
     .layout = LAYOUT_MIXED},
};

#define TWIN_MAX_TUNABLES 8

/* Runs kernel on c into c->o (cleared first); returns its default tunables' count, and the values in
   tun. */
static size_t run_default(txattn_context *ctx, struct attn_case *c, const char *kernel,
                          int64_t *tun) {
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &c->problem, kernel, &plan), TXATTN_OK, "%s: %s", kernel,
               txattn_last_error());
  size_t n = txattn_plan_tunable_count(plan);
  for (size_t i = 0; i < n && i < TWIN_MAX_TUNABLES; i++)
    txattn_plan_tunable_get(plan, i, NULL, &tun[i]);
  txattn_tensors t = case_tensors(c);
  case_clear_output(c);
  cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK, "%s: %s", kernel, txattn_last_error());
  txattn_plan_free(plan);
  return n;
}

/* s in types k takes: each tensor f32 where k takes it, else bf16, else f16 (tiled.avx512bf16 gets
   bf16 q and k), so that every kernel runs the shapes below. */
static struct shape in_types_of(const struct shape *s, const txattn_kernel_info *k) {
  txattn_dtype pick[4];
  for (int t = 0; t < 4; t++)
    pick[t] = (k->dtypes[t] & TXATTN_DTYPE_BIT(TXATTN_DTYPE_F32))    ? TXATTN_DTYPE_F32
              : (k->dtypes[t] & TXATTN_DTYPE_BIT(TXATTN_DTYPE_BF16)) ? TXATTN_DTYPE_BF16
                                                                     : TXATTN_DTYPE_F16;
  struct shape out = *s;
  out.types = (struct case_types){pick[0], pick[1], pick[2], pick[3]};
  cr_assert(out.types.o == TXATTN_DTYPE_F32, "%s does not make f32 o", k->name);
  return out;
}

Test(plugin_cases, on_one_thread_a_kernel_gives_its_twins_bits) {
  txattn_context *ctx = test_context(1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  int pairs = 0;
  for (size_t i = 0; i < l.n; i++) {
    const txattn_kernel_info *k = &l.k[i];
    if (k->one_thread_same_as == NULL) continue;
    const txattn_kernel_info *twin = test_kernel_find(&l, k->one_thread_same_as);
    cr_assert(twin != NULL, "%s names %s, which is not loaded", k->name, k->one_thread_same_as);
    cr_expect(k->flags & TXATTN_KERNEL_THREADED, "%s is not threaded", k->name);
    cr_expect(!(twin->flags & TXATTN_KERNEL_THREADED), "%s's twin %s is threaded", k->name,
              twin->name);
    cr_expect_str_eq(k->isa, twin->isa, "%s and its twin %s", k->name, twin->name);
    if (!k->usable || !twin->usable) continue;
    for (size_t s = 0; s < sizeof twin_shapes / sizeof twin_shapes[0]; s++) {
      struct attn_case c;
      char desc[256];
      const struct shape sh = in_types_of(&twin_shapes[s], k);
      shape_describe(&sh, desc, sizeof desc);
      case_init(&c, &sh, 7 + s);
      int64_t tk[TWIN_MAX_TUNABLES] = {0}, tt[TWIN_MAX_TUNABLES] = {0};
      size_t nk = run_default(ctx, &c, k->name, tk);
      float *mine = malloc(c.o.len * sizeof(float));
      cr_assert(mine != NULL, "out of memory");
      memcpy(mine, c.o.data, c.o.len * sizeof(float));
      size_t nt = run_default(ctx, &c, twin->name, tt);
      cr_expect(nk == nt && memcmp(tk, tt, sizeof tk) == 0,
                "%s and %s default to other tunables on %s", k->name, twin->name, desc);
      cr_expect(memcmp(mine, c.o.data, c.o.len * sizeof(float)) == 0,
                "%s on one thread differs from %s on %s", k->name, twin->name, desc);
      free(mine);
      case_free(&c);
    }
    pairs++;
  }
  cr_expect_geq(pairs, 4, "only %d shipped kernels name a usable twin", pairs);
  txattn_context_free(ctx);
}

/* ---- fit_tunables ---- */

/* Runs kd (of a plugin opened by hand) on c with these tunables on n_threads threads into c->o,
   as the host would: a 64-byte aligned workspace of the size the kernel asks for. */
static void run_call(const txattn_kernel_desc *kd, struct attn_case *c, const int64_t *tun,
                     int n_threads) {
  const size_t ws = kd->workspace_size(&c->full, n_threads, tun);
  cr_assert(ws != SIZE_MAX, "%s: no workspace size", kd->name);
  void *w = ws ? aligned_alloc(64, (ws + 63) / 64 * 64) : NULL;
  cr_assert(ws == 0 || w != NULL, "out of memory");
  const txattn_tensors t = case_kernel_tensors(c);
  const txattn_kernel_call call = {.struct_size = sizeof call,
                                   .problem = &c->full,
                                   .tensors = &t,
                                   .workspace = w,
                                   .workspace_size = ws,
                                   .n_threads = n_threads,
                                   .tunables = tun};
  case_clear_output(c);
  cr_assert_eq(kd->run(&call), TXATTN_OK, "%s failed", kd->name);
  free(w);
}

static int64_t largest(const txattn_tunable *t) {
  return t->max / t->multiple_of * t->multiple_of;
}
static int64_t smallest(const txattn_tunable *t) {
  return (t->min + t->multiple_of - 1) / t->multiple_of * t->multiple_of;
}

#define FIT_SETS 4

/* The settings tried: every tunable at its largest, every one at its smallest, the defaults, and
   the first at its largest with the others at their defaults. */
static void fit_settings(const txattn_kernel_desc *kd, const txattn_problem *p,
                         int64_t set[FIT_SETS][TWIN_MAX_TUNABLES]) {
  kd->default_tunables(p, NULL, set[2]);
  for (size_t i = 0; i < kd->n_tunables; i++) {
    set[0][i] = largest(&kd->tunables[i]);
    set[1][i] = smallest(&kd->tunables[i]);
    set[3][i] = i == 0 ? set[0][i] : set[2][i];
  }
}

/* A kernel that fits its tunables to a problem (ABI 1.3 fit_tunables, which the host applies to
   every plan) must compute, with the fitted values, the very bits it computes with the values
   given; the fitted ones stay within their declared ranges, are no larger than given, and fitting
   them again changes nothing. Every shipped kernel with tunables fits them, on the problems of the
   twin test above (dense, causal, GQA windows straddling blocks, decode, strides), from the largest
   tiles (which exceed every one of these problems, so some value is cut on each), the smallest and
   the defaults; the host's plan reports the fitted values. */
Test(plugin_cases, a_fitted_tile_gives_the_bits_of_the_tile_given) {
  txattn_context *ctx = test_context(2);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  const char *plugins[] = {"tiled", "tiled_omp", "masked"};
  int kernels = 0;
  for (size_t pi = 0; pi < sizeof plugins / sizeof plugins[0]; pi++) {
    struct plugin pl;
    plugin_open(&pl, plugins[pi]);
    for (size_t k = 0; k < pl.desc->n_kernels; k++) {
      const txattn_kernel_desc *kd = pl.desc->kernels[k];
      const txattn_kernel_info *info = test_kernel_find(&l, kd->name);
      cr_assert(kd->n_tunables > 0 && kd->n_tunables <= TWIN_MAX_TUNABLES, "%s", kd->name);
      cr_assert(TXATTN_KERNEL_DESC_HAS(kd, fit_tunables) && kd->fit_tunables != NULL,
                "%s declares no fit_tunables", kd->name);
      cr_assert(info != NULL, "%s is not loaded", kd->name);
      if (!info->usable) continue;
      const int threads = (kd->flags & TXATTN_KERNEL_THREADED) ? 2 : 1;
      for (size_t s = 0; s < sizeof twin_shapes / sizeof twin_shapes[0]; s++) {
        struct attn_case c;
        char desc[256];
        const struct shape sh = in_types_of(&twin_shapes[s], info);
        shape_describe(&sh, desc, sizeof desc);
        case_init(&c, &sh, 31 + s);
        int64_t set[FIT_SETS][TWIN_MAX_TUNABLES] = {{0}};
        fit_settings(kd, &c.full, set);
        float *given_bits = malloc(c.o.len * sizeof(float));
        cr_assert(given_bits != NULL, "out of memory");
        for (int v = 0; v < FIT_SETS; v++) {
          int64_t fit[TWIN_MAX_TUNABLES], again[TWIN_MAX_TUNABLES];
          memcpy(fit, set[v], sizeof fit);
          kd->fit_tunables(&c.full, fit);
          memcpy(again, fit, sizeof again);
          kd->fit_tunables(&c.full, again);
          int cut = 0;
          for (size_t i = 0; i < kd->n_tunables; i++) {
            const txattn_tunable *t = &kd->tunables[i];
            cr_expect(fit[i] >= t->min && fit[i] <= t->max && fit[i] % t->multiple_of == 0 &&
                          fit[i] <= set[v][i] && again[i] == fit[i],
                      "%s on %s: %s = %lld fitted to %lld, again to %lld", kd->name, desc, t->name,
                      (long long)set[v][i], (long long)fit[i], (long long)again[i]);
            cut |= fit[i] != set[v][i];
          }
          cr_expect(v != 0 || cut, "%s on %s: the largest tiles were not cut", kd->name, desc);
          if (!cut) continue;
          run_call(kd, &c, set[v], threads);
          memcpy(given_bits, c.o.data, c.o.len * sizeof(float));
          run_call(kd, &c, fit, threads);
          cr_expect(memcmp(given_bits, c.o.data, c.o.len * sizeof(float)) == 0,
                    "%s on %s: the fitted tiles give other bits than setting %d", kd->name, desc,
                    v);
        }
        /* the host's plan carries the fitted values */
        const char *names[TWIN_MAX_TUNABLES];
        for (size_t i = 0; i < kd->n_tunables; i++) names[i] = kd->tunables[i].name;
        txattn_plan *plan = NULL;
        cr_assert_eq(txattn_plan_create_tuned(ctx, &c.problem, kd->name, names, set[0],
                                              kd->n_tunables, &plan),
                     TXATTN_OK, "%s: %s", kd->name, txattn_last_error());
        int64_t fit[TWIN_MAX_TUNABLES];
        memcpy(fit, set[0], sizeof fit);
        kd->fit_tunables(&c.full, fit);
        for (size_t i = 0; i < kd->n_tunables; i++) {
          int64_t got = -1;
          txattn_plan_tunable_get(plan, i, NULL, &got);
          cr_expect_eq(got, fit[i], "%s on %s: the plan has %s = %lld, the fit %lld", kd->name,
                       desc, names[i], (long long)got, (long long)fit[i]);
        }
        txattn_plan_free(plan);
        free(given_bits);
        case_free(&c);
      }
      kernels++;
    }
  }
  cr_expect_geq(kernels, 3, "only %d usable kernels fit their tunables", kernels);
  txattn_context_free(ctx);
}
