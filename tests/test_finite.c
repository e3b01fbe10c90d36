/* SPDX-License-Identifier: MIT */
/* Finite inputs, finite outputs (issue 19, item 6): a sweep of scales (1e-30 .. 2.3e38, the largest
 * the library takes, and a negative one) and input magnitudes (up to +-6e4 in f32 and f16's
 * largest, 65504) over every kernel and ISA of the build (and of tiled_omp's and banded_omp's test
 * builds, and the emulated AVX-512 ones): wherever the fp32 dot products q . k are finite, every
 * kernel's output is finite, within txattn_error_bound and inside [-max|V|, max|V|]; a scale whose
 * |scale| log2(e) overflows fp32 is refused before any kernel runs, o untouched. The scores scale
 * * q . k themselves may overflow fp32 here (6e4 inputs at scale 1e30): every kernel scales the
 * difference of a score and its row's max, never the score (docs/error_bound.md, "Finite inputs").
 * TXATTN_TEST_MAX_ISA caps the ISAs as for the kernels suite. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include "attn_case.h"
#include "case_check.h"
#include "elements.h"
#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(finite, .init = test_env_clean, .fini = test_check_leaks, .timeout = 300);

#define F32 TXATTN_DTYPE_F32
#define F16 TXATTN_DTYPE_F16

/* The inputs of one sweep point: magnitude, fractions, and the types that hold them. */
struct inputs {
  float amplitude;
  int fractional;
  struct case_types types;
};
static const struct inputs magnitudes[] = {
    {0.5f, 1, {F32, F32, F32, F32}},
    {6e4f, 1, {F32, F32, F32, F32}},
    {65504.0f, 1, {F16, F16, F16, F32}}, /* f16's largest: its values as drawn, rounded to f16 */
};
enum { N_MAGNITUDES = sizeof magnitudes / sizeof magnitudes[0] };

/* max|V| over the contiguous copy (f32 or f16). */
static double max_abs_v(const struct attn_case *c) {
  const txattn_problem *p = &c->full;
  const size_t n = (size_t)(p->batch * p->heads_kv * p->n_kv * p->d_v);
  double m = 0.0;
  for (size_t x = 0; x < n; x++) m = fmax(m, fabs(elem_load(c->v_dense_data, c->v.type, x)));
  return m;
}

/* Every element of o (f32, contiguous or strided: gaps hold the sentinel, a NaN, and are skipped by
   walking the explicit layout) is finite and |o| <= limit; else 0 with the first offender in msg. */
static int output_finite_within(const struct attn_case *c, const float *o, double limit, char *msg,
                                size_t size) {
  const txattn_problem *p = &c->full;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++)
        for (int64_t x = 0; x < p->d_v; x++) {
          const float v = o[case_offset(&c->o, b, h, i, x)];
          if (!isfinite(v) || fabs((double)v) > limit) {
            snprintf(msg, size, "o[%lld][%lld][%lld][%lld] = %g (limit %g)", (long long)b,
                     (long long)h, (long long)i, (long long)x, (double)v, limit);
            return 0;
          }
        }
  return 1;
}

/* Runs every usable kernel of ctx on c and checks it; returns how many ran. A kernel outside
   test_kernel_takes_every_problem may decline the shape or the types (logged). */
static int run_every_kernel(txattn_context *ctx, struct attn_case *c, const char *desc) {
  struct kernel_list kl;
  test_kernel_list(ctx, &kl);
  const double max_v = max_abs_v(c);
  /* a convex combination of V rows, give or take the fp32 roundings of the weighted sum */
  const double hull = max_v * (1.0 + 1e-5);
  char msg[512];
  int ran = 0;
  for (size_t k = 0; k < kl.n; k++) {
    const char *name = kl.k[k].name;
    if (!kl.k[k].usable) continue;
    txattn_plan *plan = NULL;
    txattn_status s = txattn_plan_create(ctx, &c->problem, name, &plan);
    if (s == TXATTN_E_UNSUPPORTED && !test_kernel_takes_every_problem(name)) {
      cr_log_info("%s declines %s: %s", name, desc, txattn_last_error());
      continue;
    }
    cr_assert_eq(s, TXATTN_OK, "%s on %s: plan_create: %s", name, desc, txattn_last_error());
    txattn_tensors t = case_tensors(c);
    case_clear_output(c);
    s = txattn_plan_execute(plan, &t);
    txattn_plan_free(plan);
    cr_assert_eq(s, TXATTN_OK, "%s on %s: execute: %s", name, desc, txattn_last_error());
    cr_assert(output_finite_within(c, c->o.data, hull, msg, sizeof msg), "%s on %s: %s", name, desc,
              msg);
    double err;
    cr_assert(case_check_output(c, &err, msg, sizeof msg), "%s on %s: %s", name, desc, msg);
    ran++;
  }
  return ran;
}

