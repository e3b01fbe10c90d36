/* SPDX-License-Identifier: MIT */
/* The size limits (core/problem.c, check_sizes): sizes beyond them, strides beyond them and
   products that overflow are refused with TXATTN_E_INVALID and a message naming the field, before
   any kernel sees them, and the output is untouched; sizes at the limits plan or are declined by
   every shipped kernel without overflowing (this suite runs under UBSan in CI). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(limits, .init = test_env_clean, .fini = test_check_leaks);

#define SENTINEL 1234.5f

/* A problem of 1 query row, d 1, whose K and V rows all alias one element (row stride 0), so that
   any n_kv needs 1 float of memory. */
struct tiny {
  float q[4], k[4], v[4], o[4];
  txattn_problem p;
  txattn_tensors t;
};

static void tiny_init(struct tiny *s) {
  memset(s, 0, sizeof *s);
  s->p = (txattn_problem)TXATTN_PROBLEM_INIT;
  s->p.n_q = 1;
  s->p.d_qk = 1;
  for (int i = 0; i < 4; i++) s->q[i] = s->k[i] = s->v[i] = 0.5f, s->o[i] = SENTINEL;
  s->t = (txattn_tensors)TXATTN_TENSORS_INIT;
  s->t.q = s->q;
  s->t.k = s->k;
  s->t.v = s->v;
  s->t.o = s->o;
  s->t.k_layout = s->t.v_layout = (txattn_layout){1, 1, 0};
}

/* Refused by resolve, plan_create and attention alike, with every word of want in the message, and
   o untouched. */
static void expect_refused(struct tiny *s, const char *what, const char *const *want) {
  txattn_problem r = TXATTN_PROBLEM_INIT;
  cr_assert_eq(txattn_problem_resolve(&s->p, &r), TXATTN_E_INVALID, "%s: resolve accepted it",
               what);
  const char *msg = txattn_last_error();
  for (int i = 0; want[i]; i++)
    cr_assert(strstr(msg, want[i]) != NULL, "%s: message \"%s\" lacks \"%s\"", what, msg, want[i]);
  txattn_context *ctx = test_context(1);
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &s->p, NULL, &plan), TXATTN_E_INVALID,
               "%s: txattn_plan_create accepted it", what);
  cr_assert_eq(txattn_attention(ctx, &s->p, &s->t), TXATTN_E_INVALID,
               "%s: txattn_attention accepted it", what);
  for (int i = 0; i < 4; i++) cr_assert_eq(s->o[i], SENTINEL, "%s: o[%d] was written", what, i);
  txattn_context_free(ctx);
}

Test(limits, n_kv_beyond_the_limit_is_refused) {
  static const int64_t huge[] = {INT64_C(1) << 31, INT64_C(1) << 40, INT64_C(1) << 60};
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
    struct tiny s;
    tiny_init(&s);
    s.p.n_kv = huge[i];
    for (int m = TXATTN_MASK_NONE; m <= TXATTN_MASK_WINDOW; m++) {
      s.p.mask = (txattn_mask)m;
      s.p.window_left = s.p.window_right = 8;
      expect_refused(&s, "n_kv", (const char *[]){"n_kv", "limit", NULL});
    }
  }
}

Test(limits, every_extent_beyond_its_limit_is_refused) {
  struct tiny s;
  tiny_init(&s);
  s.p.n_q = INT64_C(1) << 31;
  s.p.n_kv = 1;
  expect_refused(&s, "n_q", (const char *[]){"n_q", "limit", NULL});
  tiny_init(&s);
  s.p.d_qk = (INT64_C(1) << 20) + 1;
  expect_refused(&s, "d_qk", (const char *[]){"d_qk", "limit", NULL});
  tiny_init(&s);
  s.p.d_v = (INT64_C(1) << 20) + 1;
  expect_refused(&s, "d_v", (const char *[]){"d_v", "limit", NULL});
  tiny_init(&s);
  s.p.heads_q = 65537;
  s.p.heads_kv = 1;
  expect_refused(&s, "heads_q", (const char *[]){"heads_q", "limit", NULL});
  tiny_init(&s);
  s.p.batch = INT64_C(1) << 31;
  expect_refused(&s, "batch", (const char *[]){"batch", "limit", NULL});
}

