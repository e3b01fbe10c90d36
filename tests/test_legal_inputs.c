/* SPDX-License-Identifier: MIT */
/* Inputs that are unusual but legal by txattn.h: q, k and v in one buffer, a packed QKV projection
 * (both also in 16-bit types), K and V broadcast with zero strides, zero strides that multiply
 * nothing. The validator must accept them, and the reference, every kernel (that takes the types)
 * and the dispatcher must compute them right (by the test oracle, since the reference is among
 * those checked). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "elements.h"
#include "oracle.h"
#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(legal_inputs, .init = test_env_clean, .fini = test_check_leaks, .timeout = 60);

/* ---- legal but unusual: accepted, and right for the reference, every kernel and the dispatcher
 * ---- */

static int64_t o_offset(const txattn_tensors *t, int64_t b, int64_t h, int64_t i, int64_t c) {
  return b * t->o_layout.batch + h * t->o_layout.head + i * t->o_layout.row + c;
}

static void expect_output(const txattn_problem *p, const txattn_tensors *t, const void *want,
                          double tol, const char *who, const char *what) {
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++)
        for (int64_t c = 0; c < p->d_v; c++) {
          size_t x = (size_t)o_offset(t, b, h, i, c);
          double got = elem_load(t->o_data, p->o_type, x), w = elem_load(want, p->o_type, x);
          cr_assert(fabs(got - w) <= tol, "%s with %s: o(b%lld h%lld i%lld)[%lld] = %g, want %g",
                    who, what, (long long)b, (long long)h, (long long)i, (long long)c, got, w);
        }
}

/* p must be fully explicit and t's layouts explicit, since the test oracle computes the answer.
   Every kernel that declares p's element types must take it. */
static void expect_accepted(const txattn_problem *p, txattn_tensors t, size_t o_len, double max_v,
                            const char *what) {
  void *want = calloc(o_len, elem_size(p->o_type));
  cr_assert(want != NULL);
  txattn_tensors oracle_t = t;
  oracle_t.o_data = want;
  cr_assert(oracle_attention(p, &oracle_t) == 0);
  double tol = -1.0;
  cr_assert_eq(txattn_error_bound(p, &t, &tol), TXATTN_OK, "txattn_error_bound: %s",
               txattn_last_error());
  /* inputs of magnitude about 1 (|V| <= max_v < 2, most near it): the bound is the plain
     tolerance, plus one ulp of a 16-bit o at 1 */
  double ulp = p->o_type == TXATTN_DTYPE_F16    ? 0x1p-10
               : p->o_type == TXATTN_DTYPE_BF16 ? 0x1p-7
                                                : 0;
  cr_assert(tol <= TXATTN_EXACT_TOLERANCE * max_v + ulp &&
                tol >= 0.9 * TXATTN_EXACT_TOLERANCE * max_v + ulp,
            "%s: bound %g, max|V| about %g", what, tol, max_v);
  txattn_context *ctx = test_context(0);
  struct kernel_list kernels;
  test_kernel_list(ctx, &kernels);
  int naive_ran = 0;
  for (size_t k = 0; k <= kernels.n + 1; k++) { /* the reference, each kernel, the dispatcher */
    const char *name = k == 0 ? "txattn_reference" : k <= kernels.n ? kernels.k[k - 1].name : NULL;
    if (k >= 1 && k <= kernels.n && !kernels.k[k - 1].usable) continue;
    if (k >= 1 && k <= kernels.n && !test_kernel_takes_types(&kernels.k[k - 1], p)) {
      cr_log_info("%s does not take the types of %s", name, what);
      continue;
    }
    for (size_t x = 0; x < o_len; x++) elem_store(t.o_data, p->o_type, x, -777.0);
    txattn_status s;
    if (k == 0) {
      s = txattn_reference(p, &t);
    } else {
      txattn_plan *plan = NULL;
      s = txattn_plan_create(ctx, p, name, &plan);
      if (s == TXATTN_OK) s = txattn_plan_execute(plan, &t);
      txattn_plan_free(plan);
    }
    cr_assert_eq(s, TXATTN_OK, "%s refuses %s: %s: %s", name ? name : "the dispatcher", what,
                 txattn_status_name(s), txattn_last_error());
    expect_output(p, &t, want, tol, name ? name : "the dispatcher", what);
    naive_ran |= name && strcmp(name, "naive.scalar") == 0;
  }
  cr_assert(naive_ran, "%s: naive.scalar did not run", what);
  txattn_context_free(ctx);
  free(want);
}

