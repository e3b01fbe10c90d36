/* SPDX-License-Identifier: MIT */
/* The vectorised exp2 of the tiled kernels' softmax: accuracy bound and special values, per ISA.
 *
 * Checks every ISA build this CPU can run (the others are skipped): the max error in ulp over a
 * dense sweep of [-126, 0] stays within the documented bound (tiled_internal.h), and NaN -> NaN,
 * -inf -> +0, 0 -> 1 exactly, far below the normal range -> +0, whatever the position of the value
 * in a vector. The argument clamp to [-127, 128] (vec_exp2.h): no finite argument, however large or
 * small, gives NaN or a wrapped exponent; -127 and below give +0, [0, 127.5] stays finite and within
 * the bound, and x >= 128 (where 2^x overflows fp32) gives +inf. The softcap's vf_tanh: its
 * absolute error over a sweep of every float and its special values. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tiled_internal.h"

/* Error of y in units of the ulp of the correctly rounded float result of ref. */
static double ulp_error(float y, double ref) {
  float r = (float)ref;
  float ulp = nextafterf(fabsf(r), INFINITY) - fabsf(r);
  return fabs((double)y - ref) / ulp;
}

/* Max ulp error over the floats -0 >= x >= -126 whose bit patterns are `stride` apart, from
 * `first`. */
static double max_ulp_sweep(const tiled_ops *ops, uint32_t first, uint32_t stride) {
  enum { CHUNK = 4096 };
  static float x[CHUNK], y[CHUNK];
  const uint32_t last =
      0xC2FC0000u; /* -126.0f; negative floats grow in magnitude with their bits */
  double worst = 0.0;
  for (uint64_t u = first; u <= last;) {
    size_t n = 0;
    for (; n < CHUNK && u <= last; n++, u += stride) {
      uint32_t bits = (uint32_t)u;
      memcpy(&x[n], &bits, sizeof bits);
    }
    ops->exp2_array(x, y, n);
    for (size_t i = 0; i < n; i++) {
      double e = ulp_error(y[i], exp2((double)x[i]));
      if (e > worst) worst = e;
    }
  }
  return worst;
}

static void check_accuracy(const tiled_ops *ops, double bound) {
  /* every 13th float, and the worst inputs the full sweep found for the two roundings */
  double worst = max_ulp_sweep(ops, 0x80000000u, 13);
  const float hard[] = {-0x1.e7c31ep-2f, -0x1.f262ecp-2f, -0.5f, -125.5f, -126.0f, -1.0f};
  float y[sizeof hard / sizeof hard[0]];
  ops->exp2_array(hard, y, sizeof hard / sizeof hard[0]);
  for (size_t i = 0; i < sizeof hard / sizeof hard[0]; i++) {
    double e = ulp_error(y[i], exp2((double)hard[i]));
    cr_expect_leq(e, bound, "exp2(%a) = %a is %.3f ulp off", (double)hard[i], (double)y[i], e);
    if (e > worst) worst = e;
  }
  cr_assert_leq(worst, bound, "max error %.4f ulp exceeds the documented %.2f", worst, bound);
  cr_assert_gt(worst, 0.0, "a sweep with no rounding error at all did not evaluate anything");
}

static void check_special(const tiled_ops *ops) {
  /* 37 values: each special value lands in several vector lanes, beside NaNs, and in the tail */
  float x[37], y[37];
  const float specials[] = {NAN,      -NAN,    -INFINITY, 0.0f,    -0.0f,
                            -1000.0f, -150.0f, -127.0f,   -FLT_MAX};
  for (size_t i = 0; i < 37; i++) x[i] = specials[i % 9];
  ops->exp2_array(x, y, 37);
  for (size_t i = 0; i < 37; i++) {
    switch (i % 9) {
    case 0:
    case 1:
      cr_expect(isnan(y[i]), "exp2(NaN) = %a, not NaN (lane %zu)", (double)y[i], i);
      break;
    case 3:
    case 4:
      cr_expect_eq(y[i], 1.0f, "exp2(%a) = %a, not 1", (double)x[i], (double)y[i]);
      break;
    default:
      cr_expect(y[i] == 0.0f && !signbit(y[i]), "exp2(%a) = %a, not +0", (double)x[i],
                (double)y[i]);
    }
  }
}

/* The clamp of the argument, for any finite x and in any lane: never NaN; +0 at and below -127;
   finite and within the bound on [0, 127.5] (a sweep of positive arguments, beyond the softmax's
   x <= 0); +inf from 128 up, where 2^x overflows fp32. */
