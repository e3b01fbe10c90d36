/* SPDX-License-Identifier: MIT */
/* txattn_lse_error_bound: its values on problems worked out by hand (both branches of each min,
 * the widest row, a ragged batch), its errors, and that it holds for an fp32 computation of the
 * reference's lse on large logits with an outlier channel, where every score's rounding reaches
 * lse in full (docs/error_bound.md, "The bound on lse"). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(lse_bound, .init = test_env_clean, .fini = test_check_leaks, .timeout = 120);

#define U 0x1p-24

static void bound_of(const txattn_problem *p, const txattn_tensors *t, double *abs_bound,
                     double *rel_bound) {
  txattn_status s = txattn_lse_error_bound(p, t, abs_bound, rel_bound);
  cr_assert_eq(s, TXATTN_OK, "%s: %s", txattn_status_name(s), txattn_last_error());
}

static void expect_close(double got, double want, const char *what) {
  cr_expect(fabs(got - want) <= 1e-12 * fabs(want), "%s = %.17g, want %.17g", what, got, want);
}

/* d_qk 5, two keys: sum_c |q_c k_c| is 4 for key 0 and 2 for key 1, so L = 0.5 * 4 = 2;
   a = min(4, 6 sqrt 4) = 4, b = min(4.6, 6 sqrt 8.76) = 4.6:
   abs = (2 + 4) u 2 + (3 + 3 ln 2 + 4.6) u = 21.679441541679836 u. */
Test(lse_bound, is_the_formula_on_a_small_problem) {
  const float q[5] = {1, -2, 0, 0, 0.5f}, k[10] = {2, 1, 0, 0, 0, 0, 0, 0, 0, 4};
  const float v[10] = {0};
  float o[5], lse[1];
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.n_q = 1, p.n_kv = 2, p.d_qk = 5, p.scale = 0.5f, p.lse = 1;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = q, t.k = k, t.v = v, t.o = o, t.lse = lse;
  double abs_bound, rel_bound;
  bound_of(&p, &t, &abs_bound, &rel_bound);
  expect_close(abs_bound, 21.679441541679836 * U, "abs_bound");
  cr_expect_eq(rel_bound, 0x1p-23, "rel_bound = %a, want 2^-23", rel_bound);
  /* the same without lse (the bound is what a call with lse would meet) and with a negative scale */
  p.lse = 0, p.scale = -0.5f;
  double again, rel;
  bound_of(&p, &t, &again, &rel);
  cr_expect_eq(again, abs_bound, "without lse and scale -0.5: %.17g, want %.17g", again, abs_bound);
}

/* d_qk 101, q = k = 1, scale 0.25: L = 25.25 and a = min(100, 6 sqrt 100) = 60. No mask, 101 keys:
   b = min(460, 6 sqrt 876) = 177.5837830433849, abs = 62 * 25.25 + 3 + 3 ln 101 + b =
   1759.9291445939089 u. A window of 3 keys to the left: every row sees at most n = 4 keys,
   b = min(13.8, 6 sqrt 26.28) = 13.8, abs = 1565.5 + 3 + 3 ln 4 + 13.8 = 1586.4588830833595 u. */
Test(lse_bound, takes_the_probabilistic_terms_and_the_widest_row) {
  enum { N = 101, D = 101 };
  float *ones = malloc((size_t)N * D * sizeof *ones), *o = malloc((size_t)N * D * sizeof *o);
  float *lse = malloc(N * sizeof *lse);
  cr_assert(ones && o && lse, "out of memory");
  for (size_t i = 0; i < (size_t)N * D; i++) ones[i] = 1.0f;
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.n_q = N, p.d_qk = D, p.scale = 0.25f, p.lse = 1;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = ones, t.k = ones, t.v = ones, t.o = o, t.lse = lse;
  double abs_bound, rel_bound;
  bound_of(&p, &t, &abs_bound, &rel_bound);
  expect_close(abs_bound, 1759.9291445939089 * U, "abs_bound, no mask");
  p.mask = TXATTN_MASK_WINDOW, p.window_left = 3, p.window_right = 0;
  bound_of(&p, &t, &abs_bound, &rel_bound);
  expect_close(abs_bound, 1586.4588830833595 * U, "abs_bound, window (3, 0)");
  free(ones);
  free(o);
  free(lse);
}

