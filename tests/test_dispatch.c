/* SPDX-License-Identifier: MIT */
/* Choosing kernels: forcing by argument and TXATTN_FORCE_KERNEL, unknown names, ISA detection and
 * TXATTN_MAX_ISA, the dispatcher's respect for usable and applicable(), txattn_attention against
 * plan + execute, thread counts, and the plan's own reports. */
#include <math.h>
#include <sched.h> /* CPU_COUNT, sched_getaffinity: tests build with _GNU_SOURCE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include "attn_case.h"
#include "case_check.h"
#include "case_run.h"
#include "scratch.h"
#include "test_context.h"
#include "test_plugin_names.h"
#include "text_match.h"
#include "txattn/table.h"
#include "txattn/txattn.h"

static char scratch[SCRATCH_PATH_MAX];

static void cleanup(void) {
  scratch_remove(scratch);
}

TestSuite(dispatch, .init = test_env_clean, .fini = cleanup, .timeout = 120);

/* The build tree's plugins plus the foreign-ISA kernel and the picky one, both of which claim to be
   a million times faster than anything else. */
static txattn_context *context_with_decoys(int n_threads) {
  char path[2 * SCRATCH_PATH_MAX + 2];
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_copy_plugin(scratch, TEST_FOREIGN_FILE, NULL, 0644);
  scratch_copy_plugin(scratch, TEST_PICKY_FILE, NULL, 0644);
  snprintf(path, sizeof path, "%s:%s", TXATTN_TEST_PLUGIN_BUILD_DIR, scratch);
  txattn_context *ctx = test_context_at(path, n_threads);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  cr_assert(test_kernel_find(&l, TEST_FOREIGN_KERNEL) && test_kernel_find(&l, TEST_PICKY_KERNEL),
            "the decoy test plugins did not load");
  return ctx;
}

/* What the compiler's own CPU detection (cpuid and XGETBV on x86) says about an ISA. */
static int cpu_has(const char *isa) {
  if (strcmp(isa, "scalar") == 0) return 1;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (strcmp(isa, "avx2") == 0) return avx2;
  if (strcmp(isa, "avx512") == 0)
    return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
  if (strcmp(isa, "avx512bf16") == 0)
    return cpu_has("avx512") && __builtin_cpu_supports("avx512bf16");
#elif defined(__aarch64__)
  if (strcmp(isa, "neon") == 0) return 1;
#endif
  return 0;
}

static int isa_rank(const char *isa) { /* TXATTN_MAX_ISA's order */
  return strcmp(isa, "scalar") == 0       ? 0
         : strcmp(isa, "avx2") == 0       ? 1
         : strcmp(isa, "avx512bf16") == 0 ? 3
                                          : 2;
}

static txattn_status try_plan(txattn_context *ctx, const char *kernel, char *chosen, size_t size) {
  txattn_problem p = {.n_q = 12, .d_qk = 8, .mask = TXATTN_MASK_CAUSAL};
  txattn_plan *plan = NULL;
  txattn_status s = txattn_plan_create(ctx, &p, kernel, &plan);
  if (s == TXATTN_OK) snprintf(chosen, size, "%s", txattn_plan_kernel(plan));
  txattn_plan_free(plan);
  return s;
}

