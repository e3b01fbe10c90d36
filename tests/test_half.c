/* SPDX-License-Identifier: MIT */
/* The 16-bit conversions kernels use for f16 and bf16 tensors: plugins/common/half.h (scalar) and
 * the vf_*_f16 / vf_*_bf16 functions of each vector layer (through vec_rows_half.h).
 *
 * The scalar functions are checked against references written differently, in fp64 with libm:
 * widening on all 65536 bit patterns of each type against a decoding by ldexp; narrowing against a
 * round to nearest even of the integer significand (ref_round), on every 16-bit value, on every
 * midpoint between neighbours and the floats just either side of it, on the overflow and subnormal
 * boundaries, on NaNs with every payload bit, and on millions of random fp32 bit patterns. Each
 * vector layer the CPU runs (the others are skipped) must then give the scalar functions' bits on
 * all of these, with every 16-bit pattern in every lane. */
#include <criterion/criterion.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "half_ops.h"

/* ---- the two formats, described for the references ---- */

typedef struct fmt {
  const char *name;
  int p;          /* significand bits, the implicit one included */
  int emin;       /* exponent of the smallest normal */
  int ebits;      /* exponent field width */
  double max;     /* largest finite value */
  uint16_t inf;   /* +Inf's bits */
  uint16_t quiet; /* the quiet bit of a NaN */
  float (*widen)(uint16_t);
  uint16_t (*narrow)(float);
} fmt;

static const fmt F16 = {.name = "f16",
                        .p = 11,
                        .emin = -14,
                        .ebits = 5,
                        .max = 65504.0,
                        .inf = 0x7C00,
                        .quiet = 0x0200,
                        .widen = txh_f16_to_f32,
                        .narrow = txh_f32_to_f16};
static const fmt BF16 = {.name = "bf16",
                         .p = 8,
                         .emin = -126,
                         .ebits = 8,
                         .max = 0x1.FEp127,
                         .inf = 0x7F80,
                         .quiet = 0x0040,
                         .widen = txh_bf16_to_f32,
                         .narrow = txh_f32_to_bf16};

static int is_nan16(const fmt *f, uint16_t h) {
  return (h & 0x7FFF) > f->inf;
}

/* 2^(emax + 1): where the largest finite value's next neighbour would be. */
static double over_max(const fmt *f) {
  return ldexp(1.0, 1 << (f->ebits - 1));
}

/* The value of a 16-bit pattern from its fields: (-1)^s * m * 2^(e - bias - (p - 1)), the implicit
   bit added to normal m, subnormals at the exponent of the smallest normal; NaN for NaNs. */
static double ref_value(const fmt *f, uint16_t h) {
  int mbits = f->p - 1;
  unsigned e = (h >> mbits) & ((1u << f->ebits) - 1), m = h & ((1u << mbits) - 1);
  double v;
  if (e == (1u << f->ebits) - 1)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp((double)m, f->emin - mbits);
  else
    v = ldexp((double)(m + (1u << mbits)), (int)e + f->emin - 1 - mbits);
  return (h & 0x8000) ? -v : v;
}

/* x (not NaN) rounded to the format, to nearest even, as a double (+-Inf on overflow): the
   significand at the exponent of x's binade (at least emin) as an integer N plus a fraction, N
   incremented when the fraction is over a half or a half with N odd. */
static double ref_round(const fmt *f, double x) {
  double a = fabs(x);
  if (a == 0.0 || isinf(a)) return x;
  int k;
  frexp(a, &k); /* a in [2^(k-1), 2^k) */
  int e = k - 1 < f->emin ? f->emin : k - 1;
  int qexp = e - (f->p - 1);
  double s = ldexp(a, -qexp), n = floor(s), frac = s - n;
  if (frac > 0.5 || (frac == 0.5 && fmod(n, 2.0) == 1.0)) n += 1.0;
  double v = ldexp(n, qexp);
  if (v > f->max) v = INFINITY;
  return copysign(v, x);
}

