/* SPDX-License-Identifier: MIT */
/* Dispatch table files: the builder's rules, the round trip through a file, strict reading (file and
 * position in every error, no partial load, random corruption under the sanitizers), atomic writes
 * that leave the old table when they fail, where the table is looked for, and the stale check:
 * every header field changed in turn is named with its old and new value, and the context still
 * works with the built-in estimate. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "scratch.h"
#include "table_case.h"
#include "test_context.h"
#include "test_plugin_names.h"
#include "text_match.h"
#include "txattn/table.h"

static char dir[SCRATCH_PATH_MAX];
static char file[SCRATCH_PATH_MAX + 64];

static void cleanup(void) {
  scratch_remove(dir);
  test_check_leaks();
}

TestSuite(table, .init = test_env_clean, .fini = cleanup, .timeout = 300);

static void new_dir(void) {
  scratch_dir(dir, sizeof dir, 0755);
  snprintf(file, sizeof file, "%s/dispatch.json", dir);
}

/* The causal and window classes, an exclusion and profile settings, made for ctx. */
static txattn_table *full_table(const txattn_context *ctx) {
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  size_t ci = tc_add_causal(ctx, t);
  tc_add_window(ctx, t);
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  TC_ASSERT_OK(txattn_table_class_get(t, ci, &c, NULL, NULL));
  const char *names[] = {"block_rows"};
  int64_t values[] = {7};
  txattn_table_exclusion x = {.kernel = "masked.scalar",
                              .n_tunables = 1,
                              .tunable_names = names,
                              .tunable_values = values,
                              .n = 256,
                              .r = 0,
                              .max_error = 0.25,
                              .reason = "max error 0.25 > 1e-05 (a deliberately broken build)",
                              .cls = c};
  TC_ASSERT_OK(txattn_table_add_exclusion(t, &x));
  TC_ASSERT_OK(txattn_table_set_profile(t, "{\"mode\": \"quick\", \"budget_s\": 30}"));
  return t;
}

static char *dump_text(const txattn_table *t) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert(f != NULL);
  TC_ASSERT_OK(txattn_table_dump(t, f));
  fclose(f);
  return buf;
}

static int matches(const char *text, const char *pattern) {
  regex_t re;
  cr_assert(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) == 0, "bad regex %s", pattern);
  int ok = regexec(&re, text, 0, NULL, 0) == 0;
  regfree(&re);
  return ok;
}

/* The table file root with classes[cls].key set to value (a new reference), written as name, is
   refused with a message matching pattern. */
