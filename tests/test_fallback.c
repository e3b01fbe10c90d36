/* SPDX-License-Identifier: MIT */
/* One kernel's failure is never the caller's (issue 16): when the kernel the dispatcher chose, by
 * the estimate or by a dispatch table, cannot plan a problem (a default outside its declared range,
 * a workspace no machine has) or fails to run it, the next candidate takes over; the plan's reason
 * and TXATTN_VERBOSE say what failed and why; only when every kernel fails does the caller get an
 * error, naming each. A caller who names a kernel still gets that kernel's own error. The broken
 * kernels are test plugins that each claim to be the fastest (tests/plugins/exact_plugin.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "attn_case.h"
#include "case_run.h"
#include "scratch.h"
#include "table_case.h"
#include "test_context.h"
#include "test_plugin_names.h"
#include "txattn/table.h"
#include "txattn/txattn.h"

static char dir[SCRATCH_PATH_MAX];
static char file[SCRATCH_PATH_MAX + 64];

static void cleanup(void) {
  scratch_remove(dir);
  test_check_leaks();
}

TestSuite(fallback, .init = test_env_clean, .fini = cleanup, .timeout = 120);

/* A scratch plugin directory holding the given test plugins (NULL-terminated); returns it. */
static const char *plugins(const char *const *files) {
  scratch_dir(dir, sizeof dir, 0755);
  for (; *files; files++) scratch_copy_plugin(dir, *files, NULL, 0644);
  return dir;
}

static txattn_context *context_of(const char *const *files) {
  return test_context_at(plugins(files), 1);
}

static const struct shape shape = {
    .heads_q = 2, .n_q = 40, .n_kv = 48, .d_qk = 16, .d_v = 8, .mask = TXATTN_MASK_CAUSAL};

static void expect_all_of(const char *text, const char *const *words) {
  for (; *words; words++)
    cr_expect(strstr(text, *words) != NULL, "\"%s\" lacks \"%s\"", text, *words);
}

Test(fallback, kernels_that_cannot_plan_hand_over_to_the_next_in_the_estimates_ranking) {
  txattn_context *ctx =
      context_of((const char *[]){TEST_BADDEFAULT_FILE, TEST_HUGEWS_FILE, TEST_GOOD_FILE, NULL});
  struct attn_case c;
  case_init(&c, &shape, 1);
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &c.problem, NULL, &plan), TXATTN_OK, "%s",
               txattn_last_error());
  const char *why = txattn_plan_why(plan);
  cr_expect_str_eq(txattn_plan_kernel(plan), TEST_GOOD_KERNEL, "%s", why);
  /* the estimate ranks baddefault (1e6 GFLOP/s), then hugews (1e5), then good: both failures are
     said, in that order, each with its reason, before the choice */
  expect_all_of(why, (const char *[]){TEST_BADDEFAULT_KERNEL " could not plan (TXATTN_E_PLUGIN: ",
                                      "default_tunables gave " TEST_BAD_DEFAULT_TUNABLE " = 1000",
                                      TEST_HUGEWS_KERNEL " could not plan (TXATTN_E_NOMEM: ",
                                      "workspace", "estimate (", TEST_GOOD_KERNEL, NULL});
  const char *bad = strstr(why, TEST_BADDEFAULT_KERNEL), *huge = strstr(why, TEST_HUGEWS_KERNEL),
             *est = strstr(why, "estimate (");
  cr_expect(bad && huge && est && bad < huge && huge < est, "order: %s", why);
  cr_expect(strlen(why) < 768, "the reason is bounded: %zu characters", strlen(why));
  /* the same failures as data, so that a tool need not read the reason */
  cr_assert_eq(txattn_plan_failed_count(plan), 2);
  const char *name = NULL;
  txattn_status st = TXATTN_OK;
  cr_assert_eq(txattn_plan_failed_get(plan, 0, &name, &st), TXATTN_OK);
  cr_expect_str_eq(name, TEST_BADDEFAULT_KERNEL);
  cr_expect_eq(st, TXATTN_E_PLUGIN);
  cr_assert_eq(txattn_plan_failed_get(plan, 1, &name, &st), TXATTN_OK);
  cr_expect_str_eq(name, TEST_HUGEWS_KERNEL);
  cr_expect_eq(st, TXATTN_E_NOMEM);
  cr_expect_eq(txattn_plan_failed_get(plan, 2, &name, &st), TXATTN_E_INVALID);
  txattn_plan_free(plan);
  case_run_reference(&c);
  case_run_kernel(ctx, &c, NULL, "after two kernels failed to plan");
  case_run_attention(ctx, &c, "txattn_attention after two kernels failed to plan");
  txattn_context_free(ctx);
  case_free(&c);
}

