/* SPDX-License-Identifier: MIT */
/* The library is silent unless TXATTN_VERBOSE is set: not a byte on stdout or stderr while it loads
 * broken plugins, refuses bad arguments, plans and computes. With TXATTN_VERBOSE=1 it explains its
 * dispatch decisions on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "attn_case.h"
#include "scratch.h"
#include "test_context.h"
#include "test_plugin_names.h"
#include "txattn/txattn.h"

static char scratch[SCRATCH_PATH_MAX];

static void capture(void) {
  test_env_clean();
  cr_redirect_stdout();
  cr_redirect_stderr();
}

static void cleanup(void) {
  scratch_remove(scratch);
  test_check_leaks();
}

TestSuite(verbosity, .init = capture, .fini = cleanup, .timeout = 60);

/* Everything a program might do, good and bad, on a context with broken plugins in its path. */
static void exercise(txattn_context *ctx) {
  struct shape s = {.heads_q = 2, .n_q = 9, .n_kv = 12, .d_qk = 8, .mask = TXATTN_MASK_CAUSAL};
  struct attn_case c;
  case_init(&c, &s, 1);
  txattn_tensors t = case_tensors(&c);
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &c.problem, NULL, &plan), TXATTN_OK);
  cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK);
  txattn_plan_free(plan);
  cr_assert_eq(txattn_attention(ctx, &c.problem, &t), TXATTN_OK);
  cr_assert_eq(txattn_reference(&c.problem, &t), TXATTN_OK);
  plan = NULL;
  cr_assert_neq(txattn_plan_create(ctx, &c.problem, "no.such.kernel", &plan), TXATTN_OK);
  cr_assert_neq(txattn_plan_create(ctx, &c.problem, TEST_FOREIGN_KERNEL, &plan), TXATTN_OK);
  txattn_problem bad = c.problem;
  bad.d_qk = -1;
  cr_assert_neq(txattn_attention(ctx, &bad, &t), TXATTN_OK);
  t.o = NULL;
  cr_assert_neq(txattn_reference(&c.problem, &t), TXATTN_OK);
  case_free(&c);
}

Test(verbosity, silent_without_txattn_verbose) {
  char path[2 * SCRATCH_PATH_MAX];
  txattn_context *ctx =
      test_context_at(scratch_everything(scratch, sizeof scratch, path, sizeof path), 0);
  cr_assert(txattn_rejected_count(ctx) > 0, "the broken plugins were not even seen");
  exercise(ctx);
  txattn_context_free(ctx);
  fflush(stdout);
  fflush(stderr);
  cr_expect_stdout_eq_str("", "the library wrote to stdout");
  cr_expect_stderr_eq_str("", "the library wrote to stderr without TXATTN_VERBOSE");
}

Test(verbosity, txattn_verbose_explains_each_decision) {
  cr_assert_eq(setenv("TXATTN_VERBOSE", "1", 1), 0);
  txattn_context *ctx = test_context(0);
  txattn_problem p = {.n_q = 64, .d_qk = 32, .mask = TXATTN_MASK_CAUSAL};
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
  char chosen[128];
  snprintf(chosen, sizeof chosen, "%s", txattn_plan_kernel(plan));
  txattn_plan_free(plan);
  txattn_context_free(ctx);
  fflush(stdout);
  fflush(stderr);
  static char log[1 << 16];
  size_t n = fread(log, 1, sizeof log - 1, cr_get_redirected_stderr());
  log[n] = '\0';
  cr_expect(strstr(log, chosen) != NULL,
            "TXATTN_VERBOSE=1: stderr does not name the chosen %s:\n%s", chosen, log);
  cr_expect_stdout_eq_str("", "TXATTN_VERBOSE logs to stderr, never stdout");
}