static void expect_field_refused(const json_t *root, size_t cls, const char *key, json_t *value,
                                 const char *name, const char *pattern) {
  json_t *copy = json_deep_copy(root);
  json_object_set_new(json_array_get(json_object_get(copy, "classes"), cls), key, value);
  char path[SCRATCH_PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%s.json", dir, name);
  cr_assert(json_dump_file(copy, path, JSON_INDENT(1)) == 0);
  json_decref(copy);
  txattn_table *t = NULL;
  cr_expect_eq(txattn_table_load(path, &t), TXATTN_E_TABLE, "%s", name);
  cr_expect(t == NULL);
  cr_expect(matches(txattn_last_error(), pattern), "%s: %s", name, txattn_last_error());
}

/* ---- the builder ---- */

Test(table, builder_refuses_what_the_format_forbids) {
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  size_t ci = tc_add_causal(ctx, t);
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  TC_ASSERT_OK(txattn_table_class_get(t, ci, &c, NULL, NULL));
  cr_expect_eq(txattn_table_add_class(t, &c, NULL), TXATTN_E_INVALID, "a class twice");
  cr_expect(text_mentions(txattn_last_error(), "already", NULL), "%s", txattn_last_error());
  txattn_table_candidate inexact = {"naive.scalar", 0, NULL, NULL, 1e-3, 2e-3, -1};
  cr_expect_eq(txattn_table_add_point(t, ci, 100, 0, &inexact, 1), TXATTN_E_INVALID);
  cr_expect(text_mentions(txattn_last_error(), "not exact", "exclusion", NULL), "%s",
            txattn_last_error());
  txattn_table_candidate ok = {"naive.scalar", 0, NULL, NULL, 1e-3, 1e-7, -1};
  cr_expect_eq(txattn_table_add_point(t, ci, 64, 0, &ok, 1), TXATTN_E_INVALID, "a point twice");
  cr_expect_eq(txattn_table_add_point(t, ci, 100, 5, &ok, 1), TXATTN_E_INVALID,
               "r outside windows");
  cr_expect_eq(txattn_table_add_point(t, ci, 0, 0, &ok, 1), TXATTN_E_INVALID, "n = 0");
  txattn_table_candidate bad_name = {"Naive", 0, NULL, NULL, 1e-3, 1e-7, -1};
  cr_expect_eq(txattn_table_add_point(t, ci, 100, 0, &bad_name, 1), TXATTN_E_INVALID);
  txattn_table_candidate slow = {"naive.scalar", 0, NULL, NULL, -1, 1e-7, -1};
  cr_expect_eq(txattn_table_add_point(t, ci, 100, 0, &slow, 1), TXATTN_E_INVALID, "time < 0");
  cr_expect_eq(txattn_table_set_profile(t, "[1, 2]"), TXATTN_E_INVALID, "a profile array");
  txattn_table_class window_without_shape = c;
  window_without_shape.mask = TXATTN_MASK_WINDOW;
  cr_expect_eq(txattn_table_add_class(t, &window_without_shape, NULL), TXATTN_E_INVALID);
  size_t np;
  TC_ASSERT_OK(txattn_table_class_get(t, ci, &c, &np, NULL));
  cr_expect_eq(np, 4, "a refused point was kept: %zu points", np);
  txattn_table_free(t);
  txattn_context_free(ctx);
}

Test(table, regions_follow_the_winners) {
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  size_t ci = tc_add_causal(ctx, t);
  size_t nr;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  TC_ASSERT_OK(txattn_table_class_get(t, ci, &c, NULL, &nr));
  cr_assert_eq(nr, 2, "naive wins 64..256, masked 1024..4096: %zu regions", nr);
  txattn_table_region g[2] = {TXATTN_TABLE_REGION_INIT, TXATTN_TABLE_REGION_INIT};
  TC_ASSERT_OK(txattn_table_region_get(t, ci, 0, &g[0]));
  TC_ASSERT_OK(txattn_table_region_get(t, ci, 1, &g[1]));
  cr_expect(g[0].n_lo == 64 && g[0].n_hi == 256 && strcmp(g[0].winner.kernel, "naive.scalar") == 0);
  cr_expect(g[1].n_lo == 1024 && g[1].n_hi == 4096 &&
            strcmp(g[1].winner.kernel, "masked.scalar") == 0);
  /* the smallest margin over the region: naive over masked at n = 256 */
  txattn_table_candidate w = TXATTN_TABLE_CANDIDATE_INIT, u = TXATTN_TABLE_CANDIDATE_INIT;
  TC_ASSERT_OK(txattn_table_candidate_get(t, ci, 1, 0, &w));
  TC_ASSERT_OK(txattn_table_candidate_get(t, ci, 1, 1, &u));
  cr_expect(strcmp(g[0].runner_up, u.kernel) == 0 && fabs(g[0].margin - u.time_s / w.time_s) < 1e-4,
            "region 0: runner-up %s by %g, want %s by %g", g[0].runner_up, g[0].margin, u.kernel,
            u.time_s / w.time_s);
  size_t wi = tc_add_window(ctx, t);
  TC_ASSERT_OK(txattn_table_class_get(t, wi, &c, NULL, &nr));
  cr_expect(nr >= 2, "the window class has winners on both sides of n * r = 1e4");
  for (size_t i = 0; i < nr; i++) {
    txattn_table_region r = TXATTN_TABLE_REGION_INIT;
    TC_ASSERT_OK(txattn_table_region_get(t, wi, i, &r));
    cr_expect(r.n_lo <= r.n_hi && r.r_lo <= r.r_hi && r.r_lo >= 16, "region %zu", i);
  }
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* ---- the round trip ---- */

static void expect_same_candidates(const txattn_table *a, const txattn_table *b, size_t ci,
                                   size_t pi, size_t n) {
  for (size_t k = 0; k < n; k++) {
    txattn_table_candidate x = TXATTN_TABLE_CANDIDATE_INIT, y = TXATTN_TABLE_CANDIDATE_INIT;
    TC_ASSERT_OK(txattn_table_candidate_get(a, ci, pi, k, &x));
    TC_ASSERT_OK(txattn_table_candidate_get(b, ci, pi, k, &y));
    cr_expect(strcmp(x.kernel, y.kernel) == 0 && x.time_s == y.time_s &&
                  x.max_error == y.max_error && x.spread == y.spread &&
                  x.n_tunables == y.n_tunables,
              "class %zu point %zu candidate %zu differs", ci, pi, k);
    for (size_t j = 0; j < x.n_tunables && j < y.n_tunables; j++)
      cr_expect(strcmp(x.tunable_names[j], y.tunable_names[j]) == 0 &&
                x.tunable_values[j] == y.tunable_values[j]);
  }
}

static void expect_same_tables(const txattn_table *a, const txattn_table *b) {
  txattn_table_header ha = TXATTN_TABLE_HEADER_INIT, hb = TXATTN_TABLE_HEADER_INIT;
  TC_ASSERT_OK(txattn_table_header_get(a, &ha));
  TC_ASSERT_OK(txattn_table_header_get(b, &hb));
  cr_expect_str_eq(ha.library_version, hb.library_version);
  cr_expect_str_eq(ha.created, hb.created);
  cr_expect_str_eq(ha.machine.vendor, hb.machine.vendor);
  cr_expect_str_eq(ha.machine.brand, hb.machine.brand);
  cr_expect(ha.machine.isa_mask == hb.machine.isa_mask &&
            ha.machine.n_cores == hb.machine.n_cores &&
            ha.machine.l2_bytes == hb.machine.l2_bytes && ha.machine.model == hb.machine.model);
  cr_expect(ha.n_plugins == hb.n_plugins && ha.n_classes == hb.n_classes &&
            ha.n_excluded == hb.n_excluded);
  for (size_t ci = 0; ci < ha.n_classes; ci++) {
    txattn_table_class ca = TXATTN_TABLE_CLASS_INIT, cb = TXATTN_TABLE_CLASS_INIT;
    size_t pa, pb, ra, rb;
    TC_ASSERT_OK(txattn_table_class_get(a, ci, &ca, &pa, &ra));
    TC_ASSERT_OK(txattn_table_class_get(b, ci, &cb, &pb, &rb));
    cr_expect(memcmp(&ca, &cb, sizeof ca) == 0 && pa == pb && ra == rb, "class %zu differs", ci);
    for (size_t pi = 0; pi < pa && pi < pb; pi++) {
      txattn_table_point x = TXATTN_TABLE_POINT_INIT, y = TXATTN_TABLE_POINT_INIT;
      TC_ASSERT_OK(txattn_table_point_get(a, ci, pi, &x));
      TC_ASSERT_OK(txattn_table_point_get(b, ci, pi, &y));
      cr_expect(x.n == y.n && x.r == y.r && x.n_candidates == y.n_candidates);
      expect_same_candidates(a, b, ci, pi, x.n_candidates);
    }
  }
}

Test(table, round_trip_through_a_file) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t = full_table(ctx), *u = NULL;
  TC_ASSERT_OK(txattn_table_write(t, file));
  TC_ASSERT_OK(txattn_table_load(file, &u));
  expect_same_tables(t, u);
  char *a = dump_text(t), *b = dump_text(u);
  cr_expect_str_eq(a, b, "the file read back does not print as the table written");
  txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
  TC_ASSERT_OK(txattn_table_exclusion_get(u, 0, &x));
  cr_expect(strcmp(x.kernel, "masked.scalar") == 0 && x.max_error == 0.25 && x.n == 256 &&
            x.n_tunables == 1 && x.tunable_values[0] == 7);
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  TC_ASSERT_OK(txattn_table_header_get(u, &h));
  cr_expect(text_mentions(h.profile, "quick", NULL), "profile: %s", h.profile);
  cr_expect_str_eq(h.path, file);
  TC_ASSERT_OK(txattn_table_check(u, ctx, NULL, 0));
  /* a context reading the file makes the choices the table in memory says */
  txattn_context *follower = tc_context(NULL, file, 1);
  cr_assert_eq(txattn_context_table_status(follower), TXATTN_TABLE_LOADED, "%s",
               txattn_context_table_state(follower));
  for (int64_t n = 64; n <= 4096; n = n * 3 / 2) {
    char kernel[64], why[512], want[64];
    txattn_problem p = {.n_q = n, .d_qk = TC_D, .mask = TXATTN_MASK_CAUSAL};
    tc_pick(follower, &p, kernel, sizeof kernel, why, sizeof why);
    tc_expected(t, 0, n, 0, want, sizeof want);
    cr_expect_str_eq(kernel, want, "n = %lld: %s", (long long)n, why);
  }
  free(a);
  free(b);
  txattn_table_free(t);
  txattn_table_free(u);
  txattn_context_free(follower);
  txattn_context_free(ctx);
}

/* ---- element types: a class per type combination ---- */

static txattn_table_class with_types(txattn_table_class c, txattn_dtype q, txattn_dtype k,
                                     txattn_dtype v, txattn_dtype o) {
  c.q_type = q;
  c.k_type = k;
  c.v_type = v;
  c.o_type = o;
  return c;
}

#define F32  TXATTN_DTYPE_F32
#define F16  TXATTN_DTYPE_F16
#define BF16 TXATTN_DTYPE_BF16

/* The causal class, then the same key with f16 K and V (naive.scalar measured at 64 and 256) and
   all-bf16 (at 64), and an exclusion in the f16 class; *typed gets the f16 class's index. */
static txattn_table *typed_table(const txattn_context *ctx, size_t *typed) {
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  size_t ci = tc_add_causal(ctx, t), bi;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  TC_ASSERT_OK(txattn_table_class_get(t, ci, &c, NULL, NULL));
  txattn_table_class kv = with_types(c, F32, F16, F16, F32),
                     all = with_types(c, BF16, BF16, BF16, BF16);
  TC_ASSERT_OK(txattn_table_add_class(t, &kv, typed));
  TC_ASSERT_OK(txattn_table_add_class(t, &all, &bi));
  for (int64_t n = 64; n <= 256; n *= 4) {
    tc_cand cands[] = {{"naive.scalar", 2e-9 * (double)(n * n), 0}};
    tc_add_point(ctx, t, *typed, n, 0, cands, 1);
  }
  tc_cand one[] = {{"naive.scalar", 1e-5, 0}};
  tc_add_point(ctx, t, bi, 64, 0, one, 1);
  txattn_table_exclusion x = {.cls = kv,
                              .kernel = "tiled.scalar",
                              .n = 193,
                              .max_error = 0.5,
                              .reason = "max error 0.5 (a made-up exclusion)"};
  TC_ASSERT_OK(txattn_table_add_exclusion(t, &x));
  return t;
}

Test(table, classes_are_per_type_combination) {
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  size_t ci = tc_add_causal(ctx, t), found;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  char d[128];
  TC_ASSERT_OK(txattn_table_class_get(t, ci, &c, NULL, NULL));
  txattn_table_class_describe(&c, d, sizeof d);
  cr_expect_str_eq(d, "causal d16/16 g1 t1", "an fp32 class keeps its name");
  static const struct {
    txattn_dtype q, k, v, o;
    const char *name;
  } cases[] = {{F32, F16, F16, F32, "causal d16/16 g1 t1 kv=f16"},
               {F32, BF16, BF16, F32, "causal d16/16 g1 t1 kv=bf16"},
               {BF16, BF16, BF16, BF16, "causal d16/16 g1 t1 bf16"},
               {F32, BF16, F16, F32, "causal d16/16 g1 t1 q,k,v,o=f32,bf16,f16,f32"},
               {F16, F16, F16, F32, "causal d16/16 g1 t1 q,k,v,o=f16,f16,f16,f32"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    txattn_table_class x = with_types(c, cases[i].q, cases[i].k, cases[i].v, cases[i].o);
    txattn_table_class_describe(&x, d, sizeof d);
    cr_expect_str_eq(d, cases[i].name);
    size_t xi;
    TC_ASSERT_OK(txattn_table_add_class(t, &x, &xi));
    TC_ASSERT_OK(txattn_table_find_class(t, &x, &found));
    cr_expect_eq(found, xi, "%s", cases[i].name);
    cr_expect_eq(txattn_table_add_class(t, &x, NULL), TXATTN_E_INVALID, "%s twice", d);
    cr_expect(text_mentions(txattn_last_error(), "already", cases[i].name, NULL), "%s",
              txattn_last_error());
  }
  TC_ASSERT_OK(txattn_table_find_class(t, &c, &found));
  cr_expect_eq(found, ci, "the fp32 class is still found by its own key");
  txattn_table_class bad = c;
  bad.v_type = (txattn_dtype)7;
  cr_expect_eq(txattn_table_add_class(t, &bad, NULL), TXATTN_E_INVALID);
  cr_expect(text_mentions(txattn_last_error(), "v_type = 7", NULL), "%s", txattn_last_error());
  /* a problem's class carries its types */
  txattn_problem p = {.n_q = 1,
                      .n_kv = 300,
                      .d_qk = TC_D,
                      .mask = TXATTN_MASK_CAUSAL,
                      .k_type = F16,
                      .v_type = F16};
  txattn_table_class pc = TXATTN_TABLE_CLASS_INIT;
  int64_t n, r;
  TC_ASSERT_OK(txattn_table_class_of(&p, 2, &pc, &n, &r));
  txattn_table_class_describe(&pc, d, sizeof d);
  cr_expect_str_eq(d, "causal d16/16 g1 t2 decode kv=f16");
  cr_expect(pc.q_type == F32 && pc.k_type == F16 && pc.v_type == F16 && pc.o_type == F32 &&
            n == 300 && r == 0);
  txattn_table_free(t);
  txattn_context_free(ctx);
}

Test(table, typed_classes_round_trip_through_a_file) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  size_t typed;
  txattn_table *t = typed_table(ctx, &typed), *u = NULL;
  TC_ASSERT_OK(txattn_table_write(t, file));
  TC_ASSERT_OK(txattn_table_load(file, &u));
  expect_same_tables(t, u);
  char *a = dump_text(t), *b = dump_text(u);
  cr_expect_str_eq(a, b, "the file read back does not print as the table written");
  txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
  TC_ASSERT_OK(txattn_table_exclusion_get(u, 0, &x));
  cr_expect(x.cls.k_type == F16 && x.cls.v_type == F16 && x.cls.q_type == F32 &&
                x.cls.o_type == F32,
            "the exclusion's class keeps its types");
  /* in the file: only the types that are not f32, and none in the fp32 class */
  json_error_t e;
  json_t *root = json_load_file(file, 0, &e);
  cr_assert(root != NULL, "%s", e.text);
  cr_expect_eq(json_integer_value(json_object_get(root, "format_version")),
               TXATTN_TABLE_FORMAT_VERSION);
  json_t *classes = json_object_get(root, "classes");
  json_t *f32 = json_array_get(classes, 0), *kv = json_array_get(classes, typed),
         *bf = json_array_get(classes, 2);
  static const char *const keys[] = {"q_type", "k_type", "v_type", "o_type"};
  for (int i = 0; i < 4; i++)
    cr_expect(json_object_get(f32, keys[i]) == NULL, "the fp32 class has %s", keys[i]);
  cr_expect(json_object_get(kv, "q_type") == NULL && json_object_get(kv, "o_type") == NULL);
  cr_expect_str_eq(json_string_value(json_object_get(kv, "k_type")), "f16");
  cr_expect_str_eq(json_string_value(json_object_get(kv, "v_type")), "f16");
  cr_expect_str_eq(json_string_value(json_object_get(bf, "o_type")), "bf16");
  /* the exclusion is a failed record of its class */
  json_t *recs = json_object_get(kv, "points");
  cr_expect(json_object_get(json_array_get(recs, json_array_size(recs) - 1), "failed") != NULL,
            "the typed class's last record is its exclusion");
  json_decref(root);
  free(a);
  free(b);
  txattn_table_free(t);
  txattn_table_free(u);
  txattn_context_free(ctx);
}

/* Element types are spelled as txattn_dtype_name spells them. */
Test(table, a_malformed_element_type_names_the_field) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  size_t typed;
  txattn_table *t = typed_table(ctx, &typed);
  TC_ASSERT_OK(txattn_table_write(t, file));
  cr_assert_eq(typed, 1);
  json_error_t e;
  json_t *root = json_load_file(file, 0, &e);
  cr_assert(root != NULL, "%s", e.text);
  expect_field_refused(root, typed, "k_type", json_string("f8"), "types-f8",
                       "classes\\[1\\]\\.k_type: \"f8\" is not one of the allowed values");
  expect_field_refused(root, typed, "k_type", json_true(), "types-true",
                       "classes\\[1\\]\\.k_type: expected a string, got a boolean");
  json_decref(root);
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* ---- ragged classes ---- */

/* A causal decode class (d 16, one thread, naive.scalar measured at 256 and 1024), the same key
   ragged (tiled.scalar measured there, with an exclusion); *ragged gets the ragged class's index. */
static txattn_table *ragged_table(const txattn_context *ctx, size_t *ragged) {
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  txattn_table_class dense = {.mask = TXATTN_MASK_CAUSAL,
                              .d_qk = TC_D,
                              .d_v = TC_D,
                              .group = 1,
                              .threads = 1,
                              .decode = 1,
                              .batch = 1,
                              .heads_q = 1},
                     rag = dense;
  rag.ragged = 1;
  rag.batch = 8;
  size_t di;
  TC_ASSERT_OK(txattn_table_add_class(t, &dense, &di));
  TC_ASSERT_OK(txattn_table_add_class(t, &rag, ragged));
  for (int64_t n = 256; n <= 1024; n *= 4) {
    tc_cand d[] = {{"naive.scalar", 1e-9 * (double)n, 0}, {"tiled.scalar", 2e-9 * (double)n, 0}};
    tc_cand r[] = {{"tiled.scalar", 3e-9 * (double)n, 0}, {"naive.scalar", 5e-9 * (double)n, 0}};
    tc_add_point(ctx, t, di, n, 0, d, 2);
    tc_add_point(ctx, t, *ragged, n, 0, r, 2);
  }
  txattn_table_exclusion x = {.cls = rag,
                              .kernel = "masked.scalar",
                              .n = 193,
                              .max_error = 0.5,
                              .reason = "max error 0.5 (a made-up exclusion)"};
  TC_ASSERT_OK(txattn_table_add_exclusion(t, &x));
  return t;
}

/* The ragged flag is part of the key: named " ragged", found apart from the dense class, written
   only where set, read back, kept in exclusions; a ragged class is a decode class. */
Test(table, ragged_classes_round_trip_through_a_file) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  size_t ri, found;
  txattn_table *t = ragged_table(ctx, &ri), *u = NULL;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  char d[128];
  TC_ASSERT_OK(txattn_table_class_get(t, ri, &c, NULL, NULL));
  txattn_table_class_describe(&c, d, sizeof d);
  cr_expect_str_eq(d, "causal d16/16 g1 t1 decode ragged");
  TC_ASSERT_OK(txattn_table_find_class(t, &c, &found));
  cr_expect_eq(found, ri);
  c.ragged = 0;
  TC_ASSERT_OK(txattn_table_find_class(t, &c, &found));
  cr_expect_eq(found, 0, "the dense class is found by its own key");
  txattn_table_class bad = c;
  bad.ragged = 1;
  bad.decode = 0;
  cr_expect_eq(txattn_table_add_class(t, &bad, NULL), TXATTN_E_INVALID);
  cr_expect(text_mentions(txattn_last_error(), "a ragged class is a decode class", NULL), "%s",
            txattn_last_error());
  bad = c;
  bad.ragged = 2;
  cr_expect_eq(txattn_table_add_class(t, &bad, NULL), TXATTN_E_INVALID);
  TC_ASSERT_OK(txattn_table_write(t, file));
  TC_ASSERT_OK(txattn_table_load(file, &u));
  expect_same_tables(t, u);
  char *a = dump_text(t), *b = dump_text(u);
  cr_expect_str_eq(a, b, "the file read back does not print as the table written");
  TC_ASSERT_OK(txattn_table_class_get(u, ri, &c, NULL, NULL));
  cr_expect(c.ragged == 1 && c.decode == 1 && c.batch == 8);
  TC_ASSERT_OK(txattn_table_class_get(u, 0, &c, NULL, NULL));
  cr_expect(c.ragged == 0);
  txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
  TC_ASSERT_OK(txattn_table_exclusion_get(u, 0, &x));
  cr_expect(x.cls.ragged == 1, "the exclusion's class keeps its raggedness");
  json_error_t e;
  json_t *root = json_load_file(file, 0, &e);
  cr_assert(root != NULL, "%s", e.text);
  cr_expect_eq(json_integer_value(json_object_get(root, "format_version")),
               TXATTN_TABLE_FORMAT_VERSION);
  json_t *classes = json_object_get(root, "classes");
  cr_expect(json_object_get(json_array_get(classes, 0), "ragged") == NULL,
            "a dense class is written without \"ragged\"");
  cr_expect(json_is_true(json_object_get(json_array_get(classes, ri), "ragged")));
  /* "ragged" is a boolean */
  expect_field_refused(root, ri, "ragged", json_null(), "ragged-null",
                       "classes\\[1\\]\\.ragged: expected true or false, got null");
  json_decref(root);
  /* a ragged problem's class: ragged, at n = its capacity n_kv */
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.batch = 4;
  p.n_q = 1;
  p.n_kv = 700;
  p.d_qk = TC_D;
  p.mask = TXATTN_MASK_CAUSAL;
  p.ragged = 1;
  int64_t n, r;
  TC_ASSERT_OK(txattn_table_class_of(&p, 1, &c, &n, &r));
  cr_expect(c.ragged == 1 && c.decode == 1 && c.batch == 4 && n == 700 && r == 0);
  p.struct_size = 0; /* a 0.2 struct has no ragged field: dense */
  TC_ASSERT_OK(txattn_table_class_of(&p, 1, &c, &n, &r));
  cr_expect(c.ragged == 0);
  free(a);
  free(b);
  txattn_table_free(t);
  txattn_table_free(u);
  txattn_context_free(ctx);
}