/* Each extent alone within its limit, their product beyond 2^56 bytes: refused as an overflow. */
Test(limits, products_beyond_the_limit_are_refused) {
  struct tiny s;
  tiny_init(&s);
  s.p.n_kv = INT64_C(2147483647);
  s.p.d_qk = INT64_C(1) << 20;
  s.p.heads_q = s.p.heads_kv = 65536;
  expect_refused(&s, "heads x n_kv x d", (const char *[]){"k has", "overflow", NULL});
  tiny_init(&s);
  s.p.batch = INT64_C(2147483647);
  s.p.heads_q = 65536;
  s.p.n_q = INT64_C(2147483647);
  expect_refused(&s, "batch x heads x n_q", (const char *[]){"q has", "overflow", NULL});
}

Test(limits, strides_beyond_the_limit_are_refused) {
  static const struct {
    int tensor; /* q k v o */
    txattn_layout l;
    const char *field;
  } bad[] = {
      {0, {1, 1, INT64_C(1) << 55}, "q_layout.row"},   /* 1 row: only the limit catches it */
      {1, {INT64_C(1) << 60, 1, 0}, "k_layout.batch"}, /* 1 batch */
      {2, {1, INT64_MAX, 0}, "v_layout.head"},         /* 1 head */
      {3, {1, 1, INT64_C(1) << 62}, "o_layout.row"},   /* o too */
      {1, {1, 1, INT64_C(1) << 52}, "k_layout"},       /* 16 rows: the span overflows 2^56 */
      {0, {INT64_C(1) << 54, INT64_C(1) << 54, 0}, "q_layout"}, /* each within, the span not */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct tiny s;
    tiny_init(&s);
    txattn_layout *ls[4] = {&s.t.q_layout, &s.t.k_layout, &s.t.v_layout, &s.t.o_layout};
    if (i == 4) s.p.n_kv = 16;
    if (i == 5) s.p.batch = s.p.heads_q = s.p.heads_kv = 2;
    if (i == 5) s.t.k_layout = s.t.v_layout = (txattn_layout){0, 0, 0}, s.t.o_layout = s.t.k_layout;
    *ls[bad[i].tensor] = bad[i].l;
    txattn_context *ctx = test_context(1);
    cr_assert_eq(txattn_attention(ctx, &s.p, &s.t), TXATTN_E_INVALID, "stride case %zu accepted",
                 i);
    const char *msg = txattn_last_error();
    cr_assert(strstr(msg, bad[i].field) != NULL &&
                  (strstr(msg, "limit") || strstr(msg, "overflow")),
              "stride case %zu: message \"%s\" lacks \"%s\" or the limit", i, msg, bad[i].field);
    for (int j = 0; j < 4; j++) cr_assert_eq(s.o[j], SENTINEL, "stride case %zu wrote o", i);
    txattn_context_free(ctx);
  }
}

/* At the limits every shipped kernel plans or declines (any status), its size estimates without
   overflow (UBSan aborts the test otherwise), and a plan that is made describes itself. */
