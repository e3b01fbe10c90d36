/* SPDX-License-Identifier: MIT */
/* tiled.avx512bf16's Q K^T (plugins/tiled/tiled_avx512bf16.c) against scalar models, bit for bit:
 * - vdpbf16ps: the emulation (tests/emulation/avx512_emulation.h) and, where the CPU has
 *   AVX512_BF16, the instruction, against a model written here (two fused multiply-adds, the odd
 *   pair element first, DAZ on the inputs, FTZ after rounding), on edge cases and random lanes;
 * - the tile (packing and micro-kernel, emulated and real): each score is that chain of fused
 *   multiply-adds over the pairs, or, where the key block or the row group holds a subnormal bf16
 *   (which vdpbf16ps would read as zero), fp32 fused multiply-adds in element order -- at head
 *   sizes odd, below a vector and past one, with negated queries. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "bf16dp/bf16dp_tile.h"
#include "half.h"

static int cpu_has_bf16dp(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bf16");
}

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static float daz(float x) {
  return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x;
}

/* One step: acc + a b rounded once to nearest even, subnormal inputs read as zero, and a result
   below 2^-126 after rounding to 24 bits with an unbounded exponent flushed to zero. Where the
   result is near 2^-126 every term is far below 1 (it is a sum of terms of at most 24 and 16
   significant bits), so the same fma scaled by 2^64 rounds without the subnormal range. */
static float model_step(float acc, uint16_t a, uint16_t b) {
  const float c = daz(acc), x = daz(txh_bf16_to_f32(a)), y = daz(txh_bf16_to_f32(b));
  const float r = fmaf(x, y, c);
  if (r == 0.0f || !(fabsf(r) <= 0x1p-126f)) return r;
  const float scaled = fmaf(x * 0x1p64f, y, c * 0x1p64f);
  return fabsf(scaled) < 0x1p-62f ? copysignf(0.0f, scaled) : r;
}

static float model_lane(float acc, uint32_t a, uint32_t b) {
  acc = model_step(acc, (uint16_t)(a >> 16), (uint16_t)(b >> 16));
  return model_step(acc, (uint16_t)a, (uint16_t)b);
}

static int same(float x, float y) {
  return isnan(x) ? isnan(y) : bits(x) == bits(y);
}

static uint32_t rng = 12345u;
static uint32_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
  return rng;
}

/* A bf16 of every class, weighted toward the edges of the normal range and near 1. */
static uint16_t any_bf16(void) {
  uint32_t r = next();
  uint16_t sign = (uint16_t)(r & 0x8000u), frac = (uint16_t)((r >> 16) & 0x7fu);
  switch ((r >> 24) % 8) {
  case 0: /* subnormal or zero */
    return sign | frac;
  case 1: /* just above the smallest normal */
    return sign | (uint16_t)((1u + (r >> 8) % 4) << 7) | frac;
  case 2: /* huge, Inf or NaN */
    return sign | (uint16_t)((0xfcu + (r >> 8) % 4) << 7) | frac;
  case 3:
  case 4: /* near the smallest normal over a product: exponents around 63 */
    return sign | (uint16_t)((50u + (r >> 8) % 30) << 7) | frac;
  default: /* near 1 */
    return sign | (uint16_t)((120u + (r >> 8) % 16) << 7) | frac;
  }
}

static float any_acc(void) {
  uint32_t r = next();
  switch (r % 4) {
  case 0:
    return (float)((int32_t)next()) * 0x1p-31f; /* near 1 */
  case 1: {
    float x;
    uint32_t u = (next() & 0x80ffffffu) | ((r >> 8) % 4u) << 23; /* subnormal to 2^-124 */
    memcpy(&x, &u, 4);
    return x;
  }
  case 2:
    return (float)((double)(int32_t)next() * 0x1p-157); /* near 2^-126 */
  default:
    return (float)((int32_t)next()) * 0x1p-100f;
  }
}

static uint32_t pair(uint16_t lo, uint16_t hi) {
  return (uint32_t)lo | (uint32_t)hi << 16;
}

/* Cases that tell the candidate semantics apart (measured on Zen 4 as the SDM's pseudocode). */
static const struct {
  float acc;
  float a_lo, a_hi, b_lo, b_hi;
  float want;
} edges[] = {
    {1.0f, 0x1p-24f, 0x1p-24f, 1.0f, 1.0f, 1.0f}, /* two roundings: each tie goes to 1 */
    {1.0f, 0x1p-24f, 0x1.8p-24f, 1.0f, 1.0f, 0x1.000004p+0f}, /* the odd product first */
    {0.0f, 0x1p-130f, 0.0f, 0x1p102f, 0.0f, 0.0f},            /* a subnormal input reads as zero */
    {0x1p-130f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f},                /* so does a subnormal accumulator */
    {0x1p-126f, 0.0f, 0x1p-63f, 0.0f, -0x1p-64f, 0.0f},       /* a tiny result is flushed */
    {0x1p-126f, 0.0f, 0x1p-76f, 0.0f, -0x1p-76f, 0x1p-126f},  /* tiny before rounding only: kept */
    {0x1p-126f, 0.0f, 0x1.8p-75f, 0.0f, -0x1p-76f, 0.0f},     /* rounds below 2^-126 with 24 bits */
    {0x1p-126f, 0x1p-126f, 0x1.8p-64f, 1.0f, -0x1p-63f, 0x1p-126f}, /* a tiny partial sum too */
    {0.0f, 0x1p100f, 0x1p100f, -0x1p100f, 0x1p100f, INFINITY}, /* overflow, then a finite fma */
};