Test(dispatch, isa_detection_agrees_with_the_compiler) {
  txattn_context *ctx = context_with_decoys(1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  for (size_t i = 0; i < l.n; i++)
    cr_expect_eq(!!l.k[i].usable, cpu_has(l.k[i].isa),
                 "%s (isa %s): usable %d, this CPU %s it (%s)", l.k[i].name, l.k[i].isa,
                 l.k[i].usable, cpu_has(l.k[i].isa) ? "has" : "lacks",
                 l.k[i].why_unusable ? l.k[i].why_unusable : "");
  txattn_context_free(ctx);
}

static void check_max_isa(const char *cap) {
  char chosen[128];
  cr_assert_eq(setenv("TXATTN_MAX_ISA", cap, 1), 0);
  txattn_context *ctx = context_with_decoys(1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  int above = 0;
  for (size_t i = 0; i < l.n; i++) {
    const txattn_kernel_info *k = &l.k[i];
    int allowed = strcmp(k->isa, "neon") == 0 ? strcmp(cap, "scalar") != 0
                                              : isa_rank(k->isa) <= isa_rank(cap);
    if (allowed) {
      cr_expect_eq(!!k->usable, cpu_has(k->isa), "TXATTN_MAX_ISA=%s: %s usable %d", cap, k->name,
                   k->usable);
      continue;
    }
    above++;
    cr_expect_eq(k->usable, 0, "TXATTN_MAX_ISA=%s leaves %s usable", cap, k->name);
    if (cpu_has(k->isa))
      cr_expect(text_mentions(k->why_unusable, "TXATTN_MAX_ISA", NULL),
                "%s: why_unusable \"%s\" should name TXATTN_MAX_ISA", k->name, k->why_unusable);
    cr_expect_eq(try_plan(ctx, k->name, chosen, sizeof chosen), TXATTN_E_UNSUPPORTED,
                 "TXATTN_MAX_ISA=%s: forcing %s", cap, k->name);
    cr_expect(try_plan(ctx, NULL, chosen, sizeof chosen) != TXATTN_OK || strcmp(chosen, k->name),
              "TXATTN_MAX_ISA=%s: the dispatcher picks %s", cap, k->name);
  }
  cr_log_info("TXATTN_MAX_ISA=%s capped %d kernel(s)", cap, above);
  txattn_context_free(ctx);
}

Test(dispatch, max_isa_scalar_leaves_only_scalar_kernels) {
  check_max_isa("scalar");
}

Test(dispatch, max_isa_avx2_leaves_no_avx512_kernel) {
#if !defined(__x86_64__) && !defined(__i386__)
  cr_skip_test("TXATTN_MAX_ISA=avx2 is an x86 setting");
#endif
  check_max_isa("avx2");
}

/* avx512bf16 ranks above avx512: capping at avx512 leaves tiled.avx512bf16 out, keeps the rest. */
Test(dispatch, max_isa_avx512_leaves_no_avx512bf16_kernel) {
#if !defined(__x86_64__) && !defined(__i386__)
  cr_skip_test("TXATTN_MAX_ISA=avx512 is an x86 setting");
#endif
  check_max_isa("avx512");
}

Test(dispatch, forcing_by_argument_runs_that_kernel) {
  txattn_context *ctx = test_context(1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  txattn_problem p = {.heads_q = 2, .n_q = 12, .n_kv = 20, .d_qk = 8, .mask = TXATTN_MASK_CAUSAL};
  for (size_t i = 0; i < l.n; i++) {
    if (!l.k[i].usable) continue;
    txattn_plan *plan = NULL;
    txattn_status s = txattn_plan_create(ctx, &p, l.k[i].name, &plan);
    if (s == TXATTN_E_UNSUPPORTED && !test_kernel_takes_every_problem(l.k[i].name)) continue;
    cr_assert_eq(s, TXATTN_OK, "forcing %s: %s", l.k[i].name, txattn_last_error());
    cr_expect_str_eq(txattn_plan_kernel(plan), l.k[i].name);
    const char *why = txattn_plan_why(plan);
    cr_expect(why != NULL && why[0] != '\0', "%s: txattn_plan_why is empty", l.k[i].name);
    char line[512];
    txattn_plan_describe(plan, line, sizeof line);
    cr_expect(strstr(line, l.k[i].name) != NULL, "describe \"%s\" lacks the kernel", line);
    txattn_plan_free(plan);
  }
  txattn_context_free(ctx);
}

struct kernel_name {
  char name[32];
};

ParameterizedTestParameters(dispatch, txattn_force_kernel_forces_the_choice) {
  static struct kernel_name names[] = {{"naive.scalar"}, {"masked.scalar"}, {"banded.scalar"}};
  return cr_make_param_array(struct kernel_name, names, sizeof names / sizeof names[0]);
}

ParameterizedTest(struct kernel_name *forced, dispatch, txattn_force_kernel_forces_the_choice) {
  const char *name = forced->name;
  cr_assert_eq(setenv("TXATTN_FORCE_KERNEL", name, 1), 0);
  txattn_context *ctx = test_context(0);
  struct shape s = {.batch = 2,
                    .heads_q = 4,
                    .heads_kv = 2,
                    .n_q = 33,
                    .n_kv = 40,
                    .d_qk = 16,
                    .d_v = 8,
                    .mask = TXATTN_MASK_WINDOW,
                    .left = 4,
                    .right = 0};
  struct attn_case c;
  case_init(&c, &s, 3);
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &c.problem, NULL, &plan), TXATTN_OK, "%s",
               txattn_last_error());
  cr_expect_str_eq(txattn_plan_kernel(plan), name, "TXATTN_FORCE_KERNEL=%s", name);
  cr_expect(text_mentions(txattn_plan_why(plan), "TXATTN_FORCE_KERNEL", NULL),
            "txattn_plan_why \"%s\" should say the choice was forced", txattn_plan_why(plan));
  txattn_plan_free(plan);
  case_run_reference(&c);
  case_run_kernel(ctx, &c, NULL, "TXATTN_FORCE_KERNEL");
  txattn_context_free(ctx);
  case_free(&c);
}

Test(dispatch, the_argument_beats_txattn_force_kernel) {
  char chosen[128];
  cr_assert_eq(setenv("TXATTN_FORCE_KERNEL", "banded.scalar", 1), 0);
  txattn_context *ctx = test_context(1);
  cr_assert_eq(try_plan(ctx, "naive.scalar", chosen, sizeof chosen), TXATTN_OK, "%s",
               txattn_last_error());
  cr_expect_str_eq(chosen, "naive.scalar");
  txattn_context_free(ctx);
}

Test(dispatch, an_unknown_kernel_is_not_found) {
  char chosen[128];
  txattn_context *ctx = test_context(1);
  cr_expect_eq(try_plan(ctx, "no.such.kernel", chosen, sizeof chosen), TXATTN_E_NOT_FOUND);
  cr_expect(strstr(txattn_last_error(), "no.such.kernel") != NULL, "\"%s\" lacks the name",
            txattn_last_error());
  txattn_context_free(ctx);
  cr_assert_eq(setenv("TXATTN_FORCE_KERNEL", "also.not.there", 1), 0);
  ctx = test_context(1);
  cr_expect_eq(try_plan(ctx, NULL, chosen, sizeof chosen), TXATTN_E_NOT_FOUND);
  cr_expect(strstr(txattn_last_error(), "also.not.there") != NULL, "\"%s\" lacks the name",
            txattn_last_error());
  txattn_context_free(ctx);
}

Test(dispatch, forcing_an_unusable_kernel_is_unsupported) {
  char chosen[128];
  txattn_context *ctx = context_with_decoys(1);
  cr_expect_eq(try_plan(ctx, TEST_FOREIGN_KERNEL, chosen, sizeof chosen), TXATTN_E_UNSUPPORTED);
  cr_expect_neq(txattn_last_error()[0], '\0');
  txattn_context_free(ctx);
  scratch_remove(scratch);
  cr_assert_eq(setenv("TXATTN_FORCE_KERNEL", TEST_FOREIGN_KERNEL, 1), 0);
  ctx = context_with_decoys(1);
  cr_expect_eq(try_plan(ctx, NULL, chosen, sizeof chosen), TXATTN_E_UNSUPPORTED,
               "TXATTN_FORCE_KERNEL=%s", TEST_FOREIGN_KERNEL);
  txattn_context_free(ctx);
}

Test(dispatch, forcing_an_inapplicable_kernel_is_unsupported_with_its_reason) {
  txattn_context *ctx = context_with_decoys(1);
  txattn_problem p = {.n_q = 5, .d_qk = 8};
  txattn_plan *plan = NULL;
  cr_expect_eq(txattn_plan_create(ctx, &p, TEST_PICKY_KERNEL, &plan), TXATTN_E_UNSUPPORTED);
  cr_expect(strstr(txattn_last_error(), "only takes d_qk = 16") != NULL,
            "the refusal \"%s\" should carry the kernel's own reason", txattn_last_error());
  txattn_plan_free(plan);
  plan = NULL;
  p.d_qk = 16;
  cr_expect_eq(txattn_plan_create(ctx, &p, TEST_PICKY_KERNEL, &plan), TXATTN_OK, "%s",
               txattn_last_error());
  txattn_plan_free(plan);
  txattn_context_free(ctx);
}

Test(dispatch, the_dispatcher_picks_only_usable_applicable_kernels) {
  static const struct shape shapes[] = {
      {.n_q = 64, .n_kv = 64, .d_qk = 8, .mask = TXATTN_MASK_NONE},
      {.n_q = 64, .n_kv = 64, .d_qk = 16, .mask = TXATTN_MASK_CAUSAL},
      {.n_q = 1, .n_kv = 300, .d_qk = 64, .mask = TXATTN_MASK_CAUSAL},
      {.batch = 2,
       .heads_q = 4,
       .heads_kv = 1,
       .n_q = 100,
       .n_kv = 100,
       .d_qk = 32,
       .mask = TXATTN_MASK_WINDOW,
       .left = 2,
       .right = 2},
      {.n_q = 200,
       .n_kv = 50,
       .d_qk = 16,
       .d_v = 4,
       .mask = TXATTN_MASK_WINDOW,
       .left = 8,
       .right = TXATTN_UNBOUNDED},
  };
  txattn_context *ctx = context_with_decoys(0);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    char desc[256];
    struct attn_case c;
    shape_describe(&shapes[i], desc, sizeof desc);
    case_init(&c, &shapes[i], 17 + i);
    txattn_plan *plan = NULL;
    cr_assert_eq(txattn_plan_create(ctx, &c.problem, NULL, &plan), TXATTN_OK, "%s: %s", desc,
                 txattn_last_error());
    const char *chosen = txattn_plan_kernel(plan);
    const txattn_kernel_info *k = test_kernel_find(&l, chosen);
    cr_assert(k != NULL, "%s: the dispatcher picked %s, which is not listed", desc, chosen);
    cr_expect(k->usable, "%s: the dispatcher picked unusable %s", desc, chosen);
    cr_expect(c.full.d_qk == 16 || strcmp(chosen, TEST_PICKY_KERNEL) != 0,
              "%s: the dispatcher picked %s, which declines d_qk != 16", desc, chosen);
    cr_log_info("%s: %s (%s)", desc, chosen, txattn_plan_why(plan));
    txattn_plan_free(plan);
    case_run_reference(&c);
    case_run_kernel(ctx, &c, NULL, desc);
    case_free(&c);
  }
  txattn_context_free(ctx);
}

