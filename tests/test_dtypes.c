/* SPDX-License-Identifier: MIT */
/* 16-bit tensors in the reference and the error bound: inputs are read exactly, the output is
 * rounded once from the exact value to o's type, to nearest even. The oracle here is the compiler's
 * own _Float16 (IEEE binary16, converted from double with one rounding) and the bf16 definition
 * (the upper half of a binary32). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "scratch.h"
#include "test_context.h"
#include "test_plugin_names.h"

static char scratch[SCRATCH_PATH_MAX];

static void cleanup(void) {
  if (scratch[0]) scratch_remove(scratch);
  test_check_leaks();
}

TestSuite(dtypes, .init = test_env_clean, .fini = cleanup, .timeout = 120);

static uint16_t f16_of(double x) {
  _Float16 h = (_Float16)x;
  uint16_t bits;
  memcpy(&bits, &h, sizeof bits);
  return bits;
}

static double f16_value(uint16_t bits) {
  _Float16 h;
  memcpy(&h, &bits, sizeof h);
  return (double)h;
}

static double bf16_value(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &wide, sizeof f);
  return (double)f;
}

/* bf16 of x by rounding the exact binary32 neighbours' midpoint rule, written with the integer
   significand of a double: an independent route to nearest-even. */
static uint16_t bf16_of(double x) {
  if (isnan(x)) return 0x7fc0;
  double a = fabs(x);
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  if (a >= 0x1.ffp127) return sign | 0x7f80; /* past the largest bf16 + half its ulp */
  for (uint16_t lo = 0; lo < 0x7f80; lo++) { /* slow, but only a few values are asked */
    double l = bf16_value(lo), h = bf16_value((uint16_t)(lo + 1));
    if (a >= h) continue;
    double mid = (l + h) / 2;
    uint16_t pick = a < mid    ? lo
                    : a > mid  ? (uint16_t)(lo + 1)
                    : (lo & 1) ? (uint16_t)(lo + 1)
                               : lo;
    return sign | pick;
  }
  return sign | 0x7f80;
}

/* With one key, O is that key's V row: the output is V rounded to o's type. */
static void one_key(txattn_dtype v_type, const void *v, txattn_dtype o_type, void *o, int64_t d) {
  float q[1] = {1.0f}, k[1] = {1.0f};
  txattn_problem p = {.n_q = 1, .d_qk = 1, .d_v = d, .v_type = v_type, .o_type = o_type};
  txattn_tensors t = {.q = q, .k = k, .v_data = v, .o_data = o};
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
}

Test(dtypes, the_output_is_rounded_to_nearest_even_once) {
  static const double values[] = {1.0,
                                  1.0 + 0x1p-11,
                                  1.0 + 3 * 0x1p-11,
                                  1.0 + 0x1p-11 + 0x1p-30,
                                  65504.0,
                                  65519.0,
                                  65520.0,
                                  -65520.0,
                                  1e6,
                                  0x1p-24,
                                  0x1p-25,
                                  3 * 0x1p-25,
                                  0x1p-14,
                                  0x1p-14 - 0x1p-25,
                                  1.0 / 3.0,
                                  -2.0 / 3.0,
                                  1.0 + 0x1p-8,
                                  1.0 + 3 * 0x1p-8,
                                  3.0e38,
                                  -3.3961e38,
                                  1e-40,
                                  0.1};
  enum { n = sizeof values / sizeof values[0] };
  float v[n];
  uint16_t o[n];
  for (int i = 0; i < n; i++) v[i] = (float)values[i];
  one_key(TXATTN_DTYPE_F32, v, TXATTN_DTYPE_F16, o, n);
  for (int i = 0; i < n; i++)
    cr_expect_eq(o[i], f16_of((double)v[i]), "f16 of %a: 0x%04x, want 0x%04x", (double)v[i], o[i],
                 f16_of((double)v[i]));
  one_key(TXATTN_DTYPE_F32, v, TXATTN_DTYPE_BF16, o, n);
  for (int i = 0; i < n; i++)
    cr_expect_eq(o[i], bf16_of((double)v[i]), "bf16 of %a: 0x%04x, want 0x%04x", (double)v[i], o[i],
                 bf16_of((double)v[i]));
}

