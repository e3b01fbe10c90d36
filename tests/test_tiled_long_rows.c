/* SPDX-License-Identifier: MIT */
/* The tiled kernels' sums over very long rows of nearly equal scores (docs/error_bound.md, "The
 * bound on lse", item 4, and the bound on O, item 4). Two cases, run on every tiled kernel of the
 * build (each ISA this CPU has), tiled_omp on two threads (keys split across them) and its test
 * build (a team for any work), and on x86-64 the emulated AVX-512 kernels (their own tests, so that
 * --jobs=2 runs them beside the rest):
 *
 *  - the running sum of the weights: a decode of one query over 2^22 keys whose scores are all
 *    equal but one (0.357 above the rest), so that every weight is the same value below 1 and an
 *    fp32 running sum of them drifts by about one rounding per addition. The direct path adds one
 *    term per chunk of 16 keys, the split-KV merge one per partial: lse must stay within
 *    txattn_lse_error_bound and o (V uniform in [-1, 1), centred so that only the sum of the
 *    weights is judged) within txattn_error_bound. d_qk = d_v = 1 keeps it to 32 MiB of K and V:
 *    the drift depends only on the number of additions, not on the head size.
 *  - the unnormalised output: the same scores over 2^15 keys with V = 0.75 everywhere (a mean far
 *    from 0, so that one fp32 rounding per key into each element of the running output drifts one
 *    way), d = 16, for a decode row (the direct path) and for 8 causal rows (the tiled path, with
 *    ragged key ranges): o must stay within txattn_error_bound, which a running output taking one
 *    fp32 FMA per key exceeded 28 times.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(tiled_long_rows, .init = test_env_clean, .fini = test_check_leaks, .timeout = 600);

#define MAX_ROWS 8

struct long_row {
  txattn_problem p;
  float *q, *k, *v, *o_ref, lse_ref[MAX_ROWS];
  double o_bound, lse_abs, lse_rel;
};

static uint64_t next_u64(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* n_q rows (causal if more than one) over n_kv keys, d_qk = d_v = d: q = e_0, k_0 of key 0 1.357
   and of every other key 1 (the rest 0.25, which q does not read), so that the weights are 1 and
   e^-0.357 (not a short binary fraction: the fp32 sums round at every step); V uniform in [v0, v1), or
   v0 everywhere if v1 == v0. */
static void long_row_init(struct long_row *c, int64_t n_q, int64_t n_kv, int64_t d, double v0,
                          double v1) {
  uint64_t seed = 0x9e3779b97f4a7c15u;
  cr_assert(n_q <= MAX_ROWS);
  memset(c, 0, sizeof *c);
  c->p = (txattn_problem)TXATTN_PROBLEM_INIT;
  c->p.n_q = n_q, c->p.n_kv = n_kv, c->p.d_qk = d, c->p.scale = 1.0f, c->p.lse = 1;
  if (n_q > 1) c->p.mask = TXATTN_MASK_CAUSAL;
  c->q = calloc((size_t)(n_q * d), sizeof *c->q);
  c->o_ref = calloc((size_t)(n_q * d), sizeof *c->o_ref);
  c->k = malloc((size_t)(n_kv * d) * sizeof *c->k);
  c->v = malloc((size_t)(n_kv * d) * sizeof *c->v);
  cr_assert(c->q && c->o_ref && c->k && c->v, "out of memory");
  for (int64_t i = 0; i < n_q; i++) c->q[i * d] = 1.0f;
  for (int64_t j = 0; j < n_kv; j++)
    for (int64_t e = 0; e < d; e++) {
      c->k[j * d + e] = e > 0 ? 0.25f : j == 0 ? 1.357f : 1.0f;
      c->v[j * d + e] = v0 == v1
                            ? (float)v0
                            : (float)(v0 + (v1 - v0) * (double)(next_u64(&seed) >> 11) * 0x1p-53);
    }
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = c->q, t.k = c->k, t.v = c->v, t.o = c->o_ref, t.lse = c->lse_ref;
  txattn_status s = txattn_reference(&c->p, &t);
  cr_assert_eq(s, TXATTN_OK, "reference: %s", txattn_last_error());
  s = txattn_error_bound(&c->p, &t, &c->o_bound);
  cr_assert_eq(s, TXATTN_OK, "error bound: %s", txattn_last_error());
  s = txattn_lse_error_bound(&c->p, &t, &c->lse_abs, &c->lse_rel);
  cr_assert_eq(s, TXATTN_OK, "lse error bound: %s", txattn_last_error());
}

static void long_row_free(struct long_row *c) {
  free(c->q);
  free(c->k);
  free(c->v);
  free(c->o_ref);
}

static int is_tiled(const char *kernel) {
  return strncmp(kernel, "tiled.", 6) == 0 || strncmp(kernel, "tiled_omp.", 10) == 0;
}

/* Every usable tiled kernel of the plugin directory (NULL: the default ones), or only the one named
   only, on threads threads; returns how many ran. */
