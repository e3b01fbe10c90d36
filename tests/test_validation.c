/* SPDX-License-Identifier: MIT */
/* Every malformed argument is refused with TXATTN_E_INVALID, a message naming it, and nothing
 * written: the tensors live in one arena that is compared byte for byte after each refused call.
 * (test_legal_inputs.c checks the other side: what is unusual but legal is accepted.) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "test_context.h"
#include "text_match.h"
#include "txattn/txattn.h"

TestSuite(validation, .init = test_env_clean, .fini = test_check_leaks, .timeout = 60);

/* b2, heads 4/2, n_q 5, n_kv 6, d_qk 3, d_v 2, causal */
enum { B = 2, HQ = 4, HKV = 2, NQ = 5, NKV = 6, DQK = 3, DV = 2 };
enum { Q_LEN = B * HQ * NQ * DQK, K_LEN = B * HKV * NKV * DQK, V_LEN = B * HKV * NKV * DV };
enum { O_LEN = B * HQ * NQ * DV, GAP = 16 };
enum {
  Q_AT = GAP,
  K_AT = Q_AT + Q_LEN + GAP,
  V_AT = K_AT + K_LEN + GAP,
  O_AT = V_AT + V_LEN + GAP
};
enum { ARENA_LEN = O_AT + O_LEN + GAP };

struct arena {
  float data[ARENA_LEN];
  float before[ARENA_LEN];
};

static txattn_problem valid_problem(void) {
  txattn_problem p = {.batch = B,
                      .heads_q = HQ,
                      .heads_kv = HKV,
                      .n_q = NQ,
                      .n_kv = NKV,
                      .d_qk = DQK,
                      .d_v = DV,
                      .mask = TXATTN_MASK_CAUSAL};
  return p;
}

static struct arena *arena_new(void) {
  struct arena *a = malloc(sizeof *a);
  cr_assert(a != NULL);
  for (int x = 0; x < ARENA_LEN; x++)
    a->data[x] = (x >= O_AT && x < O_AT + O_LEN) ? -777.0f : sinf(x);
  memcpy(a->before, a->data, sizeof a->data);
  return a;
}

static txattn_tensors valid_tensors(struct arena *a) {
  txattn_tensors t = {
      .q = a->data + Q_AT, .k = a->data + K_AT, .v = a->data + V_AT, .o = a->data + O_AT};
  return t;
}

static void expect_refused(txattn_status s, const char *call, const char *what,
                           const char *const *words, const struct arena *a) {
  char list[128];
  const char *msg = txattn_last_error();
  cr_expect_eq(s, TXATTN_E_INVALID, "%s with %s: got %s, want TXATTN_E_INVALID (%s)", call, what,
               txattn_status_name(s), msg);
  cr_expect(text_mentions_any(msg, words), "%s with %s: the message \"%s\" names none of %s", call,
            what, msg, text_word_list(words, list, sizeof list));
  if (a)
    cr_expect(memcmp(a->data, a->before, sizeof a->data) == 0, "%s with %s wrote to memory", call,
              what);
}

/* ---- problems ---- */

struct bad_problem {
  const char *what;
  void (*spoil)(txattn_problem *p);
  const char *words[4];
};

static void batch_negative(txattn_problem *p) {
  p->batch = -1;
}
static void heads_q_negative(txattn_problem *p) {
  p->heads_q = -2;
}
static void heads_kv_negative(txattn_problem *p) {
  p->heads_kv = -1;
}
static void heads_not_divisible(txattn_problem *p) {
  p->heads_kv = 3;
}
static void heads_kv_above_heads_q(txattn_problem *p) {
  p->heads_kv = 8;
}
static void n_q_zero(txattn_problem *p) {
  p->n_q = 0;
}
static void n_q_negative(txattn_problem *p) {
  p->n_q = -5;
}
static void n_kv_negative(txattn_problem *p) {
  p->n_kv = -1;
}
static void d_qk_zero(txattn_problem *p) {
  p->d_qk = 0;
}
static void d_qk_negative(txattn_problem *p) {
  p->d_qk = -3;
}
static void d_v_negative(txattn_problem *p) {
  p->d_v = -1;
}
static void mask_unknown(txattn_problem *p) {
  p->mask = (txattn_mask)3;
}
static void mask_negative(txattn_problem *p) {
  p->mask = (txattn_mask)-1;
}
static void window_left_negative(txattn_problem *p) {
  p->mask = TXATTN_MASK_WINDOW, p->window_left = -2, p->window_right = 1;
}
static void window_right_negative(txattn_problem *p) {
  p->mask = TXATTN_MASK_WINDOW, p->window_left = 1, p->window_right = -7;
}
static void window_left_int64_min(txattn_problem *p) {
  p->mask = TXATTN_MASK_WINDOW, p->window_left = INT64_MIN, p->window_right = 0;
}
static void scale_nan(txattn_problem *p) {
  p->scale = NAN;
}
static void scale_inf(txattn_problem *p) {
  p->scale = INFINITY;
}
static void scale_minus_inf(txattn_problem *p) {
  p->scale = -INFINITY;
}
static void n_q_huge(txattn_problem *p) {
  p->n_q = INT64_MAX / 2, p->n_kv = 0;
}
static void n_kv_huge(txattn_problem *p) {
  p->n_kv = INT64_MAX;
}
static void d_qk_huge(txattn_problem *p) {
  p->d_qk = INT64_MAX / 4;
}
static void d_v_huge(txattn_problem *p) {
  p->d_v = INT64_MAX / 8;
}
static void batch_times_heads_overflow(txattn_problem *p) {
  p->batch = INT64_C(1) << 32, p->heads_q = INT64_C(1) << 32, p->heads_kv = 1;
}
static void heads_q_huge(txattn_problem *p) {
  p->heads_q = INT64_MAX, p->heads_kv = 1;
}