static void fill(float *x, size_t n, float phase) {
  for (size_t i = 0; i < n; i++) x[i] = sinf((float)i * 0.7f + phase);
}

Test(legal_inputs, q_k_and_v_may_be_one_buffer) {
  enum { H = 2, N = 9, D = 8 };
  static float x[H * N * D], o[H * N * D];
  fill(x, H * N * D, 0.3f);
  txattn_problem p = {.batch = 1,
                      .heads_q = H,
                      .heads_kv = H,
                      .n_q = N,
                      .n_kv = N,
                      .d_qk = D,
                      .d_v = D,
                      .mask = TXATTN_MASK_CAUSAL,
                      .scale = 0.35f};
  txattn_layout l = {H * N * D, N * D, D};
  txattn_tensors t = {
      .q = x, .k = x, .v = x, .o = o, .q_layout = l, .k_layout = l, .v_layout = l, .o_layout = l};
  expect_accepted(&p, t, H * N * D, 1.0, "q = k = v");
}

Test(legal_inputs, packed_qkv_projection_output) {
  enum {
    PB = 2,
    PN = 7,
    PH = 2,
    PD = 4
  }; /* [b][n][3][h][d], as a fused QKV projection writes it */
  static float qkv[PB * PN * 3 * PH * PD], o[PB * PN * PH * PD];
  fill(qkv, PB * PN * 3 * PH * PD, 1.1f);
  txattn_problem p = {.batch = PB,
                      .heads_q = PH,
                      .heads_kv = PH,
                      .n_q = PN,
                      .n_kv = PN,
                      .d_qk = PD,
                      .d_v = PD,
                      .mask = TXATTN_MASK_WINDOW,
                      .window_left = 2,
                      .window_right = 1,
                      .scale = 0.5f};
  txattn_layout in = {PN * 3 * PH * PD, PD, 3 * PH * PD}, out = {PN * PH * PD, PD, PH * PD};
  txattn_tensors t = {.q = qkv,
                      .k = qkv + PH * PD,
                      .v = qkv + 2 * PH * PD,
                      .o = o,
                      .q_layout = in,
                      .k_layout = in,
                      .v_layout = in,
                      .o_layout = out};
  expect_accepted(&p, t, PB * PN * PH * PD, 1.0, "packed [b][n][3][h][d] q/k/v");
}

Test(legal_inputs, inputs_may_broadcast_with_zero_strides) {
  enum { XB = 2, XHQ = 4, XHKV = 2, XNQ = 3, XNKV = 6, XD = 5 };
  static float q[XB * XHQ * XNQ * XD], k[XNKV * XD], v[XNKV * XD], o[XB * XHQ * XNQ * XD];
  fill(q, XB * XHQ * XNQ * XD, 0.0f);
  fill(k, XNKV * XD, 2.0f);
  fill(v, XNKV * XD, 4.0f);
  /* one K and V for every batch and kv head: reads may alias, only o must not */
  txattn_problem p = {.batch = XB,
                      .heads_q = XHQ,
                      .heads_kv = XHKV,
                      .n_q = XNQ,
                      .n_kv = XNKV,
                      .d_qk = XD,
                      .d_v = XD,
                      .mask = TXATTN_MASK_CAUSAL,
                      .scale = 0.4f};
  txattn_layout ql = {XHQ * XNQ * XD, XNQ * XD, XD}, kvl = {0, 0, XD};
  txattn_tensors t = {.q = q,
                      .k = k,
                      .v = v,
                      .o = o,
                      .q_layout = ql,
                      .k_layout = kvl,
                      .v_layout = kvl,
                      .o_layout = ql};
  expect_accepted(&p, t, XB * XHQ * XNQ * XD, 1.0,
                  "k and v broadcast by zero batch and head strides");
}