/* ---- softcap and mask-tensor classes ---- */

/* softcap and mask_tensor are part of the key: named, found apart from the plain class, written
   only where set, read back, checked, and set by txattn_table_class_of from the problem. */
Test(table, softcap_and_mask_tensor_classes_round_trip_through_a_file) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t, *u = NULL;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  txattn_table_class plain = {.mask = TXATTN_MASK_CAUSAL,
                              .d_qk = TC_D,
                              .d_v = TC_D,
                              .group = 1,
                              .threads = 1,
                              .batch = 1,
                              .heads_q = 1},
                     keys[3] = {plain, plain, plain};
  keys[1].softcap = 1;
  keys[2].mask_tensor = TXATTN_MASK_TENSOR_BOOL;
  static const char *const names[3] = {"causal d16/16 g1 t1", "causal d16/16 g1 t1 softcap",
                                       "causal d16/16 g1 t1 mask=bool"};
  for (size_t i = 0; i < 3; i++) {
    size_t ci, found;
    char d[128];
    TC_ASSERT_OK(txattn_table_add_class(t, &keys[i], &ci));
    cr_expect_eq(ci, i);
    tc_cand k[] = {{"naive.scalar", 1e-6, 0}};
    tc_add_point(ctx, t, ci, 256, 0, k, 1);
    txattn_table_class_describe(&keys[i], d, sizeof d);
    cr_expect_str_eq(d, names[i]);
    TC_ASSERT_OK(txattn_table_find_class(t, &keys[i], &found));
    cr_expect_eq(found, i);
  }
  txattn_table_class bad = keys[1];
  bad.softcap = 2;
  cr_expect_eq(txattn_table_add_class(t, &bad, NULL), TXATTN_E_INVALID);
  bad = keys[2];
  bad.mask_tensor = 3;
  cr_expect_eq(txattn_table_add_class(t, &bad, NULL), TXATTN_E_INVALID);
  cr_expect(text_mentions(txattn_last_error(), "is not a txattn_mask_tensor", NULL), "%s",
            txattn_last_error());
  TC_ASSERT_OK(txattn_table_write(t, file));
  TC_ASSERT_OK(txattn_table_load(file, &u));
  expect_same_tables(t, u);
  for (size_t i = 0; i < 3; i++) {
    txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
    TC_ASSERT_OK(txattn_table_class_get(u, i, &c, NULL, NULL));
    cr_expect(c.softcap == keys[i].softcap && c.mask_tensor == keys[i].mask_tensor, "class %zu", i);
  }
  json_error_t e;
  json_t *root = json_load_file(file, 0, &e);
  cr_assert(root != NULL, "%s", e.text);
  json_t *classes = json_object_get(root, "classes");
  cr_expect(json_object_get(json_array_get(classes, 0), "softcap") == NULL &&
                json_object_get(json_array_get(classes, 0), "mask_tensor") == NULL,
            "a plain class is written without \"softcap\" and \"mask_tensor\"");
  cr_expect(json_is_true(json_object_get(json_array_get(classes, 1), "softcap")));
  cr_expect_str_eq(json_string_value(json_object_get(json_array_get(classes, 2), "mask_tensor")),
                   "bool");
  expect_field_refused(root, 1, "softcap", json_null(), "softcap-null",
                       "classes\\[1\\]\\.softcap: expected true or false, got null");
  expect_field_refused(root, 2, "mask_tensor", json_true(), "mask-tensor-true",
                       "classes\\[2\\]\\.mask_tensor: expected a string, got a boolean");
  expect_field_refused(root, 2, "mask_tensor", json_string("dense"), "mask-tensor-dense",
                       "classes\\[2\\]\\.mask_tensor: \"dense\" is not one of the allowed values");
  json_decref(root);
  /* a problem's class: softcap when its softcap is positive, its mask tensor's kind */
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.n_q = 700;
  p.d_qk = TC_D;
  p.mask = TXATTN_MASK_CAUSAL;
  p.softcap = 30.0f;
  p.mask_tensor = TXATTN_MASK_TENSOR_ADDITIVE;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  int64_t n, r;
  TC_ASSERT_OK(txattn_table_class_of(&p, 1, &c, &n, &r));
  cr_expect(c.softcap == 1 && c.mask_tensor == TXATTN_MASK_TENSOR_ADDITIVE && n == 700);
  txattn_table_free(t);
  txattn_table_free(u);
  txattn_context_free(ctx);
}

/* ---- paged 8-bit classes ---- */

/* 8-bit K/V types and paging are part of the key (paged or not; the page size is the measured
   shape's): named, found apart from the contiguous class whatever the page size, written only
   where set, read back, checked, and set by txattn_table_class_of from the problem. A class
   without "page_size" (an older file) is contiguous. */