/* The reference's output (contiguous f32) is finite and inside the hull too: the sweep's
   precondition. */
static void check_reference(const struct attn_case *c, const char *desc) {
  const txattn_problem *p = &c->full;
  const double limit = max_abs_v(c) * (1.0 + 1e-12);
  for (size_t x = 0; x < (size_t)(p->batch * p->heads_q * p->n_q * p->d_v); x++)
    cr_assert(isfinite(c->o_ref[x]) && fabs((double)c->o_ref[x]) <= limit,
              "the reference on %s: o_ref[%zu] = %g (limit %g)", desc, x, (double)c->o_ref[x],
              limit);
}

/* One point of the sweep: every magnitude x every mask, n and d varying with them. */
static int sweep_scale(txattn_context *ctx, float scale, int64_t n_cap) {
  static const int64_t ns[] = {41, 97, 130}, ds[] = {33, 128, 7};
  int ran = 0;
  for (int mi = 0; mi < N_MAGNITUDES; mi++)
    for (int mask = 0; mask < 3; mask++) {
      const int x = mi * 3 + mask;
      const int64_t n = ns[x % 3] < n_cap ? ns[x % 3] : n_cap, d = ds[(x + mi) % 3];
      struct shape s = {.batch = 1,
                        .heads_q = 2,
                        .heads_kv = 1,
                        .n_q = n,
                        .n_kv = n,
                        .d_qk = d,
                        .d_v = d,
                        .scale = scale,
                        .amplitude = magnitudes[mi].amplitude,
                        .fractional = magnitudes[mi].fractional,
                        .types = magnitudes[mi].types};
      s.mask = mask == 0 ? TXATTN_MASK_NONE : mask == 1 ? TXATTN_MASK_CAUSAL : TXATTN_MASK_WINDOW;
      s.left = s.right = 9;
      char desc[256];
      shape_describe(&s, desc, sizeof desc);
      struct attn_case c;
      case_init(&c, &s, 1000 + (uint64_t)x);
      case_run_reference(&c);
      check_reference(&c, desc);
      ran += run_every_kernel(ctx, &c, desc);
      case_free(&c);
    }
  return ran;
}

static float scales[] = {1e-30f, 0.0f /* 1/sqrt(d) */, 1e10f, 1e20f, 1e30f, 2.3e38f, -1e10f};

ParameterizedTestParameters(finite, every_kernel_is_finite_and_exact_at_every_scale) {
  return cr_make_param_array(float, scales, sizeof scales / sizeof scales[0]);
}

ParameterizedTest(float *scale, finite, every_kernel_is_finite_and_exact_at_every_scale) {
  txattn_context *ctx = test_context(2);
  const int ran = sweep_scale(ctx, *scale, 1000);
  cr_assert_geq(ran, 3 * 9, "scale %g: %d kernel runs, naive, masked, banded each 9", *scale, ran);
  txattn_context_free(ctx);
}

/* Decode (one query row against many keys, GQA): tiled_omp splits the keys over its threads and
   merges the partial maxima, which must be scaled as the scores are. */
