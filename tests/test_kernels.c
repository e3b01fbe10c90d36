/* SPDX-License-Identifier: MIT */
/* Every kernel, the dispatcher's choice and txattn_attention against txattn_reference over a
 * curated battery of shapes: sizes around powers of two, n_q != n_kv both ways, d_v != d_qk, every
 * mask with narrow, one-sided, unbounded and huge windows, batches, GQA/MQA, strided layouts,
 * explicit scales, large inputs, rows with no visible key and NaN inputs. A subset of it, one case
 * of each kind, runs again in five combinations of 16-bit types. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include "attn_case.h"
#include "case_check.h"
#include "case_run.h"
#include "elements.h"
#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(kernels, .init = test_env_clean, .fini = test_check_leaks, .timeout = 300);

#define DIMS(B, HQ, HKV, NQ, NKV, DQK, DV)                                                         \
  .batch = B, .heads_q = HQ, .heads_kv = HKV, .n_q = NQ, .n_kv = NKV, .d_qk = DQK, .d_v = DV
#define SQUARE(N, D) DIMS(1, 1, 1, N, N, D, D)
#define NONE         .mask = TXATTN_MASK_NONE
#define CAUSAL       .mask = TXATTN_MASK_CAUSAL
#define WINDOW(L, R) .mask = TXATTN_MASK_WINDOW, .left = (L), .right = (R)
#define INF          TXATTN_UNBOUNDED

static struct shape battery[] = {
    /* dense, square, n and d over their ranges */
    {SQUARE(1, 1), NONE},
    {SQUARE(2, 3), NONE},
    {SQUARE(3, 16), NONE},
    {SQUARE(7, 64), NONE},
    {SQUARE(17, 80), NONE},
    {SQUARE(64, 128), NONE},
    {SQUARE(65, 16), NONE},
    {SQUARE(257, 64), NONE},
    {SQUARE(1, 3), CAUSAL},
    {SQUARE(2, 1), CAUSAL},
    {SQUARE(3, 80), CAUSAL},
    {SQUARE(7, 16), CAUSAL},
    {SQUARE(17, 64), CAUSAL},
    {SQUARE(64, 80), CAUSAL},
    {SQUARE(65, 128), CAUSAL},
    {SQUARE(257, 16), CAUSAL},
    /* d_v != d_qk */
    {DIMS(1, 1, 1, 17, 17, 64, 16), NONE},
    {DIMS(1, 1, 1, 65, 65, 16, 128), CAUSAL},
    {DIMS(1, 1, 1, 7, 7, 1, 80), NONE},
    {DIMS(1, 1, 1, 64, 64, 3, 1), CAUSAL},
    {DIMS(1, 1, 1, 65, 65, 128, 64), WINDOW(8, 8)},
    {DIMS(1, 1, 1, 257, 257, 80, 3), WINDOW(1, 1)},
    /* n_q < n_kv (decoding against a cache) and n_q > n_kv (rows with no visible key) */
    {DIMS(1, 1, 1, 1, 257, 64, 64), NONE},
    {DIMS(1, 1, 1, 1, 257, 64, 64), CAUSAL},
    {DIMS(1, 1, 1, 1, 257, 128, 128), WINDOW(8, 0)},
    {DIMS(1, 1, 1, 1, 65, 16, 64), WINDOW(0, 0)},
    {DIMS(1, 1, 1, 1, 1, 80, 80), CAUSAL},
    {DIMS(1, 1, 1, 7, 65, 16, 16), CAUSAL},
    {DIMS(1, 1, 1, 3, 2, 1, 1), NONE},
    {DIMS(1, 1, 1, 64, 17, 3, 3), CAUSAL},
    {DIMS(1, 1, 1, 17, 1, 64, 64), NONE},
    {DIMS(1, 1, 1, 17, 1, 16, 16), CAUSAL},
    {DIMS(1, 1, 1, 65, 7, 16, 16), WINDOW(1, 1)},
    {DIMS(1, 1, 1, 257, 64, 80, 80), CAUSAL},
    {DIMS(1, 1, 1, 65, 7, 64, 64), WINDOW(0, 0)},
    {DIMS(1, 1, 1, 2, 257, 16, 16), WINDOW(8, 8)},
    /* windows: 0, 1, 8, one-sided, unbounded sides, wider than n, up to INT64_MAX */
    {SQUARE(17, 16), WINDOW(0, 0)},
    {SQUARE(65, 64), WINDOW(1, 1)},
    {SQUARE(257, 64), WINDOW(8, 8)},
    {SQUARE(257, 16), WINDOW(8, 0)},
    {SQUARE(64, 3), WINDOW(0, 8)},
    {SQUARE(65, 16), WINDOW(INF, 0)},
    {SQUARE(64, 80), WINDOW(0, INF)},
    {SQUARE(17, 16), WINDOW(INF, INF)},
    {SQUARE(65, 64), WINDOW(8, INF)},
    {SQUARE(64, 16), WINDOW(INF, 1)},
    {SQUARE(257, 16), WINDOW(300, 300)},
    {SQUARE(64, 1), WINDOW(1000, 0)},
    {SQUARE(17, 3), WINDOW(INT64_MAX, INT64_MAX)},
    {SQUARE(7, 16), WINDOW(INT64_MAX, 0)},
    {DIMS(1, 1, 1, 3, 7, 16, 16), WINDOW(1, INT64_MAX)},
    {SQUARE(3, 128), WINDOW(1, 0)},
    /* batches, GQA 4/2 and MQA 4/1 */
    {DIMS(2, 4, 4, 17, 17, 16, 16), NONE},
    {DIMS(2, 4, 2, 65, 65, 64, 64), CAUSAL},
    {DIMS(1, 4, 1, 64, 64, 80, 80), WINDOW(8, 8)},
    {DIMS(2, 4, 1, 1, 257, 128, 128), CAUSAL},
    {DIMS(1, 4, 2, 17, 7, 3, 3), CAUSAL},
    {DIMS(2, 2, 1, 7, 7, 1, 1), NONE},
    /* strided layouts */
    {DIMS(2, 4, 2, 65, 65, 64, 64), CAUSAL, .layout = LAYOUT_INTERLEAVED},
    {DIMS(1, 4, 1, 64, 64, 80, 80), WINDOW(8, 8), .layout = LAYOUT_INTERLEAVED},
    {DIMS(2, 2, 2, 7, 17, 16, 3), NONE, .layout = LAYOUT_INTERLEAVED},
    {DIMS(2, 4, 2, 17, 17, 3, 16), CAUSAL, .layout = LAYOUT_PADDED},
    {DIMS(1, 1, 1, 65, 65, 128, 128), NONE, .layout = LAYOUT_PADDED},
    {DIMS(2, 4, 1, 1, 64, 64, 64), WINDOW(8, 0), .layout = LAYOUT_PADDED},
    {DIMS(2, 2, 1, 17, 17, 16, 16), CAUSAL, .layout = LAYOUT_SEQ_MAJOR},
    {DIMS(2, 4, 1, 7, 9, 3, 5), WINDOW(2, 0), .layout = LAYOUT_EXPLICIT},
    {DIMS(2, 4, 2, 17, 65, 80, 16), WINDOW(1, 8), .layout = LAYOUT_MIXED},
    {DIMS(1, 2, 2, 257, 257, 16, 16), NONE, .layout = LAYOUT_MIXED},
    /* explicit scales, negative included */
    {SQUARE(17, 16), NONE, .scale = 0.01f},
    {SQUARE(17, 64), CAUSAL, .scale = 1.0f},
    {SQUARE(65, 16), WINDOW(8, 8), .scale = -0.5f},
    {SQUARE(7, 3), NONE, .scale = 3.0f},
    /* inputs x 100: scores far beyond exp()'s float range (88) unless the max is subtracted. Either
       the softmax is decisive (default scales) or the scale is a power of two, keeping the scores
       exact: a float score near 800 is already off by 3e-5, which no fp32 kernel could meet 1e-5
       with */
    {SQUARE(64, 1), NONE, .amplitude = 100.0f},
    {SQUARE(17, 3), CAUSAL, .amplitude = 100.0f},
    {SQUARE(65, 64), NONE, .scale = 0x1p-10f, .amplitude = 100.0f},
    {SQUARE(257, 16), WINDOW(8, 8), .scale = 0x1p-8f, .amplitude = 100.0f},
    {SQUARE(7, 128), CAUSAL, .amplitude = 100.0f},
    /* large logits: q and k x 8, 30 and 100 with their fractions, so the fp32 scores round and the
       bound of txattn_error_bound grows with L (docs/error_bound.md) */
    {SQUARE(65, 64), NONE, .amplitude = 8.0f, .fractional = 1},
    {SQUARE(128, 64), CAUSAL, .amplitude = 8.0f, .fractional = 1},
    {SQUARE(257, 128), WINDOW(16, 16), .amplitude = 8.0f, .fractional = 1},
    {SQUARE(128, 64), CAUSAL, .amplitude = 30.0f, .fractional = 1},
    {SQUARE(65, 128), NONE, .amplitude = 30.0f, .fractional = 1},
    {DIMS(1, 4, 2, 97, 97, 64, 64), WINDOW(8, 8), .amplitude = 30.0f, .fractional = 1},
    {SQUARE(129, 128), CAUSAL, .amplitude = 100.0f, .fractional = 1},
    {DIMS(1, 1, 1, 65, 257, 64, 64), NONE, .amplitude = 100.0f, .fractional = 1},
    /* an outlier channel: every score carries a large common term that rounds differently per key */
    {SQUARE(128, 64), NONE, .amplitude = 3.0f, .fractional = 1, .outlier = 100.0f},
    {SQUARE(65, 128), CAUSAL, .amplitude = 3.0f, .fractional = 1, .outlier = 30.0f},
    {SQUARE(65, 256), WINDOW(16, 16), .amplitude = 3.0f, .fractional = 1, .outlier = 100.0f},
    /* NaN: the rows that read it are NaN, the others finite; a row with no key stays exact zero */
    {SQUARE(17, 16), NONE, .poison = POISON_Q},
    {SQUARE(65, 64), CAUSAL, .poison = POISON_K},
    {SQUARE(65, 16), WINDOW(8, 8), .poison = POISON_V},
    {DIMS(2, 4, 2, 17, 17, 16, 16), CAUSAL, .poison = POISON_K},
    {DIMS(2, 4, 1, 64, 64, 80, 80), WINDOW(1, 1), .poison = POISON_V, .layout = LAYOUT_INTERLEAVED},
    {DIMS(1, 1, 1, 17, 7, 16, 16), CAUSAL, .poison = POISON_Q_EMPTY_ROW},
    {SQUARE(65, 64), NONE, .poison = POISON_V},
    {DIMS(1, 1, 1, 64, 17, 3, 3), CAUSAL, .poison = POISON_V},
    {DIMS(1, 1, 1, 65, 7, 16, 16), WINDOW(0, 0), .poison = POISON_K},
    /* past the usual tile sizes: windows and the causal edge straddle tiles; a long decode */
    {SQUARE(513, 64), CAUSAL},
    {DIMS(1, 1, 1, 511, 513, 64, 64), WINDOW(8, 8)},
    {DIMS(2, 4, 2, 1, 1025, 64, 64), CAUSAL},
    /* every default taken: batch, heads_kv, n_kv, d_v and scale zero */
    {DIMS(0, 2, 0, 17, 0, 16, 0), CAUSAL},
};