/* A ragged batch of two sequences, d_qk 2, scale 1: L and n come from each sequence's own keys.
   Sequence 0 sees keys 0..2 (|q.k| sums 1, 2, 3), and its key 3, past kv_len, holds 1000s that
   must not count; sequence 1 has no key. L = 3, n = 3, a = min(1, 6) = 1,
   b = min(9.2, 6 sqrt 17.52) = 9.2: abs = 3 * 3 + 3 + 3 ln 3 + 9.2 = 24.495836866004329 u. */
Test(lse_bound, takes_each_sequence_of_a_ragged_batch_alone) {
  const float q[2 * 2] = {1, 0, 1, 1};
  const float k[2 * 4 * 2] = {1, 0, 2, 0, 3, 0, 1000, 1000, 5, 5, 5, 5, 5, 5, 5, 5};
  const float v[2 * 4 * 2] = {0};
  const int64_t q_lens[2] = {1, 1}, kv_lens[2] = {3, 0};
  float o[2 * 2], lse[2];
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.batch = 2, p.n_q = 1, p.n_kv = 4, p.d_qk = 2, p.scale = 1.0f, p.lse = 1, p.ragged = 1;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = q, t.k = k, t.v = v, t.o = o, t.lse = lse, t.q_lens = q_lens, t.kv_lens = kv_lens;
  double abs_bound, rel_bound;
  bound_of(&p, &t, &abs_bound, &rel_bound);
  expect_close(abs_bound, 24.495836866004329 * U, "abs_bound, ragged");
}

Test(lse_bound, refuses_what_is_malformed_and_leaves_its_outputs) {
  const float x[4] = {1, 2, 3, 4};
  float o[4], lse[2];
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.n_q = 2, p.d_qk = 2, p.lse = 1;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = x, t.k = x, t.v = x, t.o = o, t.lse = lse;
  double abs_bound = 42.0, rel_bound = 43.0;
  cr_assert_eq(txattn_lse_error_bound(&p, &t, NULL, &rel_bound), TXATTN_E_INVALID);
  cr_expect(strstr(txattn_last_error(), "abs_bound is NULL") != NULL, "message: %s",
            txattn_last_error());
  cr_assert_eq(txattn_lse_error_bound(&p, &t, &abs_bound, NULL), TXATTN_E_INVALID);
  cr_expect(strstr(txattn_last_error(), "rel_bound is NULL") != NULL, "message: %s",
            txattn_last_error());
  cr_expect_eq(abs_bound, 42.0);
  cr_expect_eq(rel_bound, 43.0);
  txattn_problem bad = p;
  bad.d_qk = 0;
  cr_assert_eq(txattn_lse_error_bound(&bad, &t, &abs_bound, &rel_bound), TXATTN_E_INVALID);
  cr_expect(strstr(txattn_last_error(), "d_qk") != NULL, "message: %s", txattn_last_error());
  txattn_tensors no_q = t;
  no_q.q = NULL;
  cr_assert_eq(txattn_lse_error_bound(&p, &no_q, &abs_bound, &rel_bound), TXATTN_E_INVALID);
  cr_expect(strstr(txattn_last_error(), "q") != NULL, "message: %s", txattn_last_error());
  txattn_tensors no_lse = t; /* p asks for lse, so its tensor is checked as txattn_reference does */
  no_lse.lse = NULL;
  cr_assert_eq(txattn_lse_error_bound(&p, &no_lse, &abs_bound, &rel_bound), TXATTN_E_INVALID);
  cr_expect(strstr(txattn_last_error(), "lse") != NULL, "message: %s", txattn_last_error());
  cr_expect_eq(abs_bound, 42.0, "abs_bound written on error: %g", abs_bound);
  cr_expect_eq(rel_bound, 43.0, "rel_bound written on error: %g", rel_bound);
}