Test(legal_inputs, unused_strides_may_be_zero) {
  enum { N = 5, D = 3 };
  static float q[N * D], k[N * D], v[N * D], o[N * D];
  fill(q, N * D, 0.0f);
  fill(k, N * D, 1.0f);
  fill(v, N * D, 2.0f);
  /* batch = heads = 1: the batch and head strides multiply only zero, o aliases nothing */
  txattn_problem p = {.batch = 1,
                      .heads_q = 1,
                      .heads_kv = 1,
                      .n_q = N,
                      .n_kv = N,
                      .d_qk = D,
                      .d_v = D,
                      .scale = 0.6f};
  txattn_layout l = {0, 0, D};
  txattn_tensors t = {
      .q = q, .k = k, .v = v, .o = o, .q_layout = l, .k_layout = l, .v_layout = l, .o_layout = l};
  expect_accepted(&p, t, N * D, 1.0, "batch and head strides 0 with batch = heads = 1");
}

/* 16-bit elements of sin, as fill() makes them for f32. */
static void fill16(uint16_t *x, size_t n, float phase, txattn_dtype t) {
  for (size_t i = 0; i < n; i++) {
    double v = sin((double)i * 0.7 + phase);
    x[i] = t == TXATTN_DTYPE_F16 ? elem_f16_of(v) : elem_bf16_of(v);
  }
}

Test(legal_inputs, f16_q_k_and_v_may_be_one_buffer) {
  enum { H = 2, N = 9, D = 8 };
  static uint16_t x[H * N * D];
  static float o[H * N * D];
  fill16(x, H * N * D, 0.3f, TXATTN_DTYPE_F16);
  txattn_problem p = {.batch = 1,
                      .heads_q = H,
                      .heads_kv = H,
                      .n_q = N,
                      .n_kv = N,
                      .d_qk = D,
                      .d_v = D,
                      .mask = TXATTN_MASK_CAUSAL,
                      .scale = 0.35f,
                      .q_type = TXATTN_DTYPE_F16,
                      .k_type = TXATTN_DTYPE_F16,
                      .v_type = TXATTN_DTYPE_F16};
  txattn_layout l = {H * N * D, N * D, D};
  txattn_tensors t = {.q_data = x,
                      .k_data = x,
                      .v_data = x,
                      .o = o,
                      .q_layout = l,
                      .k_layout = l,
                      .v_layout = l,
                      .o_layout = l};
  expect_accepted(&p, t, H * N * D, 1.0, "q = k = v in f16");
}

Test(legal_inputs, bf16_packed_qkv_projection_output) {
  enum { PB = 2, PN = 7, PH = 2, PD = 4 }; /* [b][n][3][h][d] */
  static uint16_t qkv[PB * PN * 3 * PH * PD], o[PB * PN * PH * PD];
  fill16(qkv, PB * PN * 3 * PH * PD, 1.1f, TXATTN_DTYPE_BF16);
  txattn_problem p = {.batch = PB,
                      .heads_q = PH,
                      .heads_kv = PH,
                      .n_q = PN,
                      .n_kv = PN,
                      .d_qk = PD,
                      .d_v = PD,
                      .mask = TXATTN_MASK_WINDOW,
                      .window_left = 2,
                      .window_right = 1,
                      .scale = 0.5f,
                      .q_type = TXATTN_DTYPE_BF16,
                      .k_type = TXATTN_DTYPE_BF16,
                      .v_type = TXATTN_DTYPE_BF16,
                      .o_type = TXATTN_DTYPE_BF16};
  txattn_layout in = {PN * 3 * PH * PD, PD, 3 * PH * PD}, out = {PN * PH * PD, PD, PH * PD};
  txattn_tensors t = {.q_data = qkv,
                      .k_data = qkv + PH * PD,
                      .v_data = qkv + 2 * PH * PD,
                      .o_data = o,
                      .q_layout = in,
                      .k_layout = in,
                      .v_layout = in,
                      .o_layout = out};
  expect_accepted(&p, t, PB * PN * PH * PD, 1.0, "packed [b][n][3][h][d] bf16 q/k/v, bf16 o");
}