Test(dispatch, txattn_attention_gives_what_plan_and_execute_give) {
  struct shape s = {.batch = 2,
                    .heads_q = 4,
                    .heads_kv = 2,
                    .n_q = 40,
                    .n_kv = 70,
                    .d_qk = 32,
                    .d_v = 16,
                    .mask = TXATTN_MASK_CAUSAL,
                    .layout = LAYOUT_INTERLEAVED};
  struct attn_case c;
  case_init(&c, &s, 9);
  case_run_reference(&c);
  txattn_context *ctx = test_context(0);
  case_run_kernel(ctx, &c, NULL, "plan + execute");
  float *planned = malloc(c.o.len * sizeof *planned);
  cr_assert(planned != NULL);
  memcpy(planned, c.o.data, c.o.len * sizeof *planned);
  for (int round = 0; round < 3; round++) { /* again and again: the plan cache must not go stale */
    case_run_attention(ctx, &c, "txattn_attention");
    for (size_t x = 0; x < c.o.len; x++)
      cr_assert((isnan(c.o.data[x]) && isnan(planned[x])) ||
                    fabs((double)c.o.data[x] - (double)planned[x]) <= c.tolerance,
                "round %d: o[%zu] = %g by txattn_attention, %g by plan + execute", round, x,
                (double)c.o.data[x], (double)planned[x]);
  }
  free(planned);
  txattn_context_free(ctx);
  case_free(&c);
}

