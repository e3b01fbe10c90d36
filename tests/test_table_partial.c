/* SPDX-License-Identifier: MIT */
/* A partly valid dispatch table (TXATTN_TABLE_PARTIAL): a plugin new to the table, another build of
 * one it measured, or one gone, leaves the table followed for the kernels it measured as they are.
 * The state names the others; a third-party kernel it did not measure never displaces its choice,
 * a shipped one does where the estimate predicts it faster than that choice
 * (docs/dispatch_table.md, "Partly valid tables"). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "scratch.h"
#include "table_case.h"
#include "test_context.h"
#include "test_plugin_names.h"
#include "txattn/table.h"

#define BIGHINT_FILE   "txattn_test_bighint.so"
#define BIGHINT_KERNEL "bighint.scalar" /* third-party, claims a million GFLOP/s */

static char dir[SCRATCH_PATH_MAX];
static char file[SCRATCH_PATH_MAX + 64];

static void setup(void) {
  test_env_clean();
  scratch_dir(dir, sizeof dir, 0755);
  snprintf(file, sizeof file, "%s/dispatch.json", dir);
}

static void cleanup(void) {
  scratch_remove(dir);
  test_check_leaks();
}

TestSuite(table_partial, .init = setup, .fini = cleanup, .timeout = 300);

static void write_table(txattn_table *t) {
  TC_ASSERT_OK(txattn_table_write(t, file));
  txattn_table_free(t);
}

/* The index of ctx's kernel of that name. */
static size_t kernel_index(const txattn_context *ctx, const char *name) {
  for (size_t i = 0; i < txattn_kernel_count(ctx); i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, i, &k) == TXATTN_OK && strcmp(k.name, name) == 0) return i;
  }
  cr_assert_fail("no kernel %s", name);
  return 0;
}

static int measured(const txattn_context *ctx, const char *name, char *why, size_t size) {
  int m = -1;
  TC_ASSERT_OK(txattn_table_kernel_measured(txattn_context_table(ctx), ctx, kernel_index(ctx, name),
                                            &m, why, size));
  return m;
}

/* The shipped kernels measured a table; the docs' case: a third-party plugin is installed beside
   them. The table stays followed, the new kernel is named, and its claim does not displace the
   table's choice. */
Test(table_partial, a_new_plugin_leaves_the_table_followed) {
  txattn_context *maker = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(maker, &t));
  tc_add_causal(maker, t);
  write_table(t);
  char extra[SCRATCH_PATH_MAX + 16], path[2 * SCRATCH_PATH_MAX + 32];
  scratch_subdir(extra, sizeof extra, dir, "extra", 0755);
  scratch_copy_plugin(extra, BIGHINT_FILE, NULL, 0644);
  snprintf(path, sizeof path, "%s:%s", TXATTN_TEST_PLUGIN_BUILD_DIR, extra);
  txattn_context *ctx = tc_context(path, file, 1);
  const char *state = txattn_context_table_state(ctx);
  cr_assert_eq(txattn_context_table_status(ctx), TXATTN_TABLE_PARTIAL, "%s", state);
  cr_expect(strstr(state, "partly valid table ") &&
                strstr(state, "is loaded here, not in the table") &&
                strstr(state, "(its kernel " BIGHINT_KERNEL " is not measured)") &&
                strstr(state, "txtune profile --update"),
            "%s", state);
  cr_expect(txattn_context_table(ctx) != NULL);
  char why[256];
  cr_expect_eq(measured(ctx, BIGHINT_KERNEL, why, sizeof why), 0);
  cr_expect(strstr(why, "plugin bighint is not in the table") != NULL, "%s", why);
  cr_expect_eq(measured(ctx, "naive.scalar", why, sizeof why), 1, "%s", why);
  /* inside the table: its choice, the claim only noted */
  char kernel[64], pick_why[512], plain_kernel[64], plain_why[512];
  txattn_problem p = {.n_q = 300, .d_qk = TC_D, .mask = TXATTN_MASK_CAUSAL};
  txattn_context *plain = tc_context(NULL, file, 1);
  cr_assert_eq(txattn_context_table_status(plain), TXATTN_TABLE_LOADED, "%s",
               txattn_context_table_state(plain));
  tc_pick(plain, &p, plain_kernel, sizeof plain_kernel, plain_why, sizeof plain_why);
  tc_pick(ctx, &p, kernel, sizeof kernel, pick_why, sizeof pick_why);
  cr_expect_str_eq(kernel, plain_kernel, "%s", pick_why);
  cr_expect(strncmp(pick_why, plain_why, strlen(plain_why)) == 0,
            "with the plugin: %s\nwithout: %s", pick_why, plain_why);
  cr_expect(strstr(pick_why, "not measured by the table, third-party, ranked after: " BIGHINT_KERNEL
                             " (claims") != NULL,
            "%s", pick_why);
  txattn_context_free(plain);
  txattn_context_free(ctx);
  txattn_context_free(maker);
}