Test(finite, decode_with_split_keys_is_finite_at_huge_scales) {
  static const float decode_scales[] = {1e10f, 2.3e38f, -1e30f};
  txattn_context *ctx = test_context(2);
  for (int si = 0; si < 3; si++)
    for (int mi = 0; mi < N_MAGNITUDES; mi++) {
      struct shape s = {.batch = 1,
                        .heads_q = 4,
                        .heads_kv = 2,
                        .n_q = 1,
                        .n_kv = 600,
                        .d_qk = 128,
                        .d_v = 128,
                        .mask = TXATTN_MASK_CAUSAL,
                        .scale = decode_scales[si],
                        .amplitude = magnitudes[mi].amplitude,
                        .fractional = 1,
                        .types = magnitudes[mi].types};
      char desc[256];
      shape_describe(&s, desc, sizeof desc);
      struct attn_case c;
      case_init(&c, &s, 77 + (uint64_t)si);
      case_run_reference(&c);
      check_reference(&c, desc);
      cr_assert_geq(run_every_kernel(ctx, &c, desc), 3, "%s", desc);
      case_free(&c);
    }
  txattn_context_free(ctx);
}

/* The plugins' other builds: tiled_omp's and banded_omp's test builds (a team for any work, the
   smallest blocks) and, on x86-64, the AVX-512 kernels on emulated intrinsics. */
static void sweep_plugin_dir(const char *dir, int threads) {
  txattn_context *ctx = test_context_at(dir, threads);
  int ran = 0;
  ran += sweep_scale(ctx, 1e10f, 64);
  ran += sweep_scale(ctx, 2.3e38f, 64);
  cr_log_info("%s: %d kernel runs", dir, ran);
  txattn_context_free(ctx);
}

#ifdef TXATTN_TEST_TEAM_PLUGIN_DIR
Test(finite, the_omp_test_builds_are_finite_at_huge_scales) {
  sweep_plugin_dir(TXATTN_TEST_TEAM_PLUGIN_DIR, 3);
#ifdef TXATTN_TEST_BOMP_TEAM_PLUGIN_DIR
  sweep_plugin_dir(TXATTN_TEST_BOMP_TEAM_PLUGIN_DIR, 2);
#endif
}
#endif

#ifdef TXATTN_TEST_EMU512_PLUGIN_DIR
Test(finite, the_emulated_avx512_kernels_are_finite_at_huge_scales) {
  sweep_plugin_dir(TXATTN_TEST_EMU512_PLUGIN_DIR, 2);
}
#endif

/* |scale| log2(e) must be finite in fp32: larger scales are refused by planning, by
   txattn_attention and by the reference alike, with the scale named, and o is left as it was. */
Test(finite, a_scale_whose_exp2_factor_overflows_is_refused) {
  static const float refused[] = {FLT_MAX, -FLT_MAX, 3e38f, 2.4e38f};
  txattn_context *ctx = test_context(1);
  for (int i = 0; i < 4; i++) {
    struct shape s = {
        .batch = 1, .heads_q = 1, .heads_kv = 1, .n_q = 5, .n_kv = 5, .d_qk = 4, .d_v = 4};
    struct attn_case c;
    case_init(&c, &s, 5); /* the bound of its default scale; then the scale tried */
    c.problem.scale = refused[i];
    txattn_plan *plan = NULL;
    cr_assert_eq(txattn_plan_create(ctx, &c.problem, NULL, &plan), TXATTN_E_INVALID,
                 "scale %g planned", (double)refused[i]);
    cr_assert(plan == NULL);
    cr_assert(strstr(txattn_last_error(), "scale") != NULL, "%s", txattn_last_error());
    cr_assert(strstr(txattn_last_error(), "log2(e)") != NULL, "%s", txattn_last_error());
    txattn_tensors t = case_tensors(&c);
    case_clear_output(&c);
    const uint32_t sentinel = CASE_OUTPUT_SENTINEL;
    cr_assert_eq(txattn_attention(ctx, &c.problem, &t), TXATTN_E_INVALID);
    for (size_t x = 0; x < c.o.len; x++)
      cr_assert_eq(memcmp(&c.o.data[x], &sentinel, sizeof sentinel), 0, "o[%zu] was written", x);
    txattn_tensors d = case_dense_tensors(&c);
    cr_assert_eq(txattn_reference(&c.problem, &d), TXATTN_E_INVALID);
    case_free(&c);
  }
  /* the largest scale taken */
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.n_q = 1;
  p.d_qk = 1;
  p.scale = 2.35e38f;
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &p, "naive.scalar", &plan), TXATTN_OK, "%s",
               txattn_last_error());
  txattn_plan_free(plan);
  txattn_context_free(ctx);
}