Test(dispatch, every_thread_count_gives_the_same_answer) {
  cpu_set_t cpus;
  cr_assert_eq(sched_getaffinity(0, sizeof cpus, &cpus), 0);
  txattn_context *ctx0 = test_context(0);
  cr_expect_eq(txattn_context_threads(ctx0), CPU_COUNT(&cpus), "n_threads 0: every CPU we may use");
  txattn_context_free(ctx0);
  struct shape s = {.batch = 2,
                    .heads_q = 4,
                    .heads_kv = 2,
                    .n_q = 129,
                    .n_kv = 129,
                    .d_qk = 64,
                    .mask = TXATTN_MASK_CAUSAL};
  struct attn_case c;
  case_init(&c, &s, 10);
  case_run_reference(&c);
  for (int n = 1; n <= 2; n++) {
    char desc[64];
    snprintf(desc, sizeof desc, "n_threads %d", n);
    txattn_context *ctx = test_context(n);
    cr_expect_eq(txattn_context_threads(ctx), n, "%s: context_threads %d", desc,
                 txattn_context_threads(ctx));
    case_run_every_kernel(ctx, &c, desc);
    txattn_context_free(ctx);
  }
  case_free(&c);
}

Test(dispatch, a_plan_runs_on_many_tensor_sets) {
  struct shape s = {.heads_q = 2,
                    .n_q = 30,
                    .n_kv = 45,
                    .d_qk = 16,
                    .d_v = 4,
                    .mask = TXATTN_MASK_WINDOW,
                    .left = 5,
                    .right = 5};
  struct attn_case a, b;
  case_init(&a, &s, 100);
  case_init(&b, &s, 200);
  case_run_reference(&a);
  case_run_reference(&b);
  txattn_context *ctx = test_context(0);
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &a.problem, NULL, &plan), TXATTN_OK, "%s",
               txattn_last_error());
  struct attn_case *order[] = {&a, &b, &a};
  for (int round = 0; round < 3; round++) {
    char msg[512];
    double err;
    txattn_tensors t = case_tensors(order[round]);
    case_clear_output(order[round]);
    cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK, "%s", txattn_last_error());
    cr_assert(case_check_output(order[round], &err, msg, sizeof msg), "round %d: %s", round, msg);
  }
  txattn_plan_free(plan);
  txattn_context_free(ctx);
  case_free(&a);
  case_free(&b);
}

Test(dispatch, plan_describe_behaves_like_snprintf) {
  txattn_context *ctx = test_context(1);
  txattn_problem p = {.n_q = 10, .d_qk = 8};
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
  int n = txattn_plan_describe(plan, NULL, 0);
  cr_assert(n > 0, "describe(NULL, 0) = %d", n);
  char *full = malloc((size_t)n + 1), small[8];
  cr_assert(full != NULL);
  cr_expect_eq(txattn_plan_describe(plan, full, (size_t)n + 1), n);
  cr_expect_eq(strlen(full), (size_t)n, "the whole line fits in n + 1 bytes");
  cr_expect(strstr(full, txattn_plan_kernel(plan)) != NULL, "\"%s\" lacks the kernel", full);
  cr_expect(strchr(full, '\n') == NULL, "one line: \"%s\"", full);
  memset(small, 'x', sizeof small);
  cr_expect_eq(txattn_plan_describe(plan, small, sizeof small), n, "a short buffer still gets n");
  cr_expect_eq(small[sizeof small - 1], '\0', "truncated and terminated");
  cr_expect(strncmp(small, full, sizeof small - 1) == 0, "the truncated line is the line's start");
  free(full);
  txattn_plan_free(plan);
  txattn_context_free(ctx);
}