Test(table, paged_q8_0_classes_round_trip_through_a_file) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t, *u = NULL;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  txattn_table_class keys[2] = {tc_q8_0_decode_class(0), tc_q8_0_decode_class(1)};
  static const char *const names[2] = {"causal d32/32 g4 t1 decode kv=q8_0",
                                       "causal d32/32 g4 t1 decode paged16 kv=q8_0"};
  for (size_t i = 0; i < 2; i++) {
    size_t ci, found;
    char d[128];
    TC_ASSERT_OK(txattn_table_add_class(t, &keys[i], &ci));
    tc_cand k[] = {{"naive.scalar", 1e-6, 0}};
    tc_add_point(ctx, t, ci, 256, 0, k, 1);
    txattn_table_class_describe(&keys[i], d, sizeof d);
    cr_expect_str_eq(d, names[i]);
    txattn_table_class other_p = keys[i];
    other_p.page_size = i ? 128 : 0; /* another page size: the same key */
    TC_ASSERT_OK(txattn_table_find_class(t, &other_p, &found));
    cr_expect_eq(found, ci);
  }
  txattn_table_class bad = keys[1];
  bad.page_size = -1;
  cr_expect_eq(txattn_table_add_class(t, &bad, NULL), TXATTN_E_INVALID);
  bad = keys[1];
  bad.q_type = TXATTN_DTYPE_E4M3;
  cr_expect_eq(txattn_table_add_class(t, &bad, NULL), TXATTN_E_INVALID);
  cr_expect(text_mentions(txattn_last_error(), "8-bit and 4-bit are for k and v", NULL), "%s",
            txattn_last_error());
  TC_ASSERT_OK(txattn_table_write(t, file));
  TC_ASSERT_OK(txattn_table_load(file, &u));
  expect_same_tables(t, u);
  for (size_t i = 0; i < 2; i++) {
    txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
    TC_ASSERT_OK(txattn_table_class_get(u, i, &c, NULL, NULL));
    cr_expect(c.page_size == keys[i].page_size && c.k_type == TXATTN_DTYPE_Q8_0 &&
                  c.v_type == TXATTN_DTYPE_Q8_0 && c.q_type == TXATTN_DTYPE_F32,
              "class %zu", i);
  }
  json_error_t e;
  json_t *root = json_load_file(file, 0, &e);
  cr_assert(root != NULL, "%s", e.text);
  json_t *classes = json_object_get(root, "classes");
  cr_expect(json_object_get(json_array_get(classes, 0), "page_size") == NULL,
            "a contiguous class is written without \"page_size\"");
  cr_expect_eq(json_integer_value(json_object_get(json_array_get(classes, 1), "page_size")), 16);
  cr_expect_str_eq(json_string_value(json_object_get(json_array_get(classes, 1), "k_type")),
                   "q8_0");
  expect_field_refused(root, 1, "page_size", json_integer(0), "page-size-0",
                       "classes\\[1\\]\\.page_size");
  expect_field_refused(root, 1, "q_type", json_string("q8_0"), "q-type-q8_0",
                       "classes\\[1\\]: q_type and o_type are f32, f16 or bf16");
  json_decref(root);
  /* a problem's class: paged with its page size, 8-bit K/V types as given */
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.heads_q = 8;
  p.heads_kv = 2;
  p.n_q = 1;
  p.n_kv = 700;
  p.d_qk = 32;
  p.mask = TXATTN_MASK_CAUSAL;
  p.k_type = p.v_type = TXATTN_DTYPE_Q8_0;
  p.page_size = 16;
  p.n_pages = 44; /* ceil(700 / 16) */
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  int64_t n, r;
  TC_ASSERT_OK(txattn_table_class_of(&p, 1, &c, &n, &r));
  cr_expect(c.page_size == 16 && c.k_type == TXATTN_DTYPE_Q8_0 && c.decode == 1 && n == 700);
  txattn_table_free(t);
  txattn_table_free(u);
  txattn_context_free(ctx);
}

/* ---- ties: a winner chosen among near-equal times ---- */

/* The causal table with a point at n = 512 where masked.scalar is fastest by 1% and the caller
   chooses naive.scalar (candidate `chosen` of {masked, naive, tiled}). */
static txattn_status add_tie_point(const txattn_context *ctx, txattn_table *t, size_t ci,
                                   double naive_s, size_t chosen) {
  const char *names[3][8];
  int64_t values[3][8];
  const char *kernels[] = {"masked.scalar", "naive.scalar", "tiled.scalar"};
  double times[] = {1e-3, naive_s, 2e-3};
  txattn_table_candidate c[3] = {0};
  for (size_t i = 0; i < 3; i++) {
    size_t nt = tc_tunables(ctx, kernels[i], 0, names[i], values[i]);
    c[i] = (txattn_table_candidate){kernels[i], nt, names[i], values[i], times[i], 1e-7, 0.02};
  }
  return txattn_table_add_point_chosen(t, ci, 512, 0, c, 3, chosen);
}

Test(table, a_tie_keeps_the_chosen_winner_through_a_file) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t, *u = NULL;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  size_t ci = tc_add_causal(ctx, t);
  TC_ASSERT_OK(add_tie_point(ctx, t, ci, 1.01e-3, 1));
  TC_ASSERT_OK(txattn_table_write(t, file));
  TC_ASSERT_OK(txattn_table_load(file, &u));
  for (int k = 0; k < 2; k++) {
    const txattn_table *x = k ? u : t;
    txattn_table_point pt = TXATTN_TABLE_POINT_INIT;
    txattn_table_candidate c0 = TXATTN_TABLE_CANDIDATE_INIT, c1 = TXATTN_TABLE_CANDIDATE_INIT;
    TC_ASSERT_OK(txattn_table_point_get(x, ci, 2, &pt)); /* 64, 256, 512 */
    TC_ASSERT_OK(txattn_table_candidate_get(x, ci, 2, 0, &c0));
    TC_ASSERT_OK(txattn_table_candidate_get(x, ci, 2, 1, &c1));
    cr_expect(pt.n == 512 && pt.tie == 1, "%s: n %lld tie %d", k ? "read" : "built",
              (long long)pt.n, pt.tie);
    cr_expect(strcmp(c0.kernel, "naive.scalar") == 0 && strcmp(c1.kernel, "masked.scalar") == 0,
              "%s: %s, %s", k ? "read" : "built", c0.kernel, c1.kernel);
    /* naive wins 64..512 (its region's runner-up margin at the tie is below 1) */
    txattn_table_region g = TXATTN_TABLE_REGION_INIT;
    TC_ASSERT_OK(txattn_table_region_get(x, ci, 0, &g));
    cr_expect(g.n_hi == 512 && strcmp(g.winner.kernel, "naive.scalar") == 0 && g.margin < 1,
              "region 0: n ..%lld %s by %g", (long long)g.n_hi, g.winner.kernel, g.margin);
  }
  char *a = dump_text(t), *b = dump_text(u);
  cr_expect_str_eq(a, b);
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  TC_ASSERT_OK(txattn_table_header_get(u, &h));
  cr_expect_eq(h.format_version, TXATTN_TABLE_FORMAT_VERSION);
  /* the dispatcher follows the choice */
  txattn_context *follower = tc_context(NULL, file, 1);
  char kernel[64], why[512];
  txattn_problem p = {.n_q = 512, .d_qk = TC_D, .mask = TXATTN_MASK_CAUSAL};
  tc_pick(follower, &p, kernel, sizeof kernel, why, sizeof why);
  cr_expect_str_eq(kernel, "naive.scalar", "%s", why);
  free(a);
  free(b);
  txattn_context_free(follower);
  txattn_table_free(t);
  txattn_table_free(u);
  txattn_context_free(ctx);
}