ParameterizedTestParameters(kernels, agree_with_the_reference) {
  return cr_make_param_array(struct shape, battery, sizeof battery / sizeof battery[0]);
}

ParameterizedTest(struct shape *s, kernels, agree_with_the_reference) {
  char desc[256], msg[512];
  struct attn_case c;
  shape_describe(s, desc, sizeof desc);
  case_init(&c, s, (uint64_t)(s->n_q * 1000003 + s->n_kv * 1009 + s->d_qk * 31 + s->d_v));
  case_run_reference(&c);
  cr_assert(case_check_reference(&c, msg, sizeof msg), "%s: %s", desc, msg);

  txattn_context *ctx = test_context(0);
  cr_assert(case_run_every_kernel(ctx, &c, desc) > 0, "%s: no kernel ran", desc);
  case_run_attention(ctx, &c, desc);
  txattn_context_free(ctx);
  case_free(&c);
}

/* The kernels every build must have; case_run_kernel holds them to every problem of the battery. */
Test(kernels, the_issue_2_kernels_are_present_and_usable) {
  static const char *required[] = {"naive.scalar", "masked.scalar", "banded.scalar"};
  txattn_context *ctx = test_context(0);
  struct kernel_list kernels;
  test_kernel_list(ctx, &kernels);
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
    const txattn_kernel_info *k = test_kernel_find(&kernels, required[i]);
    cr_assert(k != NULL, "kernel %s is missing from the build tree's plugins", required[i]);
    cr_expect(k->usable, "%s is not usable: %s", k->name, k->why_unusable ? k->why_unusable : "?");
  }
  txattn_context_free(ctx);
}