/* Two third-party plugins measured; another build of one of them. */
static void two_plugins(char *a, char *b, size_t size) {
  scratch_subdir(a, size, dir, "a", 0755);
  scratch_subdir(b, size, dir, "b", 0755);
  const char *files[] = {TEST_GOOD_FILE, TEST_SPARE_FILE};
  for (int i = 0; i < 2; i++) {
    scratch_copy_plugin(a, files[i], NULL, 0644);
    scratch_copy_plugin(b, files[i], NULL, 0644);
  }
  char path[SCRATCH_PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%s", b, TEST_GOOD_FILE);
  FILE *f = fopen(path, "ab"); /* the same code, one byte longer: another build */
  cr_assert(f != NULL && fputc(0, f) == 0 && fclose(f) == 0);
}

/* testgood wins at n = 64, testspare at 256. */
static void good_and_spare_table(const txattn_context *maker) {
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(maker, &t));
  txattn_table_class c = {.mask = TXATTN_MASK_CAUSAL,
                          .d_qk = TC_D,
                          .d_v = TC_D,
                          .group = 1,
                          .threads = 1,
                          .batch = 1,
                          .heads_q = 1};
  size_t ci;
  TC_ASSERT_OK(txattn_table_add_class(t, &c, &ci));
  tc_cand at64[] = {{TEST_GOOD_KERNEL, 1e-6, 0}, {TEST_SPARE_KERNEL, 2e-6, 0}};
  tc_cand at256[] = {{TEST_SPARE_KERNEL, 1e-5, 0}, {TEST_GOOD_KERNEL, 2e-5, 0}};
  tc_add_point(maker, t, ci, 64, 0, at64, 2);
  tc_add_point(maker, t, ci, 256, 0, at256, 2);
  write_table(t);
}

static void pick_at(txattn_context *ctx, int64_t n, char *kernel, char *why, size_t why_size) {
  txattn_problem p = {.n_q = n, .d_qk = TC_D, .mask = TXATTN_MASK_CAUSAL};
  tc_pick(ctx, &p, kernel, 64, why, why_size);
}

/* Another build of one plugin invalidates its kernels alone: the points it won fall to the others'
   measured times. */
Test(table_partial, another_build_invalidates_only_its_kernels) {
  char a[SCRATCH_PATH_MAX + 16], b[SCRATCH_PATH_MAX + 16], kernel[64], why[512];
  two_plugins(a, b, sizeof a);
  txattn_context *maker = tc_context(a, "", 1);
  good_and_spare_table(maker);
  txattn_context_free(maker);
  txattn_context *same = tc_context(a, file, 1);
  cr_assert_eq(txattn_context_table_status(same), TXATTN_TABLE_LOADED, "%s",
               txattn_context_table_state(same));
  pick_at(same, 64, kernel, why, sizeof why);
  cr_expect_str_eq(kernel, TEST_GOOD_KERNEL, "%s", why);
  txattn_context *ctx = tc_context(b, file, 1);
  const char *state = txattn_context_table_state(ctx);
  cr_assert_eq(txattn_context_table_status(ctx), TXATTN_TABLE_PARTIAL, "%s", state);
  cr_expect(strstr(state, "plugins[testgood].build is \"") &&
                strstr(state, "(its kernel " TEST_GOOD_KERNEL " is not measured)") &&
                !strstr(state, "testspare"),
            "%s", state);
  char mwhy[256];
  cr_expect_eq(measured(ctx, TEST_GOOD_KERNEL, mwhy, sizeof mwhy), 0);
  cr_expect(strstr(mwhy, "another build of plugin testgood") != NULL, "%s", mwhy);
  cr_expect_eq(measured(ctx, TEST_SPARE_KERNEL, mwhy, sizeof mwhy), 1, "%s", mwhy);
  pick_at(ctx, 64, kernel, why, sizeof why);
  cr_expect_str_eq(kernel, TEST_SPARE_KERNEL, "%s", why);
  cr_expect(strncmp(why, "table: measured point n=64", 26) == 0 &&
                strstr(why, TEST_GOOD_KERNEL " was measured in another build"),
            "%s", why);
  pick_at(ctx, 256, kernel, why, sizeof why);
  cr_expect_str_eq(kernel, TEST_SPARE_KERNEL, "%s", why);
  cr_expect(strncmp(why, "table: ", 7) == 0, "%s", why);
  txattn_context_free(same);
  txattn_context_free(ctx);
}