/* The rounding is from the exact (double) average, not from an fp32 value of it: the two
   values' average 1 + 2^-11 + 2^-24 lies just above an f16 midpoint that its float rounds onto. */
Test(dtypes, the_output_is_rounded_from_the_exact_value_not_from_fp32) {
  float q[1] = {0.0f}, k[2] = {0.0f, 0.0f}; /* equal scores: O is the mean of the V rows */
  float v[2] = {1.0f + 0x1p-10f, 1.0f + 0x1p-23f};
  double exact = ((double)v[0] + (double)v[1]) / 2;
  cr_assert((double)(float)exact != exact);
  uint16_t o[1];
  txattn_problem p = {.n_q = 1, .n_kv = 2, .d_qk = 1, .o_type = TXATTN_DTYPE_F16};
  txattn_tensors t = {.q = q, .k = k, .v = v, .o_data = o};
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(o[0], f16_of(exact), "0x%04x, want 0x%04x", o[0], f16_of(exact));
  cr_assert_neq(f16_of(exact), f16_of((double)(float)exact)); /* the test can tell the two */
}

Test(dtypes, every_16_bit_input_is_read_exactly) {
  enum { n = 65536 };
  uint16_t *v = malloc(n * sizeof *v);
  float *o = malloc(n * sizeof *o);
  cr_assert(v && o);
  for (int i = 0; i < n; i++) v[i] = (uint16_t)i;
  for (int type = TXATTN_DTYPE_F16; type <= TXATTN_DTYPE_BF16; type++) {
    one_key((txattn_dtype)type, v, TXATTN_DTYPE_F32, o, n);
    for (int i = 0; i < n; i++) /* the NaN patterns make the whole row NaN */
      cr_assert(isnan(o[i]), "%s: o[%d] = %a in a row that reads NaN",
                type == TXATTN_DTYPE_F16 ? "f16" : "bf16", i, (double)o[i]);
    /* without the NaN patterns: every finite value and the infinities, exactly */
    int m = 0;
    for (int i = 0; i < n; i++) {
      double x = type == TXATTN_DTYPE_F16 ? f16_value((uint16_t)i) : bf16_value((uint16_t)i);
      if (!isnan(x)) v[m++] = (uint16_t)i;
    }
    one_key((txattn_dtype)type, v, TXATTN_DTYPE_F32, o, m);
    for (int i = 0; i < m; i++) {
      double want = type == TXATTN_DTYPE_F16 ? f16_value(v[i]) : bf16_value(v[i]);
      cr_assert((double)o[i] == want, "0x%04x: %a, want %a", v[i], (double)o[i], want);
    }
  }
  free(v);
  free(o);
}

/* The same problem in f32 and with 16-bit q, k, v holding the same values gives the same result,
   and the bound is the same; a 16-bit o adds one ulp of o's type at max|V| + the fp32 bound. */
