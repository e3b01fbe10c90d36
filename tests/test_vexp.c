/* The vectorised exp2 of the tiled kernels' softmax: accuracy bound and special values, per ISA.
 *
 * Checks every ISA build this CPU can run (the others are skipped): the max error in ulp over a
 * dense sweep of [-126, 0] stays within the documented bound (tiled_internal.h), and NaN -> NaN,
 * -inf -> +0, 0 -> 1 exactly, far below the normal range -> +0, whatever the position of the value
 * in a vector. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
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

Test(vexp, scalar_accuracy) {
  check_accuracy(&tiled_ops_scalar, TILED_EXP2_MAX_ULP_NO_FMA);
}
Test(vexp, scalar_special_values) {
  check_special(&tiled_ops_scalar);
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
Test(vexp, avx512_special_values) {
  if (!have_avx512()) cr_skip_test("this CPU lacks AVX-512 F/DQ/BW/VL");
  check_special(&tiled_ops_avx512);
}
#endif

#if defined(__aarch64__)
Test(vexp, neon_accuracy) {
  check_accuracy(&tiled_ops_neon, TILED_EXP2_MAX_ULP_FMA);
}
Test(vexp, neon_special_values) {
  check_special(&tiled_ops_neon);
}
#endif