/* A plugin gone: its points fall to the others; every plugin it measured gone or changed: stale. */
Test(table_partial, a_plugin_gone_and_all_of_them_changed) {
  char a[SCRATCH_PATH_MAX + 16], b[SCRATCH_PATH_MAX + 16], kernel[64], why[512];
  two_plugins(a, b, sizeof a);
  txattn_context *maker = tc_context(a, "", 1);
  good_and_spare_table(maker);
  txattn_context_free(maker);
  char spare_only[SCRATCH_PATH_MAX + 16], good_only[2 * SCRATCH_PATH_MAX + 64];
  scratch_subdir(spare_only, sizeof spare_only, dir, "spare", 0755);
  scratch_copy_plugin(spare_only, TEST_SPARE_FILE, NULL, 0644);
  txattn_context *ctx = tc_context(spare_only, file, 1);
  const char *state = txattn_context_table_state(ctx);
  cr_assert_eq(txattn_context_table_status(ctx), TXATTN_TABLE_PARTIAL, "%s", state);
  cr_expect(strstr(state, "plugin testgood 1.0.0 (fnv1a64x4:") &&
                strstr(state, "is in the table, not loaded here") &&
                strstr(state, "`txtune profile --update` rewrites it"),
            "%s", state);
  pick_at(ctx, 64, kernel, why, sizeof why);
  cr_expect_str_eq(kernel, TEST_SPARE_KERNEL, "%s", why);
  cr_expect(strstr(why, TEST_GOOD_KERNEL " is not loaded") != NULL, "%s", why);
  txattn_context_free(ctx);
  /* only the other build of testgood: nothing the table measured is here */
  snprintf(good_only, sizeof good_only, "%s/%s", b, TEST_SPARE_FILE);
  cr_assert(remove(good_only) == 0);
  ctx = tc_context(b, file, 1);
  state = txattn_context_table_state(ctx);
  cr_expect_eq(txattn_context_table_status(ctx), TXATTN_TABLE_STALE, "%s", state);
  cr_expect(strstr(state, "stale table ") && strstr(state, "plugins[testgood].build is"), "%s",
            state);
  cr_expect(txattn_context_table(ctx) == NULL);
  txattn_context_free(ctx);
}

/* Another build of a shipped plugin: its kernels are ranked by the estimate beside the table's
   choice, and take the shape where the estimate predicts them faster than that choice. */
Test(table_partial, a_shipped_kernel_not_measured_is_ranked_beside_the_choice) {
  txattn_context *maker = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(maker, &t));
  tc_add_causal(maker, t); /* masked.scalar wins from n = 1024 on */
  write_table(t);
  json_error_t e;
  json_t *root = json_load_file(file, 0, &e);
  cr_assert(root != NULL, "%s", e.text);
  json_t *plugins = json_object_get(root, "plugins");
  int edited = 0;
  for (size_t i = 0; i < json_array_size(plugins); i++) {
    json_t *p = json_array_get(plugins, i);
    if (strcmp(json_string_value(json_object_get(p, "name")), "tiled") != 0) continue;
    json_object_set_new(p, "build", json_string("fnv1a64x4:0123456789abcdef"));
    edited = 1;
  }
  cr_assert(edited, "no tiled plugin in the table");
  cr_assert(json_dump_file(root, file, JSON_INDENT(1)) == 0);
  json_decref(root);
  txattn_context *ctx = tc_context(NULL, file, 1);
  const char *state = txattn_context_table_state(ctx);
  cr_assert_eq(txattn_context_table_status(ctx), TXATTN_TABLE_PARTIAL, "%s", state);
  cr_expect(strstr(state, "plugins[tiled].build is \"fnv1a64x4:0123456789abcdef\" in the table") &&
                strstr(state, "tiled.scalar"),
            "%s", state);
  char kernel[64], why[512];
  pick_at(ctx, 2000, kernel, why, sizeof why);
  cr_expect(strncmp(kernel, "tiled.", 6) == 0, "%s: %s", kernel, why);
  cr_expect(strncmp(why, "estimate beside the table: tiled.", 33) == 0 &&
                strstr(why, "< the table's choice masked.scalar") &&
                strstr(why, "table: region n 1024..4096"),
            "%s", why);
  txattn_context_free(ctx);
  txattn_context_free(maker);
}

Test(table_partial, kernel_measured_refuses_bad_arguments) {
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  int m = -1;
  cr_expect_eq(txattn_table_kernel_measured(NULL, ctx, 0, &m, NULL, 0), TXATTN_E_INVALID);
  cr_expect_eq(txattn_table_kernel_measured(t, NULL, 0, &m, NULL, 0), TXATTN_E_INVALID);
  cr_expect_eq(txattn_table_kernel_measured(t, ctx, 0, NULL, NULL, 0), TXATTN_E_INVALID);
  cr_expect_eq(txattn_table_kernel_measured(t, ctx, txattn_kernel_count(ctx), &m, NULL, 0),
               TXATTN_E_INVALID);
  cr_expect_eq(m, -1);
  TC_ASSERT_OK(txattn_table_kernel_measured(t, ctx, 0, &m, NULL, 0));
  cr_expect_eq(m, 1, "a table made from ctx measured its plugins' builds");
  txattn_table_free(t);
  txattn_context_free(ctx);
}