Test(dtypes, sixteen_bit_inputs_compute_what_their_fp32_values_compute) {
  enum { nq = 7, nkv = 19, d = 5 };
  uint16_t q16[nq * d], k16[nkv * d], v16[nkv * d];
  float q[nq * d], k[nkv * d], v[nkv * d], o32[nq * d], o[nq * d];
  uint32_t state = 7;
  for (int i = 0; i < nkv * d; i++) {
    state = state * 1664525u + 1013904223u;
    double x = ((double)(state >> 8) / (1 << 24) - 0.5) * 6;
    k16[i] = f16_of(x), k[i] = (float)f16_value(k16[i]);
    v16[i] = f16_of(x / 3), v[i] = (float)f16_value(v16[i]);
    if (i < nq * d) q16[i] = f16_of(-x / 2), q[i] = (float)f16_value(q16[i]);
  }
  txattn_problem p = {.n_q = nq, .n_kv = nkv, .d_qk = d, .mask = TXATTN_MASK_CAUSAL};
  txattn_tensors t = {.q = q, .k = k, .v = v, .o = o32};
  double b32, b16;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK);
  cr_assert_eq(txattn_error_bound(&p, &t, &b32), TXATTN_OK);
  txattn_problem p16 = p;
  p16.q_type = p16.k_type = p16.v_type = TXATTN_DTYPE_F16;
  txattn_tensors t16 = {.q_data = q16, .k_data = k16, .v_data = v16, .o = o};
  cr_assert_eq(txattn_reference(&p16, &t16), TXATTN_OK, "%s", txattn_last_error());
  cr_assert(memcmp(o, o32, sizeof o) == 0, "16-bit inputs differ from their fp32 values");
  cr_assert_eq(txattn_error_bound(&p16, &t16, &b16), TXATTN_OK);
  cr_assert_eq(b16, b32);

  double max_v = 0;
  for (int i = 0; i < nkv * d; i++) max_v = fmax(max_v, fabs((double)v[i]));
  uint16_t o16[nq * d];
  p16.o_type = TXATTN_DTYPE_F16;
  t16.o_data = o16;
  cr_assert_eq(txattn_error_bound(&p16, &t16, &b16), TXATTN_OK);
  int e;
  frexp(max_v + b32, &e);
  double ulp = ldexp(1.0, e - 1 - 10);
  cr_assert_eq(b16, b32 + ulp, "bound %a, want %a + %a", b16, b32, ulp);
  cr_assert_eq(txattn_reference(&p16, &t16), TXATTN_OK);
  for (int i = 0; i < nq * d; i++) /* rounded once from the exact value, which o32 holds closely */
    cr_assert(fabs(f16_value(o16[i]) - (double)o32[i]) <= ulp / 2 + 0x1p-24 * fabs((double)o32[i]),
              "o[%d]: f16 %a, f32 %a", i, f16_value(o16[i]), (double)o32[i]);
  p16.o_type = TXATTN_DTYPE_BF16;
  cr_assert_eq(txattn_error_bound(&p16, &t16, &b16), TXATTN_OK);
  cr_assert_eq(b16, b32 + ldexp(1.0, e - 1 - 7));
}

Test(dtypes, types_and_alignment_are_checked) {
  float x[8] = {0};
  txattn_problem p = {.n_q = 1, .d_qk = 2, .k_type = (txattn_dtype)9};
  txattn_tensors t = {.q = x, .k = x, .v = x, .o = x + 4};
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_E_INVALID);
  cr_assert(strstr(txattn_last_error(), "txattn_problem.k_type = 9") != NULL, "%s",
            txattn_last_error());
  p.k_type = TXATTN_DTYPE_BF16;
  t.k_data = (const unsigned char *)x + 1;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_E_INVALID);
  cr_assert(strstr(txattn_last_error(), "txattn_tensors.k") != NULL, "%s", txattn_last_error());
  t.k_data = (const unsigned char *)x + 2; /* 2-byte aligned is enough for bf16 */
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_str_eq(txattn_dtype_name(TXATTN_DTYPE_BF16), "bf16");
  cr_assert_str_eq(txattn_dtype_name((txattn_dtype)9), "unknown");
  cr_assert_eq(txattn_dtype_size(TXATTN_DTYPE_F16), 2);
}

/* A kernel is handed only the element types it declares (txattn_kernel_info.dtypes), and a
   refusal names the first tensor whose type it does not take: the shipped kernels and a test
   plugin's that declares no types (f32 only). */