static const struct bad_problem bad_problems[] = {
    {"batch = -1", batch_negative, {"batch", NULL}},
    {"heads_q = -2", heads_q_negative, {"heads_q", NULL}},
    {"heads_kv = -1", heads_kv_negative, {"heads_kv", NULL}},
    {"heads_q 4, heads_kv 3", heads_not_divisible, {"heads_kv", NULL}},
    {"heads_q 4, heads_kv 8", heads_kv_above_heads_q, {"heads_kv", NULL}},
    {"n_q = 0", n_q_zero, {"n_q", NULL}},
    {"n_q = -5", n_q_negative, {"n_q", NULL}},
    {"n_kv = -1", n_kv_negative, {"n_kv", NULL}},
    {"d_qk = 0", d_qk_zero, {"d_qk", NULL}},
    {"d_qk = -3", d_qk_negative, {"d_qk", NULL}},
    {"d_v = -1", d_v_negative, {"d_v", NULL}},
    {"mask = 3", mask_unknown, {"mask", NULL}},
    {"mask = -1", mask_negative, {"mask", NULL}},
    {"window_left = -2", window_left_negative, {"window_left", NULL}},
    {"window_right = -7", window_right_negative, {"window_right", NULL}},
    {"window_left = INT64_MIN", window_left_int64_min, {"window_left", NULL}},
    {"scale = NaN", scale_nan, {"scale", NULL}},
    {"scale = inf", scale_inf, {"scale", NULL}},
    {"scale = -inf", scale_minus_inf, {"scale", NULL}},
    {"n_q = INT64_MAX/2", n_q_huge, {"n_q", "overflow", NULL}},
    {"n_kv = INT64_MAX", n_kv_huge, {"n_kv", "overflow", NULL}},
    {"d_qk = INT64_MAX/4", d_qk_huge, {"d_qk", "overflow", NULL}},
    {"d_v = INT64_MAX/8", d_v_huge, {"d_v", "overflow", NULL}},
    {"batch = heads_q = 2^32", batch_times_heads_overflow, {"batch", "heads_q", "overflow", NULL}},
    {"heads_q = INT64_MAX", heads_q_huge, {"heads_q", "overflow", NULL}},
};
#define N_BAD_PROBLEMS (sizeof bad_problems / sizeof bad_problems[0])

ParameterizedTestParameters(validation, bad_problem_is_refused_everywhere) {
  static int indices[N_BAD_PROBLEMS];
  for (size_t i = 0; i < N_BAD_PROBLEMS; i++) indices[i] = (int)i;
  return cr_make_param_array(int, indices, N_BAD_PROBLEMS);
}

ParameterizedTest(int *index, validation, bad_problem_is_refused_everywhere) {
  const struct bad_problem *bp = &bad_problems[*index];
  txattn_problem p = valid_problem(), resolved = TXATTN_PROBLEM_INIT;
  bp->spoil(&p);
  struct arena *a = arena_new();
  txattn_tensors t = valid_tensors(a);
  txattn_context *ctx = test_context(1);
  txattn_plan *plan = NULL;

  expect_refused(txattn_plan_create(ctx, &p, NULL, &plan), "txattn_plan_create", bp->what,
                 bp->words, a);
  expect_refused(txattn_plan_create(ctx, &p, "naive.scalar", &plan), "txattn_plan_create(naive)",
                 bp->what, bp->words, a);
  expect_refused(txattn_attention(ctx, &p, &t), "txattn_attention", bp->what, bp->words, a);
  expect_refused(txattn_reference(&p, &t), "txattn_reference", bp->what, bp->words, a);
  expect_refused(txattn_problem_resolve(&p, &resolved), "txattn_problem_resolve", bp->what,
                 bp->words, a);
  cr_expect_eq(txattn_problem_visible_pairs(&p), -1.0, "txattn_problem_visible_pairs with %s",
               bp->what);
  txattn_context_free(ctx);
  free(a);
}

