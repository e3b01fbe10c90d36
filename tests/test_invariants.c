/* SPDX-License-Identifier: MIT */
/* Properties exact attention has whatever the inputs, checked for the reference and every kernel
 * without trusting the reference's own answer on the transformed input:
 *   - adding one vector to every key adds a per-row constant to the scores: the output does not
 * move;
 *   - permuting keys and values together under MASK_NONE does not move the output (in 16-bit types
 *     too, where the permutation moves bits and rounds nothing);
 *   - adding a constant to V adds it to every row that sees a key (the weights sum to one);
 *   - n_q < n_kv gives the last n_q rows of the square problem (bottom-right alignment). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/theories.h>

#include "attn_case.h"
#include "case_check.h"
#include "case_run.h"
#include "elements.h"
#include "oracle.h"
#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(invariants, .init = test_env_clean, .fini = test_check_leaks, .timeout = 120);

static float *element(struct tensor *t, int64_t b, int64_t h, int64_t i, int64_t x) {
  return t->data + b * t->layout.batch + h * t->layout.head + i * t->layout.row + x;
}

static float *dense(float *base, const struct tensor *t, int64_t b, int64_t h, int64_t i,
                    int64_t x) {
  return base + ((b * t->heads + h) * t->rows + i) * t->dim + x;
}

/* Everything below transforms only the strided inputs (what check_everyone runs on), and o_ref
   becomes the output the invariant predicts from the untransformed reference. */

/* The reference on the transformed strided input, then every usable kernel and the dispatcher, all
   against the o_ref the invariant predicts, within txattn_error_bound of the transformed input. */
static void check_everyone(struct attn_case *c, const char *desc) {
  char msg[512];
  double err;
  case_bound_inputs(c);
  txattn_tensors t = case_tensors(c);
  case_clear_output(c);
  cr_assert_eq(txattn_reference(&c->problem, &t), TXATTN_OK, "%s", txattn_last_error());
  cr_assert(case_check_output(c, &err, msg, sizeof msg), "reference on %s: %s", desc, msg);
  txattn_context *ctx = test_context(0);
  struct case_tally tally;
  case_run_every_kernel_tally(ctx, c, desc, &tally);
  cr_assert(tally.naive_ran, "%s: naive.scalar did not run", desc);
  txattn_context_free(ctx);
}

static const struct shape base = {.batch = 2,
                                  .heads_q = 2,
                                  .heads_kv = 1,
                                  .n_q = 17,
                                  .n_kv = 33,
                                  .d_qk = 16,
                                  .d_v = 8,
                                  .left = 4,
                                  .right = 2,
                                  .layout = LAYOUT_PADDED};

TheoryDataPoints(invariants, shifting_every_key_changes_nothing) = {
    DataPoints(float, -2.0f, 0.5f, 3.0f),
    DataPoints(int, TXATTN_MASK_NONE, TXATTN_MASK_CAUSAL, TXATTN_MASK_WINDOW),
};

Theory((float shift, int mask), invariants, shifting_every_key_changes_nothing) {
  struct shape s = base;
  struct attn_case c;
  s.mask = (txattn_mask)mask;
  case_init(&c, &s, 21);
  case_run_reference(&c);
  for (int64_t b = 0; b < c.k.batch; b++)
    for (int64_t g = 0; g < c.k.heads; g++)
      for (int64_t x = 0; x < c.k.dim; x++) {
        float w = shift * sinf((float)(1 + x + 3 * g + 7 * b));
        for (int64_t j = 0; j < c.k.rows; j++) *element(&c.k, b, g, j, x) += w;
      }
  char desc[96];
  snprintf(desc, sizeof desc, "keys shifted by %g (mask %d)", (double)shift, mask);
  check_everyone(&c, desc);
  case_free(&c);
}