/* A context over a scratch directory holding just the two test plugins given. */
static txattn_context *context_of(const char *file_a, const char *file_b) {
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_copy_plugin(scratch, file_a, NULL, 0644);
  scratch_copy_plugin(scratch, file_b, NULL, 0644);
  return test_context_at(scratch, 1);
}

static void expect_estimate_picks(txattn_context *ctx, const char *wanted, const char *other) {
  txattn_problem p = {.heads_q = 2,
                      .n_q = 96,
                      .d_qk = 16,
                      .mask = TXATTN_MASK_WINDOW,
                      .window_left = 4,
                      .window_right = 4};
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
  const char *why = txattn_plan_why(plan);
  cr_expect_str_eq(txattn_plan_kernel(plan), wanted, "picked %s (%s)", txattn_plan_kernel(plan),
                   why);
  cr_expect(strstr(why, "estimate") && strstr(why, other),
            "the reason names neither the estimate "
            "nor the runner-up %s: %s",
            other, why);
  txattn_plan_free(plan);
}

/* Both claim 1 GFLOP/s; by name the padded one would win the tie, by its own count of the pairs it
   computes (8x the visible ones against 1/8) it is 64 times slower. */
Test(dispatch, the_estimate_follows_a_kernels_count_of_its_work) {
  txattn_context *ctx = context_of(TEST_PADDED_FILE, TEST_THRIFTY_FILE);
  expect_estimate_picks(ctx, TEST_THRIFTY_KERNEL, TEST_PADDED_KERNEL);
  txattn_context_free(ctx);
}

/* The legacy kernel's descriptor has the ABI 1.0 size: it loads, and the count it would claim (no
   work at all) lies beyond its struct_size, so the host must not read it. */
Test(dispatch, an_abi_1_0_descriptor_loads_and_its_missing_fields_are_not_read) {
  txattn_context *ctx = context_of(TEST_LEGACY_FILE, TEST_THRIFTY_FILE);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  const txattn_kernel_info *k = test_kernel_find(&l, TEST_LEGACY_KERNEL);
  cr_assert(k != NULL && k->usable, "the ABI 1.0-sized kernel did not load");
  expect_estimate_picks(ctx, TEST_THRIFTY_KERNEL, TEST_LEGACY_KERNEL);
  txattn_context_free(ctx);
}

/* The value of tunable `name` in a plan of kernel for n_q rows (the caller's `given`, or the
   defaults if given < 0). */
static int64_t fitted(txattn_context *ctx, const char *kernel, int64_t n_q, int64_t given) {
  txattn_problem p = {.n_q = n_q, .d_qk = 16};
  const char *names[] = {TEST_FIT_TUNABLE};
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create_tuned(ctx, &p, kernel, names, &given, given >= 0, &plan),
               TXATTN_OK, "%s at n_q %lld: %s", kernel, (long long)n_q, txattn_last_error());
  int64_t v = -1;
  const char *name = NULL;
  cr_assert_eq(txattn_plan_tunable_count(plan), 1);
  cr_assert_eq(txattn_plan_tunable_get(plan, 0, &name, &v), TXATTN_OK);
  cr_expect_str_eq(name, TEST_FIT_TUNABLE);
  txattn_plan_free(plan);
  return v;
}

/* A kernel's fit_tunables (ABI 1.3) has the last word on a plan's tunables, the defaults' and the
   caller's alike: the test kernel cuts its block (default 64) to n_q. */
Test(dispatch, a_plan_carries_the_tunables_its_kernel_fitted_to_the_problem) {
  txattn_context *ctx = context_of(TEST_FIT_FILE, TEST_THRIFTY_FILE);
  cr_expect_eq(fitted(ctx, TEST_FIT_KERNEL, 16, -1), 16, "the default was not fitted");
  cr_expect_eq(fitted(ctx, TEST_FIT_KERNEL, 100, -1), 64, "a default that fits was changed");
  cr_expect_eq(fitted(ctx, TEST_FIT_KERNEL, 16, 40), 16, "the caller's value was not fitted");
  cr_expect_eq(fitted(ctx, TEST_FIT_KERNEL, 100, 40), 40, "a caller's value that fits was changed");
  txattn_context_free(ctx);
}

static void expect_all_of(const char *text, const char *const *words) {
  for (; *words; words++)
    cr_expect(strstr(text, *words) != NULL, "\"%s\" lacks \"%s\"", text, *words);
}