/* The large-logit shapes of the battery with more seeds, for every usable kernel: within the bound,
   and with room to spare, since the bound's constant c = 3 + sqrt(d_qk) must not be what barely
   holds: max|O - O_ref| / (max|V| u L) must stay below 3c / 4 (measured: at most 0.08 c with
   random q and k, 0.5 c with the outlier channel at d 256; docs/error_bound.md). */
static struct shape large_logits[] = {
    {SQUARE(128, 64), CAUSAL, .amplitude = 8.0f, .fractional = 1},
    {SQUARE(65, 128), NONE, .amplitude = 8.0f, .fractional = 1},
    {SQUARE(128, 64), CAUSAL, .amplitude = 30.0f, .fractional = 1},
    {SQUARE(97, 128), WINDOW(16, 16), .amplitude = 30.0f, .fractional = 1},
    {SQUARE(65, 64), NONE, .amplitude = 100.0f, .fractional = 1},
    {SQUARE(128, 64), NONE, .amplitude = 3.0f, .fractional = 1, .outlier = 100.0f},
    {SQUARE(65, 256), CAUSAL, .amplitude = 3.0f, .fractional = 1, .outlier = 100.0f},
};

ParameterizedTestParameters(kernels, stay_well_within_the_error_bound_on_large_logits) {
  return cr_make_param_array(struct shape, large_logits,
                             sizeof large_logits / sizeof large_logits[0]);
}