Test(table, a_tie_is_a_choice_among_near_equal_times) {
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  size_t ci = tc_add_causal(ctx, t);
  cr_expect_eq(add_tie_point(ctx, t, ci, 1.3e-3, 1), TXATTN_E_INVALID, "1.3x the fastest");
  cr_expect(text_mentions(txattn_last_error(), "more than 1.25", NULL), "%s", txattn_last_error());
  cr_expect_eq(add_tie_point(ctx, t, ci, 1.01e-3, 3), TXATTN_E_INVALID, "no candidate 3");
  TC_ASSERT_OK(add_tie_point(ctx, t, ci, 1.01e-3, 0)); /* the fastest: no tie */
  txattn_table_point pt = TXATTN_TABLE_POINT_INIT;
  TC_ASSERT_OK(txattn_table_point_get(t, ci, 2, &pt));
  cr_expect(pt.n == 512 && pt.tie == 0);
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* The index of the record of class 0 at n for kernel in root's classes[0].points, -1 if none. */
static int record_at(json_t *root, int64_t n, const char *kernel) {
  json_t *recs = json_object_get(json_array_get(json_object_get(root, "classes"), 0), "points");
  for (size_t i = 0; i < json_array_size(recs); i++) {
    json_t *x = json_array_get(recs, i);
    if (json_integer_value(json_object_get(x, "n")) == n &&
        strcmp(json_string_value(json_object_get(x, "kernel")), kernel) == 0)
      return (int)i;
  }
  return -1;
}

/* A file's "chosen": true, on one record of a shape, within 1.25x the fastest there. */
Test(table, a_malformed_choice_names_the_field) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  size_t ci = tc_add_causal(ctx, t);
  TC_ASSERT_OK(add_tie_point(ctx, t, ci, 1.01e-3, 1));
  TC_ASSERT_OK(txattn_table_write(t, file));
  static const struct {
    const char *kernel; /* the record whose "chosen" is set */
    int value;          /* 1: true, 0: false */
    const char *pattern;
  } cases[] = {{"naive.scalar", 0, "classes\\[0\\]\\.points\\[[0-9]+\\]\\.chosen: expected true"},
               {"masked.scalar", 1, "two records are chosen at n = 512"},
               {"tiled.scalar", 1, "two records are chosen at n = 512"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_error_t e;
    json_t *root = json_load_file(file, 0, &e);
    cr_assert(root != NULL, "%s", e.text);
    json_t *recs = json_object_get(json_array_get(json_object_get(root, "classes"), 0), "points");
    int at = record_at(root, 512, cases[i].kernel);
    cr_assert(at >= 0);
    json_object_set_new(json_array_get(recs, (size_t)at), "chosen", json_boolean(cases[i].value));
    char path[SCRATCH_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/choice%zu.json", dir, i);
    cr_assert(json_dump_file(root, path, JSON_INDENT(1)) == 0);
    json_decref(root);
    txattn_table *u = NULL;
    cr_expect_eq(txattn_table_load(path, &u), TXATTN_E_TABLE, "case %zu", i);
    cr_expect(u == NULL);
    cr_expect(matches(txattn_last_error(), cases[i].pattern), "case %zu: %s", i,
              txattn_last_error());
  }
  /* the choice moved to a record 2x the fastest is no tie */
  json_error_t e;
  json_t *root = json_load_file(file, 0, &e);
  json_t *recs = json_object_get(json_array_get(json_object_get(root, "classes"), 0), "points");
  json_object_del(json_array_get(recs, (size_t)record_at(root, 512, "naive.scalar")), "chosen");
  json_object_set_new(json_array_get(recs, (size_t)record_at(root, 512, "tiled.scalar")), "chosen",
                      json_true());
  cr_assert(json_dump_file(root, file, JSON_INDENT(1)) == 0);
  json_decref(root);
  txattn_table *u = NULL;
  cr_expect_eq(txattn_table_load(file, &u), TXATTN_E_TABLE);
  cr_expect(
      text_mentions(txattn_last_error(), "tiled.scalar", "more than 1.25 x the fastest", NULL),
      "%s", txattn_last_error());
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* ---- a table of measurements, written by hand: what the library derives from it ---- */

/* The header of a table for ctx's machine and plugins (format_version 5), up to "classes": [. */
static char *header_for(const txattn_context *ctx) {
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  char *text = dump_text(t);
  txattn_table_free(t);
  char *end = strstr(text, "\"classes\": []");
  cr_assert(end != NULL, "%s", text);
  end[strlen("\"classes\": [")] = '\0';
  return text;
}

/* Writes header + body + "]}" to file. */
static void write_table(const txattn_context *ctx, const char *body) {
  char *h = header_for(ctx);
  size_t n = strlen(h) + strlen(body) + 8;
  char *text = malloc(n);
  snprintf(text, n, "%s%s]}\n", h, body);
  tc_write_file(file, text, strlen(text));
  free(text);
  free(h);
}

#define CAUSAL_CLASS                                                                               \
  "{\"mask\": \"causal\", \"d_qk\": 16, \"d_v\": 16, \"group\": 1, \"threads\": 1, \"decode\": "   \
  "false, \"batch\": 1, \"heads_q\": 1, \"points\": ["
#define REC(n, kernel, t)                                                                          \
  "{\"n\": " #n ", \"kernel\": \"" kernel "\", \"tunables\": {}, \"time_s\": " #t                  \
  ", \"max_error\": 1e-7, \"spread\": 0.02}"

/* Records only: at n = 256 naive.scalar and banded.scalar are 1% apart and the faster wins, at
   n = 1024 the one marked chosen wins though 1% slower; a kernel that failed at 256 is an
   exclusion, never a candidate; a context follows the table so. */
Test(table, a_table_of_records_derives_winners_regions_and_exclusions) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  char body[2048];
  snprintf(body, sizeof body,
           "%s%s, %s, %s, %s, %s, %s, "
           "{\"n\": 256, \"kernel\": \"masked.scalar\", \"tunables\": {\"block_rows\": 64}, "
           "\"max_error\": null, \"failed\": \"crashed on its check\"}]}",
           CAUSAL_CLASS, REC(256, "banded.scalar", 1.01e-4), REC(256, "naive.scalar", 1e-4),
           REC(1024, "naive.scalar", 1.6e-3),
           "{\"n\": 1024, \"kernel\": \"banded.scalar\", \"tunables\": {}, \"time_s\": 1.616e-3, "
           "\"max_error\": 1e-7, \"spread\": 0.02, \"chosen\": true}",
           REC(4096, "banded.scalar", 2.6e-2), REC(4096, "naive.scalar", 2.5e-2));
  write_table(ctx, body);
  txattn_table *t = NULL;
  TC_ASSERT_OK(txattn_table_load(file, &t));
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  TC_ASSERT_OK(txattn_table_header_get(t, &h));
  cr_expect(h.n_classes == 1 && h.n_excluded == 1, "%zu classes, %zu excluded", h.n_classes,
            h.n_excluded);
  size_t n_points = 0, n_regions = 0;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  TC_ASSERT_OK(txattn_table_class_get(t, 0, &c, &n_points, &n_regions));
  cr_expect(n_points == 3 && n_regions == 3, "%zu points, %zu regions", n_points, n_regions);
  static const struct {
    const char *winner;
    int tie;
  } want[] = {{"naive.scalar", 0}, {"banded.scalar", 1}, {"naive.scalar", 0}};
  for (size_t i = 0; i < 3 && i < n_points; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    txattn_table_candidate w = TXATTN_TABLE_CANDIDATE_INIT;
    TC_ASSERT_OK(txattn_table_point_get(t, 0, i, &p));
    TC_ASSERT_OK(txattn_table_candidate_get(t, 0, i, 0, &w));
    cr_expect(p.n_candidates == 2, "point %zu: %zu candidates", i, p.n_candidates);
    cr_expect_str_eq(w.kernel, want[i].winner, "point %zu", i);
    cr_expect_eq(p.tie, want[i].tie, "point %zu", i);
  }
  txattn_table_region g = TXATTN_TABLE_REGION_INIT;
  TC_ASSERT_OK(txattn_table_region_get(t, 0, 0, &g));
  cr_expect(g.n_lo == 256 && g.n_hi == 256 && strcmp(g.winner.kernel, "naive.scalar") == 0,
            "region 0: n %lld..%lld %s", (long long)g.n_lo, (long long)g.n_hi, g.winner.kernel);
  txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
  TC_ASSERT_OK(txattn_table_exclusion_get(t, 0, &x));
  cr_expect(strcmp(x.kernel, "masked.scalar") == 0 && x.n == 256 && isnan(x.max_error) &&
                strcmp(x.reason, "crashed on its check") == 0 && x.cls.d_qk == 16,
            "%s at %lld: %s", x.kernel, (long long)x.n, x.reason);
  /* written back, the same records */
  char *a = dump_text(t);
  TC_ASSERT_OK(txattn_table_write(t, file));
  txattn_table *u = NULL;
  TC_ASSERT_OK(txattn_table_load(file, &u));
  char *b = dump_text(u);
  cr_expect_str_eq(a, b);
  /* a context follows the derived winners: the chosen one at 1024, the fastest at 4096 */
  txattn_context *follower = tc_context(NULL, file, 1);
  cr_expect_eq(txattn_context_table_status(follower), TXATTN_TABLE_LOADED, "%s",
               txattn_context_table_state(follower));
  static const struct {
    int64_t n;
    const char *kernel;
  } picks[] = {{256, "naive.scalar"}, {1024, "banded.scalar"}, {4096, "naive.scalar"}};
  for (size_t i = 0; i < 3; i++) {
    char kernel[64], why[512];
    txattn_problem p = {.n_q = picks[i].n, .d_qk = TC_D, .mask = TXATTN_MASK_CAUSAL};
    tc_pick(follower, &p, kernel, sizeof kernel, why, sizeof why);
    cr_expect_str_eq(kernel, picks[i].kernel, "n = %lld: %s", (long long)picks[i].n, why);
    cr_expect(strstr(why, "masked.scalar") == NULL, "the failed kernel is no candidate: %s", why);
  }
  free(a);
  free(b);
  txattn_context_free(follower);
  txattn_table_free(u);
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* A class whose every record failed holds no points: its failures are exclusions, and a problem
   of it finds no class. */
Test(table, a_class_of_failed_records_is_exclusions_only) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  write_table(ctx, CAUSAL_CLASS "{\"n\": 193, \"kernel\": \"naive.scalar\", \"tunables\": {}, "
                                "\"max_error\": 0.5, \"failed\": \"not exact\"}]}");
  txattn_table *t = NULL;
  TC_ASSERT_OK(txattn_table_load(file, &t));
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  TC_ASSERT_OK(txattn_table_header_get(t, &h));
  cr_expect(h.n_classes == 0 && h.n_excluded == 1);
  char *a = dump_text(t);
  cr_expect(strstr(a, "\"failed\": \"not exact\"") != NULL, "written back: %s", a);
  free(a);
  /* a failed record has no time, and a timed one no failure */
  write_table(ctx, CAUSAL_CLASS "{\"n\": 193, \"kernel\": \"naive.scalar\", \"tunables\": {}, "
                                "\"time_s\": 1e-4, \"max_error\": 0.5, \"failed\": \"x\"}]}");
  txattn_table *u = NULL;
  cr_expect_eq(txattn_table_load(file, &u), TXATTN_E_TABLE);
  cr_expect(text_mentions(txattn_last_error(), "classes[0].points[0]", "a failed record has no",
                          "time_s", NULL),
            "%s", txattn_last_error());
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* A table cut short while it was written by hand or copied (the library's own writes are atomic)
   is malformed, never read in part: the context names file and position and the estimate
   decides. */
Test(table, a_torn_table_of_records_is_malformed) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  write_table(
      ctx, CAUSAL_CLASS REC(256, "naive.scalar", 1e-4) ", " REC(1024, "naive.scalar", 1.6e-3) "]}");
  size_t len;
  char *text = tc_read_file(file, &len);
  char *cut = strstr(text, "{\"n\": 1024");
  cr_assert(cut != NULL);
  tc_write_file(file, text, (size_t)(cut - text) + 20);
  free(text);
  txattn_table *t = (txattn_table *)&t;
  cr_expect_eq(txattn_table_load(file, &t), TXATTN_E_TABLE);
  cr_expect(t == NULL);
  txattn_context *follower = tc_context(NULL, file, 1);
  cr_expect_eq(txattn_context_table_status(follower), TXATTN_TABLE_MALFORMED);
  cr_expect(matches(txattn_context_table_state(follower), "dispatch\\.json:[0-9]+:[0-9]+: "), "%s",
            txattn_context_table_state(follower));
  char kernel[64], why[512];
  txattn_problem p = {.n_q = 256, .d_qk = TC_D, .mask = TXATTN_MASK_CAUSAL};
  tc_pick(follower, &p, kernel, sizeof kernel, why, sizeof why);
  cr_expect(strncmp(why, "estimate (the dispatch table is malformed", 41) == 0, "%s", why);
  txattn_context_free(follower);
  txattn_context_free(ctx);
}

/* A table of an older format (1 to 4: the regions and winners it derived, beside its
   measurements) is refused with the fix: rerun `txtune profile`. */
Test(table, an_older_format_is_refused_with_the_fix) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  for (int version = 1; version < TXATTN_TABLE_FORMAT_VERSION; version++) {
    char *h = header_for(ctx), *v = strstr(h, "\"format_version\": 5");
    cr_assert(v != NULL);
    v[strlen("\"format_version\": ")] = (char)('0' + version);
    size_t n = strlen(h) + 8;
    char *text = malloc(n);
    snprintf(text, n, "%s]}\n", h);
    tc_write_file(file, text, strlen(text));
    free(text);
    free(h);
    txattn_table *t = (txattn_table *)&t;
    cr_expect_eq(txattn_table_load(file, &t), TXATTN_E_TABLE, "version %d", version);
    cr_expect(t == NULL);
    cr_expect(text_mentions(txattn_last_error(), "format_version", "older txtune",
                            "rerun `txtune profile`", NULL),
              "version %d: %s", version, txattn_last_error());
    txattn_context *follower = tc_context(NULL, file, 1);
    cr_expect_eq(txattn_context_table_status(follower), TXATTN_TABLE_MALFORMED);
    cr_expect(strstr(txattn_context_table_state(follower), "rerun `txtune profile`") != NULL, "%s",
              txattn_context_table_state(follower));
    txattn_context_free(follower);
  }
  txattn_context_free(ctx);
}

/* ---- reading: fixtures, truncations, corruption ---- */

typedef struct fixture {
  const char *name;
  const char *pattern; /* what the message must say, after the file's path */
} fixture;

static const fixture fixtures[] = {
    {"truncated.json", ":[0-9]+:[0-9]+: premature end of input"},
    {"wrong_type.json",
     ": at classes\\[1\\]\\.points\\[0\\]\\.n: expected an integer, got a string"},
    {"missing_field.json", ": at classes\\[0\\]\\.points\\[0\\]: the field \"time_s\" is missing"},
    {"future_version.json", ": at format_version: 6 is not supported.*reads format_version 5"},
    {"not_a_table.json", ": at format: .*not a txtune dispatch table"},
};

Test(table, malformed_fixtures_name_file_and_position) {
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
    char path[SCRATCH_PATH_MAX], pattern[SCRATCH_PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", TXATTN_TEST_TABLE_DATA_DIR, fixtures[i].name);
    txattn_table *t = (txattn_table *)&t; /* not NULL: the load must clear it */
    txattn_status s = txattn_table_load(path, &t);
    cr_expect_eq(s, TXATTN_E_TABLE, "%s: %s", fixtures[i].name, txattn_status_name(s));
    cr_expect(t == NULL, "%s: a failed load handed out a table", fixtures[i].name);
    snprintf(pattern, sizeof pattern, "^malformed dispatch table .*%s%s", fixtures[i].name,
             fixtures[i].pattern);
    cr_expect(matches(txattn_last_error(), pattern), "%s: message \"%s\" does not match %s",
              fixtures[i].name, txattn_last_error(), pattern);
    /* a context given the file works, with the estimate, and says why */
    txattn_context *ctx = tc_context(NULL, path, 1);
    cr_expect_eq(txattn_context_table_status(ctx), TXATTN_TABLE_MALFORMED);
    cr_expect(txattn_context_table(ctx) == NULL);
    const char *state = txattn_context_table_state(ctx);
    cr_expect(strstr(state, path) && strstr(state, "txtune profile"), "state: %s", state);
    char kernel[64], why[512];
    txattn_problem p = {.n_q = 100, .d_qk = TC_D, .mask = TXATTN_MASK_CAUSAL};
    tc_pick(ctx, &p, kernel, sizeof kernel, why, sizeof why);
    cr_expect(strncmp(why, "estimate (the dispatch table is malformed", 41) == 0, "why: %s", why);
    txattn_context_free(ctx);
  }
}

Test(table, other_machine_fixture_reads_but_is_stale_here) {
  char path[SCRATCH_PATH_MAX];
  snprintf(path, sizeof path, "%s/other_machine.json", TXATTN_TEST_TABLE_DATA_DIR);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_load(path, &t));
  txattn_context *ctx = tc_context(NULL, "", 1);
  char why[2048];
  cr_expect_eq(txattn_table_check(t, ctx, why, sizeof why), TXATTN_E_TABLE);
  cr_expect(strstr(why, "machine.vendor is \"GenuineTest\" in the table") != NULL, "%s", why);
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* A file with classes per type combination (the fp32 causal class, the same key with f16
   K and V and all-bf16) reads with its types, keeps them in its exclusions, and is stale here. */
Test(table, typed_fixture_reads_with_its_types) {
  char path[SCRATCH_PATH_MAX], d[128];
  snprintf(path, sizeof path, "%s/typed_classes.json", TXATTN_TEST_TABLE_DATA_DIR);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_load(path, &t));
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  TC_ASSERT_OK(txattn_table_header_get(t, &h));
  cr_expect(h.format_version == TXATTN_TABLE_FORMAT_VERSION && h.n_classes == 4 &&
            h.n_excluded == 2);
  for (size_t i = 0; i < h.n_classes; i++) { /* every class dense */
    txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
    TC_ASSERT_OK(txattn_table_class_get(t, i, &c, NULL, NULL));
    cr_expect_eq(c.ragged, 0, "classes[%zu]", i);
  }
  static const char *const names[] = {"causal d64/64 g1 t2", "causal d64/64 g1 t2 kv=f16",
                                      "window-left d64/64 g1 t2", "causal d64/64 g1 t2 bf16"};
  for (size_t i = 0; i < 4 && i < h.n_classes; i++) {
    txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
    TC_ASSERT_OK(txattn_table_class_get(t, i, &c, NULL, NULL));
    txattn_table_class_describe(&c, d, sizeof d);
    cr_expect_str_eq(d, names[i]);
  }
  txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
  TC_ASSERT_OK(txattn_table_exclusion_get(t, 1, &x));
  txattn_table_class_describe(&x.cls, d, sizeof d);
  cr_expect_str_eq(d, "causal d64/64 g1 t2 kv=f16");
  txattn_context *ctx = tc_context(NULL, "", 1);
  cr_expect_eq(txattn_table_check(t, ctx, NULL, 0), TXATTN_E_TABLE);
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* Every cut before the closing brace is an error with a line and column; nothing is handed out. */
Test(table, truncated_files_fail_cleanly) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t = full_table(ctx);
  TC_ASSERT_OK(txattn_table_write(t, file));
  size_t len;
  char *text = tc_read_file(file, &len), cut[SCRATCH_PATH_MAX + 64];
  size_t end = (size_t)(strrchr(text, '}') - text);
  snprintf(cut, sizeof cut, "%s/cut.json", dir);
  for (size_t at = 0; at < end; at += at < 64 ? 1 : len / 97 + 1) {
    tc_write_file(cut, text, at);
    txattn_table *u = (txattn_table *)&u;
    cr_assert_eq(txattn_table_load(cut, &u), TXATTN_E_TABLE, "cut at %zu of %zu loaded", at, len);
    cr_assert(u == NULL);
    cr_assert(matches(txattn_last_error(), "cut\\.json:[0-9]+:[0-9]+: "), "cut at %zu: %s", at,
              txattn_last_error());
  }
  free(text);
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* Random byte flips, deletions and truncations: the reader either accepts a still-valid table
   (which must then print and read back) or names the file; it never crashes (ASan and UBSan run
   this in the sanitizer build). */
Test(table, fuzzed_files_never_crash) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t = full_table(ctx);
  TC_ASSERT_OK(txattn_table_write(t, file));
  size_t len;
  char *orig = tc_read_file(file, &len), *buf = malloc(len + 1), path[SCRATCH_PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/fuzz.json", dir);
  unsigned seed = 20240501u;
  int accepted = 0;
  for (int iter = 0; iter < 600; iter++) {
    memcpy(buf, orig, len);
    size_t n = len;
    int edits = 1 + rand_r(&seed) % 3;
    for (int e = 0; e < edits && n > 0; e++) {
      size_t at = (size_t)rand_r(&seed) % n;
      switch (rand_r(&seed) % 4) {
      case 0:
        buf[at] = (char)(rand_r(&seed) & 0xff);
        break;
      case 1:
        buf[at] = "{}[]\":,0123456789-.eEtfn \\x"[rand_r(&seed) % 28];
        break;
      case 2:
        memmove(buf + at, buf + at + 1, n - at - 1), n--;
        break;
      default:
        n = at;
        break;
      }
    }
    tc_write_file(path, buf, n);
    txattn_table *u = NULL;
    txattn_status s = txattn_table_load(path, &u);
    if (s == TXATTN_OK) {
      accepted++;
      char *again = dump_text(u);
      cr_assert(again != NULL && again[0] == '{');
      free(again);
      txattn_table_free(u);
      continue;
    }
    cr_assert(s == TXATTN_E_TABLE, "iteration %d: %s: %s", iter, txattn_status_name(s),
              txattn_last_error());
    cr_assert(u == NULL && strstr(txattn_last_error(), path) != NULL, "iteration %d: %s", iter,
              txattn_last_error());
  }
  cr_log_info("fuzz: %d of 600 corrupted tables were still valid", accepted);
  free(orig);
  free(buf);
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* ---- writing ---- */

static size_t entries(const char *path) {
  DIR *d = opendir(path);
  size_t n = 0;
  cr_assert(d != NULL);
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += e->d_name[0] != '.' || strlen(e->d_name) > 2;
  closedir(d);
  return n;
}

Test(table, write_creates_directories_and_a_readable_file) {
  new_dir();
  char deep[SCRATCH_PATH_MAX + 64];
  snprintf(deep, sizeof deep, "%s/a/b/c/dispatch.json", dir);
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t = full_table(ctx);
  TC_ASSERT_OK(txattn_table_write(t, deep));
  struct stat st;
  cr_assert(stat(deep, &st) == 0);
  mode_t mask = umask(0);
  umask(mask);
  cr_expect_eq(st.st_mode & 0777, 0644 & ~mask, "mode %o", (unsigned)(st.st_mode & 0777));
  char parent[SCRATCH_PATH_MAX + 64];
  snprintf(parent, sizeof parent, "%s/a/b/c", dir);
  cr_expect_eq(entries(parent), 1, "a temporary file was left beside the table");
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* The old table survives a writer that died (its temporary file left behind) and a write that
   fails half way (the file size limit stands in for a full disk). */
Test(table, failed_writes_leave_the_old_table) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t = full_table(ctx);
  TC_ASSERT_OK(txattn_table_write(t, file));
  size_t len;
  char *before = tc_read_file(file, &len);
  scratch_write(dir, ".dispatch.json.tmp.99999.1", "{\"format\": \"txtune-disp", 0644);
  txattn_table *u;
  TC_ASSERT_OK(txattn_table_load(file, &u));
  txattn_table_free(u);
  size_t n_before = entries(dir);
  struct rlimit old, small;
  cr_assert(getrlimit(RLIMIT_FSIZE, &old) == 0);
  small = old;
  small.rlim_cur = len / 2;
  signal(SIGXFSZ, SIG_IGN);
  cr_assert(setrlimit(RLIMIT_FSIZE, &small) == 0);
  txattn_status s = txattn_table_write(t, file);
  cr_assert(setrlimit(RLIMIT_FSIZE, &old) == 0);
  cr_expect_eq(s, TXATTN_E_IO, "a write beyond the file size limit succeeded");
  cr_expect(strstr(txattn_last_error(), file) &&
                text_mentions(txattn_last_error(), "left as it was", NULL),
            "%s", txattn_last_error());
  size_t len2;
  char *after = tc_read_file(file, &len2);
  cr_expect(len2 == len && memcmp(before, after, len) == 0, "the old table changed");
  cr_expect_eq(entries(dir), n_before, "the failed write left a temporary file");
  /* a path under a regular file cannot be created */
  char under_file[SCRATCH_PATH_MAX + 96];
  snprintf(under_file, sizeof under_file, "%s/sub/dispatch.json", file);
  cr_expect_eq(txattn_table_write(t, under_file), TXATTN_E_IO);
  if (geteuid() != 0) { /* root writes into read-only directories */
    cr_assert(chmod(dir, 0555) == 0);
    cr_expect_eq(txattn_table_write(t, file), TXATTN_E_IO);
    cr_assert(chmod(dir, 0755) == 0);
  }
  free(before);
  free(after);
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* ---- where the table is ---- */

Test(table, the_path_in_effect) {
  char buf[SCRATCH_PATH_MAX];
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", 1);
  TC_ASSERT_OK(txattn_table_default_path(buf, sizeof buf));
  cr_expect_str_eq(buf, "/home/someone/.cache/txtune/dispatch.json");
  setenv("XDG_CACHE_HOME", "relative/cache", 1); /* invalid by the XDG spec: ignored */
  TC_ASSERT_OK(txattn_table_default_path(buf, sizeof buf));
  cr_expect_str_eq(buf, "/home/someone/.cache/txtune/dispatch.json");
  setenv("XDG_CACHE_HOME", "/var/cache/me", 1);
  TC_ASSERT_OK(txattn_table_default_path(buf, sizeof buf));
  cr_expect_str_eq(buf, "/var/cache/me/txtune/dispatch.json");
  setenv("TXATTN_TABLE", "/etc/my-table.json", 1);
  TC_ASSERT_OK(txattn_table_default_path(buf, sizeof buf));
  cr_expect_str_eq(buf, "/etc/my-table.json");
  unsetenv("TXATTN_TABLE");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  cr_expect_eq(txattn_table_default_path(buf, sizeof buf), TXATTN_E_NOT_FOUND);
  txattn_context *ctx = tc_context(NULL, NULL, 1);
  cr_expect_eq(txattn_context_table_status(ctx), TXATTN_TABLE_NONE);
  cr_expect_str_eq(txattn_context_table_path(ctx), "");
  cr_expect(text_mentions(txattn_context_table_state(ctx), "HOME", NULL), "%s",
            txattn_context_table_state(ctx));
  txattn_context_free(ctx);
}

Test(table, default_location_missing_then_written) {
  new_dir();
  setenv("XDG_CACHE_HOME", dir, 1);
  char want[SCRATCH_PATH_MAX + 64];
  snprintf(want, sizeof want, "%s/txtune/dispatch.json", dir);
  txattn_context *ctx = tc_context(NULL, NULL, 1);
  cr_expect_eq(txattn_context_table_status(ctx), TXATTN_TABLE_NONE);
  cr_expect_str_eq(txattn_context_table_path(ctx), want);
  const char *state = txattn_context_table_state(ctx);
  cr_expect(strncmp(state, "no table at ", 12) == 0 && strstr(state, want) &&
                strstr(state, "run `txtune profile`"),
            "state: %s", state);
  txattn_table *t = full_table(ctx);
  TC_ASSERT_OK(txattn_table_write(t, NULL));
  txattn_context *again = tc_context(NULL, NULL, 1);
  cr_expect_eq(txattn_context_table_status(again), TXATTN_TABLE_LOADED, "%s",
               txattn_context_table_state(again));
  cr_expect(txattn_context_table(again) != NULL);
  /* tables off, and an explicit path that is missing */
  txattn_context *off = tc_context(NULL, "", 1);
  cr_expect_eq(txattn_context_table_status(off), TXATTN_TABLE_NONE);
  cr_expect(text_mentions(txattn_context_table_state(off), "off", NULL));
  char missing[SCRATCH_PATH_MAX + 64];
  snprintf(missing, sizeof missing, "%s/nowhere.json", dir);
  txattn_context *gone = tc_context(NULL, missing, 1);
  cr_expect_eq(txattn_context_table_status(gone), TXATTN_TABLE_NONE);
  cr_expect(strstr(txattn_context_table_state(gone), missing) &&
                strstr(txattn_context_table_state(gone), "txattn_options.table_path"),
            "%s", txattn_context_table_state(gone));
  txattn_table_free(t);
  txattn_context_free(ctx);
  txattn_context_free(again);
  txattn_context_free(off);
  txattn_context_free(gone);
}

/* ---- stale tables ---- */

typedef struct edit {
  const char *field; /* as the state names it; plugin fields get "plugins[NAME]." in front */
  int of_plugin;
  void (*apply)(json_t *root, const txattn_context *ctx, char *old, char *now, size_t size);
  int partial; /* the plugin set differs: the table stays followed for the kernels it measured */
} edit;

static json_t *machine(json_t *root) {
  return json_object_get(root, "machine");
}

static void set_string(json_t *o, const char *key, const char *prefix, char *old, char *now,
                       size_t size) {
  char v[256];
  snprintf(now, size, "\"%s\"", json_string_value(json_object_get(o, key)));
  snprintf(v, sizeof v, "%s%s", prefix, json_string_value(json_object_get(o, key)));
  snprintf(old, size, "\"%s\"", v);
  json_object_set_new(o, key, json_string(v));
}

static void set_int(json_t *o, const char *key, json_int_t delta, char *old, char *now,
                    size_t size) {
  json_int_t v = json_integer_value(json_object_get(o, key));
  snprintf(now, size, "%lld", (long long)v);
  snprintf(old, size, "%lld", (long long)(v + delta));
  json_object_set_new(o, key, json_integer(v + delta));
}

static void e_library(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  set_string(r, "library_version", "9.", o, n, s);
}
static void e_vendor(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  json_t *m = machine(r);
  const char *v = strcmp(json_string_value(json_object_get(m, "vendor")), "OtherVendor")
                      ? "OtherVendor"
                      : "AnotherVendor";
  snprintf(n, s, "\"%s\"", json_string_value(json_object_get(m, "vendor")));
  snprintf(o, s, "\"%s\"", v);
  json_object_set_new(m, "vendor", json_string(v));
}
static void e_brand(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  set_string(machine(r), "brand", "Other ", o, n, s);
}
static void e_family(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  set_int(machine(r), "family", 1, o, n, s);
}
static void e_model(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  set_int(machine(r), "model", 1, o, n, s);
}
static void e_stepping(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  set_int(machine(r), "stepping", 1, o, n, s);
}
static void e_cores(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  set_int(machine(r), "cores", 1, o, n, s);
}
static void e_l1d(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  set_int(json_object_get(machine(r), "caches"), "l1d", 4096, o, n, s);
}
static void e_l2(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  set_int(json_object_get(machine(r), "caches"), "l2", 65536, o, n, s);
}
static void e_l3(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  set_int(json_object_get(machine(r), "caches"), "l3", 1 << 20, o, n, s);
}

/* The ISA list with one ISA more than this machine enables. */
static void e_isa(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  json_t *isa = json_object_get(machine(r), "isa");
  static const char *const all[] = {"scalar", "avx2", "avx512", "neon", "avx512bf16"};
  const char *keep[5];
  size_t k = 0;
  int added = 0;
  n[0] = o[0] = '\0';
  for (size_t i = 0; i < 5; i++) {
    int has = 0;
    for (size_t j = 0; j < json_array_size(isa); j++)
      has |= strcmp(json_string_value(json_array_get(isa, j)), all[i]) == 0;
    if (has) snprintf(n + strlen(n), s - strlen(n), "%s%s", *n ? "," : "", all[i]);
    if (has || !added) {
      keep[k++] = all[i];
      snprintf(o + strlen(o), s - strlen(o), "%s%s", *o ? "," : "", all[i]);
    }
    added |= !has;
  }
  json_array_clear(isa);
  for (size_t i = 0; i < k; i++) json_array_append_new(isa, json_string(keep[i]));
  char old[128], now[128];
  snprintf(old, sizeof old, "[%s]", o);
  snprintf(now, sizeof now, "[%s]", n);
  snprintf(o, s, "%s", old);
  snprintf(n, s, "%s", now);
}

static void e_plugin_version(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  set_string(json_array_get(json_object_get(r, "plugins"), 0), "version", "9.", o, n, s);
}

static void e_plugin_build(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  json_t *p = json_array_get(json_object_get(r, "plugins"), 0);
  snprintf(n, s, "\"%s\"", json_string_value(json_object_get(p, "build")));
  snprintf(o, s, "\"fnv1a64x4:0123456789abcdef\"");
  json_object_set_new(p, "build", json_string("fnv1a64x4:0123456789abcdef"));
}

static void e_plugin_gone(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  json_t *list = json_object_get(r, "plugins");
  snprintf(o, s, "plugin %s", json_string_value(json_object_get(json_array_get(list, 0), "name")));
  snprintf(n, s, "is loaded here, not in the table");
  json_array_remove(list, 0);
}

static void e_plugin_extra(json_t *r, const txattn_context *c, char *o, char *n, size_t s) {
  (void)c;
  json_array_append_new(json_object_get(r, "plugins"),
                        json_pack("{ssssss}", "name", "ghost", "version", "1.0.0", "build",
                                  "fnv1a64x4:00000000000000aa"));
  snprintf(o, s, "plugin ghost 1.0.0 (fnv1a64x4:00000000000000aa)");
  snprintf(n, s, "is in the table, not loaded here");
}

static const edit edits[] = {
    {"library_version", 0, e_library, 0}, {"machine.vendor", 0, e_vendor, 0},
    {"machine.brand", 0, e_brand, 0},     {"machine.family", 0, e_family, 0},
    {"machine.model", 0, e_model, 0},     {"machine.stepping", 0, e_stepping, 0},
    {"machine.isa", 0, e_isa, 0},         {"machine.caches.l1d", 0, e_l1d, 0},
    {"machine.caches.l2", 0, e_l2, 0},    {"machine.caches.l3", 0, e_l3, 0},
    {"machine.cores", 0, e_cores, 0},     {"version", 1, e_plugin_version, 1},
    {"build", 1, e_plugin_build, 1},      {"", 0, e_plugin_gone, 1},
    {"", 0, e_plugin_extra, 1},
};

/* A plugin that differs leaves the table partly valid: still followed (the pick's reason comes
   from it), the state naming the difference and the command that measures it. */
static void expect_partial(const char *path, const char *field, const char *old, const char *now) {
  char want[1024];
  if (*field)
    snprintf(want, sizeof want, "%s is %s in the table, %s here", field, old, now);
  else
    snprintf(want, sizeof want, "%s", old);
  txattn_context *ctx = tc_context(NULL, path, 1);
  const char *state = txattn_context_table_state(ctx);
  cr_expect_eq(txattn_context_table_status(ctx), TXATTN_TABLE_PARTIAL, "%s: %s", field, state);
  cr_expect(strstr(state, want) != NULL, "the state does not say \"%s\": %s", want, state);
  cr_expect(*field || strstr(state, now), "the state does not say \"%s\": %s", now, state);
  cr_expect(strstr(state, "partly valid") && strstr(state, "txtune profile --update"), "%s", state);
  cr_expect(txattn_context_table(ctx) != NULL);
  char kernel[64], why[512];
  txattn_problem p = {.n_q = 300, .d_qk = TC_D, .mask = TXATTN_MASK_CAUSAL};
  tc_pick(ctx, &p, kernel, sizeof kernel, why, sizeof why);
  cr_expect(strstr(why, "table: interpolated between n=256 and n=1024") != NULL, "why: %s", why);
  txattn_context_free(ctx);
}

static void expect_stale(const char *path, const char *field, const char *old, const char *now) {
  char want[1024];
  if (*field)
    snprintf(want, sizeof want, "%s is %s in the table, %s here", field, old, now);
  else
    snprintf(want, sizeof want, "%s", old);
  txattn_context *ctx = tc_context(NULL, path, 1);
  const char *state = txattn_context_table_state(ctx);
  cr_expect_eq(txattn_context_table_status(ctx), TXATTN_TABLE_STALE, "%s: %s", field, state);
  cr_expect(strstr(state, want) != NULL, "the state does not say \"%s\": %s", want, state);
  cr_expect(*field || strstr(state, now), "the state does not say \"%s\": %s", now, state);
  cr_expect(strstr(state, path) && strstr(state, "txtune profile"), "%s", state);
  cr_expect(txattn_context_table(ctx) == NULL);
  char kernel[64], why[512];
  txattn_problem p = {.n_q = 300, .d_qk = TC_D, .mask = TXATTN_MASK_CAUSAL};
  tc_pick(ctx, &p, kernel, sizeof kernel, why, sizeof why);
  cr_expect(strncmp(why, "estimate (the dispatch table is stale", 37) == 0, "why: %s", why);
  txattn_context_free(ctx);
}

/* A changed library or machine field makes the table stale; a changed plugin set only partly
   valid. */
Test(table, every_header_field_changed_makes_it_stale_or_partial) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t = full_table(ctx);
  TC_ASSERT_OK(txattn_table_write(t, file));
  txattn_context *fresh = tc_context(NULL, file, 1);
  cr_assert_eq(txattn_context_table_status(fresh), TXATTN_TABLE_LOADED, "%s",
               txattn_context_table_state(fresh));
  txattn_context_free(fresh);
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    json_error_t e;
    json_t *root = json_load_file(file, 0, &e);
    cr_assert(root != NULL, "%s", e.text);
    char old[256], now[256], path[SCRATCH_PATH_MAX + 64], field[96];
    const char *plugin = json_string_value(
        json_object_get(json_array_get(json_object_get(root, "plugins"), 0), "name"));
    snprintf(field, sizeof field, "%s%s%s%s", edits[i].of_plugin ? "plugins[" : "",
             edits[i].of_plugin ? plugin : "", edits[i].of_plugin ? "]." : "", edits[i].field);
    edits[i].apply(root, ctx, old, now, sizeof old);
    snprintf(path, sizeof path, "%s/edit%zu.json", dir, i);
    cr_assert(json_dump_file(root, path, JSON_INDENT(1)) == 0);
    json_decref(root);
    (edits[i].partial ? expect_partial : expect_stale)(path, field, old, now);
  }
  txattn_table_free(t);
  txattn_context_free(ctx);
}

/* A table measured with one build of a plugin is stale for another build of it. */
Test(table, another_plugin_build_makes_it_stale) {
  char a[SCRATCH_PATH_MAX], b[SCRATCH_PATH_MAX], path[SCRATCH_PATH_MAX + 64];
  new_dir();
  scratch_subdir(a, sizeof a, dir, "a", 0755);
  scratch_subdir(b, sizeof b, dir, "b", 0755);
  scratch_copy_plugin(a, TEST_GOOD_FILE, NULL, 0644);
  scratch_copy_plugin(b, TEST_GOOD_FILE, NULL, 0644);
  snprintf(path, sizeof path, "%s/%s", b, TEST_GOOD_FILE);
  FILE *f = fopen(path, "ab"); /* the same code, one byte longer: another build */
  cr_assert(f != NULL && fputc(0, f) == 0 && fclose(f) == 0);
  txattn_context *ca = tc_context(a, "", 1), *cb = tc_context(b, "", 1);
  txattn_kernel_info ka = TXATTN_KERNEL_INFO_INIT, kb = TXATTN_KERNEL_INFO_INIT;
  TC_ASSERT_OK(txattn_kernel_get(ca, 0, &ka));
  TC_ASSERT_OK(txattn_kernel_get(cb, 0, &kb));
  cr_expect(matches(ka.plugin_build, "^fnv1a64x4:[0-9a-f]{16}$"), "%s", ka.plugin_build);
  cr_assert(strcmp(ka.plugin_build, kb.plugin_build) != 0, "two builds, one identity");
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ca, &t));
  TC_ASSERT_OK(txattn_table_write(t, file));
  char old[128], now[128];
  snprintf(old, sizeof old, "\"%s\"", ka.plugin_build);
  snprintf(now, sizeof now, "\"%s\"", kb.plugin_build);
  txattn_context_free(cb);
  cb = tc_context(b, file, 1);
  const char *state = txattn_context_table_state(cb);
  cr_expect_eq(txattn_context_table_status(cb), TXATTN_TABLE_STALE, "%s", state);
  char want[512];
  snprintf(want, sizeof want, "plugins[testgood].build is %s in the table, %s here", old, now);
  cr_expect(strstr(state, want) != NULL, "want \"%s\" in: %s", want, state);
  txattn_context *same = tc_context(a, file, 1);
  cr_expect_eq(txattn_context_table_status(same), TXATTN_TABLE_LOADED, "%s",
               txattn_context_table_state(same));
  txattn_table_free(t);
  txattn_context_free(ca);
  txattn_context_free(cb);
  txattn_context_free(same);
}