/* A fit that grows a value (beyond the given one, here beyond the declared range too) is the
   plugin's fault: no plan, TXATTN_E_PLUGIN, and a message naming the kernel, the tunable and the
   values. */
Test(dispatch, a_fit_that_grows_a_tunable_is_refused_as_the_plugins_fault) {
  txattn_context *ctx = context_of(TEST_BADFIT_FILE, TEST_THRIFTY_FILE);
  txattn_problem p = {.n_q = 16, .d_qk = 16};
  const char *names[] = {TEST_FIT_TUNABLE};
  const int64_t given[] = {10};
  txattn_plan *plan = NULL;
  cr_expect_eq(txattn_plan_create(ctx, &p, TEST_BADFIT_KERNEL, &plan), TXATTN_E_PLUGIN);
  cr_expect_null(plan);
  expect_all_of(txattn_last_error(), (const char *[]){TEST_BADFIT_KERNEL, "fit_tunables",
                                                      TEST_FIT_TUNABLE " = 64 into 65", NULL});
  cr_expect_eq(txattn_plan_create_tuned(ctx, &p, TEST_BADFIT_KERNEL, names, given, 1, &plan),
               TXATTN_E_PLUGIN);
  cr_expect_null(plan);
  expect_all_of(txattn_last_error(),
                (const char *[]){TEST_FIT_TUNABLE " = 10 into 11", "no larger than given", NULL});
  /* the dispatcher's own pick is not the broken kernel's business */
  cr_expect_eq(txattn_plan_create(ctx, &p, TEST_THRIFTY_KERNEL, &plan), TXATTN_OK, "%s",
               txattn_last_error());
  txattn_plan_free(plan);
  txattn_context_free(ctx);
}

/* Without a table, the estimate follows the shipped kernels' cost_pairs: a narrow window goes to
   the banded kernel (the tiled one computes whole 16-key panels and pays its per-row packing), a
   wide one and dense attention to the tiled kernel. Measured on Zen 2 (txtune bench, n = 16384,
   d = 64, 1 thread): window 8 + 8 banded.avx2 2.4 ms, tiled.avx2 4.4 ms; 128 + 128: 18.2 and 16.1
   ms. The AVX2 kernels are the ones whose speed was measured: the test caps the ISA there, and
   sets Zen 2's caches, which the tiled kernel's blocks and so its cost_pairs follow. */