Test(dtypes, kernels_are_given_only_the_types_they_declare) {
  char path[2 * SCRATCH_PATH_MAX + 2];
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_copy_plugin(scratch, TEST_GOOD_FILE, NULL, 0644);
  snprintf(path, sizeof path, "%s:%s", TXATTN_TEST_PLUGIN_BUILD_DIR, scratch);
  txattn_context *ctx = test_context_at(path, 1);
  txattn_problem p = {.n_q = 4, .d_qk = 8, .k_type = TXATTN_DTYPE_F16};
  const txattn_dtype types[4] = {p.q_type, p.k_type, p.v_type, p.o_type};
  static const char *const tensor[4] = {"take %s q", "take %s k", "take %s v", "make %s o"};
  struct kernel_list kernels;
  test_kernel_list(ctx, &kernels);
  int declined = 0;
  for (size_t i = 0; i < kernels.n; i++) {
    const txattn_kernel_info *k = &kernels.k[i];
    if (!k->usable) continue;
    for (int t = 0; t < 4; t++) /* the 8-bit and 4-bit types are k's and v's only */
      cr_assert(k->dtypes[t] != 0 &&
                    (k->dtypes[t] &
                     ~(TXATTN_DTYPES_ALL |
                       (t == 1 || t == 2 ? TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4 : 0u))) == 0,
                "%s: tensor %d takes the set 0x%x", k->name, t, k->dtypes[t]);
    txattn_plan *plan = NULL;
    txattn_status s = txattn_plan_create(ctx, &p, k->name, &plan);
    txattn_plan_free(plan);
    if (test_kernel_takes_types(k, &p)) {
      cr_assert_eq(s, TXATTN_OK, "%s: %s", k->name, txattn_last_error());
      continue;
    }
    int first = 0;
    while (k->dtypes[first] & TXATTN_DTYPE_BIT(types[first])) first++;
    char want[48], phrase[32];
    snprintf(phrase, sizeof phrase, tensor[first], txattn_dtype_name(types[first]));
    snprintf(want, sizeof want, "does not %s", phrase);
    cr_assert_eq(s, TXATTN_E_UNSUPPORTED, "%s: %s", k->name, txattn_last_error());
    cr_assert(strstr(txattn_last_error(), want) != NULL, "%s: \"%s\" does not say \"%s\"", k->name,
              txattn_last_error(), want);
    declined++;
  }
  cr_assert_gt(declined, 0, "%s declares no types but was not refused f16 k", TEST_GOOD_KERNEL);
  txattn_context_free(ctx);
}

/* Random values of magnitude about 1, stored as type t (their exact values are what counts). */
static void *random_tensor(txattn_dtype t, size_t n, uint32_t *state) {
  size_t size = t == TXATTN_DTYPE_F32 ? 4 : 2;
  unsigned char *x = malloc(n * size);
  cr_assert(x != NULL);
  for (size_t i = 0; i < n; i++) {
    *state = *state * 1664525u + 1013904223u;
    double v = ((double)(*state >> 8) / (1 << 24) - 0.5) * 4;
    if (t == TXATTN_DTYPE_F32) {
      float f = (float)v;
      memcpy(x + 4 * i, &f, 4);
    } else {
      float f = (float)v;
      uint32_t wide;
      memcpy(&wide, &f, 4);
      uint16_t b = t == TXATTN_DTYPE_F16 ? f16_of(v) : (uint16_t)(wide >> 16); /* a bf16 value */
      memcpy(x + 2 * i, &b, 2);
    }
  }
  return x;
}

static double value_at(const void *x, txattn_dtype t, size_t i) {
  if (t == TXATTN_DTYPE_F32) return (double)((const float *)x)[i];
  uint16_t b = ((const uint16_t *)x)[i];
  return t == TXATTN_DTYPE_F16 ? f16_value(b) : bf16_value(b);
}