static uint32_t bits32(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static float from_bits32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* The NaN x narrows to r: quiet, same sign, the payload's top bits. */
static int expect_nan_narrowed(const fmt *f, float x, uint16_t r) {
  uint32_t u = bits32(x);
  int shift = 23 - (f->p - 1);
  uint16_t payload = (uint16_t)((u >> shift) & (f->quiet - 1u));
  int ok = is_nan16(f, r) && (r & f->quiet) && (r & 0x8000) == ((u >> 16) & 0x8000) &&
           (r & (f->quiet - 1u)) == payload;
  cr_expect(ok, "%s(NaN 0x%08x) = 0x%04x, not the quiet NaN with payload 0x%x", f->name, u, r,
            payload);
  return ok;
}

/* One narrowing of x against ref_round; returns 0 on a mismatch (after a failed expectation). */
static int check_narrow(const fmt *f, float x) {
  uint16_t r = f->narrow(x);
  if (isnan(x)) return expect_nan_narrowed(f, x, r);
  double want = ref_round(f, (double)x), got = ref_value(f, r);
  if (got == want && !!signbit(got) == !!signbit(want)) return 1;
  cr_expect_fail("%s(%a, bits 0x%08x) = 0x%04x (%a), not %a", f->name, (double)x, bits32(x), r, got,
                 want);
  return 0;
}

/* ---- scalar widening: all 65536 patterns ---- */

static void check_widen_all(const fmt *f) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536 && bad < 10; h++) {
    float y = f->widen((uint16_t)h);
    double want = ref_value(f, (uint16_t)h);
    if (isnan(want)) {
      /* quiet NaN, sign and payload kept (bf16: the bits themselves, a signalling NaN stays so) */
      uint32_t u = bits32(y), shift = (uint32_t)(23 - (f->p - 1));
      uint32_t expect = ((uint32_t)h << 16 & 0x80000000u) | 0x7F800000u |
                        ((h & (f->quiet * 2u - 1u)) << shift) | (f == &F16 ? 0x00400000u : 0u);
      if (u != expect) {
        cr_expect_fail("%s 0x%04x widens to 0x%08x, not the NaN 0x%08x", f->name, h, u, expect);
        bad++;
      }
    } else if ((double)y != want || !!signbit(y) != !!signbit(want)) {
      cr_expect_fail("%s 0x%04x widens to %a, not %a", f->name, h, (double)y, want);
      bad++;
    }
  }
  cr_assert_eq(bad, 0);
}

Test(half_scalar, f16_widens_every_pattern_exactly) {
  check_widen_all(&F16);
  /* a few by hand: the smallest subnormal, the largest subnormal, 1, the largest finite, -0 */
  cr_expect_eq(txh_f16_to_f32(0x0001), 0x1p-24f);
  cr_expect_eq(txh_f16_to_f32(0x03FF), 0x3FFp-24f);
  cr_expect_eq(txh_f16_to_f32(0x3C00), 1.0f);
  cr_expect_eq(txh_f16_to_f32(0x7BFF), 65504.0f);
  cr_expect_eq(bits32(txh_f16_to_f32(0x8000)), 0x80000000u);
}

Test(half_scalar, bf16_widens_every_pattern_exactly) {
  check_widen_all(&BF16);
  cr_expect_eq(txh_bf16_to_f32(0x0001), 0x1p-133f);
  cr_expect_eq(txh_bf16_to_f32(0x3F80), 1.0f);
  cr_expect_eq(txh_bf16_to_f32(0x7F7F), 0x1.FEp127f);
}

/* ---- scalar narrowing ---- */

/* Every 16-bit value comes back to its own pattern; a NaN to its quiet form. */
static void check_round_trip(const fmt *f) {
  int bad = 0;
  for (uint32_t h = 0; h < 65536 && bad < 10; h++) {
    uint16_t want = is_nan16(f, (uint16_t)h) ? (uint16_t)(h | f->quiet) : (uint16_t)h;
    uint16_t r = f->narrow(f->widen((uint16_t)h));
    if (r != want) {
      cr_expect_fail("%s 0x%04x comes back as 0x%04x, not 0x%04x", f->name, h, r, want);
      bad++;
    }
  }
  cr_assert_eq(bad, 0);
}