Test(dispatch, the_estimate_sends_narrow_windows_to_banded_and_wide_ones_to_tiled) {
#if !defined(__x86_64__)
  cr_skip_test("the speed hints compared here were measured on x86-64 AVX2 kernels");
#else
  if (!cpu_has("avx2")) cr_skip_test("this CPU lacks AVX2");
  setenv("TXATTN_MAX_ISA", "avx2", 1);
  setenv("TXATTN_CACHES", "l1d=32K,l2=512K,l3=4M", 1);
  txattn_context *ctx = test_context(1);
  static const struct {
    txattn_mask mask;
    int64_t reach;
    const char *want;
  } cases[] = {{TXATTN_MASK_WINDOW, 8, "banded.avx2"},
               {TXATTN_MASK_WINDOW, 128, "tiled.avx2"},
               {TXATTN_MASK_NONE, 0, "tiled.avx2"},
               {TXATTN_MASK_CAUSAL, 0, "tiled.avx2"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    txattn_problem p = {.n_q = 16384,
                        .d_qk = 64,
                        .mask = cases[i].mask,
                        .window_left = cases[i].reach,
                        .window_right = cases[i].reach};
    txattn_plan *plan = NULL;
    cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
    cr_expect_str_eq(txattn_plan_kernel(plan), cases[i].want, "mask %d reach %lld: %s",
                     (int)cases[i].mask, (long long)cases[i].reach, txattn_plan_why(plan));
    txattn_plan_free(plan);
  }
  txattn_context_free(ctx);
#endif
}

/* ---- a third-party kernel's own word (issue 19) ---- */

static int kernel_listed(const txattn_context *ctx, const char *name) {
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  return test_kernel_find(&l, name) != NULL;
}

#define BIGHINT_FILE    "txattn_test_bighint.so"
#define BIGHINT_KERNEL  "bighint.scalar"
#define FAKENAIVE_FILE  "txattn_test_fakenaive.so"
#define UNMEASURED_NOTE "ranked after the shipped kernels: third-party, not measured by a table"

static const txattn_problem claims_shapes[] = {
    {.n_q = 64, .d_qk = 16},
    {.heads_q = 4, .heads_kv = 2, .n_q = 200, .n_kv = 300, .d_qk = 32, .mask = TXATTN_MASK_CAUSAL},
    {.n_q = 500, .d_qk = 64, .mask = TXATTN_MASK_WINDOW, .window_left = 4, .window_right = 4},
};

/* The kernel the context picks for p, and why (asserts that planning succeeds). */
static void pick(txattn_context *ctx, const txattn_problem *p, char *kernel, size_t ksize,
                 char *why, size_t wsize) {
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
  snprintf(kernel, ksize, "%s", txattn_plan_kernel(plan));
  snprintf(why, wsize, "%s", txattn_plan_why(plan));
  txattn_plan_free(plan);
}

/* The build tree's plugins and, in a directory of its own, a kernel that claims a million GFLOP/s:
   without a table the estimate takes a shipped kernel and says why the claim did not count. */
Test(dispatch, a_third_party_kernel_is_not_preferred_on_its_own_word) {
  char path[2 * SCRATCH_PATH_MAX + 2], kernel[64], why[1024];
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_copy_plugin(scratch, BIGHINT_FILE, NULL, 0644);
  snprintf(path, sizeof path, "%s:%s", TXATTN_TEST_PLUGIN_BUILD_DIR, scratch);
  txattn_context *ctx = test_context_at(path, 1);
  cr_assert(kernel_listed(ctx, BIGHINT_KERNEL), "%s did not load", BIGHINT_KERNEL);
  for (size_t i = 0; i < sizeof claims_shapes / sizeof claims_shapes[0]; i++) {
    pick(ctx, &claims_shapes[i], kernel, sizeof kernel, why, sizeof why);
    cr_expect_str_neq(kernel, BIGHINT_KERNEL, "shape %zu: picked on its own word: %s", i, why);
    cr_expect(strstr(why, UNMEASURED_NOTE ": " BIGHINT_KERNEL) != NULL,
              "shape %zu: the reason does not say why %s was passed over: %s", i, BIGHINT_KERNEL,
              why);
  }
  /* the caller may still name it, and alone it is the estimate's only candidate */
  txattn_plan *plan = NULL;
  cr_expect_eq(txattn_plan_create(ctx, &claims_shapes[0], BIGHINT_KERNEL, &plan), TXATTN_OK, "%s",
               txattn_last_error());
  txattn_plan_free(plan);
  txattn_context_free(ctx);
  ctx = test_context_at(scratch, 1);
  pick(ctx, &claims_shapes[0], kernel, sizeof kernel, why, sizeof why);
  cr_expect_str_eq(kernel, BIGHINT_KERNEL, "%s", why);
  cr_expect(strstr(why, "third-party, not measured by a table") != NULL, "%s", why);
  txattn_context_free(ctx);
}

/* A shipped plugin's name is not enough: a third-party "naive" found first takes the name (the
   shipped naive is refused as taken), but not the shipped kernels' standing. */
Test(dispatch, a_third_party_plugin_named_like_a_shipped_one_is_third_party) {
  char path[2 * SCRATCH_PATH_MAX + 2], kernel[64], why[1024];
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_copy_plugin(scratch, FAKENAIVE_FILE, NULL, 0644);
  snprintf(path, sizeof path, "%s:%s", scratch, TXATTN_TEST_PLUGIN_BUILD_DIR);
  txattn_context *ctx = test_context_at(path, 1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  const txattn_kernel_info *k = test_kernel_find(&l, "naive.scalar");
  cr_assert(k != NULL && strstr(k->path, FAKENAIVE_FILE) != NULL,
            "the third-party naive did not load first");
  for (size_t i = 0; i < sizeof claims_shapes / sizeof claims_shapes[0]; i++) {
    pick(ctx, &claims_shapes[i], kernel, sizeof kernel, why, sizeof why);
    cr_expect_str_neq(kernel, "naive.scalar", "shape %zu: %s", i, why);
    cr_expect(strstr(why, UNMEASURED_NOTE ": naive.scalar") != NULL, "shape %zu: %s", i, why);
  }
  txattn_context_free(ctx);
}

/* Adds the points of cls at (n, r) for each of ns x rs but the last (n, r), with bighint and
   naive.scalar measured there, bighint the faster if `wins`. */
static void add_bighint_points(txattn_table *t, const txattn_table_class *cls, const int64_t *ns,
                               size_t n_ns, const int64_t *rs, size_t n_rs, int wins) {
  size_t ci;
  cr_assert_eq(txattn_table_add_class(t, cls, &ci), TXATTN_OK, "%s", txattn_last_error());
  for (size_t j = 0; j < n_rs; j++)
    for (size_t i = 0; i < n_ns && !(n_rs > 1 && j == n_rs - 1 && i == n_ns - 1); i++) {
      const double n = (double)ns[i], big = wins ? 1e-6 : 1e-3;
      txattn_table_candidate c[] = {{BIGHINT_KERNEL, 0, NULL, NULL, big * n, 1e-7, -1},
                                    {"naive.scalar", 0, NULL, NULL, 1e-4 * n, 1e-7, -1}};
      cr_assert_eq(txattn_table_add_point(t, ci, ns[i], rs[j], c, 2), TXATTN_OK, "%s",
                   txattn_last_error());
    }
}

/* A table that measured the kernel the fastest makes it a candidate as good as any there: chosen
   where the table says it is fastest, and taken at its word by the estimate around the points it
   won (here a window shape whose corner point is missing, so the table has no entry). Elsewhere,
   in classes the table has not measured, beyond the n it measured, or around points where it lost,
   it stays third-party on its own word: its claim still counts for nothing there. */
Test(dispatch, a_third_party_kernel_a_table_measured_is_chosen_only_where_it_was_measured) {
  char path[2 * SCRATCH_PATH_MAX + 2], file[SCRATCH_PATH_MAX + 32], kernel[64], why[1024];
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_copy_plugin(scratch, BIGHINT_FILE, NULL, 0644);
  snprintf(path, sizeof path, "%s:%s", TXATTN_TEST_PLUGIN_BUILD_DIR, scratch);
  snprintf(file, sizeof file, "%s/dispatch.json", scratch);
  txattn_context *maker = test_context_at(path, 1);
  txattn_table *t = NULL;
  cr_assert_eq(txattn_table_create(maker, &t), TXATTN_OK, "%s", txattn_last_error());
  txattn_table_class cls = {.mask = TXATTN_MASK_CAUSAL,
                            .window = TXATTN_TABLE_WINDOW_NONE,
                            .d_qk = 16,
                            .d_v = 16,
                            .group = 1,
                            .threads = 1,
                            .batch = 1,
                            .heads_q = 1};
  static const int64_t ns[] = {64, 256}, no_r[] = {0}, rs[] = {4, 16};
  add_bighint_points(t, &cls, ns, 2, no_r, 1, 1);
  cls.mask = TXATTN_MASK_WINDOW;
  cls.window = TXATTN_TABLE_WINDOW_SYM;
  add_bighint_points(t, &cls, ns, 2, rs, 2, 1); /* no point at n = 256, r = 16 */
  cls.window = TXATTN_TABLE_WINDOW_LEFT;
  add_bighint_points(t, &cls, ns, 2, rs, 2, 0); /* the same, bighint the slower */
  cr_assert_eq(txattn_table_write(t, file), TXATTN_OK, "%s", txattn_last_error());
  txattn_table_free(t);
  txattn_context_free(maker);
  txattn_options opts = {.plugin_path = path, .table_path = file, .n_threads = 1};
  txattn_context *ctx = NULL;
  cr_assert_eq(txattn_context_create(&opts, &ctx), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(txattn_context_table_status(ctx), TXATTN_TABLE_LOADED, "%s",
               txattn_context_table_state(ctx));
  txattn_problem in_table = {.n_q = 100, .d_qk = 16, .mask = TXATTN_MASK_CAUSAL};
  pick(ctx, &in_table, kernel, sizeof kernel, why, sizeof why);
  cr_expect_str_eq(kernel, BIGHINT_KERNEL, "where the table measured it fastest: %s", why);
  txattn_problem around = {
      .n_q = 128, .d_qk = 16, .mask = TXATTN_MASK_WINDOW, .window_left = 8, .window_right = 8};
  pick(ctx, &around, kernel, sizeof kernel, why, sizeof why);
  cr_expect(strncmp(why, "estimate", 8) == 0, "the table had an entry: %s", why);
  cr_expect_str_eq(kernel, BIGHINT_KERNEL, "the estimate, around its measured points: %s", why);
  txattn_problem lost = around;
  lost.window_right = 0;
  pick(ctx, &lost, kernel, sizeof kernel, why, sizeof why);
  cr_expect(strncmp(why, "estimate", 8) == 0, "the table had an entry: %s", why);
  cr_expect_str_neq(kernel, BIGHINT_KERNEL, "around points where it lost: %s", why);
  cr_expect(strstr(why, UNMEASURED_NOTE ": " BIGHINT_KERNEL) != NULL, "%s", why);
  txattn_problem beyond = {.n_q = 1000, .d_qk = 16, .mask = TXATTN_MASK_CAUSAL};
  pick(ctx, &beyond, kernel, sizeof kernel, why, sizeof why);
  cr_expect_str_neq(kernel, BIGHINT_KERNEL, "beyond the n the table measured: %s", why);
  cr_expect(strstr(why, UNMEASURED_NOTE ": " BIGHINT_KERNEL) != NULL, "%s", why);
  for (size_t i = 0; i < sizeof claims_shapes / sizeof claims_shapes[0]; i++) {
    pick(ctx, &claims_shapes[i], kernel, sizeof kernel, why, sizeof why);
    cr_expect_str_neq(kernel, BIGHINT_KERNEL, "shape %zu, outside the table: %s", i, why);
    cr_expect(strstr(why, UNMEASURED_NOTE ": " BIGHINT_KERNEL) != NULL, "shape %zu: %s", i, why);
  }
  txattn_context_free(ctx);
}