ParameterizedTest(struct shape *s, kernels, stay_well_within_the_error_bound_on_large_logits) {
  char desc[256], msg[512];
  shape_describe(s, desc, sizeof desc);
  txattn_context *ctx = test_context(0);
  struct kernel_list kernels;
  test_kernel_list(ctx, &kernels);
  for (uint64_t seed = 1; seed <= 3; seed++) {
    struct attn_case c;
    case_init(&c, s, seed * 7919);
    case_run_reference(&c);
    const txattn_problem *p = &c.full;
    double max_v = 0.0, l = case_logit_scale(&c), cst = 3.0 + sqrt((double)p->d_qk);
    for (size_t x = 0; x < (size_t)(p->batch * p->heads_kv * p->n_kv * p->d_v); x++)
      max_v = fmax(max_v, fabs((double)c.v_dense[x]));
    double want = max_v * fmax(TXATTN_EXACT_TOLERANCE, cst * 0x1p-24 * l);
    cr_assert(fabs(c.tolerance - want) <= 1e-9 * want, "%s: txattn_error_bound %g, by hand %g",
              desc, c.tolerance, want);
    cr_assert(c.tolerance > TXATTN_EXACT_TOLERANCE * max_v,
              "%s: L = %g is not large enough to test the bound", desc, l);
    for (size_t k = 0; k < kernels.n; k++) {
      if (!kernels.k[k].usable) continue;
      txattn_plan *plan = NULL;
      txattn_status st = txattn_plan_create(ctx, &c.problem, kernels.k[k].name, &plan);
      if (st == TXATTN_E_UNSUPPORTED && strstr(txattn_last_error(), "does not take f32"))
        continue; /* tiled.avx512bf16 takes bf16 q and k only */
      cr_assert_eq(st, TXATTN_OK, "%s on %s: %s", kernels.k[k].name, desc, txattn_last_error());
      txattn_tensors t = case_tensors(&c);
      case_clear_output(&c);
      cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK, "%s", txattn_last_error());
      txattn_plan_free(plan);
      double err;
      cr_assert(case_check_output(&c, &err, msg, sizeof msg), "%s on %s (seed %llu): %s",
                kernels.k[k].name, desc, (unsigned long long)seed, msg);
      double ratio = err / (max_v * 0x1p-24 * l);
      cr_expect(ratio < 0.75 * cst, "%s on %s (seed %llu): error %g = %.3g max|V| u L, c = %.3g",
                kernels.k[k].name, desc, (unsigned long long)seed, err, ratio, cst);
      cr_log_info("%s on %s: max|O - O_ref| / (max|V| u L) = %.3f (c = %.2f)", kernels.k[k].name,
                  desc, ratio, cst);
    }
    case_free(&c);
  }
  txattn_context_free(ctx);
}

/* ---- 16-bit types ---- */