/* Between every pair of neighbours lo < hi (hi = lo's pattern + 1, up to the largest finite and
   Inf, both signs): the midpoint goes to the even one, the floats just above and below it to hi and
   lo; the midpoint above the largest finite is the overflow threshold. */
static void check_midpoints(const fmt *f) {
  int bad = 0;
  for (uint32_t h = 0; h < f->inf && bad < 10; h++) {
    for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
      uint16_t lo = (uint16_t)(h | sign), hi = (uint16_t)((h + 1) | sign);
      double vlo = ref_value(f, lo);
      double vhi = hi == (f->inf | sign) ? copysign(over_max(f), vlo) : ref_value(f, hi);
      double mid = (vlo + vhi) / 2; /* exact, and an fp32 value */
      float m = (float)mid;
      cr_assert_eq((double)m, mid, "the midpoint of 0x%04x and 0x%04x is no float", lo, hi);
      float above = nextafterf(m, (float)vhi), below = nextafterf(m, (float)vlo);
      uint16_t even = (lo & 1) ? hi : lo;
      uint16_t rm = f->narrow(m), ra = f->narrow(above), rb = f->narrow(below);
      if (rm != even || ra != hi || rb != lo) {
        cr_expect_fail("%s between 0x%04x and 0x%04x: midpoint %a -> 0x%04x (not 0x%04x), above "
                       "-> 0x%04x, below -> 0x%04x",
                       f->name, lo, hi, mid, rm, even, ra, rb);
        bad++;
      }
      bad += !check_narrow(f, m) + !check_narrow(f, above) + !check_narrow(f, below);
    }
  }
  cr_assert_eq(bad, 0);
}