static void check_clamp(const tiled_ops *ops, double bound) {
  const float tiny[] = {-127.0f, -127.5f, -128.0f, -129.0f, -200.0f, -1e4f, -1e30f, -FLT_MAX};
  const float huge[] = {128.0f, 129.0f, 200.0f, 1e4f, 1e30f, FLT_MAX, 0x1.fffffep+127f};
  enum { N = 53 };
  float x[N], y[N];
  for (size_t i = 0; i < N; i++) x[i] = (i % 2) ? tiny[i / 2 % 8] : huge[i / 2 % 7];
  ops->exp2_array(x, y, N);
  for (size_t i = 0; i < N; i++) {
    cr_expect(!isnan(y[i]), "exp2(%a) = NaN (lane %zu)", (double)x[i], i);
    if (x[i] < 0)
      cr_expect(y[i] == 0.0f && !signbit(y[i]), "exp2(%a) = %a, not +0 (lane %zu)", (double)x[i],
                (double)y[i], i);
    else
      cr_expect(isinf(y[i]) && y[i] > 0, "exp2(%a) = %a, not +inf (lane %zu)", (double)x[i],
                (double)y[i], i);
  }
  /* [0, 127]: every 4099th float, each finite and within the bound */
  enum { CHUNK = 4096 };
  static float px[CHUNK], py[CHUNK];
  const uint32_t last = 0x42FE0000u; /* 127.0f */
  double worst = 0.0;
  size_t seen = 0, not_finite = 0;
  for (uint64_t u = 0; u <= last;) {
    size_t n = 0;
    for (; n < CHUNK && u <= last; n++, u += 4099) {
      uint32_t bits = (uint32_t)u;
      memcpy(&px[n], &bits, sizeof bits);
    }
    ops->exp2_array(px, py, n);
    for (size_t i = 0; i < n; i++) {
      not_finite += !isfinite(py[i]);
      double e = ulp_error(py[i], exp2((double)px[i]));
      if (e > worst) worst = e;
    }
    seen += n;
  }
  const float top[] = {127.0f, 127.25f, 127.49f, 127.5f};
  float ty[4];
  ops->exp2_array(top, ty, 4);
  for (size_t i = 0; i < 4; i++) {
    cr_expect(isfinite(ty[i]), "exp2(%a) = %a, not finite", (double)top[i], (double)ty[i]);
    double e = ulp_error(ty[i], exp2((double)top[i]));
    if (e > worst) worst = e;
  }
  cr_assert_gt(seen, 200000, "the sweep of [0, 127] evaluated only %zu values", seen);
  cr_assert_eq(not_finite, 0, "%zu results on [0, 127] are not finite", not_finite);
  cr_assert_leq(worst, bound, "max error %.4f ulp on [0, 127.5] exceeds %.2f", worst, bound);
  /* (127.5, 128): k rounds to 128, so +inf where 2^x is still finite; never NaN */
  const float edge[] = {127.75f, 127.99f};
  ops->exp2_array(edge, ty, 2);
  for (size_t i = 0; i < 2; i++)
    cr_expect(!isnan(ty[i]) && ty[i] > 0, "exp2(%a) = %a", (double)edge[i], (double)ty[i]);
}

/* The softcap's tanh: max absolute error over every 101st float (both signs) and the values near 0,
   the steep middle and the saturation; special values. */
static void check_tanh(const tiled_ops *ops) {
  enum { CHUNK = 4096 };
  static float x[CHUNK], y[CHUNK];
  double worst = 0.0;
  for (uint64_t u = 0; u <= 0xFFFFFFFFu;) {
    size_t n = 0;
    for (; n < CHUNK && u <= 0xFFFFFFFFu; u += 101) {
      uint32_t bits = (uint32_t)u;
      memcpy(&x[n], &bits, sizeof bits);
      if (!isnan(x[n])) n++;
    }
    ops->tanh_array(x, y, n);
    for (size_t i = 0; i < n; i++) {
      double e = fabs((double)y[i] - tanh((double)x[i])) / 0x1p-24;
      if (e > worst) worst = e;
    }
  }
  cr_log_info("tanh: at most %.3f u off", worst);
  cr_assert_leq(worst, TILED_TANH_MAX_ERR_U, "tanh is %.3f u off", worst);
  cr_assert_gt(worst, 0.0);
  const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 1e-30f};
  float ty[8];
  ops->tanh_array(sp, ty, 8);
  cr_assert(ty[0] == 0.0f && !signbit(ty[0]) && ty[1] == 0.0f && signbit(ty[1]));
  cr_assert(ty[2] == 1.0f && ty[3] == -1.0f && isnan(ty[4]) && ty[5] == 1.0f && ty[6] == -1.0f);
  cr_assert(fabsf(ty[7]) <= 0x1p-23f);
}

Test(vexp, scalar_tanh) {
  check_tanh(&tiled_ops_scalar);
}
Test(vexp, scalar_accuracy) {
  check_accuracy(&tiled_ops_scalar, TILED_EXP2_MAX_ULP_NO_FMA);
}
Test(vexp, scalar_special_values) {
  check_special(&tiled_ops_scalar);
}
Test(vexp, scalar_clamp) {
  check_clamp(&tiled_ops_scalar, TILED_EXP2_MAX_ULP_NO_FMA);
}

