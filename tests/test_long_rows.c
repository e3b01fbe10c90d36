/* SPDX-License-Identifier: MIT */
/* Every shipped kernel's sum of P V over long rows, and infinite values of V (docs/error_bound.md,
 * the bound on O, item 4; issue 18: "NaN, Inf, empty rows and every mask keep their meaning").
 *
 * The long rows: q = e_0, key 0 scores 1.359375 and every other key 1, so that the weights are 1 and
 * e^-0.359375 (nearly equal: an fp32 sum of them rounds at every step), V = 0.75 everywhere (a mean
 * far from 0, so that one fp32 rounding per key into each element of a running output drifts one
 * way), d 16, over 4096 and 16384 keys, for one decode row and for 8 causal rows (bottom-right, so
 * each sees nearly every key). o must be within txattn_error_bound of txattn_reference, the
 * library's own bound, not a tolerance of this test's; lse within txattn_lse_error_bound. A kernel
 * whose P V is one fp32 sgemm over all keys was at 2.5 times the bound at 16384 keys.
 *
 * Infinite V on the same rows over 4096 keys (the infinity in the first of many spans of keys, so
 * that later compensated additions meet it): a single +Inf and, in another column, a single -Inf
 * give those columns +Inf and -Inf and the others their values within the bound; +Inf and -Inf in
 * one column make that column NaN, and so (the NaN rule) the whole row; on causal rows, infinities
 * in keys that some rows do not see leave those rows finite and within the bound.
 *
 * Every usable kernel of the default plugin directories (each ISA this CPU has; tiled.avx512bf16 on
 * the same values stored as bf16 q and k, which hold them exactly) on 1 and 2 threads, the test
 * builds of tiled_omp and banded_omp, which split any work across their team, and on x86-64
 * tiled.avx512 on emulated AVX-512 (its min and max are the compensation's clamps).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "lse_tolerance.h"
#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(long_rows, .init = test_env_clean, .fini = test_check_leaks, .timeout = 600);

#define MAX_ROWS 8
#define D        16
#define K_TOP    1.359375f /* 1 + 46/128: exact in bf16 */

struct long_row {
  txattn_problem p;
  float *q, *k, *v, *o_ref, lse_ref[MAX_ROWS];
  uint16_t *q16, *k16; /* q and k as bf16 (exact) */
  double o_bound;
  lse_tolerance lse_tol;
};

/* n_q rows (causal if more than one) over n_kv keys: the inputs above, V = 0.75 before `poison`
   sets its infinities; then the reference and the bounds. */
static void long_row_init(struct long_row *c, int64_t n_q, int64_t n_kv,
                          void (*poison)(struct long_row *)) {
  cr_assert(n_q <= MAX_ROWS);
  memset(c, 0, sizeof *c);
  c->p = (txattn_problem)TXATTN_PROBLEM_INIT;
  c->p.n_q = n_q, c->p.n_kv = n_kv, c->p.d_qk = D, c->p.scale = 1.0f, c->p.lse = 1;
  if (n_q > 1) c->p.mask = TXATTN_MASK_CAUSAL;
  c->q = calloc((size_t)(n_q * D), sizeof *c->q);
  c->o_ref = calloc((size_t)(n_q * D), sizeof *c->o_ref);
  c->k = malloc((size_t)(n_kv * D) * sizeof *c->k);
  c->v = malloc((size_t)(n_kv * D) * sizeof *c->v);
  c->q16 = malloc((size_t)(n_q * D) * sizeof *c->q16);
  c->k16 = malloc((size_t)(n_kv * D) * sizeof *c->k16);
  cr_assert(c->q && c->o_ref && c->k && c->v && c->q16 && c->k16, "out of memory");
  for (int64_t i = 0; i < n_q; i++) c->q[i * D] = 1.0f;
  for (int64_t j = 0; j < n_kv; j++)
    for (int64_t e = 0; e < D; e++) {
      c->k[j * D + e] = e > 0 ? 0.25f : j == 0 ? K_TOP : 1.0f;
      c->v[j * D + e] = 0.75f;
    }
  if (poison) poison(c);
  /* every value of q and k has at most 8 significant bits: bf16 holds it as its upper half */
  for (int64_t e = 0; e < n_q * D; e++) {
    uint32_t bits;
    memcpy(&bits, &c->q[e], sizeof bits);
    c->q16[e] = (uint16_t)(bits >> 16);
  }
  for (int64_t e = 0; e < n_kv * D; e++) {
    uint32_t bits;
    memcpy(&bits, &c->k[e], sizeof bits);
    cr_assert_eq(bits & 0xffffu, 0u);
    c->k16[e] = (uint16_t)(bits >> 16);
  }
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = c->q, t.k = c->k, t.v = c->v, t.o = c->o_ref, t.lse = c->lse_ref;
  txattn_status s = txattn_reference(&c->p, &t);
  cr_assert_eq(s, TXATTN_OK, "reference: %s", txattn_last_error());
  s = txattn_error_bound(&c->p, &t, &c->o_bound);
  cr_assert_eq(s, TXATTN_OK, "error bound: %s", txattn_last_error());
  c->lse_tol = lse_tolerance_of(&c->p, &t);
}