/* NaNs with each payload bit alone and all of them, both signs, and Inf. */
static void check_nans(const fmt *f) {
  for (uint32_t s = 0; s < 2; s++) {
    uint32_t sign = s << 31;
    for (int b = 0; b < 23; b++) check_narrow(f, from_bits32(sign | 0x7F800000u | 1u << b));
    check_narrow(f, from_bits32(sign | 0x7FFFFFFFu));
    cr_expect_eq(f->narrow(from_bits32(sign | 0x7F800000u)), (uint16_t)(f->inf | sign >> 16));
  }
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

/* n random fp32 patterns, and as many again with the exponent in [lo, hi] (where the format's
   finite values and their rounding are). */
static float *random_floats(size_t n, unsigned lo, unsigned hi, uint64_t seed) {
  float *x = malloc(2 * n * sizeof *x);
  cr_assert_not_null(x);
  for (size_t i = 0; i < n; i++) {
    uint64_t r = splitmix(&seed);
    x[i] = from_bits32((uint32_t)r);
    uint32_t e = lo + (uint32_t)((r >> 32) % (hi - lo + 1));
    x[n + i] = from_bits32(((uint32_t)r & 0x807FFFFFu) | e << 23);
  }
  return x;
}

#define N_RANDOM 2000000

static void check_random(const fmt *f, unsigned lo, unsigned hi) {
  float *x = random_floats(N_RANDOM, lo, hi, 0x5EED0000u + (uint64_t)f->p);
  int bad = 0;
  for (size_t i = 0; i < 2 * N_RANDOM && bad < 10; i++) bad += !check_narrow(f, x[i]);
  free(x);
  cr_assert_eq(bad, 0);
}

Test(half_scalar, f16_round_trips_every_value) {
  check_round_trip(&F16);
}
Test(half_scalar, bf16_round_trips_every_value) {
  check_round_trip(&BF16);
}
Test(half_scalar, f16_rounds_midpoints_to_even) {
  check_midpoints(&F16);
}
Test(half_scalar, bf16_rounds_midpoints_to_even) {
  check_midpoints(&BF16);
}
Test(half_scalar, f16_nans_stay_nans) {
  check_nans(&F16);
}
Test(half_scalar, bf16_nans_stay_nans) {
  check_nans(&BF16);
}
Test(half_scalar, f16_random_floats) {
  check_random(&F16, 100, 145); /* 2^-27 .. 2^18 */
}
Test(half_scalar, bf16_random_floats) {
  check_random(&BF16, 0, 254);
}

Test(half_scalar, f16_boundaries) {
  const struct {
    float x;
    uint16_t h;
  } cases[] = {
      {65504.0f, 0x7BFF},       {nextafterf(65520.0f, 0.0f), 0x7BFF},
      {65520.0f, 0x7C00},       {65536.0f, 0x7C00},
      {FLT_MAX, 0x7C00},        {-FLT_MAX, 0xFC00},
      {-65520.0f, 0xFC00},      {0x1p-24f, 0x0001},
      {0x1p-25f, 0x0000},       {nextafterf(0x1p-25f, 1.0f), 0x0001},
      {-0x1p-25f, 0x8000},      {0x3p-25f, 0x0002},   /* 1.5 ulp: the tie goes to even 2 */
      {0x1p-14f, 0x0400},       {0x7FFp-25f, 0x0400}, /* largest subnormal + half: to the even */
      {FLT_MIN, 0x0000},        {0x1p-149f, 0x0000},
      {-0x1p-149f, 0x8000},     {0.0f, 0x0000},
      {-0.0f, 0x8000},          {1.0f + 0x1p-11f, 0x3C00},
      {1.0f + 0x3p-11f, 0x3C02}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cr_expect_eq(txh_f32_to_f16(cases[i].x), cases[i].h, "f16(%a) = 0x%04x, not 0x%04x",
                 (double)cases[i].x, txh_f32_to_f16(cases[i].x), cases[i].h);
    check_narrow(&F16, cases[i].x);
  }
}

Test(half_scalar, bf16_boundaries) {
  const struct {
    float x;
    uint16_t h;
  } cases[] = {{0x1.FEp127f, 0x7F7F},
               {0x1.FFp127f, 0x7F80}, /* the midpoint above the largest finite: Inf */
               {nextafterf(0x1.FFp127f, 0.0f), 0x7F7F},
               {FLT_MAX, 0x7F80},
               {-FLT_MAX, 0xFF80},
               {0x1p-133f, 0x0001},
               {0x1p-134f, 0x0000}, /* f32 subnormals: a tie to even 0 */
               {nextafterf(0x1p-134f, 1.0f), 0x0001},
               {0x3p-134f, 0x0002},
               {FLT_MIN, 0x0080},
               {nextafterf(FLT_MIN, 0.0f), 0x0080},
               {-0.0f, 0x8000},
               {1.0f + 0x1p-8f, 0x3F80},
               {1.0f + 0x3p-8f, 0x3F82}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cr_expect_eq(txh_f32_to_bf16(cases[i].x), cases[i].h, "bf16(%a) = 0x%04x, not 0x%04x",
                 (double)cases[i].x, txh_f32_to_bf16(cases[i].x), cases[i].h);
    check_narrow(&BF16, cases[i].x);
  }
}

/* The scalar functions compute on bits (and one exact product): another rounding mode changes
   nothing. */
Test(half_scalar, independent_of_the_rounding_mode) {
  float *x = random_floats(100000, 100, 145, 7);
  uint16_t *want = malloc(2 * 100000 * 2 * sizeof *want);
  cr_assert_not_null(want);
  for (size_t i = 0; i < 200000; i++) {
    want[2 * i] = txh_f32_to_f16(x[i]);
    want[2 * i + 1] = txh_f32_to_bf16(x[i]);
  }
  const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  for (size_t m = 0; m < 3; m++) {
    cr_assert_eq(fesetround(modes[m]), 0);
    size_t bad = 0;
    for (size_t i = 0; i < 200000; i++)
      bad += txh_f32_to_f16(x[i]) != want[2 * i] || txh_f32_to_bf16(x[i]) != want[2 * i + 1];
    for (uint32_t h = 0; h < 0x0400; h++)
      bad += txh_f16_to_f32((uint16_t)h) != ref_value(&F16, (uint16_t)h);
    fesetround(FE_TONEAREST);
    cr_expect_eq(bad, 0, "%zu conversions changed with rounding mode %d", bad, modes[m]);
  }
  free(want);
  free(x);
}

/* ---- the vector layers against the scalar functions ---- */

enum { NPAT = 65536, PAD = 64 };

/* Every 16-bit pattern widened by ops, starting at each of the first `width` positions so that
   each pattern passes through every lane; the row's padding must be zeros. */
static void check_vector_widen(const half_ops *ops, int bf16) {
  uint16_t *src = malloc(NPAT * sizeof *src);
  float *dst = aligned_alloc(64, (NPAT + PAD) * sizeof *dst);
  cr_assert(src && dst);
  for (uint32_t h = 0; h < NPAT; h++) src[h] = (uint16_t)h;
  size_t bad = 0;
  for (int off = 0; off < ops->width; off++) {
    int64_t n = NPAT - off, np = n + 7;
    memset(dst, 0xFF, (NPAT + PAD) * sizeof *dst); /* NaNs wherever the row is not written */
    (bf16 ? ops->from_bf16 : ops->from_f16)(src + off, n, np, dst);
    for (int64_t i = 0; i < n; i++) {
      uint16_t h = src[off + i];
      uint32_t want = bits32(bf16 ? txh_bf16_to_f32(h) : txh_f16_to_f32(h));
      if (bits32(dst[i]) != want && bad++ < 5)
        cr_expect_fail("%s %s 0x%04x at lane %d widens to 0x%08x, the scalar one to 0x%08x",
                       ops->name, bf16 ? "bf16" : "f16", h, (int)((off + i) % ops->width),
                       bits32(dst[i]), want);
    }
    for (int64_t i = n; i < np; i++) bad += bits32(dst[i]) != 0;
  }
  free(src);
  free(dst);
  cr_assert_eq(bad, 0, "%zu mismatches", bad);
}

/* The inputs of the narrowing checks: every 16-bit value of both types widened, the midpoints
   between neighbours of both types and the floats either side, NaNs with each payload bit, and
   random patterns. */
static float *narrow_inputs(size_t *count) {
  const size_t n_random = 500000;
  size_t cap = 2 * NPAT + 2 * 3 * NPAT + 2 * 24 + 4 * n_random, n = 0;
  float *x = malloc(cap * sizeof *x);
  cr_assert_not_null(x);
  for (uint32_t h = 0; h < NPAT; h++) {
    x[n++] = txh_f16_to_f32((uint16_t)h);
    x[n++] = txh_bf16_to_f32((uint16_t)h);
  }
  const fmt *fs[2] = {&F16, &BF16};
  for (int k = 0; k < 2; k++)
    for (uint32_t h = 0; h < NPAT; h++) {
      uint32_t lo = h, hi = h + 1;
      if ((lo & 0x7FFF) >= fs[k]->inf) continue; /* up to the largest finite */
      double vlo = ref_value(fs[k], (uint16_t)lo);
      double vhi = (hi & 0x7FFF) == fs[k]->inf ? copysign(over_max(fs[k]), vlo)
                                               : ref_value(fs[k], (uint16_t)hi);
      float m = (float)((vlo + vhi) / 2);
      x[n++] = m;
      x[n++] = nextafterf(m, INFINITY);
      x[n++] = nextafterf(m, -INFINITY);
    }
  for (uint32_t s = 0; s < 2; s++) {
    uint32_t sign = s << 31;
    for (int b = 0; b < 23; b++) x[n++] = from_bits32(sign | 0x7F800000u | 1u << b);
    x[n++] = from_bits32(sign | 0x7FFFFFFFu);
  }
  float *r = random_floats(n_random, 100, 145, 11);
  memcpy(x + n, r, 2 * n_random * sizeof *x);
  n += 2 * n_random;
  free(r);
  r = random_floats(n_random, 0, 255, 13);
  memcpy(x + n, r, 2 * n_random * sizeof *x);
  n += 2 * n_random;
  free(r);
  cr_assert_leq(n, cap);
  *count = n;
  return x;
}

static void check_vector_narrow(const half_ops *ops, int bf16) {
  size_t n;
  float *x = narrow_inputs(&n);
  uint16_t *out = malloc((n + PAD) * sizeof *out);
  cr_assert_not_null(out);
  size_t bad = 0;
  /* at two offsets, so that both the vector body and the scalar tail see every lane position */
  for (int off = 0; off < 2; off++) {
    (bf16 ? ops->to_bf16 : ops->to_f16)(x + off, (int64_t)(n - (size_t)off), out);
    for (size_t i = 0; i + (size_t)off < n; i++) {
      float v = x[off + i];
      uint16_t want = bf16 ? txh_f32_to_bf16(v) : txh_f32_to_f16(v);
      if (out[i] != want && bad++ < 5)
        cr_expect_fail("%s %s(%a, bits 0x%08x) = 0x%04x, the scalar one 0x%04x", ops->name,
                       bf16 ? "bf16" : "f16", (double)v, bits32(v), out[i], want);
    }
  }
  free(out);
  free(x);
  cr_assert_eq(bad, 0, "%zu mismatches", bad);
}

/* The fp8 pair loads give the single loads' values, bit for bit (NaNs included). */
static void check_fp8_pairs(const half_ops *ops) {
  const int x86 = strcmp(ops->name, "avx2") == 0 || strcmp(ops->name, "avx512") == 0;
  cr_assert(ops->fp8_pairs_differ || !x86, "%s: no fp8 pair loads", ops->name);
  if (ops->fp8_pairs_differ)
    cr_assert_eq(ops->fp8_pairs_differ(), 0, "%s: fp8 pair loads differ from single loads",
                 ops->name);
}

static void check_ops(const half_ops *ops) {
  check_fp8_pairs(ops);
  check_vector_widen(ops, 0);
  check_vector_widen(ops, 1);
  check_vector_narrow(ops, 0);
  check_vector_narrow(ops, 1);
}

Test(half_vector, scalar) {
  check_ops(&half_ops_scalar);
}

#if defined(__x86_64__)
#include <cpuid.h>

/* F16C from cpuid (leaf 1, ECX bit 29): not every compiler's __builtin_cpu_supports knows it. */
static int have_avx2(void) {
  unsigned a, b, c, d;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
static int have_avx512(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && have_avx2();
}
Test(half_vector, avx2) {
  if (!have_avx2()) cr_skip_test("this CPU lacks AVX2/FMA/F16C");
  check_ops(&half_ops_avx2);
}
Test(half_vector, avx512) {
  if (!have_avx512()) cr_skip_test("this CPU lacks AVX-512 F/DQ/BW/VL");
  check_ops(&half_ops_avx512);
}
/* vcvtps2ph takes its rounding from the immediate (round to nearest even), not from MXCSR. */
Test(half_vector, x86_stores_ignore_the_rounding_mode) {
  if (!have_avx2()) cr_skip_test("this CPU lacks AVX2/FMA/F16C");
  cr_assert_eq(fesetround(FE_UPWARD), 0);
  check_vector_narrow(&half_ops_avx2, 0);
  check_vector_narrow(&half_ops_avx2, 1);
  if (have_avx512()) {
    check_vector_narrow(&half_ops_avx512, 0);
    check_vector_narrow(&half_ops_avx512, 1);
  }
  fesetround(FE_TONEAREST);
}
#endif

#if defined(__aarch64__)
Test(half_vector, neon) {
  check_ops(&half_ops_neon);
}
#endif