/* The test kernels differ only in what breaks: the good one takes over at every shape. */
Test(fallback, the_dispatcher_plans_every_shape_past_a_broken_default) {
  static const struct shape shapes[] = {
      {.n_q = 1, .n_kv = 300, .d_qk = 64, .mask = TXATTN_MASK_CAUSAL},
      {.batch = 2, .heads_q = 4, .heads_kv = 1, .n_q = 33, .n_kv = 33, .d_qk = 32},
      {.n_q = 50, .n_kv = 50, .d_qk = 8, .mask = TXATTN_MASK_WINDOW, .left = 3, .right = 2},
  };
  txattn_context *ctx = context_of((const char *[]){TEST_BADDEFAULT_FILE, TEST_GOOD_FILE, NULL});
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    char desc[256];
    struct attn_case c;
    shape_describe(&shapes[i], desc, sizeof desc);
    case_init(&c, &shapes[i], 7 + i);
    case_run_reference(&c);
    case_run_kernel(ctx, &c, NULL, desc);
    case_run_attention(ctx, &c, desc);
    case_free(&c);
  }
  txattn_context_free(ctx);
}

Test(fallback, a_named_or_forced_kernel_still_returns_its_own_error) {
  txattn_context *ctx =
      context_of((const char *[]){TEST_BADDEFAULT_FILE, TEST_HUGEWS_FILE, TEST_GOOD_FILE, NULL});
  txattn_problem p = {.n_q = 16, .d_qk = 16};
  txattn_plan *plan = NULL;
  cr_expect_eq(txattn_plan_create(ctx, &p, TEST_BADDEFAULT_KERNEL, &plan), TXATTN_E_PLUGIN);
  cr_expect_null(plan);
  expect_all_of(txattn_last_error(), (const char *[]){TEST_BADDEFAULT_KERNEL, "default_tunables",
                                                      "outside [1, 64]", NULL});
  cr_expect(strstr(txattn_last_error(), TEST_GOOD_KERNEL) == NULL, "%s", txattn_last_error());
  const char *names[] = {TEST_BAD_DEFAULT_TUNABLE};
  const int64_t values[] = {8};
  cr_expect_eq(txattn_plan_create_tuned(ctx, &p, TEST_BADDEFAULT_KERNEL, names, values, 1, &plan),
               TXATTN_E_PLUGIN, "the defaults are checked before the caller's values replace them");
  cr_expect_null(plan);
  cr_expect_eq(txattn_plan_create(ctx, &p, TEST_HUGEWS_KERNEL, &plan), TXATTN_E_NOMEM);
  cr_expect_null(plan);
  expect_all_of(txattn_last_error(), (const char *[]){TEST_HUGEWS_KERNEL, "workspace", NULL});
  cr_assert_eq(setenv("TXATTN_FORCE_KERNEL", TEST_BADDEFAULT_KERNEL, 1), 0);
  cr_expect_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_E_PLUGIN);
  cr_expect_null(plan);
  expect_all_of(txattn_last_error(),
                (const char *[]){TEST_BADDEFAULT_KERNEL, "default_tunables", NULL});
  struct attn_case c;
  case_init(&c, &shape, 2);
  txattn_tensors t = case_tensors(&c);
  cr_expect_eq(txattn_attention(ctx, &c.problem, &t), TXATTN_E_PLUGIN);
  expect_all_of(txattn_last_error(), (const char *[]){TEST_BADDEFAULT_KERNEL, NULL});
  case_free(&c);
  txattn_context_free(ctx);
}

Test(fallback, a_forced_kernel_that_fails_to_run_is_not_replaced) {
  txattn_context *ctx = context_of((const char *[]){TEST_RUNFAIL_FILE, TEST_GOOD_FILE, NULL});
  cr_assert_eq(setenv("TXATTN_FORCE_KERNEL", TEST_RUNFAIL_KERNEL, 1), 0);
  struct attn_case c;
  case_init(&c, &shape, 3);
  txattn_tensors t = case_tensors(&c);
  cr_expect_eq(txattn_attention(ctx, &c.problem, &t), TXATTN_E_INTERNAL);
  expect_all_of(txattn_last_error(), (const char *[]){TEST_RUNFAIL_KERNEL, NULL});
  cr_expect(strstr(txattn_last_error(), TEST_GOOD_KERNEL) == NULL, "%s", txattn_last_error());
  case_free(&c);
  txattn_context_free(ctx);
}

/* testrunfail plans (and the estimate prefers it), so txattn_plan_create gives its plan, whose
   execution returns the kernel's error; txattn_attention instead runs the next candidate, which
   rewrites the output the failed run spoiled, and keeps that plan. */