static uint64_t next(uint64_t *s) {
  *s = *s * 6364136223846793005u + 1442695040888963407u;
  return *s >> 11;
}

/* Uniform in [-a, a), fractions kept. */
static float uniform(uint64_t *s, float a) {
  return (float)((2.0 * (double)next(s) * 0x1p-53 - 1.0) * a);
}

/* The reference's lse computed as a plain fp32 kernel computes it: fp32 dot products in order,
   their max m, l = sum of expf(|scale| (s - m)) in fp32, lse = |scale| m + log(l) rounded once. */
static float lse_fp32(const float *q, const float *k, int64_t n_kv, int64_t d, float scale) {
  float s[64], m = -INFINITY, l = 0.0f;
  for (int64_t j = 0; j < n_kv; j++) {
    float acc = 0.0f;
    for (int64_t c = 0; c < d; c++) acc += q[c] * k[j * d + c];
    s[j] = scale < 0 ? -acc : acc;
    if (s[j] > m) m = s[j];
  }
  for (int64_t j = 0; j < n_kv; j++) l += expf((s[j] - m) * fabsf(scale));
  return (float)(fabs((double)scale) * (double)m + log((double)l));
}

/* q[0] = k[0] = 100 and the rest uniform in [-3, 3) at d_qk 256: every partial sum of a dot product
   is near 10^4, so each of its 255 additions rounds at that scale, and lse takes the error of
   the scores in full. Over 4096 rows the worst error reaches a fifth of the bound or more (a
   score term of (3 + sqrt d_qk) u L, the O bound's, is exceeded at a few thousand rows). */
Test(lse_bound, holds_for_fp32_on_large_logits) {
  enum { NQ = 4096, NKV = 64, D = 256 };
  uint64_t seed = 20261203;
  float *q = malloc((size_t)NQ * D * sizeof *q), *k = malloc((size_t)NKV * D * sizeof *k);
  float *v = calloc((size_t)NKV * 4, sizeof *v), *o = malloc((size_t)NQ * 4 * sizeof *o);
  float *lse_ref = malloc(NQ * sizeof *lse_ref);
  cr_assert(q && k && v && o && lse_ref, "out of memory");
  for (size_t i = 0; i < (size_t)NQ * D; i++) q[i] = i % D == 0 ? 100.0f : uniform(&seed, 3.0f);
  for (size_t i = 0; i < (size_t)NKV * D; i++) k[i] = i % D == 0 ? 100.0f : uniform(&seed, 3.0f);
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.n_q = NQ, p.n_kv = NKV, p.d_qk = D, p.d_v = 4, p.lse = 1;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = q, t.k = k, t.v = v, t.o = o, t.lse = lse_ref;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
  double abs_bound, rel_bound;
  bound_of(&p, &t, &abs_bound, &rel_bound);
  const float scale = 1.0f / 16.0f; /* the default, 1 / sqrt(256) */
  double worst = 0.0, worst_err = 0.0;
  for (int64_t i = 0; i < NQ; i++) {
    const double want = lse_ref[i], got = lse_fp32(q + i * D, k, NKV, D, scale);
    const double err = fabs(got - want), bound = abs_bound + rel_bound * fabs(want);
    cr_assert(err <= bound, "row %lld: fp32 lse %.9g, reference %.9g: error %.3g > bound %.3g",
              (long long)i, got, want, err, bound);
    if (err / bound > worst) worst = err / bound, worst_err = err;
  }
  cr_log_info("fp32 against fp64 lse: worst error %.3g, %.3f of the bound (abs %.3g)", worst_err,
              worst, abs_bound);
  /* the bound is not so loose that nothing could fail it */
  cr_assert(worst > 0.1, "the worst error is only %.3f of the bound", worst);
  free(q);
  free(k);
  free(v);
  free(o);
  free(lse_ref);
}