Test(limits, problems_at_the_limits_plan_or_are_declined) {
  static const int64_t n[] = {1, 5, 4097, INT64_C(2147483647)};
  static const int64_t d[] = {1, 3, INT64_C(1) << 20};
  static const int64_t heads[][2] = {{1, 1}, {65536, 1}, {65536, 65536}};
  txattn_context *ctx = test_context(1);
  struct kernel_list ks;
  test_kernel_list(ctx, &ks);
  long made = 0, problems = 0;
  for (size_t a = 0; a < 4; a++)
    for (size_t b = 0; b < 4; b++)
      for (size_t c = 0; c < 3; c++)
        for (size_t h = 0; h < 3; h++)
          for (int m = TXATTN_MASK_NONE; m <= TXATTN_MASK_WINDOW; m++) {
            txattn_problem p = TXATTN_PROBLEM_INIT, r = TXATTN_PROBLEM_INIT;
            p.n_q = n[a], p.n_kv = n[b], p.d_qk = d[c];
            p.heads_q = heads[h][0], p.heads_kv = heads[h][1];
            p.mask = (txattn_mask)m;
            p.window_left = 7, p.window_right = TXATTN_UNBOUNDED;
            if (txattn_problem_resolve(&p, &r) != TXATTN_OK) continue; /* a product too big */
            problems++;
            cr_assert(txattn_problem_visible_pairs(&p) >= 1.0);
            for (size_t k = 0; k < ks.n; k++) {
              if (!ks.k[k].usable) continue;
              txattn_plan *plan = NULL;
              if (txattn_plan_create_tuned(ctx, &p, ks.k[k].name, NULL, NULL, 0, &plan) !=
                  TXATTN_OK)
                continue;
              char buf[256];
              cr_assert_gt(txattn_plan_describe(plan, buf, sizeof buf), 0);
              txattn_plan_free(plan);
              made++;
            }
          }
  cr_assert_gt(problems, 100, "only %ld problems resolved", problems);
  cr_assert_gt(made, 100, "only %ld plans made", made);
  txattn_context_free(ctx);
}

/* The largest problem the limits allow resolves: the limits are not lower than documented. */
Test(limits, the_limits_themselves_are_accepted) {
  txattn_problem p = TXATTN_PROBLEM_INIT, r = TXATTN_PROBLEM_INIT;
  p.n_q = 1, p.n_kv = INT64_C(2147483647), p.d_qk = 1;
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK, "%s", txattn_last_error());
  p.n_kv = 1, p.heads_q = 65536, p.d_qk = INT64_C(1) << 20;
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK, "%s", txattn_last_error());
  p.heads_q = 1, p.batch = INT64_C(2147483647), p.d_qk = 1;
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK, "%s", txattn_last_error());
}

/* ---- dispatch tables: candidates per point are capped, duplicates found in O(k log k) ---- */

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "scratch.h"
#include "txattn/table.h"

#define MAX_CANDS 256 /* TXATTN__TABLE_MAX_CANDIDATES, docs/dispatch_table.md */

static txattn_table *one_class_table(txattn_context *ctx, size_t *cls) {
  txattn_table *t = NULL;
  cr_assert_eq(txattn_table_create(ctx, &t), TXATTN_OK, "%s", txattn_last_error());
  txattn_table_class c = {.mask = TXATTN_MASK_CAUSAL,
                          .d_qk = 16,
                          .d_v = 16,
                          .group = 1,
                          .threads = 1,
                          .batch = 1,
                          .heads_q = 1};
  cr_assert_eq(txattn_table_add_class(t, &c, cls), TXATTN_OK, "%s", txattn_last_error());
  return t;
}

Test(limits, a_point_with_too_many_candidates_is_refused_and_repeats_are_named) {
  txattn_context *ctx = test_context(1);
  size_t cls;
  txattn_table *t = one_class_table(ctx, &cls);
  static char names[MAX_CANDS + 1][24];
  static txattn_table_candidate c[MAX_CANDS + 1];
  for (int i = 0; i <= MAX_CANDS; i++) {
    snprintf(names[i], sizeof names[i], "k%d.scalar", i);
    c[i] = (txattn_table_candidate){names[i], 0, NULL, NULL, 1e-3 * (1 + i), 1e-7, -1};
  }
  cr_expect_eq(txattn_table_add_point(t, cls, 64, 0, c, MAX_CANDS + 1), TXATTN_E_INVALID);
  cr_expect(strstr(txattn_last_error(), "1..256 candidates, got 257"), "%s", txattn_last_error());
  c[MAX_CANDS - 1].kernel = names[3]; /* the last of 256 repeats the fourth */
  cr_expect_eq(txattn_table_add_point(t, cls, 64, 0, c, MAX_CANDS), TXATTN_E_INVALID);
  cr_expect(strstr(txattn_last_error(), "candidates[255] repeats candidates[3]"), "%s",
            txattn_last_error());
  c[MAX_CANDS - 1].kernel = names[MAX_CANDS - 1];
  cr_expect_eq(txattn_table_add_point(t, cls, 64, 0, c, MAX_CANDS), TXATTN_OK, "%s",
               txattn_last_error());
  txattn_table_free(t);
  txattn_context_free(ctx);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  fclose(f);
  return s;
}