/* Keys and values permuted together, element bits moved as they are (exact in every type). */
static void permute_and_check(struct case_types types, const char *desc) {
  struct shape s = base;
  struct attn_case c;
  s.types = types;
  case_init(&c, &s, 22);
  case_run_reference(&c);
  struct attn_case orig;
  case_init(&orig, &s, 22); /* the same inputs, to permute from */
  int64_t n = c.k.rows;
  for (int64_t b = 0; b < c.k.batch; b++)
    for (int64_t g = 0; g < c.k.heads; g++)
      for (int64_t j = 0; j < n; j++) {
        int64_t from = (j * 7 + 3) % n; /* 7 and 33 are coprime: a permutation */
        for (int64_t x = 0; x < c.k.dim; x++)
          elem_set_bits(c.k.raw, c.k.type, case_offset(&c.k, b, g, j, x),
                        elem_bits(orig.k.raw, c.k.type, case_offset(&orig.k, b, g, from, x)));
        for (int64_t x = 0; x < c.v.dim; x++)
          elem_set_bits(c.v.raw, c.v.type, case_offset(&c.v, b, g, j, x),
                        elem_bits(orig.v.raw, c.v.type, case_offset(&orig.v, b, g, from, x)));
      }
  check_everyone(&c, desc);
  case_free(&orig);
  case_free(&c);
}

Test(invariants, permuting_keys_and_values_changes_nothing_without_a_mask) {
  permute_and_check((struct case_types){0}, "keys and values permuted");
}

/* The same in bf16 q, k, v and f16 o; naive.scalar, which takes every type, must be among the
   kernels that ran. */
Test(invariants, permuting_16_bit_keys_and_values_changes_nothing_without_a_mask) {
  permute_and_check((struct case_types){TXATTN_DTYPE_BF16, TXATTN_DTYPE_BF16, TXATTN_DTYPE_BF16,
                                        TXATTN_DTYPE_F16},
                    "bf16 keys and values permuted, f16 o");
}

Test(invariants, adding_a_constant_to_v_adds_it_to_the_output) {
  const float add = 5.0f;
  struct shape s = base;
  struct attn_case c;
  s.mask = TXATTN_MASK_CAUSAL;
  s.n_q = 40; /* n_q > n_kv: some rows see no key and must stay exact zeros */
  case_init(&c, &s, 23);
  case_run_reference(&c);
  for (int64_t b = 0; b < c.v.batch; b++)
    for (int64_t g = 0; g < c.v.heads; g++)
      for (int64_t j = 0; j < c.v.rows; j++)
        for (int64_t x = 0; x < c.v.dim; x++) *element(&c.v, b, g, j, x) += add;
  for (int64_t b = 0; b < c.o.batch; b++)
    for (int64_t h = 0; h < c.o.heads; h++)
      for (int64_t i = 0; i < c.o.rows; i++)
        if (oracle_visible_count(&c.full, i) > 0)
          for (int64_t x = 0; x < c.o.dim; x++) *dense(c.o_ref, &c.o, b, h, i, x) += add;
  check_everyone(&c, "V + 5");
  case_free(&c);
}

Test(invariants, fewer_queries_give_the_last_rows_of_the_square_problem) {
  const int64_t n = 33, tail = 5;
  for (int mask = TXATTN_MASK_CAUSAL; mask <= TXATTN_MASK_WINDOW; mask++) {
    struct shape s = {.n_q = n,
                      .n_kv = n,
                      .d_qk = 16,
                      .d_v = 8,
                      .mask = (txattn_mask)mask,
                      .left = 3,
                      .right = 2};
    struct attn_case full, part;
    case_init(&full, &s, 24);
    case_run_reference(&full); /* square: pos(i) = i under any alignment */
    s.n_q = tail;
    case_init(&part, &s, 24);
    memcpy(part.q.data, full.q.data + (n - tail) * 16, sizeof(float) * tail * 16);
    memcpy(part.k.data, full.k.data, sizeof(float) * n * 16);
    memcpy(part.v.data, full.v.data, sizeof(float) * n * 8);
    memcpy(part.o_ref, full.o_ref + (n - tail) * 8, sizeof(float) * tail * 8);
    check_everyone(&part,
                   mask == TXATTN_MASK_CAUSAL ? "causal n_q = 5 of 33" : "window n_q = 5 of 33");
    case_free(&full);
    case_free(&part);
  }
}
