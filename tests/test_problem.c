/* SPDX-License-Identifier: MIT */
/* The small public helpers: problem defaults, visible-pair counts, txattn_visible_range of
 * plugin.h, versions, status, ISA and mask names and the last-error string. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "oracle.h"
#include "test_context.h"
#include "txattn/plugin.h"
#include "txattn/txattn.h"

TestSuite(problem, .init = test_env_clean, .fini = test_check_leaks, .timeout = 60);

Test(problem, resolve_fills_the_documented_defaults) {
  txattn_problem p = {.n_q = 5, .d_qk = 16}, r = TXATTN_PROBLEM_INIT;
  txattn_status s = txattn_problem_resolve(&p, &r);
  cr_assert_eq(s, TXATTN_OK, "%s", txattn_last_error());
  cr_expect_eq(r.batch, 1);
  cr_expect_eq(r.heads_q, 1);
  cr_expect_eq(r.heads_kv, 1);
  cr_expect_eq(r.n_q, 5);
  cr_expect_eq(r.n_kv, 5);
  cr_expect_eq(r.d_qk, 16);
  cr_expect_eq(r.d_v, 16);
  cr_expect_eq(r.mask, TXATTN_MASK_NONE);
  cr_expect_float_eq(r.scale, 0.25f, 1e-7f, "default scale 1/sqrt(16), got %g", (double)r.scale);

  p = (txattn_problem){.heads_q = 6, .n_q = 3, .d_qk = 7};
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK, "%s", txattn_last_error());
  cr_expect_eq(r.heads_kv, 6, "heads_kv defaults to heads_q");
  cr_expect_float_eq(r.scale, (float)(1.0 / sqrt(7.0)), 1e-7f, "scale %g", (double)r.scale);
}

Test(problem, resolve_keeps_explicit_fields) {
  txattn_problem p = {.batch = 3,
                      .heads_q = 8,
                      .heads_kv = 2,
                      .n_q = 4,
                      .n_kv = 9,
                      .d_qk = 5,
                      .d_v = 11,
                      .mask = TXATTN_MASK_WINDOW,
                      .window_left = TXATTN_UNBOUNDED,
                      .window_right = 2,
                      .scale = -1.5f};
  txattn_problem r = TXATTN_PROBLEM_INIT;
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK, "%s", txattn_last_error());
  cr_expect(p.batch == r.batch && p.heads_q == r.heads_q && p.heads_kv == r.heads_kv &&
                p.n_q == r.n_q && p.n_kv == r.n_kv && p.d_qk == r.d_qk && p.d_v == r.d_v &&
                p.mask == r.mask && p.window_left == r.window_left &&
                p.window_right == r.window_right && p.scale == r.scale,
            "a fully explicit problem must resolve to itself");
}

static double count_pairs(const txattn_problem *p) {
  double pairs = 0.0;
  for (int64_t i = 0; i < p->n_q; i++) pairs += (double)oracle_visible_count(p, i);
  return pairs * (double)(p->batch * p->heads_q);
}

Test(problem, visible_pairs_count_what_the_mask_shows) {
  const txattn_problem cases[] = {
      {.batch = 1, .heads_q = 1, .heads_kv = 1, .n_q = 7, .n_kv = 7, .d_qk = 1, .d_v = 1},
      {.batch = 2,
       .heads_q = 4,
       .heads_kv = 2,
       .n_q = 9,
       .n_kv = 9,
       .d_qk = 4,
       .d_v = 4,
       .mask = TXATTN_MASK_CAUSAL,
       .scale = 1},
      {.batch = 1,
       .heads_q = 2,
       .heads_kv = 1,
       .n_q = 12,
       .n_kv = 5,
       .d_qk = 4,
       .d_v = 4,
       .mask = TXATTN_MASK_CAUSAL,
       .scale = 1},
      {.batch = 3,
       .heads_q = 1,
       .heads_kv = 1,
       .n_q = 40,
       .n_kv = 40,
       .d_qk = 4,
       .d_v = 4,
       .mask = TXATTN_MASK_WINDOW,
       .window_left = 3,
       .window_right = 1,
       .scale = 1},
      {.batch = 1,
       .heads_q = 1,
       .heads_kv = 1,
       .n_q = 3,
       .n_kv = 30,
       .d_qk = 4,
       .d_v = 4,
       .mask = TXATTN_MASK_WINDOW,
       .window_left = INT64_MAX,
       .window_right = 0,
       .scale = 1},
      {.batch = 1,
       .heads_q = 1,
       .heads_kv = 1,
       .n_q = 30,
       .n_kv = 3,
       .d_qk = 4,
       .d_v = 4,
       .mask = TXATTN_MASK_WINDOW,
       .window_left = 0,
       .window_right = TXATTN_UNBOUNDED,
       .scale = 1},
  };
  for (size_t x = 0; x < sizeof cases / sizeof cases[0]; x++) {
    double got = txattn_problem_visible_pairs(&cases[x]);
    cr_expect_eq(got, count_pairs(&cases[x]), "case %zu: %g visible pairs, counted %g", x, got,
                 count_pairs(&cases[x]));
  }
  txattn_problem bad = {.n_q = 0, .d_qk = 4};
  cr_expect_eq(txattn_problem_visible_pairs(&bad), -1.0, "an invalid problem gives -1");
}

/* txattn_visible_range is what every kernel uses, so it is checked against the contract's predicate
   over all mask kinds, alignments and windows up to INT64_MAX. */