Test(fallback, txattn_attention_retries_past_a_kernel_that_fails_to_run) {
  txattn_context *ctx = context_of((const char *[]){TEST_RUNFAIL_FILE, TEST_GOOD_FILE, NULL});
  struct attn_case c;
  case_init(&c, &shape, 4);
  case_run_reference(&c);
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &c.problem, NULL, &plan), TXATTN_OK, "%s",
               txattn_last_error());
  cr_expect_str_eq(txattn_plan_kernel(plan), TEST_RUNFAIL_KERNEL, "%s", txattn_plan_why(plan));
  txattn_tensors t = case_tensors(&c);
  cr_expect_eq(txattn_plan_execute(plan, &t), TXATTN_E_INTERNAL,
               "an explicit plan names one kernel: its error is the caller's");
  expect_all_of(txattn_last_error(), (const char *[]){TEST_RUNFAIL_KERNEL, NULL});
  txattn_plan_free(plan);
  for (int round = 0; round < 3; round++) { /* the first retries, the others hit the cache */
    char desc[64];
    snprintf(desc, sizeof desc, "txattn_attention, round %d", round);
    case_run_attention(ctx, &c, desc);
  }
  txattn_context_free(ctx);
  case_free(&c);
}

Test(fallback, only_broken_kernels_fail_plan_create_with_each_ones_reason) {
  txattn_context *ctx = context_of((const char *[]){TEST_BADDEFAULT_FILE, TEST_HUGEWS_FILE, NULL});
  struct attn_case c;
  case_init(&c, &shape, 5);
  txattn_plan *plan = NULL;
  /* the first real failure's status: baddefault's E_PLUGIN, then hugews's E_NOMEM */
  cr_expect_eq(txattn_plan_create(ctx, &c.problem, NULL, &plan), TXATTN_E_PLUGIN, "%s",
               txattn_last_error());
  cr_expect_null(plan);
  const char *words[] = {"txattn_plan_create: no kernel could plan this problem",
                         TEST_BADDEFAULT_KERNEL " could not plan (TXATTN_E_PLUGIN: ",
                         "default_tunables",
                         TEST_HUGEWS_KERNEL " could not plan (TXATTN_E_NOMEM: ",
                         "workspace",
                         NULL};
  expect_all_of(txattn_last_error(), words);
  txattn_tensors t = case_tensors(&c);
  cr_expect_eq(txattn_attention(ctx, &c.problem, &t), TXATTN_E_PLUGIN, "%s", txattn_last_error());
  expect_all_of(txattn_last_error(),
                (const char *[]){"txattn_attention: no kernel could plan this problem",
                                 TEST_BADDEFAULT_KERNEL, TEST_HUGEWS_KERNEL, NULL});
  case_free(&c);
  txattn_context_free(ctx);
}

/* Every kernel fails to run: E_UNSUPPORTED only if each one declined, else the first real
   failure's status; the message names each. */
Test(fallback, only_kernels_that_fail_to_run_fail_txattn_attention_with_each_ones_reason) {
  txattn_context *ctx = context_of((const char *[]){TEST_RUNFAIL_FILE, TEST_RUNDECLINE_FILE, NULL});
  struct attn_case c;
  case_init(&c, &shape, 6);
  txattn_tensors t = case_tensors(&c);
  cr_expect_eq(txattn_attention(ctx, &c.problem, &t), TXATTN_E_INTERNAL, "%s", txattn_last_error());
  expect_all_of(txattn_last_error(),
                (const char *[]){"txattn_attention: no kernel could compute this problem",
                                 TEST_RUNFAIL_KERNEL " failed at run time (TXATTN_E_INTERNAL",
                                 TEST_RUNDECLINE_KERNEL " failed at run time (TXATTN_E_UNSUPPORTED",
                                 NULL});
  txattn_context_free(ctx);
  scratch_remove(dir);
  ctx = context_of((const char *[]){TEST_RUNDECLINE_FILE, NULL});
  cr_expect_eq(txattn_attention(ctx, &c.problem, &t), TXATTN_E_UNSUPPORTED, "%s",
               txattn_last_error());
  expect_all_of(txattn_last_error(), (const char *[]){TEST_RUNDECLINE_KERNEL, NULL});
  txattn_context_free(ctx);
  case_free(&c);
}

/* A table whose winner (testhugews, testspare runner-up) cannot plan: the estimate's ranking
   without it decides (testgood and testspare tie on their hints; the smaller name wins). */