/* A table file with 4096 records at one shape (the 56 MB table of issue 19, smaller): refused by the
   cap, before any point is built, naming the shape; a context given it is still created. */
Test(limits, a_table_file_with_too_many_candidates_is_refused_by_the_cap) {
  txattn_context *ctx = test_context(1);
  size_t cls;
  txattn_table *t = one_class_table(ctx, &cls);
  txattn_table_candidate one = {"naive.scalar", 0, NULL, NULL, 1e-3, 1e-7, -1};
  cr_assert_eq(txattn_table_add_point(t, cls, 64, 0, &one, 1), TXATTN_OK, "%s",
               txattn_last_error());
  char dir[512], path[600];
  scratch_dir(dir, sizeof dir, 0700);
  snprintf(path, sizeof path, "%s/big.json", dir);
  cr_assert_eq(txattn_table_write(t, path), TXATTN_OK, "%s", txattn_last_error());
  txattn_table_free(t);
  char *text = slurp(path);
  char *open = strstr(text, "\"points\"");
  cr_assert_not_null(open);
  open = strchr(open, '[');
  char *close = strchr(open, ']'); /* the one record has no tunables, so no array inside */
  cr_assert_not_null(close);
  const size_t one_len = (size_t)(close - open - 1), k = 4096;
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  fwrite(text, 1, (size_t)(open + 1 - text), f);
  for (size_t i = 0; i < k; i++) {
    if (i) fputs(",", f);
    fwrite(open + 1, 1, one_len, f);
  }
  fputs(close, f);
  fclose(f);
  free(text);
  txattn_table *big = NULL;
  cr_expect_neq(txattn_table_load(path, &big), TXATTN_OK);
  cr_expect_null(big);
  const char *msg = txattn_last_error();
  cr_expect(strstr(msg, "4096 records at n = 64") && strstr(msg, "a shape holds 1..256"), "%s",
            msg);
  txattn_options opts = {.table_path = path};
  txattn_context *c2 = NULL;
  cr_expect_eq(txattn_context_create(&opts, &c2), TXATTN_OK, "%s", txattn_last_error());
  txattn_context_free(c2);
  txattn_context_free(ctx);
}

/* A malformed TXATTN_CACHES is ignored with a note, as a malformed table is: contexts are created. */
Test(limits, a_malformed_cache_variable_does_not_fail_contexts) {
  setenv("TXATTN_CACHES", "l2=lots", 1);
  txattn_options opts = {.table_path = ""};
  txattn_context *ctx = NULL;
  cr_assert_eq(txattn_context_create(&opts, &ctx), TXATTN_OK, "%s", txattn_last_error());
  txattn_machine_info m = TXATTN_MACHINE_INFO_INIT;
  cr_assert_eq(txattn_context_machine(ctx, &m), TXATTN_OK);
  cr_expect(strstr(m.cache_notes, "TXATTN_CACHES") && strstr(m.cache_notes, "ignored"), "%s",
            m.cache_notes);
  txattn_context_free(ctx);
  opts.caches = "l2=lots"; /* the option is the caller's own argument: still refused */
  cr_expect_eq(txattn_context_create(&opts, &ctx), TXATTN_E_INVALID);
}