/* ---- tensors, with the valid problem ---- */

struct bad_tensors {
  const char *what;
  void (*spoil)(txattn_tensors *t, float *arena);
  const char *words[5];
};

static void q_null(txattn_tensors *t, float *a) {
  (void)a, t->q = NULL;
}
static void k_null(txattn_tensors *t, float *a) {
  (void)a, t->k = NULL;
}
static void v_null(txattn_tensors *t, float *a) {
  (void)a, t->v = NULL;
}
static void o_null(txattn_tensors *t, float *a) {
  (void)a, t->o = NULL;
}
static void q_row_negative(txattn_tensors *t, float *a) {
  (void)a, t->q_layout = (txattn_layout){HQ * NQ * DQK, NQ * DQK, -DQK};
}
static void k_head_negative(txattn_tensors *t, float *a) {
  (void)a, t->k_layout = (txattn_layout){HKV * NKV * DQK, -4, DQK};
}
static void v_batch_negative(txattn_tensors *t, float *a) {
  (void)a, t->v_layout = (txattn_layout){-1, NKV * DV, DV};
}
static void o_row_negative(txattn_tensors *t, float *a) {
  (void)a, t->o_layout = (txattn_layout){HQ * NQ * DV, NQ * DV, -3};
}
static void o_rows_same(txattn_tensors *t, float *a) {
  (void)a, t->o_layout = (txattn_layout){HQ * NQ * DV, NQ * DV, 0};
}
static void o_rows_overlap(txattn_tensors *t, float *a) {
  (void)a, t->o_layout = (txattn_layout){HQ * NQ * DV, NQ * DV, DV - 1};
}
static void o_heads_same(txattn_tensors *t, float *a) {
  (void)a, t->o_layout = (txattn_layout){HQ * NQ * DV, 0, DV};
}
static void o_batch_is_a_head(txattn_tensors *t, float *a) {
  (void)a, t->o_layout = (txattn_layout){NQ * DV, NQ * DV, DV};
}
static void o_is_q(txattn_tensors *t, float *a) {
  t->o = a + Q_AT;
}
static void o_ends_in_k(txattn_tensors *t, float *a) {
  t->o = a + K_AT - O_LEN + 1;
}
static void o_starts_in_v(txattn_tensors *t, float *a) {
  t->o = a + V_AT + V_LEN - 1;
}
static void o_inside_q(txattn_tensors *t, float *a) {
  t->o = a + Q_AT + DQK;
}

static const struct bad_tensors bad_tensor_cases[] = {
    {"q = NULL", q_null, {"q", NULL}},
    {"k = NULL", k_null, {"k", NULL}},
    {"v = NULL", v_null, {"v", NULL}},
    {"o = NULL", o_null, {"o", NULL}},
    {"q_layout.row < 0", q_row_negative, {"stride", "layout", NULL}},
    {"k_layout.head < 0", k_head_negative, {"stride", "layout", NULL}},
    {"v_layout.batch < 0", v_batch_negative, {"stride", "layout", NULL}},
    {"o_layout.row < 0", o_row_negative, {"stride", "layout", NULL}},
    {"o row stride 0 with n_q 5", o_rows_same, {"alias", "overlap", "stride", "layout", NULL}},
    {"o row stride < d_v", o_rows_overlap, {"alias", "overlap", "stride", "layout", NULL}},
    {"o head stride 0 with 4 heads", o_heads_same, {"alias", "overlap", "stride", "layout", NULL}},
    {"o batch stride = head stride",
     o_batch_is_a_head,
     {"alias", "overlap", "stride", "layout", NULL}},
    {"o = q", o_is_q, {"overlap", NULL}},
    {"o ends inside k", o_ends_in_k, {"overlap", NULL}},
    {"o starts inside v", o_starts_in_v, {"overlap", NULL}},
    {"o inside q", o_inside_q, {"overlap", NULL}},
};
#define N_BAD_TENSORS (sizeof bad_tensor_cases / sizeof bad_tensor_cases[0])

ParameterizedTestParameters(validation, bad_tensors_are_refused_everywhere) {
  static int indices[N_BAD_TENSORS];
  for (size_t i = 0; i < N_BAD_TENSORS; i++) indices[i] = (int)i;
  return cr_make_param_array(int, indices, N_BAD_TENSORS);
}