static void long_row_free(struct long_row *c) {
  free(c->q);
  free(c->k);
  free(c->v);
  free(c->o_ref);
  free(c->q16);
  free(c->k16);
}

/* The kernel's o against o_ref: a non-finite reference element exactly (the same infinity, or
   NaN), a finite one within the bound. Returns max |o - o_ref| / bound over the finite ones, and
   counts in *pattern the elements whose class differs. */
static double o_ratio(const struct long_row *c, const float *o, int *pattern) {
  double worst = 0.0;
  *pattern = 0;
  for (int64_t e = 0; e < c->p.n_q * D; e++) {
    const double ref = c->o_ref[e], x = o[e];
    if (!isfinite(ref)) {
      *pattern += isnan(ref) ? !isnan(x) : x != ref;
      continue;
    }
    const double r = fabs(x - ref) / c->o_bound;
    worst = r > worst || isnan(r) ? r : worst;
  }
  return worst;
}

/* Every usable kernel of the plugin path (NULL: the default directories), or only `only`, on
   `threads` threads; returns how many ran. */
static int check_dir(const struct long_row *c, const char *plugin_path, int threads,
                     const char *only) {
  setenv("TXATTN_CACHES", "l1d=48K,l2=1M,l3=32M", 1);
  txattn_context *ctx = plugin_path ? test_context_at(plugin_path, threads) : test_context(threads);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  const int64_t n_o = c->p.n_q * D;
  float *o = malloc((size_t)n_o * sizeof *o), lse[MAX_ROWS];
  cr_assert(o, "out of memory");
  txattn_problem p16 = c->p;
  p16.q_type = p16.k_type = TXATTN_DTYPE_BF16;
  int ran = 0;
  for (size_t ki = 0; ki < l.n; ki++) {
    const txattn_kernel_info *k = &l.k[ki];
    if (!k->usable || (only && strcmp(k->name, only) != 0)) continue;
    const int f32 = test_kernel_takes_types(k, &c->p);
    const txattn_problem *p = f32 ? &c->p : &p16;
    if (!f32 && !test_kernel_takes_types(k, p)) continue;
    for (int64_t e = 0; e < n_o; e++) o[e] = -1.0f;
    txattn_tensors t = TXATTN_TENSORS_INIT;
    if (f32)
      t.q = c->q, t.k = c->k;
    else
      t.q_data = c->q16, t.k_data = c->k16;
    t.v = c->v, t.o = o, t.lse = lse;
    txattn_plan *plan = NULL;
    txattn_status s = txattn_plan_create(ctx, p, k->name, &plan);
    cr_assert_eq(s, TXATTN_OK, "%s: %s", k->name, txattn_last_error());
    s = txattn_plan_execute(plan, &t);
    cr_assert_eq(s, TXATTN_OK, "%s: %s", k->name, txattn_last_error());
    txattn_plan_free(plan);
    int pattern;
    const double ratio = o_ratio(c, o, &pattern);
    double lse_ratio = 0.0;
    for (int64_t i = 0; i < c->p.n_q; i++) {
      const double ref = c->lse_ref[i];
      const double r = fabs((double)lse[i] - ref) / lse_tolerance_at(c->lse_tol, ref);
      lse_ratio = r > lse_ratio || isnan(r) ? r : lse_ratio;
    }
    cr_log_info("%s (%s), %d thread(s), %lld row(s) x %lld keys: |o - o_ref| / bound = %.3f, "
                "|lse - lse_ref| / bound = %.3f, %d non-finite element(s) differ",
                k->name, plugin_path ? plugin_path : "default plugin path", threads,
                (long long)c->p.n_q, (long long)c->p.n_kv, ratio, lse_ratio, pattern);
    cr_expect(ratio <= 1.0, "%s, %d thread(s), %lld row(s) x %lld keys: o off by %.3f of the bound",
              k->name, threads, (long long)c->p.n_q, (long long)c->p.n_kv, ratio);
    cr_expect(lse_ratio <= 1.0,
              "%s, %d thread(s), %lld row(s) x %lld keys: lse off by %.3f of the bound", k->name,
              threads, (long long)c->p.n_q, (long long)c->p.n_kv, lse_ratio);
    cr_expect_eq(pattern, 0,
                 "%s, %d thread(s), %lld row(s) x %lld keys: %d element(s) not the reference's "
                 "Inf or NaN",
                 k->name, threads, (long long)c->p.n_q, (long long)c->p.n_kv, pattern);
    ran++;
  }
  free(o);
  txattn_context_free(ctx);
  return ran;
}