Test(bf16dp, vdpbf16ps_rounds_as_the_model_says) {
  const int hw = cpu_has_bf16dp();
  for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
    const uint32_t a = pair(txh_f32_to_bf16(edges[i].a_lo), txh_f32_to_bf16(edges[i].a_hi));
    const uint32_t b = pair(txh_f32_to_bf16(edges[i].b_lo), txh_f32_to_bf16(edges[i].b_hi));
    const float m = model_lane(edges[i].acc, a, b);
    cr_expect(same(m, edges[i].want), "edge %zu: the model gives %a, want %a", i, m, edges[i].want);
    cr_expect(same(bf16dp_lane_emu(edges[i].acc, a, b), m), "edge %zu: emulated %a, model %a", i,
              bf16dp_lane_emu(edges[i].acc, a, b), m);
    if (hw)
      cr_expect(same(bf16dp_lane_hw(edges[i].acc, a, b), m), "edge %zu: vdpbf16ps %a, model %a", i,
                bf16dp_lane_hw(edges[i].acc, a, b), m);
  }
  for (int i = 0; i < 300000; i++) {
    const float acc = any_acc();
    const uint32_t a = pair(any_bf16(), any_bf16()), b = pair(any_bf16(), any_bf16());
    const float m = model_lane(acc, a, b), e = bf16dp_lane_emu(acc, a, b);
    cr_assert(same(e, m), "acc %a, a %08x, b %08x: emulated %a (%08x), model %a (%08x)", acc, a, b,
              e, bits(e), m, bits(m));
    if (hw) {
      const float h = bf16dp_lane_hw(acc, a, b);
      cr_assert(same(h, m), "acc %a, a %08x, b %08x: vdpbf16ps %a (%08x), model %a (%08x)", acc, a,
                b, h, bits(h), m, bits(m));
    }
  }
  if (!hw) cr_log_info("this CPU lacks AVX512_BF16: the model was checked against the emulation");
}

enum { MAXD = 130 };

/* The score the tile must give for row r and key j. */
static float model_score(const uint16_t *q, const uint16_t *k, int64_t d, int fp32_path) {
  float acc = 0.0f;
  if (fp32_path) {
    for (int64_t c = 0; c < d; c++) acc = fmaf(txh_bf16_to_f32(q[c]), txh_bf16_to_f32(k[c]), acc);
    return acc;
  }
  for (int64_t p = 0; 2 * p < d; p++) {
    const uint16_t qh = 2 * p + 1 < d ? q[2 * p + 1] : 0, kh = 2 * p + 1 < d ? k[2 * p + 1] : 0;
    acc = model_lane(acc, pair(q[2 * p], qh), pair(k[2 * p], kh));
  }
  return acc;
}

static int subnormal(uint16_t x) {
  return (x & 0x7f80u) == 0 && (x & 0x7fu) != 0;
}

static uint16_t plain_bf16(void) { /* near 1, either sign */
  uint32_t r = next();
  return (uint16_t)((r & 0x8000u) | (118u + (r >> 8) % 12) << 7 | ((r >> 16) & 0x7fu));
}

static void check_tile(int64_t d, float qsign, int sub_q, int sub_k, int hw) {
  static uint16_t q[BF16DP_MR * MAXD], k[BF16DP_KW * MAXD], qn[BF16DP_MR * MAXD];
  static float got[BF16DP_MR * BF16DP_KW];
  for (int64_t i = 0; i < BF16DP_MR * d; i++) q[i] = plain_bf16();
  for (int64_t i = 0; i < BF16DP_KW * d; i++) k[i] = plain_bf16();
  /* products near 2^-126: flushed partial sums stay in the picture */
  q[d - 1] = txh_f32_to_bf16(0x1.4p-70f), k[d - 1] = txh_f32_to_bf16(0x1p-57f);
  if (sub_q) q[2 * d + d / 2] = 0x0011;  /* row 2 */
  if (sub_k) k[37 * d + d - 1] = 0x8003; /* key 37 */
  int fp32_path = d < 2;
  for (int64_t i = 0; i < BF16DP_MR * d; i++) fp32_path |= subnormal(q[i]);
  for (int64_t i = 0; i < BF16DP_KW * d; i++) fp32_path |= subnormal(k[i]);
  for (int64_t i = 0; i < BF16DP_MR * d; i++) qn[i] = qsign < 0 ? q[i] ^ 0x8000u : q[i];
  for (int copy = 0; copy < 1 + hw; copy++) {
    (copy ? bf16dp_tile_hw : bf16dp_tile_emu)(q, k, d, qsign, got);
    for (int r = 0; r < BF16DP_MR; r++)
      for (int j = 0; j < BF16DP_KW; j++) {
        const float want = model_score(qn + r * d, k + j * d, d, fp32_path);
        cr_assert(same(got[r * BF16DP_KW + j], want),
                  "%s tile, d %lld, qsign %g, subnormal q %d, k %d: score [%d][%d] = %a, want %a "
                  "(the %s path)",
                  copy ? "real" : "emulated", (long long)d, qsign, sub_q, sub_k, r, j,
                  got[r * BF16DP_KW + j], want, fp32_path ? "fp32" : "vdpbf16ps");
      }
  }
}

Test(bf16dp, the_tile_computes_each_score_as_the_model_says) {
  static const int64_t ds[] = {1, 2, 3, 17, 32, 33, 64, 127, 128, 130};
  const int hw = cpu_has_bf16dp();
  for (size_t i = 0; i < sizeof ds / sizeof *ds; i++)
    for (int s = 0; s < 4; s++) {
      check_tile(ds[i], s & 1 ? -1.0f : 1.0f, s == 2, s == 3, hw);
    }
}
