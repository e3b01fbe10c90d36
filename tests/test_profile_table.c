/* SPDX-License-Identifier: MIT */
/* What txtune profile puts in the dispatch table (tuner/profile/profile_table.c): a candidate
   whose runs a loaded machine stalled (a spread beyond the format's 100) is still recorded, and a
   class that joined the table but ended up without a point (the table refused it, or a budget ran
   out) is left out, so the table reads back: the format wants at least one point per class. On
   made-up tables: none of this depends on timing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "profile.h"
#include "scratch.h"
#include "table_case.h"
#include "test_context.h"

static char dir[SCRATCH_PATH_MAX];
static char file[SCRATCH_PATH_MAX + 64];

static void cleanup(void) {
  scratch_remove(dir);
  test_check_leaks();
}

TestSuite(profile_table, .init = test_env_clean, .fini = cleanup, .timeout = 300);

static void new_dir(void) {
  scratch_dir(dir, sizeof dir, 0755);
  snprintf(file, sizeof file, "%s/dispatch.json", dir);
}

/* A candidate of kernel with its first valid tunables in ctx, timed in full. */
static prof_cand timed(const txattn_context *ctx, const char *kernel, double time_s,
                       double spread) {
  prof_cand c;
  memset(&c, 0, sizeof c);
  c.name = kernel;
  c.n_tun = tc_tunables(ctx, kernel, 0, c.tun_names, c.tun_values);
  c.time_s = time_s;
  c.spread = spread;
  c.max_error = 1e-7;
  c.n_runs = 3;
  return c;
}

Test(profile_table, a_stalled_run_leaves_a_spread_the_table_takes) {
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  size_t ci = tc_add_causal(ctx, t);
  /* a run stalled 156 times its length, as one was under load: the raw spread is refused */
  prof_cand stalled = timed(ctx, "naive.scalar", 2e-6, 156.039);
  prof_cand calm = timed(ctx, "tiled.scalar", 3e-6, 0.02);
  prof_cand once = timed(ctx, "masked.scalar", 9e-6, -1); /* one run: no spread */
  once.n_runs = 1;
  txattn_table_candidate raw = prof_table_candidate(&stalled);
  raw.spread = stalled.spread;
  cr_expect_eq(txattn_table_add_point(t, ci, 512, 0, &raw, 1), TXATTN_E_INVALID,
               "the format caps a spread at 100 (docs/dispatch_table.md)");
  txattn_table_candidate c[3] = {prof_table_candidate(&stalled), prof_table_candidate(&calm),
                                 prof_table_candidate(&once)};
  cr_expect_eq(c[0].spread, PROF_MAX_SPREAD);
  cr_expect_eq(c[1].spread, 0.02);
  cr_expect_lt(c[2].spread, 0, "a candidate timed once has no spread");
  cr_expect_str_eq(c[0].kernel, "naive.scalar");
  cr_expect_eq(c[0].time_s, 2e-6);
  cr_expect_eq(c[0].max_error, 1e-7);
  TC_ASSERT_OK(txattn_table_add_point_chosen(t, ci, 512, 0, c, 3, 0));
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* Classes none (empty), causal, none t1 d32 (empty), window; a tie in causal; exclusions in the
   empty classes and the causal one; profile settings. */
static txattn_table *table_with_empty_classes(const txattn_context *ctx, size_t *causal,
                                              size_t *window) {
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  TC_ASSERT_OK(txattn_table_set_profile(t, "{\"mode\": \"quick\", \"budget_s\": 1}"));
  txattn_table_class none = {.mask = TXATTN_MASK_NONE,
                             .d_qk = TC_D,
                             .d_v = TC_D,
                             .group = 1,
                             .threads = 1,
                             .batch = 1,
                             .heads_q = 1},
                     none32 = none;
  none32.d_qk = none32.d_v = 32;
  TC_ASSERT_OK(txattn_table_add_class(t, &none, NULL));
  *causal = tc_add_causal(ctx, t);
  TC_ASSERT_OK(txattn_table_add_class(t, &none32, NULL));
  *window = tc_add_window(ctx, t);
  /* a tie at n = 512: tiled.scalar chosen, 2% slower than naive.scalar */
  prof_cand c[2] = {timed(ctx, "naive.scalar", 1e-3, 0.03),
                    timed(ctx, "tiled.scalar", 1.02e-3, 0.03)};
  txattn_table_candidate tc[2] = {prof_table_candidate(&c[0]), prof_table_candidate(&c[1])};
  TC_ASSERT_OK(txattn_table_add_point_chosen(t, *causal, 512, 0, tc, 2, 1));
  txattn_table_class cc = TXATTN_TABLE_CLASS_INIT;
  TC_ASSERT_OK(txattn_table_class_get(t, *causal, &cc, NULL, NULL));
  const txattn_table_class keys[] = {none, cc, none32};
  for (size_t i = 0; i < 3; i++) {
    txattn_table_exclusion x = {.cls = keys[i],
                                .kernel = "sloppy.scalar",
                                .n = 193,
                                .max_error = i == 1 ? NAN : 1e-3,
                                .reason = "not exact (a test)"};
    TC_ASSERT_OK(txattn_table_add_exclusion(t, &x));
  }
  return t;
}

Test(profile_table, a_class_without_a_point_is_left_out_and_the_rest_kept_as_it_was) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  size_t causal, window;
  txattn_table *t = table_with_empty_classes(ctx, &causal, &window), *back = NULL;
  /* as it is, the table is written without its empty classes, their exclusions kept */
  TC_ASSERT_OK(txattn_table_write(t, file));
  TC_ASSERT_OK(txattn_table_load(file, &back));
  txattn_table_header hb = TXATTN_TABLE_HEADER_INIT;
  TC_ASSERT_OK(txattn_table_header_get(back, &hb));
  cr_expect(hb.n_classes == 2 && hb.n_excluded == 3, "%zu classes, %zu exclusions", hb.n_classes,
            hb.n_excluded);
  /* the classes kept are the others, in their order, the tie and every exclusion with them */
  txattn_table_class a = TXATTN_TABLE_CLASS_INIT, b = TXATTN_TABLE_CLASS_INIT;
  TC_ASSERT_OK(txattn_table_class_get(t, causal, &a, NULL, NULL));
  TC_ASSERT_OK(txattn_table_class_get(back, 0, &b, NULL, NULL));
  cr_expect(a.mask == b.mask && a.d_qk == b.d_qk, "the causal class first");
  TC_ASSERT_OK(txattn_table_class_get(t, window, &a, NULL, NULL));
  TC_ASSERT_OK(txattn_table_class_get(back, 1, &b, NULL, NULL));
  cr_expect(a.mask == b.mask && a.window == b.window, "the window class second");
  txattn_table_point tie = TXATTN_TABLE_POINT_INIT;
  TC_ASSERT_OK(txattn_table_point_get(back, 0, 2, &tie)); /* 64, 256, 512 */
  cr_expect(tie.n == 512 && tie.tie == 1, "n %lld tie %d", (long long)tie.n, tie.tie);
  int nan_seen = 0;
  for (size_t i = 0; i < hb.n_excluded; i++) {
    txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
    TC_ASSERT_OK(txattn_table_exclusion_get(back, i, &x));
    cr_expect(x.n == 193 && strcmp(x.reason, "not exact (a test)") == 0);
    nan_seen += isnan(x.max_error);
  }
  cr_expect_eq(nan_seen, 1);
  txattn_table_free(back);
  txattn_table_free(t);
  txattn_context_free(ctx);
}