#if defined(__x86_64__)
static int have_avx2(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
static int have_avx512(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && have_avx2();
}
Test(vexp, avx2_accuracy) {
  if (!have_avx2()) cr_skip_test("this CPU lacks AVX2/FMA");
  check_accuracy(&tiled_ops_avx2, TILED_EXP2_MAX_ULP_FMA);
}
Test(vexp, avx2_special_values) {
  if (!have_avx2()) cr_skip_test("this CPU lacks AVX2/FMA");
  check_special(&tiled_ops_avx2);
}
Test(vexp, avx512_accuracy) {
  if (!have_avx512()) cr_skip_test("this CPU lacks AVX-512 F/DQ/BW/VL");
  check_accuracy(&tiled_ops_avx512, TILED_EXP2_MAX_ULP_FMA);
}
Test(vexp, avx2_clamp) {
  if (!have_avx2()) cr_skip_test("this CPU lacks AVX2/FMA");
  check_clamp(&tiled_ops_avx2, TILED_EXP2_MAX_ULP_FMA);
}
Test(vexp, avx2_tanh) {
  if (!have_avx2()) cr_skip_test("this CPU lacks AVX2/FMA");
  check_tanh(&tiled_ops_avx2);
}
Test(vexp, avx512_tanh) {
  if (!have_avx512()) cr_skip_test("this CPU lacks AVX-512 F/DQ/BW/VL");
  check_tanh(&tiled_ops_avx512);
}
Test(vexp, avx512_special_values) {
  if (!have_avx512()) cr_skip_test("this CPU lacks AVX-512 F/DQ/BW/VL");
  check_special(&tiled_ops_avx512);
}
Test(vexp, avx512_clamp) {
  if (!have_avx512()) cr_skip_test("this CPU lacks AVX-512 F/DQ/BW/VL");
  check_clamp(&tiled_ops_avx512, TILED_EXP2_MAX_ULP_FMA);
}
/* the bf16 build scores with vdpbf16ps but shares the softmax's exp2: the same checks */
Test(vexp, avx512bf16_exp2) {
  if (!have_avx512() || !__builtin_cpu_supports("avx512bf16"))
    cr_skip_test("this CPU lacks AVX512_BF16");
  check_accuracy(&tiled_ops_avx512bf16, TILED_EXP2_MAX_ULP_FMA);
  check_special(&tiled_ops_avx512bf16);
  check_clamp(&tiled_ops_avx512bf16, TILED_EXP2_MAX_ULP_FMA);
}
#endif

#if defined(__aarch64__)
Test(vexp, neon_accuracy) {
  check_accuracy(&tiled_ops_neon, TILED_EXP2_MAX_ULP_FMA);
}
Test(vexp, neon_tanh) {
  check_tanh(&tiled_ops_neon);
}
Test(vexp, neon_special_values) {
  check_special(&tiled_ops_neon);
}
Test(vexp, neon_clamp) {
  check_clamp(&tiled_ops_neon, TILED_EXP2_MAX_ULP_FMA);
}
#endif

/* Decode with softcap, ALiBi and sink keys (at most TILED_DIRECT_ROWS rows per kv head) takes the
   direct path, which modifies its scores as the tiled path does and runs a pass over the sink keys
   before each row's own range, and so does a mask tensor. The batteries of tests/test_modifiers.c
   and tests/test_masks.c check the results (their decode shapes). */
Test(tiled_direct, modified_decode_takes_the_direct_path) {
  float slopes[4] = {0.5f, 0.25f, 0.125f, 0.0625f};
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.batch = 1;
  p.heads_q = 4;
  p.heads_kv = 1;
  p.n_q = 1;
  p.n_kv = 500;
  p.d_qk = p.d_v = 64;
  p.mask = TXATTN_MASK_CAUSAL;
  p.window_left = p.window_right = 0;
  p.scale = 0.125f;
  p.softcap = 50.0f;
  p.alibi = 1;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.alibi_slopes = slopes;
  tiled_geom g;
  cr_assert(tiled_geom_init(&g, &p, &t, &tiled_ops_scalar, 64, 64));
  cr_assert(g.modified && g.direct, "modified %d, direct %d", g.modified, g.direct);
  p.sink_keys = 4;
  p.mask = TXATTN_MASK_WINDOW;
  p.window_left = 100;
  cr_assert(tiled_geom_init(&g, &p, &t, &tiled_ops_scalar, 64, 64));
  cr_assert(g.direct && g.sink_keys == 4, "sink keys: direct %d", g.direct);
  tiled_scratch s;
  void *mem = malloc(tiled_scratch_bytes(&g, &tiled_ops_scalar, 0));
  cr_assert(mem != NULL);
  tiled_scratch_carve(&g, &tiled_ops_scalar, 0, mem, &s);
  cr_assert(s.lo2 != NULL && s.hi2 != NULL,
            "the direct path's scratch holds the sink keys' ranges");
  free(mem);
  unsigned char mask[500];
  t.mask = mask;
  t.mask_layout = (txattn_mask_layout){0, 0, 0, 1};
  p.mask_tensor = TXATTN_MASK_TENSOR_BOOL;
  cr_assert(tiled_geom_init(&g, &p, &t, &tiled_ops_scalar, 64, 64));
  cr_assert(g.direct && g.mask == TXATTN_MASK_TENSOR_BOOL, "a mask tensor: direct %d", g.direct);
  cr_assert_eq(tiled_mask_summary_bytes(&g), 0, "the direct path reads the mask row by row");
}