#define F32  TXATTN_DTYPE_F32
#define F16  TXATTN_DTYPE_F16
#define BF16 TXATTN_DTYPE_BF16

/* q, k, v, o: a 16-bit KV cache under f32 q and o (f16, bf16), everything bf16, everything f16, and
   a bf16 cache written out as f16. */
static const struct case_types combinations[] = {
    {F32, F16, F16, F32}, {F32, BF16, BF16, F32}, {BF16, BF16, BF16, BF16},
    {F16, F16, F16, F16}, {F32, BF16, BF16, F16},
};
enum { N_COMBINATIONS = sizeof combinations / sizeof combinations[0] };

/* One or two cases of each kind of the battery above (the whole battery five times over would
   take too long under ASan). Inputs are drawn as for f32 and rounded to their type. f16 holds
   +-65504, so the large-logit cases keep |q|, |k|, |v| <= 100 (whole numbers or, "real", with the
   fractions f16 keeps: 1/16 at 100, 1/64 at 30) and get L from d_qk and the scale: the scores exist
   only in the kernels' fp32, and |O| <= max|V|. One case takes f16's largest values, up to 60000
   (multiples of 32 there), with a scale of 2^-30 to keep the scores near 50; one takes its
   subnormals. */
static const struct shape sixteen_bit_battery[] = {
    /* odd sizes, every mask, d_v != d_qk */
    {SQUARE(1, 1), NONE},
    {SQUARE(17, 80), NONE},
    {SQUARE(65, 128), CAUSAL},
    {SQUARE(257, 16), CAUSAL},
    {DIMS(1, 1, 1, 65, 65, 16, 128), CAUSAL},
    {DIMS(1, 1, 1, 257, 257, 80, 3), WINDOW(1, 1)},
    /* decoding; rows with no visible key */
    {DIMS(1, 1, 1, 1, 257, 128, 128), WINDOW(8, 0)},
    {DIMS(1, 1, 1, 64, 17, 3, 3), CAUSAL},
    {DIMS(1, 1, 1, 65, 7, 16, 16), WINDOW(1, 1)},
    /* one-sided and huge windows */
    {SQUARE(65, 16), WINDOW(INF, 0)},
    {SQUARE(17, 3), WINDOW(INT64_MAX, INT64_MAX)},
    /* GQA, MQA */
    {DIMS(2, 4, 2, 65, 65, 64, 64), CAUSAL},
    {DIMS(2, 4, 1, 1, 257, 128, 128), CAUSAL},
    /* strided layouts */
    {DIMS(2, 4, 2, 65, 65, 64, 64), CAUSAL, .layout = LAYOUT_INTERLEAVED},
    {DIMS(2, 4, 1, 1, 64, 64, 64), WINDOW(8, 0), .layout = LAYOUT_PADDED},
    {DIMS(2, 2, 1, 17, 17, 16, 16), CAUSAL, .layout = LAYOUT_SEQ_MAJOR},
    {DIMS(2, 4, 1, 7, 9, 3, 5), WINDOW(2, 0), .layout = LAYOUT_EXPLICIT},
    {DIMS(2, 4, 2, 17, 65, 80, 16), WINDOW(1, 8), .layout = LAYOUT_MIXED},
    /* scales, large inputs, large logits, an outlier channel, f16's largest values */
    {SQUARE(65, 16), WINDOW(8, 8), .scale = -0.5f},
    {SQUARE(65, 64), NONE, .scale = 0x1p-10f, .amplitude = 100.0f},
    {SQUARE(7, 128), CAUSAL, .amplitude = 100.0f},
    {SQUARE(128, 64), CAUSAL, .amplitude = 30.0f, .fractional = 1},
    {DIMS(1, 4, 2, 97, 97, 64, 64), WINDOW(8, 8), .amplitude = 30.0f, .fractional = 1},
    {SQUARE(128, 64), NONE, .amplitude = 3.0f, .fractional = 1, .outlier = 100.0f},
    {SQUARE(65, 16), NONE, .scale = 0x1p-30f, .amplitude = 60000.0f},
    /* tiny inputs: about half of them f16 subnormals (below 2^-14), and so are many outputs */
    {SQUARE(65, 64), CAUSAL, .amplitude = 0x1p-13f},
    /* NaN */
    {SQUARE(17, 16), NONE, .poison = POISON_Q},
    {SQUARE(65, 64), CAUSAL, .poison = POISON_K},
    {SQUARE(65, 16), WINDOW(8, 8), .poison = POISON_V},
    {DIMS(1, 1, 1, 17, 7, 16, 16), CAUSAL, .poison = POISON_Q_EMPTY_ROW},
    /* windows and the causal edge straddling tiles (the last 129 rows of 513, the 16-bit K and V
       converted in key blocks past the usual tile sizes); a long decode; every default */
    {DIMS(1, 1, 1, 129, 513, 64, 64), CAUSAL},
    {DIMS(1, 1, 1, 129, 513, 64, 64), WINDOW(8, 8)},
    {DIMS(2, 4, 2, 1, 1025, 64, 64), CAUSAL},
    {DIMS(0, 2, 0, 17, 0, 16, 0), CAUSAL},
};
enum { N_SIXTEEN_BIT = sizeof sixteen_bit_battery / sizeof sixteen_bit_battery[0] };