/* Tunables a kernel does not declare, or values outside its range, make the table stale. */
Test(table, tunables_the_kernel_refuses_make_it_stale) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  txattn_table_class c = {.mask = TXATTN_MASK_NONE,
                          .window = 0,
                          .d_qk = TC_D,
                          .d_v = TC_D,
                          .group = 1,
                          .threads = 1,
                          .decode = 0,
                          .batch = 1,
                          .heads_q = 1};
  size_t ci;
  TC_ASSERT_OK(txattn_table_add_class(t, &c, &ci));
  const char *names[] = {"block_rows"};
  int64_t values[] = {0}; /* masked.scalar declares block_rows >= 1 */
  txattn_table_candidate x[] = {{"naive.scalar", 0, NULL, NULL, 1e-4, 1e-7, -1},
                                {"masked.scalar", 1, names, values, 2e-4, 1e-7, -1}};
  TC_ASSERT_OK(txattn_table_add_point(t, ci, 128, 0, x, 2));
  TC_ASSERT_OK(txattn_table_write(t, file));
  txattn_context *follower = tc_context(NULL, file, 1);
  const char *state = txattn_context_table_state(follower);
  cr_expect_eq(txattn_context_table_status(follower), TXATTN_TABLE_STALE, "%s", state);
  cr_expect(strstr(state, "masked.scalar block_rows = 0 is not allowed") != NULL, "%s", state);
  txattn_table_free(t);
  txattn_context_free(ctx);
  txattn_context_free(follower);
}