Test(fallback, a_tables_choice_that_cannot_plan_hands_over_to_the_estimate) {
  const char *path =
      plugins((const char *[]){TEST_HUGEWS_FILE, TEST_GOOD_FILE, TEST_SPARE_FILE, NULL});
  snprintf(file, sizeof file, "%s/dispatch.json", dir);
  txattn_context *maker = tc_context(path, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(maker, &t));
  txattn_table_class cls = {.mask = TXATTN_MASK_CAUSAL,
                            .window = TXATTN_TABLE_WINDOW_NONE,
                            .d_qk = TC_D,
                            .d_v = TC_D,
                            .group = 1,
                            .threads = 1,
                            .decode = 0,
                            .batch = 1,
                            .heads_q = 1};
  size_t ci;
  TC_ASSERT_OK(txattn_table_add_class(t, &cls, &ci));
  for (int64_t n = 64; n <= 256; n *= 4) {
    tc_cand cands[] = {{TEST_HUGEWS_KERNEL, 1e-6 * (double)n, 0},
                       {TEST_SPARE_KERNEL, 2e-6 * (double)n, 0},
                       {TEST_GOOD_KERNEL, 3e-6 * (double)n, 0}};
    tc_add_point(maker, t, ci, n, 0, cands, 3);
  }
  TC_ASSERT_OK(txattn_table_write(t, file));
  txattn_table_free(t);
  txattn_context_free(maker);
  txattn_context *ctx = tc_context(path, file, 1);
  cr_assert_eq(txattn_context_table_status(ctx), TXATTN_TABLE_LOADED, "%s",
               txattn_context_table_state(ctx));
  struct shape s = {.n_q = 100, .d_qk = TC_D, .mask = TXATTN_MASK_CAUSAL};
  struct attn_case c;
  case_init(&c, &s, 8);
  txattn_plan *plan = NULL;
  TC_ASSERT_OK(txattn_plan_create(ctx, &c.problem, NULL, &plan));
  const char *why = txattn_plan_why(plan);
  cr_expect_str_eq(txattn_plan_kernel(plan), TEST_GOOD_KERNEL, "%s", why);
  expect_all_of(why, (const char *[]){TEST_HUGEWS_KERNEL " could not plan (TXATTN_E_NOMEM",
                                      "estimate (the table's choice " TEST_HUGEWS_KERNEL " failed)",
                                      TEST_SPARE_KERNEL, NULL});
  txattn_plan_free(plan);
  /* the forced kernel is still the caller's choice, table or not */
  cr_assert_eq(setenv("TXATTN_FORCE_KERNEL", TEST_HUGEWS_KERNEL, 1), 0);
  cr_expect_eq(txattn_plan_create(ctx, &c.problem, NULL, &plan), TXATTN_E_NOMEM);
  cr_assert_eq(unsetenv("TXATTN_FORCE_KERNEL"), 0);
  case_run_reference(&c);
  case_run_kernel(ctx, &c, NULL, "the table's choice failed");
  case_run_attention(ctx, &c, "txattn_attention, the table's choice failed");
  txattn_context_free(ctx);
  case_free(&c);
}

/* TXATTN_VERBOSE says each failure on stderr, once: the plan that took over is the one cached. */
static void capture(void) {
  test_env_clean();
  cr_redirect_stderr();
}

Test(fallback, txattn_verbose_logs_each_failure, .init = capture) {
  cr_assert_eq(setenv("TXATTN_VERBOSE", "1", 1), 0);
  txattn_context *ctx =
      context_of((const char *[]){TEST_BADDEFAULT_FILE, TEST_RUNFAIL_FILE, TEST_GOOD_FILE, NULL});
  struct attn_case c;
  case_init(&c, &shape, 9);
  txattn_tensors t = case_tensors(&c);
  for (int round = 0; round < 3; round++)
    cr_assert_eq(txattn_attention(ctx, &c.problem, &t), TXATTN_OK, "%s", txattn_last_error());
  txattn_context_free(ctx);
  case_free(&c);
  fflush(stderr);
  static char log[1 << 16];
  size_t n = fread(log, 1, sizeof log - 1, cr_get_redirected_stderr());
  log[n] = '\0';
  const char *planned = "kernel " TEST_BADDEFAULT_KERNEL " could not plan: TXATTN_E_PLUGIN: ";
  const char *ran = "kernel " TEST_RUNFAIL_KERNEL " failed at run time: TXATTN_E_INTERNAL";
  const char *p = strstr(log, planned), *r = strstr(log, ran);
  cr_expect(p != NULL && strstr(p, "default_tunables") != NULL, "no \"%s\" in:\n%s", planned, log);
  cr_expect(r != NULL, "no \"%s\" in:\n%s", ran, log);
  cr_expect(r == NULL || strstr(r + 1, ran) == NULL,
            "the plan that took over should be cached, so the failure happens once:\n%s", log);
}