ParameterizedTest(int *index, validation, bad_tensors_are_refused_everywhere) {
  const struct bad_tensors *bt = &bad_tensor_cases[*index];
  txattn_problem p = valid_problem();
  struct arena *a = arena_new();
  txattn_tensors t = valid_tensors(a);
  bt->spoil(&t, a->data);
  txattn_context *ctx = test_context(1);
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());

  expect_refused(txattn_plan_execute(plan, &t), "txattn_plan_execute", bt->what, bt->words, a);
  expect_refused(txattn_attention(ctx, &p, &t), "txattn_attention", bt->what, bt->words, a);
  expect_refused(txattn_reference(&p, &t), "txattn_reference", bt->what, bt->words, a);
  txattn_plan_free(plan);
  txattn_context_free(ctx);
  free(a);
}

/* ---- NULL arguments and other entry points ---- */

static const char *const w_ctx[] = {"ctx", "context", NULL};
static const char *const w_problem[] = {"problem", "p", NULL};
static const char *const w_tensors[] = {"tensors", "t", NULL};
static const char *const w_out[] = {"out", NULL};
static const char *const w_plan[] = {"plan", NULL};

Test(validation, null_arguments_are_named) {
  struct arena *a = arena_new();
  txattn_problem p = valid_problem(), r = TXATTN_PROBLEM_INIT;
  txattn_tensors t = valid_tensors(a);
  txattn_context *ctx = test_context(1), *no_ctx = NULL;
  txattn_plan *plan = NULL;
  txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
  txattn_rejected_info rej = TXATTN_REJECTED_INFO_INIT;

  expect_refused(txattn_context_create(NULL, NULL), "txattn_context_create", "out = NULL", w_out,
                 NULL);
  expect_refused(txattn_plan_create(NULL, &p, NULL, &plan), "txattn_plan_create", "ctx = NULL",
                 w_ctx, a);
  expect_refused(txattn_plan_create(ctx, NULL, NULL, &plan), "txattn_plan_create", "p = NULL",
                 w_problem, a);
  expect_refused(txattn_plan_create(ctx, &p, NULL, NULL), "txattn_plan_create", "out = NULL", w_out,
                 a);
  expect_refused(txattn_plan_execute(NULL, &t), "txattn_plan_execute", "plan = NULL", w_plan, a);
  cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
  expect_refused(txattn_plan_execute(plan, NULL), "txattn_plan_execute", "t = NULL", w_tensors, a);
  expect_refused(txattn_attention(NULL, &p, &t), "txattn_attention", "ctx = NULL", w_ctx, a);
  expect_refused(txattn_attention(ctx, NULL, &t), "txattn_attention", "p = NULL", w_problem, a);
  expect_refused(txattn_attention(ctx, &p, NULL), "txattn_attention", "t = NULL", w_tensors, a);
  expect_refused(txattn_reference(NULL, &t), "txattn_reference", "p = NULL", w_problem, a);
  expect_refused(txattn_reference(&p, NULL), "txattn_reference", "t = NULL", w_tensors, a);
  expect_refused(txattn_problem_resolve(NULL, &r), "txattn_problem_resolve", "p = NULL", w_problem,
                 a);
  expect_refused(txattn_problem_resolve(&p, NULL), "txattn_problem_resolve", "out = NULL", w_out,
                 a);
  expect_refused(txattn_kernel_get(no_ctx, 0, &info), "txattn_kernel_get", "ctx = NULL", w_ctx, a);
  expect_refused(txattn_kernel_get(ctx, 0, NULL), "txattn_kernel_get", "out = NULL", w_out, a);
  expect_refused(txattn_rejected_get(no_ctx, 0, &rej), "txattn_rejected_get", "ctx = NULL", w_ctx,
                 a);
  txattn_plan_free(plan);
  txattn_context_free(ctx);
  free(a);
}

Test(validation, freeing_null_is_fine) {
  txattn_plan_free(NULL);
  txattn_context_free(NULL);
  cr_assert_str_eq(txattn_last_error(), "", "freeing NULL is not a failure");
}

Test(validation, indices_past_the_end_are_refused) {
  txattn_context *ctx = test_context(1);
  txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
  txattn_rejected_info rej = TXATTN_REJECTED_INFO_INIT;
  txattn_status s = txattn_kernel_get(ctx, txattn_kernel_count(ctx), &info);
  cr_expect_neq(s, TXATTN_OK, "txattn_kernel_get(count) must fail");
  cr_expect_neq(txattn_last_error()[0], '\0', "and say why");
  s = txattn_rejected_get(ctx, txattn_rejected_count(ctx), &rej);
  cr_expect_neq(s, TXATTN_OK, "txattn_rejected_get(count) must fail");
  cr_expect_neq(txattn_last_error()[0], '\0', "and say why");
  txattn_context_free(ctx);
}

Test(validation, negative_thread_count_is_refused) {
  txattn_options opts = {.table_path = "", .n_threads = -1};
  txattn_context *ctx = NULL;
  static const char *const words[] = {"n_threads", NULL};
  expect_refused(txattn_context_create(&opts, &ctx), "txattn_context_create", "n_threads = -1",
                 words, NULL);
  txattn_context_free(ctx);
}