Test(problem, plugin_visible_range_matches_the_contract) {
  const int64_t sizes[] = {1, 2, 5, 9};
  const int64_t windows[] = {0, 1, 3, 100, INT64_MAX, TXATTN_UNBOUNDED};
  const size_t nw = sizeof windows / sizeof windows[0];
  for (size_t a = 0; a < 4; a++)
    for (size_t b = 0; b < 4; b++)
      for (int mask = 0; mask < 3; mask++)
        for (size_t wl = 0; wl < (mask == 2 ? nw : 1); wl++)
          for (size_t wr = 0; wr < (mask == 2 ? nw : 1); wr++) {
            txattn_problem p = {.batch = 1,
                                .heads_q = 1,
                                .heads_kv = 1,
                                .n_q = sizes[a],
                                .n_kv = sizes[b],
                                .d_qk = 1,
                                .d_v = 1,
                                .mask = (txattn_mask)mask,
                                .window_left = windows[wl],
                                .window_right = windows[wr],
                                .scale = 1};
            for (int64_t i = 0; i < p.n_q; i++) {
              int64_t lo, hi;
              txattn_visible_range(&p, i, &lo, &hi);
              for (int64_t j = 0; j < p.n_kv; j++)
                cr_assert_eq(j >= lo && j < hi, oracle_visible(&p, i, j),
                             "n_q %lld n_kv %lld mask %d window (%lld, %lld) row %lld key %lld: "
                             "range [%lld, %lld)",
                             (long long)p.n_q, (long long)p.n_kv, mask, (long long)windows[wl],
                             (long long)windows[wr], (long long)i, (long long)j, (long long)lo,
                             (long long)hi);
            }
          }
}

Test(problem, version_matches_the_header) {
  char expect[32];
  snprintf(expect, sizeof expect, "%d.%d.%d", TXATTN_VERSION_MAJOR, TXATTN_VERSION_MINOR,
           TXATTN_VERSION_PATCH);
  cr_expect_eq(txattn_version(), TXATTN_VERSION);
  cr_expect_str_eq(txattn_version_string(), TXATTN_VERSION_STRING);
  cr_expect_str_eq(TXATTN_VERSION_STRING, expect);
}

Test(problem, every_status_has_its_name) {
  static const char *names[] = {"TXATTN_OK",          "TXATTN_E_INVALID", "TXATTN_E_UNSUPPORTED",
                                "TXATTN_E_NOT_FOUND", "TXATTN_E_NOMEM",   "TXATTN_E_PLUGIN",
                                "TXATTN_E_TABLE",     "TXATTN_E_IO",      "TXATTN_E_INTERNAL"};
  for (int s = 0; s < 9; s++) {
    const char *got = txattn_status_name((txattn_status)s);
    cr_assert(got != NULL, "txattn_status_name(%d) is NULL", s);
    cr_expect_str_eq(got, names[s]);
  }
  const char *unknown = txattn_status_name((txattn_status)99);
  cr_expect(unknown != NULL && unknown[0] != '\0', "an unknown status still gets a printable name");
}

/* The names txtune, the table file and txattn_kernel_info spell, and "unknown" (never NULL) past
   the enums. */
Test(problem, every_isa_and_mask_has_its_name) {
  static const char *isas[] = {"scalar", "avx2", "avx512", "neon", "avx512bf16"};
  static const char *masks[] = {"none", "causal", "window"};
  cr_assert_eq(TXATTN_ISA_COUNT_, 5, "a new ISA needs its name here and in core/names.c");
  for (int i = 0; i < TXATTN_ISA_COUNT_; i++)
    cr_expect_str_eq(txattn_isa_name((txattn_isa)i), isas[i]);
  for (int m = TXATTN_MASK_NONE; m <= TXATTN_MASK_WINDOW; m++)
    cr_expect_str_eq(txattn_mask_name((txattn_mask)m), masks[m]);
  cr_expect_str_eq(txattn_isa_name(TXATTN_ISA_COUNT_), "unknown");
  cr_expect_str_eq(txattn_isa_name((txattn_isa)-1), "unknown");
  cr_expect_str_eq(txattn_mask_name((txattn_mask)(TXATTN_MASK_WINDOW + 1)), "unknown");
  cr_expect_str_eq(txattn_mask_name((txattn_mask)-1), "unknown");
}

static void *last_error_of_new_thread(void *arg) {
  snprintf(arg, 256, "%s", txattn_last_error()); /* copied: the string dies with the thread */
  return NULL;
}

Test(problem, last_error_is_empty_until_a_failure_and_per_thread) {
  cr_assert_str_eq(txattn_last_error(), "", "before any call");
  txattn_problem p = {.n_q = 3, .d_qk = 2}, r = TXATTN_PROBLEM_INIT;
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK);
  cr_expect_str_eq(txattn_last_error(), "", "a success sets no error");
  p.d_qk = 0;
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_E_INVALID);
  cr_assert_neq(txattn_last_error()[0], '\0', "a failure must leave a message");
  char other[256] = "(not run)";
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, last_error_of_new_thread, other), 0);
  pthread_join(th, NULL);
  cr_expect_str_eq(other, "", "another thread's last error is its own");
}