static int check_dir(const struct long_row *c, const char *plugin_path, int threads,
                     const char *only) {
  setenv("TXATTN_CACHES", "l1d=48K,l2=1M,l3=32M", 1);
  txattn_context *ctx = plugin_path ? test_context_at(plugin_path, threads) : test_context(threads);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  const int64_t n_o = c->p.n_q * c->p.d_qk;
  float *o = malloc((size_t)n_o * sizeof *o), lse[MAX_ROWS];
  cr_assert(o, "out of memory");
  int ran = 0;
  for (size_t ki = 0; ki < l.n; ki++) {
    const char *name = l.k[ki].name;
    if (!l.k[ki].usable || !is_tiled(name) || strstr(name, ".avx512bf16") ||
        (only && strcmp(name, only) != 0))
      continue;
    for (int64_t e = 0; e < n_o; e++) o[e] = NAN;
    txattn_tensors t = TXATTN_TENSORS_INIT;
    t.q = c->q, t.k = c->k, t.v = c->v, t.o = o, t.lse = lse;
    txattn_plan *plan = NULL;
    txattn_status s = txattn_plan_create(ctx, &c->p, name, &plan);
    cr_assert_eq(s, TXATTN_OK, "%s: %s", name, txattn_last_error());
    s = txattn_plan_execute(plan, &t);
    cr_assert_eq(s, TXATTN_OK, "%s: %s", name, txattn_last_error());
    txattn_plan_free(plan);
    double lse_ratio = 0.0, o_ratio = 0.0;
    for (int64_t i = 0; i < c->p.n_q; i++) {
      const double lse_bound = c->lse_abs + c->lse_rel * fabs((double)c->lse_ref[i]);
      const double r = fabs((double)lse[i] - (double)c->lse_ref[i]) / lse_bound;
      lse_ratio = r > lse_ratio || isnan(r) ? r : lse_ratio;
    }
    for (int64_t e = 0; e < n_o; e++) {
      const double r = fabs((double)o[e] - (double)c->o_ref[e]) / c->o_bound;
      o_ratio = r > o_ratio || isnan(r) ? r : o_ratio;
    }
    cr_log_info("%s, %d thread(s), %lld row(s) x %lld keys, d %lld: |lse - lse_ref| / bound = "
                "%.3f, |o - o_ref| / bound = %.3f",
                name, threads, (long long)c->p.n_q, (long long)c->p.n_kv, (long long)c->p.d_qk,
                lse_ratio, o_ratio);
    cr_expect(lse_ratio <= 1.0, "%s, %d thread(s), %lld row(s): lse off by %.3f of the bound", name,
              threads, (long long)c->p.n_q, lse_ratio);
    cr_expect(o_ratio <= 1.0, "%s, %d thread(s), %lld row(s): o off by %.3f of the bound", name,
              threads, (long long)c->p.n_q, o_ratio);
    ran++;
  }
  free(o);
  txattn_context_free(ctx);
  return ran;
}

/* tiled.<isa> on the whole row, tiled_omp.<isa> on the keys split between two threads; the other
   builds once each (the algorithm is the same header for every ISA, the merge one file). */
static void check_builds(const struct long_row *c) {
  cr_expect_geq(check_dir(c, NULL, 2, NULL), 2, "tiled.scalar and tiled_omp.scalar at least");
  cr_expect_eq(check_dir(c, TXATTN_TEST_TEAM_PLUGIN_DIR, 2, "tiled_omp.scalar"), 1,
               "tiled_omp.scalar of the test build");
}

#define N_SUM (INT64_C(1) << 22)
#define N_OUT (INT64_C(1) << 15)

Test(tiled_long_rows, lse_and_o_stay_within_their_bounds_over_4m_nearly_equal_scores) {
  struct long_row c;
  long_row_init(&c, 1, N_SUM, 1, -1.0, 1.0);
  check_builds(&c);
  long_row_free(&c);
}

Test(tiled_long_rows, o_stays_within_its_bound_with_v_of_nonzero_mean) {
  for (int64_t n_q = 1; n_q <= 8; n_q += 7) {
    struct long_row c;
    long_row_init(&c, n_q, N_OUT, 16, 0.75, 0.75);
    check_builds(&c);
    long_row_free(&c);
  }
}

#ifdef TXATTN_TEST_EMU512_PLUGIN_DIR
Test(tiled_long_rows, emulated_avx512_over_4m_nearly_equal_scores) {
  struct long_row c;
  long_row_init(&c, 1, N_SUM, 1, -1.0, 1.0);
  cr_expect_eq(check_dir(&c, TXATTN_TEST_EMU512_PLUGIN_DIR, 2, "tiled.avx512"), 1,
               "tiled.avx512 on emulated AVX-512");
  long_row_free(&c);
}

Test(tiled_long_rows, emulated_avx512_with_v_of_nonzero_mean) {
  for (int64_t n_q = 1; n_q <= 8; n_q += 7) {
    struct long_row c;
    long_row_init(&c, n_q, N_OUT, 16, 0.75, 0.75);
    cr_expect_eq(check_dir(&c, TXATTN_TEST_EMU512_PLUGIN_DIR, 2, "tiled.avx512"), 1,
                 "tiled.avx512 on emulated AVX-512");
    long_row_free(&c);
  }
}
#endif