ParameterizedTestParameters(kernels, agree_with_the_reference_in_16_bits) {
  return cr_make_param_array(struct shape, sixteen_bit_battery, N_SIXTEEN_BIT);
}

/* The case in each combination of types, one process and one context for all five (which keeps
   the cost under ASan near the f32 battery's), so txattn_attention also meets the same shape in
   other types in its plan cache. The reference of the same problem (o in o's type) is checked
   against the test oracle, then every kernel that takes the types, the dispatcher and
   txattn_attention against it within txattn_error_bound; naive.scalar takes every combination, so
   the test cannot pass by skipping. */
ParameterizedTest(struct shape *s, kernels, agree_with_the_reference_in_16_bits) {
  txattn_context *ctx = test_context(0);
  for (size_t t = 0; t < N_COMBINATIONS; t++) {
    char desc[256], msg[512];
    struct attn_case c;
    struct case_tally tally;
    struct shape typed = *s;
    typed.types = combinations[t];
    shape_describe(&typed, desc, sizeof desc);
    case_init(&c, &typed, (uint64_t)(s->n_q * 1000003 + s->n_kv * 1009 + s->d_qk * 31 + s->d_v));
    case_run_reference(&c);
    cr_assert(case_check_reference(&c, msg, sizeof msg), "%s: %s", desc, msg);
    case_run_every_kernel_tally(ctx, &c, desc, &tally);
    cr_assert(tally.naive_ran, "%s: naive.scalar did not run (ran: %s; declined the types: %s)",
              desc, tally.ran_names, tally.declined_types);
    case_run_attention(ctx, &c, desc);
    case_free(&c);
  }
  txattn_context_free(ctx);
}

/* Where O is past f16's range (a bf16 or f32 V written out as f16), the output is infinity, as IEEE
   rounding says, and the rest is within the bound. The scores (up to about 10^4, scale 2^-24) make
   each row's softmax pick one key, so O is a V row: bf16 values past 65520 become infinity, the
   others are f16 values exactly. */
Test(kernels, a_16_bit_output_past_its_range_is_infinity) {
  static const struct case_types types[] = {{F32, BF16, BF16, F16}, {F32, F32, F32, F16}};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    struct shape s = {SQUARE(17, 16), CAUSAL, .scale = 0x1p-24f, .amplitude = 100000.0f};
    char desc[256], msg[512];
    struct attn_case c;
    struct case_tally tally;
    s.types = types[t];
    shape_describe(&s, desc, sizeof desc);
    case_init(&c, &s, 1789);
    case_run_reference(&c);
    cr_assert(case_check_reference(&c, msg, sizeof msg), "%s: %s", desc, msg);
    size_t n = (size_t)(c.full.n_q * c.full.d_v), inf = 0, finite = 0;
    for (size_t x = 0; x < n; x++) {
      double o = elem_load(c.o_ref_data, c.o.type, x);
      inf += isinf(o) != 0;
      finite += isfinite(o) && fabs(o) > 1000.0;
    }
    cr_assert(inf > 0 && finite > 0, "%s: %zu of %zu outputs overflow, %zu are large and finite",
              desc, inf, n, finite);
    txattn_context *ctx = test_context(0);
    case_run_every_kernel_tally(ctx, &c, desc, &tally);
    cr_assert(tally.naive_ran, "%s: naive.scalar did not run", desc);
    case_run_attention(ctx, &c, desc);
    txattn_context_free(ctx);
    case_free(&c);
  }
}