/* Every kernel that takes a combination of types is exact on it (others decline it, by name). */
Test(dtypes, kernels_are_exact_on_every_type_combination_they_take) {
  static const txattn_problem shapes[] = {
      {.n_q = 13, .n_kv = 37, .d_qk = 24, .d_v = 16, .mask = TXATTN_MASK_CAUSAL},
      {.batch = 2, .heads_q = 4, .heads_kv = 2, .n_q = 1, .n_kv = 300, .d_qk = 64},
      {.n_q = 40, .d_qk = 8, .mask = TXATTN_MASK_WINDOW, .window_left = 5, .window_right = 2},
  };
  txattn_context *ctx = test_context(2);
  struct kernel_list kernels;
  test_kernel_list(ctx, &kernels);
  int naive_runs = 0;
  for (int combo = 0; combo < 3 * 3 * 3; combo++) {
    txattn_dtype qt = (txattn_dtype)(combo % 3), kvt = (txattn_dtype)(combo / 3 % 3),
                 ot = (txattn_dtype)(combo / 9);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      txattn_problem p = shapes[si], r = TXATTN_PROBLEM_INIT;
      p.q_type = qt, p.k_type = p.v_type = kvt, p.o_type = ot;
      cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK);
      size_t nq = (size_t)(r.batch * r.heads_q * r.n_q),
             nkv = (size_t)(r.batch * r.heads_kv * r.n_kv);
      uint32_t state = (uint32_t)(combo * 7 + si);
      void *q = random_tensor(qt, nq * (size_t)r.d_qk, &state);
      void *k = random_tensor(kvt, nkv * (size_t)r.d_qk, &state);
      void *v = random_tensor(kvt, nkv * (size_t)r.d_v, &state);
      size_t no = nq * (size_t)r.d_v;
      void *want = malloc(no * 4), *got = malloc(no * 4);
      cr_assert(want && got);
      txattn_tensors t = {.q_data = q, .k_data = k, .v_data = v, .o_data = want};
      double bound;
      cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
      cr_assert_eq(txattn_error_bound(&p, &t, &bound), TXATTN_OK);
      t.o_data = got;
      for (size_t ki = 0; ki < kernels.n; ki++) {
        if (!kernels.k[ki].usable) continue;
        txattn_plan *plan = NULL;
        txattn_status s = txattn_plan_create(ctx, &p, kernels.k[ki].name, &plan);
        if (s == TXATTN_E_UNSUPPORTED && strstr(txattn_last_error(), "does not ") != NULL &&
            strstr(txattn_last_error(), "take") != NULL)
          continue;
        if (s == TXATTN_E_UNSUPPORTED) continue; /* declines the shape, as for f32 */
        cr_assert_eq(s, TXATTN_OK, "%s: %s", kernels.k[ki].name, txattn_last_error());
        memset(got, 0xff, no * 4);
        cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK, "%s: %s", kernels.k[ki].name,
                     txattn_last_error());
        txattn_plan_free(plan);
        for (size_t i = 0; i < no; i++) {
          double a = value_at(got, ot, i), b = value_at(want, ot, i);
          cr_assert(fabs(a - b) <= bound,
                    "%s on q %s, k/v %s, o %s, shape %zu: o[%zu] = %a, want %a (bound %g)",
                    kernels.k[ki].name, txattn_dtype_name(qt), txattn_dtype_name(kvt),
                    txattn_dtype_name(ot), si, i, a, b, bound);
        }
        naive_runs += strcmp(kernels.k[ki].name, "naive.scalar") == 0;
      }
      free(q), free(k), free(v), free(want), free(got);
    }
  }
  cr_assert_eq(naive_runs, 27 * 3, "naive.scalar takes every type combination");
  txattn_context_free(ctx);
}

/* txattn_attention's plan cache tells problems apart by their types: the same shape in f32 and
   then with bf16 K/V on one context is two plans, each reading its own element size. */
Test(dtypes, the_plan_cache_keys_on_the_types) {
  enum { n = 9, d = 4 };
  float q[n * d], k[n * d], v[n * d], o[n * d], want[n * d];
  uint16_t k16[n * d], v16[n * d];
  for (int i = 0; i < n * d; i++) {
    q[i] = (float)((i * 7) % 5) - 2.0f;
    k16[i] = f16_of((double)((i * 3) % 7) - 3.0);
    v16[i] = f16_of((double)((i * 5) % 9) / 4.0);
    k[i] = (float)f16_value(k16[i]);
    v[i] = (float)f16_value(v16[i]);
  }
  txattn_context *ctx = test_context(1);
  txattn_problem p = {.n_q = n, .d_qk = d, .mask = TXATTN_MASK_CAUSAL};
  txattn_tensors t = {.q = q, .k = k, .v = v, .o = want};
  cr_assert_eq(txattn_attention(ctx, &p, &t), TXATTN_OK, "%s", txattn_last_error());
  p.k_type = p.v_type = TXATTN_DTYPE_F16;
  txattn_tensors t16 = {.q = q, .k_data = k16, .v_data = v16, .o = o};
  cr_assert_eq(txattn_attention(ctx, &p, &t16), TXATTN_OK, "%s", txattn_last_error());
  double bound;
  cr_assert_eq(txattn_error_bound(&p, &t16, &bound), TXATTN_OK);
  for (int i = 0; i < n * d; i++)
    cr_assert(fabs((double)o[i] - (double)want[i]) <= 2 * bound, "o[%d] = %g, want %g", i,
              (double)o[i], (double)want[i]);
  txattn_context_free(ctx);
}