static void verbose_init(void) {
  test_env_clean();
  setenv("TXATTN_VERBOSE", "1", 1);
  cr_redirect_stderr();
}

Test(table, verbose_log_names_the_stale_field, .init = verbose_init) {
  new_dir();
  txattn_context *ctx = tc_context(NULL, "", 1);
  txattn_table *t;
  TC_ASSERT_OK(txattn_table_create(ctx, &t));
  TC_ASSERT_OK(txattn_table_write(t, file));
  json_error_t e;
  json_t *root = json_load_file(file, 0, &e);
  cr_assert(root != NULL);
  json_object_set_new(root, "library_version", json_string("0.0.1"));
  cr_assert(json_dump_file(root, file, 0) == 0);
  json_decref(root);
  txattn_context *follower = tc_context(NULL, file, 1);
  fflush(stderr);
  char log[16384] = "";
  size_t n = fread(log, 1, sizeof log - 1, cr_get_redirected_stderr());
  log[n] = '\0';
  cr_expect(strstr(log, "library_version is \"0.0.1\" in the table") &&
                strstr(log, "txtune profile"),
            "TXATTN_VERBOSE does not say what is stale:\n%s", log);
  txattn_table_free(t);
  txattn_context_free(ctx);
  txattn_context_free(follower);
}