/* The default directories on 1 and 2 threads, and the test builds that split the work. */
static void check_all(const struct long_row *c) {
  for (int threads = 1; threads <= 2; threads++)
    cr_expect_geq(check_dir(c, NULL, threads, NULL), 4, "naive, masked, banded and tiled at least");
#ifdef TXATTN_TEST_TEAM_PLUGIN_DIR
  cr_expect_eq(check_dir(c, TXATTN_TEST_TEAM_PLUGIN_DIR, 2, "tiled_omp.scalar"), 1,
               "tiled_omp.scalar of the test build");
#endif
#ifdef TXATTN_TEST_BOMP_TEAM_PLUGIN_DIR
  cr_expect_eq(check_dir(c, TXATTN_TEST_BOMP_TEAM_PLUGIN_DIR, 2, "banded_omp.scalar"), 1,
               "banded_omp.scalar of the test build");
#endif
#ifdef TXATTN_TEST_EMU512_PLUGIN_DIR
  cr_expect_eq(check_dir(c, TXATTN_TEST_EMU512_PLUGIN_DIR, 1, "tiled.avx512"), 1,
               "tiled.avx512 on emulated AVX-512");
#endif
}

Test(long_rows, o_stays_within_its_bound_with_v_of_nonzero_mean) {
  for (int64_t n_kv = 4096; n_kv <= 16384; n_kv *= 4)
    for (int64_t n_q = 1; n_q <= MAX_ROWS; n_q += MAX_ROWS - 1) {
      struct long_row c;
      long_row_init(&c, n_q, n_kv, NULL);
      check_all(&c);
      long_row_free(&c);
    }
}

#define N_INF 4096

/* +Inf in column 3 of key 100, -Inf in column 5 of key 200. */
static void one_inf_per_column(struct long_row *c) {
  c->v[100 * D + 3] = INFINITY;
  c->v[200 * D + 5] = -INFINITY;
}

/* +Inf and -Inf in column 3 (keys 100 and 3000). */
static void both_infs_in_a_column(struct long_row *c) {
  c->v[100 * D + 3] = INFINITY;
  c->v[3000 * D + 3] = -INFINITY;
}

/* -Inf in column 5 of the key that rows 4.. see first, +Inf in column 3 of the last key (only the
   last row sees it). */
static void infs_some_rows_do_not_see(struct long_row *c) {
  c->v[(c->p.n_kv - 4) * D + 5] = -INFINITY;
  c->v[(c->p.n_kv - 1) * D + 3] = INFINITY;
}

Test(long_rows, an_infinite_v_gives_the_references_infinities) {
  for (int64_t n_q = 1; n_q <= MAX_ROWS; n_q += MAX_ROWS - 1) {
    struct long_row c;
    long_row_init(&c, n_q, N_INF, one_inf_per_column);
    for (int64_t i = 0; i < n_q; i++) /* what the reference does, as the contract says */
      for (int64_t e = 0; e < D; e++) {
        const float x = c.o_ref[i * D + e];
        cr_assert(e == 3 ? x == INFINITY : e == 5 ? x == -INFINITY : isfinite(x));
      }
    check_all(&c);
    long_row_free(&c);
  }
}

Test(long_rows, plus_and_minus_inf_in_a_column_give_a_nan_row) {
  struct long_row c;
  long_row_init(&c, 1, N_INF, both_infs_in_a_column);
  for (int64_t e = 0; e < D; e++) cr_assert(isnan(c.o_ref[e]));
  check_all(&c);
  long_row_free(&c);
}

Test(long_rows, an_infinity_in_a_key_the_mask_hides_does_not_leak) {
  struct long_row c;
  long_row_init(&c, MAX_ROWS, N_INF, infs_some_rows_do_not_see);
  for (int64_t i = 0; i < MAX_ROWS; i++)
    for (int64_t e = 0; e < D; e++) {
      const float x = c.o_ref[i * D + e];
      cr_assert(e == 5 && i >= 4 ? x == -INFINITY : e == 3 && i == 7 ? x == INFINITY : isfinite(x));
    }
  check_all(&c);
  long_row_free(&c);
}
