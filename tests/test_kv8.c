/* SPDX-License-Identifier: MIT */
/* 8-bit K and V (q8_0, e4m3, e5m2): txattn_convert against the formats' definitions and ggml's
 * quantisation, every refusal, the reference on 8-bit caches against the reference on their
 * dequantised f32 copies (the same bits where dequantising is exact), naive.scalar and the
 * dispatcher within txattn_error_bound (and the lse bound) on a battery of GQA, ragged, paged,
 * masked and modified problems, and no kernel handed an 8-bit type it does not declare. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_context.h"
#include "txattn/plugin.h"
#include "txattn/txattn.h"

TestSuite(kv8, .init = test_env_clean, .fini = test_check_leaks, .timeout = 300);

static uint64_t next_random(uint64_t *state) { /* splitmix64 */
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
static float uniform(uint64_t *s, float amp) {
  return (float)(((double)(next_random(s) >> 11) * 0x1p-52 * 2.0 - 1.0) * amp);
}

static void expect_invalid(txattn_status s, const char *needle) {
  cr_assert_eq(s, TXATTN_E_INVALID, "want E_INVALID naming \"%s\", got %s: %s", needle,
               txattn_status_name(s), txattn_last_error());
  cr_assert(strstr(txattn_last_error(), needle) != NULL, "\"%s\" does not name \"%s\"",
            txattn_last_error(), needle);
}

/* ---- the formats ---- */

/* The value of fp8 bits from the OCP definition: sign, biased exponent, mantissa. */
static double fp8_def(uint8_t x, int e4m3) {
  const int mb = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, e = (x & 0x7f) >> mb, m = x & ((1 << mb) - 1);
  double v;
  if (e4m3 && (x & 0x7f) == 0x7f) return NAN;
  if (!e4m3 && e == 31)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp(m, 1 - bias - mb);
  else
    v = ldexp(m + (1 << mb), e - bias - mb);
  return x & 0x80 ? -v : v;
}

Test(kv8, fp8_values_and_round_trips) {
  for (int e4m3 = 0; e4m3 < 2; e4m3++) {
    const txattn_dtype t = e4m3 ? TXATTN_DTYPE_E4M3 : TXATTN_DTYPE_E5M2;
    for (int x = 0; x < 256; x++) {
      const double want = fp8_def((uint8_t)x, e4m3);
      float got;
      uint8_t b = (uint8_t)x, back;
      cr_assert_eq(txattn_convert(&b, t, &got, TXATTN_DTYPE_F32, 1, 1.0f), TXATTN_OK, "%s",
                   txattn_last_error());
      if (isnan(want)) {
        cr_assert(isnan(got), "%s 0x%02x: %a, want NaN", txattn_dtype_name(t), x, (double)got);
        continue;
      }
      cr_assert_eq((double)got, want, "%s 0x%02x: %a, want %a", txattn_dtype_name(t), x,
                   (double)got, want);
      if (isinf(want)) continue; /* saturates: below */
      cr_assert_eq(txattn_convert(&got, TXATTN_DTYPE_F32, &back, t, 1, 1.0f), TXATTN_OK);
      cr_assert_eq(back, b, "%s 0x%02x -> %a -> 0x%02x", txattn_dtype_name(t), x, (double)got,
                   back);
    }
  }
  /* nearest even, saturation, NaN, subnormals */
  const struct {
    txattn_dtype t;
    float x;
    uint8_t want;
  } cases[] = {
      {TXATTN_DTYPE_E4M3, 1.0625f, 0x38},     /* tie of 1 and 1.125: 1 (even) */
      {TXATTN_DTYPE_E4M3, 1.1875f, 0x3a},     /* tie of 1.125 and 1.25: 1.25 */
      {TXATTN_DTYPE_E4M3, 464.0f, 0x7e},      /* tie of 448 and (no) 480: 448 */
      {TXATTN_DTYPE_E4M3, 1e6f, 0x7e},        /* saturates */
      {TXATTN_DTYPE_E4M3, -INFINITY, 0xfe},   /* saturates, no inf in e4m3fn */
      {TXATTN_DTYPE_E4M3, NAN, 0x7f},         /* NaN */
      {TXATTN_DTYPE_E4M3, 0x1p-10f, 0x00},    /* tie of 0 and 2^-9: 0 */
      {TXATTN_DTYPE_E4M3, 0x1.8p-9f, 0x02},   /* tie of 2^-9 and 2^-8: 2^-8 */
      {TXATTN_DTYPE_E4M3, -0.0f, 0x80},       /* the sign of zero kept */
      {TXATTN_DTYPE_E5M2, 1.125f, 0x3c},      /* tie of 1 and 1.25: 1 */
      {TXATTN_DTYPE_E5M2, 61440.0f, 0x7b},    /* tie of 57344 and 65536: saturates */
      {TXATTN_DTYPE_E5M2, INFINITY, 0x7b},    /* saturates */
      {TXATTN_DTYPE_E5M2, 0x1p-16f, 0x01},    /* the smallest subnormal */
      {TXATTN_DTYPE_E5M2, -0x1.8p-15f, 0x83}, /* 1.5 * 2^-15 = 3 * 2^-16, exact */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t got;
    cr_assert_eq(txattn_convert(&cases[i].x, TXATTN_DTYPE_F32, &got, cases[i].t, 1, 1.0f),
                 TXATTN_OK);
    cr_assert_eq(got, cases[i].want, "%s of %a: 0x%02x, want 0x%02x", txattn_dtype_name(cases[i].t),
                 (double)cases[i].x, got, cases[i].want);
  }
  /* with a scale: x / scale is stored, fp8 * scale (rounded to fp32 once) read back */
  float x = 3.0f, back;
  uint8_t b;
  cr_assert_eq(txattn_convert(&x, TXATTN_DTYPE_F32, &b, TXATTN_DTYPE_E4M3, 1, 0.375f), TXATTN_OK);
  cr_assert_eq(b, 0x50, "3 / 0.375 = 8: 0x%02x", b);
  cr_assert_eq(txattn_convert(&b, TXATTN_DTYPE_E4M3, &back, TXATTN_DTYPE_F32, 1, 0.375f),
               TXATTN_OK);
  cr_assert_eq(back, 3.0f);
  float s;
  const float row[4] = {1.0f, -896.0f, NAN, 2.0f};
  cr_assert_eq(txattn_convert_scale(row, TXATTN_DTYPE_F32, 4, TXATTN_DTYPE_E4M3, &s), TXATTN_OK);
  cr_assert_eq(s, 2.0f, "amax 896 / 448: %a", (double)s);
  const float zeros[2] = {0.0f, -0.0f};
  cr_assert_eq(txattn_convert_scale(zeros, TXATTN_DTYPE_F32, 2, TXATTN_DTYPE_E5M2, &s), TXATTN_OK);
  cr_assert_eq(s, 1.0f);
}

/* A hand-built ggml block: f16 d 0x3800 (0.5) and q = c - 16 decode to (c - 16) / 2, and
   ggml's quantize_row_q8_0 (amax / 127, roundf: half away from zero) of a row whose amax is 127
   stores d 1.0 and the values rounded away from zero. */
Test(kv8, q8_0_is_ggml) {
  txattn_block_q8_0 blk[2];
  cr_assert_eq(sizeof blk[0], 34);
  blk[0].d = 0x3800;
  for (int c = 0; c < 32; c++) blk[0].qs[c] = (int8_t)(c - 16);
  blk[1].d = 0xbc00; /* -1 */
  for (int c = 0; c < 32; c++) blk[1].qs[c] = (int8_t)(c % 2 ? -128 : 127);
  float out[64];
  cr_assert_eq(txattn_convert(blk, TXATTN_DTYPE_Q8_0, out, TXATTN_DTYPE_F32, 64, 1.0f), TXATTN_OK,
               "%s", txattn_last_error());
  for (int c = 0; c < 32; c++) cr_assert_eq(out[c], (float)(c - 16) * 0.5f, "value %d", c);
  for (int c = 0; c < 32; c++) cr_assert_eq(out[32 + c], c % 2 ? 128.0f : -127.0f, "value %d", c);
  cr_assert_eq(txattn_dtype_bytes(TXATTN_DTYPE_Q8_0, 64), 68);
  cr_assert_eq(txattn_dtype_block(TXATTN_DTYPE_Q8_0), 32);

  float x[32];
  for (int c = 0; c < 32; c++) x[c] = (float)c - 15.5f; /* halves: away from zero */
  x[0] = 127.0f;
  x[1] = 62.5f;
  x[2] = -62.5f;
  txattn_block_q8_0 q;
  cr_assert_eq(txattn_convert(x, TXATTN_DTYPE_F32, &q, TXATTN_DTYPE_Q8_0, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(q.d, 0x3c00, "d = 127 / 127 = 1: 0x%04x", q.d);
  cr_assert_eq(q.qs[0], 127);
  cr_assert_eq(q.qs[1], 63, "roundf(62.5) is 63, not the even 62");
  cr_assert_eq(q.qs[2], -63);
  for (int c = 3; c < 32; c++)
    cr_assert_eq(q.qs[c], (int8_t)roundf(x[c]), "value %d: %d", c, q.qs[c]);
  /* quantising what q8_0 holds gives the same block back, from f32 and from f16 alike */
  float deq[32];
  uint16_t h[32];
  txattn_block_q8_0 q2, q3;
  cr_assert_eq(txattn_convert(&q, TXATTN_DTYPE_Q8_0, deq, TXATTN_DTYPE_F32, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(txattn_convert(deq, TXATTN_DTYPE_F32, &q2, TXATTN_DTYPE_Q8_0, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(memcmp(&q, &q2, sizeof q), 0);
  cr_assert_eq(txattn_convert(deq, TXATTN_DTYPE_F32, h, TXATTN_DTYPE_F16, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(txattn_convert(h, TXATTN_DTYPE_F16, &q3, TXATTN_DTYPE_Q8_0, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(memcmp(&q, &q3, sizeof q), 0);
  /* an all-zero block: d 0, q 0 */
  memset(x, 0, sizeof x);
  cr_assert_eq(txattn_convert(x, TXATTN_DTYPE_F32, &q, TXATTN_DTYPE_Q8_0, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(q.d, 0);
}

/* q4_0 as ggml reads and writes it: value c < 16 the low nibble of qs[c], value c >= 16 the high
   nibble of qs[c - 16], minus 8, times d. ggml's quantize_row_q4_0 takes d = m / -8 for m the
   first value of the largest magnitude (so m itself is q 0, -8 d) and q = min(15, (int)(x / d +
   8.5)), which truncates toward zero. */
Test(kv8, q4_0_is_ggml) {
  txattn_block_q4_0 blk;
  cr_assert_eq(sizeof blk, 18);
  cr_assert_eq(txattn_dtype_bytes(TXATTN_DTYPE_Q4_0, 64), 36);
  cr_assert_eq(txattn_dtype_block(TXATTN_DTYPE_Q4_0), 32);
  cr_assert_str_eq(txattn_dtype_name(TXATTN_DTYPE_Q4_0), "q4_0");
  blk.d = 0x3800; /* 0.5 */
  for (int c = 0; c < 16; c++) blk.qs[c] = (uint8_t)(c | (15 - c) << 4);
  float out[32];
  cr_assert_eq(txattn_convert(&blk, TXATTN_DTYPE_Q4_0, out, TXATTN_DTYPE_F32, 32, 1.0f), TXATTN_OK,
               "%s", txattn_last_error());
  for (int c = 0; c < 16; c++) {
    cr_assert_eq(out[c], (float)(c - 8) * 0.5f, "value %d: %g", c, (double)out[c]);
    cr_assert_eq(out[16 + c], (float)(7 - c) * 0.5f, "value %d: %g", 16 + c, (double)out[16 + c]);
  }

  float x[32];
  for (int c = 0; c < 32; c++) x[c] = (float)(c % 16) - 7.0f; /* -7 .. 8 */
  x[3] = -16.0f; /* the largest magnitude: d = -16 / -8 = 2, and it gets q 0 */
  x[20] = 16.0f; /* as large, later: q = min(15, (int)(8 + 8.5)) = 15 */
  txattn_block_q4_0 q;
  cr_assert_eq(txattn_convert(x, TXATTN_DTYPE_F32, &q, TXATTN_DTYPE_Q4_0, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(q.d, 0x4000, "d = 2: 0x%04x", q.d);
  for (int c = 0; c < 32; c++) {
    const int want = c == 3 ? 0 : c == 20 ? 15 : (int)(x[c] / 2.0f + 8.5f);
    const int got = c < 16 ? q.qs[c] & 0x0f : q.qs[c - 16] >> 4;
    cr_assert_eq(got, want, "value %d (%g): q %d, not %d", c, (double)x[c], got, want);
  }
  /* quantising what q4_0 holds gives the same block back */
  float deq[32];
  txattn_block_q4_0 q2;
  cr_assert_eq(txattn_convert(&q, TXATTN_DTYPE_Q4_0, deq, TXATTN_DTYPE_F32, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(txattn_convert(deq, TXATTN_DTYPE_F32, &q2, TXATTN_DTYPE_Q4_0, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(memcmp(&q, &q2, sizeof q), 0);
  /* an all-zero block: d -0 (0 / -8, as ggml stores it), every q 8 (the value 0) */
  memset(x, 0, sizeof x);
  cr_assert_eq(txattn_convert(x, TXATTN_DTYPE_F32, &q, TXATTN_DTYPE_Q4_0, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(q.d, 0x8000, "d 0x%04x", q.d);
  for (int c = 0; c < 16; c++) cr_assert_eq(q.qs[c], 0x88);
  /* values so small that 1 / d overflows: the block holds zeros (d rounds to f16 0), q8_0's too */
  for (int c = 0; c < 32; c++) x[c] = c % 2 ? 1e-40f : -3e-41f;
  txattn_block_q8_0 q8;
  cr_assert_eq(txattn_convert(x, TXATTN_DTYPE_F32, &q, TXATTN_DTYPE_Q4_0, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(txattn_convert(x, TXATTN_DTYPE_F32, &q8, TXATTN_DTYPE_Q8_0, 32, 1.0f), TXATTN_OK);
  cr_assert_eq(q.d & 0x7fff, 0, "d 0x%04x", q.d);
  cr_assert_eq(q8.d & 0x7fff, 0, "d 0x%04x", q8.d);
  cr_assert_eq(txattn_convert(&q, TXATTN_DTYPE_Q4_0, deq, TXATTN_DTYPE_F32, 32, 1.0f), TXATTN_OK);
  for (int c = 0; c < 32; c++) cr_assert_eq(deq[c], 0.0f, "value %d: %g", c, (double)deq[c]);
  /* refused: n not whole blocks, another narrow type, a value q4_0 cannot hold */
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, &q, TXATTN_DTYPE_Q4_0, 20, 1.0f),
                 "not a multiple of 32");
  expect_invalid(txattn_convert(&q, TXATTN_DTYPE_Q4_0, &q2, TXATTN_DTYPE_Q8_0, 32, 1.0f),
                 "through f32");
  x[7] = INFINITY;
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, &q, TXATTN_DTYPE_Q4_0, 32, 1.0f), "value 7");
  x[7] = 1e6f;
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, &q, TXATTN_DTYPE_Q4_0, 32, 1.0f),
                 "overflows f16");
}

Test(kv8, conversions_refuse) {
  float x[64] = {0}, y[64];
  uint8_t b[64] = {0};
  txattn_block_q8_0 q[2];
  memset(q, 0x5a, sizeof q);
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, q, TXATTN_DTYPE_Q8_0, 40, 1.0f),
                 "n = 40 is not a multiple of 32");
  expect_invalid(txattn_convert(b, TXATTN_DTYPE_E4M3, q, TXATTN_DTYPE_Q8_0, 32, 1.0f),
                 "through f32");
  x[5] = NAN;
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, q, TXATTN_DTYPE_Q8_0, 32, 1.0f), "value 5");
  x[5] = 0.0f;
  x[40] = 1e10f;
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, q, TXATTN_DTYPE_Q8_0, 64, 1.0f),
                 "overflows f16");
  txattn_block_q8_0 untouched[2];
  memset(untouched, 0x5a, sizeof untouched);
  cr_assert_eq(memcmp(q, untouched, sizeof q), 0, "a refused conversion wrote its dst");
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, y, TXATTN_DTYPE_F16, 4, 2.0f), "must be 1");
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, b, TXATTN_DTYPE_E4M3, 4, 0.0f), "scale = 0");
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, b, TXATTN_DTYPE_E4M3, 4, NAN), "scale = nan");
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, b, TXATTN_DTYPE_E5M2, 4, 1e38f), "scale");
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, x + 2, TXATTN_DTYPE_F32, 4, 1.0f), "overlap");
  expect_invalid(
      txattn_convert((const char *)x + 1, TXATTN_DTYPE_F32, y, TXATTN_DTYPE_F32, 4, 1.0f),
      "aligned");
  expect_invalid(txattn_convert(x, (txattn_dtype)9, y, TXATTN_DTYPE_F32, 4, 1.0f), "src_type = 9");
  expect_invalid(txattn_convert(NULL, TXATTN_DTYPE_F32, y, TXATTN_DTYPE_F32, 4, 1.0f),
                 "src is NULL");
  expect_invalid(txattn_convert(x, TXATTN_DTYPE_F32, y, TXATTN_DTYPE_F32, -1, 1.0f), "n = -1");
  float s;
  x[3] = INFINITY;
  expect_invalid(txattn_convert_scale(x, TXATTN_DTYPE_F32, 4, TXATTN_DTYPE_E4M3, &s), "value 3");
  expect_invalid(txattn_convert_scale(x, TXATTN_DTYPE_F32, 4, TXATTN_DTYPE_Q8_0, &s), "not e4m3");
}

/* ---- attention on 8-bit caches ---- */

#define MAXB 3
#define MAXH 8

struct kcase {
  /* given */
  txattn_dtype kt, vt, qt;
  int64_t batch, hq, hk, nq, nkv, d, P; /* P > 0: paged, pages shuffled */
  int ragged, pow2_scales;
  float amp;
  txattn_problem base; /* mask, modifiers, lse, mask_tensor */
  /* made */
  int64_t kv_lens[MAXB], outer, rows, n_pages;
  void *q, *k8, *v8, *o, *oref;
  float *kf, *vf, *lse, *lse_ref;
  unsigned char *mask;
  int32_t *table;
  float ks[MAXH], vs[MAXH], slopes[MAXH * 2], sinks[MAXH * 2];
  txattn_problem p, pf;
  txattn_tensors t, tf;
};

/* K or V: f32 values in the storage layout [outer][hk][rows][d], stored in `type` per (outer, head)
   run (its head's scale), and dequantised back into f (what the 8-bit cache holds, in f32). */
static void *make_cache(struct kcase *c, txattn_dtype type, const float *scales, float *f,
                        uint64_t *st) {
  const int64_t run = c->rows * c->d, n = c->outer * c->hk * run;
  float *x = malloc((size_t)n * sizeof *x);
  unsigned char *out = malloc((size_t)txattn_dtype_bytes(type, n) + 1);
  for (int64_t i = 0; i < n; i++) x[i] = uniform(st, c->amp);
  for (int64_t r = 0; r < c->outer * c->hk; r++) {
    const int fp8 = type == TXATTN_DTYPE_E4M3 || type == TXATTN_DTYPE_E5M2;
    const float s = fp8 ? scales[r % c->hk] : 1.0f;
    void *dst = out + txattn_dtype_bytes(type, r * run);
    cr_assert_eq(txattn_convert(x + r * run, TXATTN_DTYPE_F32, dst, type, run, s), TXATTN_OK, "%s",
                 txattn_last_error());
    cr_assert_eq(txattn_convert(dst, type, f + r * run, TXATTN_DTYPE_F32, run, s), TXATTN_OK);
  }
  free(x);
  return out;
}

static void kcase_make(struct kcase *c, uint64_t seed) {
  uint64_t st = seed;
  if (c->amp == 0.0f) c->amp = 1.0f;
  for (int64_t b = 0; b < c->batch; b++)
    c->kv_lens[b] = c->ragged ? 1 + (int64_t)(next_random(&st) % (uint64_t)c->nkv) : c->nkv;
  for (int64_t h = 0; h < c->hk; h++) { /* per-head scales, powers of two or not */
    c->ks[h] = c->pow2_scales ? ldexpf(1.0f, -(int)h - 4) : 0.0037f * (float)(h + 1);
    c->vs[h] = c->pow2_scales ? ldexpf(1.0f, (int)h - 3) : 0.0029f * (float)(h + 2);
  }
  for (int64_t h = 0; h < c->hq; h++) {
    c->slopes[h] = 0.05f * (float)(h + 1);
    c->sinks[h] = h % 2 ? -INFINITY : uniform(&st, 1.0f);
  }
  const int64_t max_pages = c->P ? (c->nkv + c->P - 1) / c->P : 0;
  c->outer = c->P ? c->batch * max_pages + 1 : c->batch;
  c->rows = c->P ? c->P : c->nkv;
  c->n_pages = c->P ? c->outer : 0;
  const int64_t kvn = c->outer * c->hk * c->rows * c->d, qn = c->batch * c->hq * c->nq * c->d;
  c->kf = malloc((size_t)kvn * sizeof(float));
  c->vf = malloc((size_t)kvn * sizeof(float));
  c->k8 = make_cache(c, c->kt, c->ks, c->kf, &st);
  c->v8 = make_cache(c, c->vt, c->vs, c->vf, &st);
  float *qf = malloc((size_t)qn * sizeof *qf);
  for (int64_t i = 0; i < qn; i++) qf[i] = uniform(&st, c->amp);
  c->q = malloc((size_t)qn * 4);
  cr_assert_eq(txattn_convert(qf, TXATTN_DTYPE_F32, c->q, c->qt, qn, 1.0f), TXATTN_OK);
  free(qf);
  c->o = malloc((size_t)qn * 4);
  c->oref = malloc((size_t)qn * 4);
  c->lse = malloc((size_t)(c->batch * c->hq * c->nq) * sizeof(float));
  c->lse_ref = malloc((size_t)(c->batch * c->hq * c->nq) * sizeof(float));
  c->table = NULL;
  if (c->P) { /* every page a sequence needs, in shuffled order, one spare page never named */
    c->table = malloc((size_t)(c->batch * max_pages) * sizeof *c->table);
    int64_t n = c->batch * max_pages;
    for (int64_t i = 0; i < n; i++) c->table[i] = (int32_t)i;
    for (int64_t i = n - 1; i > 0; i--) {
      int64_t j = (int64_t)(next_random(&st) % (uint64_t)(i + 1));
      int32_t x = c->table[i];
      c->table[i] = c->table[j];
      c->table[j] = x;
    }
  }
  c->mask = NULL;
  if (c->base.mask_tensor == TXATTN_MASK_TENSOR_BOOL) {
    const int64_t n = c->batch * c->hq * c->nq * c->nkv;
    c->mask = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++) c->mask[i] = next_random(&st) % 4 != 0;
  }
  txattn_problem p = c->base;
  p.struct_size = sizeof p;
  p.batch = c->batch;
  p.heads_q = c->hq;
  p.heads_kv = c->hk;
  p.n_q = c->nq;
  p.n_kv = c->nkv;
  p.d_qk = c->d;
  p.q_type = c->qt;
  p.o_type = c->qt;
  p.ragged = c->ragged;
  p.page_size = c->P;
  p.max_pages = max_pages;
  p.n_pages = c->n_pages;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q_data = c->q;
  t.o_data = c->o;
  t.lse = p.lse ? c->lse : NULL;
  t.kv_lens = c->ragged ? c->kv_lens : NULL;
  t.alibi_slopes = p.alibi ? c->slopes : NULL;
  t.sinks = p.sinks ? c->sinks : NULL;
  t.mask = c->mask;
  if (c->mask)
    t.mask_layout = (txattn_mask_layout){c->hq * c->nq * c->nkv, c->nq * c->nkv, c->nkv, 1};
  t.block_table = c->table;
  c->pf = p;
  c->tf = t;
  c->tf.k = c->kf;
  c->tf.v = c->vf;
  p.k_type = c->kt;
  p.v_type = c->vt;
  t.k_data = c->k8;
  t.v_data = c->v8;
  t.k_scale = c->kt == TXATTN_DTYPE_E4M3 || c->kt == TXATTN_DTYPE_E5M2 ? c->ks : NULL;
  t.v_scale = c->vt == TXATTN_DTYPE_E4M3 || c->vt == TXATTN_DTYPE_E5M2 ? c->vs : NULL;
  c->p = p;
  c->t = t;
}

static void kcase_free(struct kcase *c) {
  void *all[] = {c->q,  c->k8,  c->v8,      c->o,    c->oref, c->kf,
                 c->vf, c->lse, c->lse_ref, c->mask, c->table};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

static double out_value(const void *o, txattn_dtype t, int64_t i) {
  float f;
  cr_assert_eq(
      txattn_convert((const char *)o + txattn_dtype_bytes(t, i), t, &f, TXATTN_DTYPE_F32, 1, 1.0f),
      TXATTN_OK);
  return (double)f;
}

/* The rows a call writes: every row of a plain batch, q_lens rows (all here) of a ragged one. */
static void expect_within(const struct kcase *c, const char *who, const char *desc) {
  double bound, la, lr;
  cr_assert_eq(txattn_error_bound(&c->p, &c->t, &bound), TXATTN_OK, "%s", txattn_last_error());
  const int64_t n = c->batch * c->hq * c->nq * c->d;
  for (int64_t i = 0; i < n; i++) {
    double a = out_value(c->o, c->qt, i), r = out_value(c->oref, c->qt, i);
    if (isnan(r)) {
      cr_assert(isnan(a), "%s, %s: o[%ld] = %a, the reference's is NaN", who, desc, (long)i, a);
      continue;
    }
    cr_assert(fabs(a - r) <= bound, "%s, %s: |o[%ld] - o_ref| = %a > bound %a", who, desc, (long)i,
              fabs(a - r), bound);
  }
  if (!c->p.lse) return;
  cr_assert_eq(txattn_lse_error_bound(&c->p, &c->t, &la, &lr), TXATTN_OK);
  for (int64_t i = 0; i < c->batch * c->hq * c->nq; i++) {
    double a = c->lse[i], r = c->lse_ref[i];
    if (isinf(r) || isnan(r)) {
      cr_assert(a == r || (isnan(a) && isnan(r)), "%s, %s: lse[%ld] %a, want %a", who, desc,
                (long)i, a, r);
      continue;
    }
    cr_assert(fabs(a - r) <= la + lr * fabs(r), "%s, %s: lse[%ld] off by %a > %a", who, desc,
              (long)i, fabs(a - r), la + lr * fabs(r));
  }
}

static void run_case(txattn_context *ctx, struct kcase *c, const char *desc) {
  const size_t ob = (size_t)txattn_dtype_bytes(c->qt, c->batch * c->hq * c->nq * c->d);
  /* the reference on the 8-bit cache, and on its f32 copy: the same values, so the same bits
     where the copy is exact (q8_0 always, fp8 with power-of-two scales) */
  txattn_tensors tr = c->t;
  tr.o_data = c->oref;
  tr.lse = c->p.lse ? c->lse_ref : NULL;
  cr_assert_eq(txattn_reference(&c->p, &tr), TXATTN_OK, "%s: %s", desc, txattn_last_error());
  const int exact = (txattn_dtype_block(c->kt) == 32 || c->pow2_scales) &&
                    (txattn_dtype_block(c->vt) == 32 || c->pow2_scales);
  if (exact) {
    txattn_tensors tf = c->tf;
    tf.o_data = c->o;
    tf.lse = c->p.lse ? c->lse : NULL;
    cr_assert_eq(txattn_reference(&c->pf, &tf), TXATTN_OK, "%s: %s", desc, txattn_last_error());
    cr_assert_eq(memcmp(c->o, c->oref, ob), 0, "%s: the reference differs on the f32 copy", desc);
  }
  /* naive.scalar, then the dispatcher */
  txattn_plan *plan = NULL;
  memset(c->o, 0xff, ob);
  cr_assert_eq(txattn_plan_create(ctx, &c->p, "naive.scalar", &plan), TXATTN_OK, "%s: %s", desc,
               txattn_last_error());
  cr_assert_eq(txattn_plan_execute(plan, &c->t), TXATTN_OK, "%s: %s", desc, txattn_last_error());
  txattn_plan_free(plan);
  expect_within(c, "naive.scalar", desc);
  memset(c->o, 0xff, ob);
  cr_assert_eq(txattn_attention(ctx, &c->p, &c->t), TXATTN_OK, "%s: %s", desc, txattn_last_error());
  expect_within(c, "the dispatcher", desc);
}

Test(kv8, battery_within_the_bound) {
  txattn_context *ctx = test_context(2);
  const txattn_dtype kv[][2] = {
      {TXATTN_DTYPE_Q8_0, TXATTN_DTYPE_Q8_0}, {TXATTN_DTYPE_E4M3, TXATTN_DTYPE_E4M3},
      {TXATTN_DTYPE_E5M2, TXATTN_DTYPE_E5M2}, {TXATTN_DTYPE_Q8_0, TXATTN_DTYPE_E4M3},
      {TXATTN_DTYPE_F16, TXATTN_DTYPE_E5M2},  {TXATTN_DTYPE_Q4_0, TXATTN_DTYPE_Q4_0},
      {TXATTN_DTYPE_Q4_0, TXATTN_DTYPE_F32}};
  struct kcase shapes[] = {
      /* GQA, causal decode-like rows */
      {.batch = 2,
       .hq = 4,
       .hk = 2,
       .nq = 3,
       .nkv = 37,
       .d = 64,
       .base = {.mask = TXATTN_MASK_CAUSAL}},
      /* ragged, window, softcap, lse */
      {.batch = 3,
       .hq = 2,
       .hk = 1,
       .nq = 4,
       .nkv = 50,
       .d = 32,
       .ragged = 1,
       .base = {.mask = TXATTN_MASK_WINDOW,
                .window_left = 9,
                .window_right = 2,
                .softcap = 5.0f,
                .lse = 1}},
      /* paged (16-key pages, shuffled), ragged, ALiBi and sinks, lse */
      {.batch = 2,
       .hq = 4,
       .hk = 4,
       .nq = 2,
       .nkv = 45,
       .d = 32,
       .P = 16,
       .ragged = 1,
       .base = {.alibi = 1, .sinks = 1, .lse = 1}},
      /* a boolean mask tensor and sink keys, paged with 5-key pages */
      {.batch = 1,
       .hq = 2,
       .hk = 2,
       .nq = 5,
       .nkv = 23,
       .d = 64,
       .P = 5,
       .base = {.mask = TXATTN_MASK_WINDOW,
                .window_left = 4,
                .window_right = 0,
                .sink_keys = 2,
                .mask_tensor = TXATTN_MASK_TENSOR_BOOL}},
      /* large logits: the bound grows with L */
      {.batch = 1, .hq = 2, .hk = 1, .nq = 4, .nkv = 33, .d = 96, .amp = 6.0f},
  };
  char desc[160];
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t k = 0; k < sizeof kv / sizeof kv[0]; k++)
      for (int pow2 = 0; pow2 < 2; pow2++) {
        struct kcase c = shapes[s];
        c.kt = kv[k][0];
        c.vt = kv[k][1];
        c.qt = (s + k) % 2 ? TXATTN_DTYPE_F16 : TXATTN_DTYPE_F32;
        c.pow2_scales = pow2;
        snprintf(desc, sizeof desc, "shape %zu, k %s, v %s, q/o %s, %s scales", s,
                 txattn_dtype_name(c.kt), txattn_dtype_name(c.vt), txattn_dtype_name(c.qt),
                 pow2 ? "power-of-two" : "other");
        kcase_make(&c, 1000 + s * 10 + k);
        run_case(ctx, &c, desc);
        kcase_free(&c);
      }
  txattn_context_free(ctx);
}

/* An fp8 value times a scale that is not a power of two rounds in fp32: the bound's extra terms
   are what covers it, and they are there. */
Test(kv8, fp8_bound_terms) {
  struct kcase c = {.batch = 1,
                    .hq = 1,
                    .hk = 1,
                    .nq = 1,
                    .nkv = 40,
                    .d = 32,
                    .kt = TXATTN_DTYPE_E4M3,
                    .vt = TXATTN_DTYPE_E4M3,
                    .qt = TXATTN_DTYPE_F32,
                    .amp = 8.0f,
                    .pow2_scales = 1};
  kcase_make(&c, 7);
  double b8;
  cr_assert_eq(txattn_error_bound(&c.p, &c.t, &b8), TXATTN_OK);
  double la8, lr8, la16, lr16;
  cr_assert_eq(txattn_lse_error_bound(&c.p, &c.t, &la8, &lr8), TXATTN_OK);
  /* the same bound computed by hand: max|V| (4 + sqrt(d)) 2^-24 L + 2^-24 max|V| (or the floor) */
  double maxv = 0.0, L = 0.0;
  for (int64_t j = 0; j < c.nkv; j++) {
    double dot = 0.0;
    for (int64_t x = 0; x < c.d; x++) {
      dot += fabs((double)((const float *)c.q)[x] *
                  ((double)txattn_e4m3_value(((const uint8_t *)c.k8)[j * c.d + x]) * c.ks[0]));
      double v = fabs((double)txattn_e4m3_value(((const uint8_t *)c.v8)[j * c.d + x]) * c.vs[0]);
      if (v > maxv) maxv = v;
    }
    if (dot > L) L = dot;
  }
  L *= (double)(float)(1.0 / sqrt(32.0)); /* the problem's default scale, in fp32 */
  const double rel = (4.0 + sqrt(32.0)) * 0x1p-24 * L;
  const double want =
      maxv * (rel > TXATTN_EXACT_TOLERANCE ? rel : TXATTN_EXACT_TOLERANCE) + 0x1p-24 * maxv;
  cr_assert(fabs(b8 - want) <= 1e-12 * want, "bound %a, by hand %a", b8, want);
  c.p.k_type = TXATTN_DTYPE_F32; /* the same values in f32 (exact: power-of-two scales) */
  c.t.k = c.kf;
  c.t.k_scale = NULL;
  cr_assert_eq(txattn_lse_error_bound(&c.p, &c.t, &la16, &lr16), TXATTN_OK);
  cr_assert(fabs(la8 - la16 - 0x1p-24 * L) <= 1e-9 * la8, "lse bound %a vs %a + u L %a", la8, la16,
            0x1p-24 * L);
  kcase_free(&c);
}

Test(kv8, every_refusal_names_the_field) {
  struct kcase c = {.batch = 1,
                    .hq = 2,
                    .hk = 1,
                    .nq = 2,
                    .nkv = 8,
                    .d = 32,
                    .kt = TXATTN_DTYPE_E4M3,
                    .vt = TXATTN_DTYPE_Q8_0,
                    .qt = TXATTN_DTYPE_F32};
  kcase_make(&c, 3);
  const size_t ob = (size_t)(c.batch * c.hq * c.nq * c.d) * 4;
  memset(c.o, 0x7b, ob);
  unsigned char *before = malloc(ob);
  memcpy(before, c.o, ob);
  txattn_problem p = c.p;
  txattn_tensors t = c.t;
  p.q_type = TXATTN_DTYPE_Q8_0;
  expect_invalid(txattn_reference(&p, &t), "txattn_problem.q_type = q8_0");
  p = c.p;
  p.o_type = TXATTN_DTYPE_E5M2;
  expect_invalid(txattn_reference(&p, &t), "txattn_problem.o_type = e5m2");
  p = c.p;
  p.mask_tensor = TXATTN_MASK_TENSOR_ADDITIVE;
  p.mask_type = TXATTN_DTYPE_E4M3;
  expect_invalid(txattn_reference(&p, &t), "txattn_problem.mask_type = 4");
  p = c.p;
  p.d_v = 48;
  expect_invalid(txattn_reference(&p, &t), "txattn_problem.d_v = 48 is not a multiple of 32");
  p = c.p;
  p.k_type = TXATTN_DTYPE_Q8_0;
  p.d_qk = 40;
  p.d_v = 32;
  expect_invalid(txattn_reference(&p, &t), "txattn_problem.d_qk = 40");
  p = c.p;
  t.v_layout = (txattn_layout){8 * 32, 8 * 32, 48};
  expect_invalid(txattn_reference(&p, &t), "txattn_tensors.v_layout.row = 48");
  t = c.t;
  t.k_scale = NULL;
  expect_invalid(txattn_reference(&p, &t), "txattn_tensors.k_scale is NULL");
  const float bad[] = {0.0f, -1.0f, NAN, INFINITY, 1e37f, 0x1p-120f};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    t.k_scale = &bad[i];
    expect_invalid(txattn_reference(&p, &t), "txattn_tensors.k_scale[0]");
  }
  t = c.t;
  t.v_scale = c.vs; /* v is q8_0: its blocks carry their scales */
  expect_invalid(txattn_reference(&p, &t), "txattn_tensors.v_scale is set");
  t = c.t;
  t.struct_size = TXATTN_TENSORS_SIZE_0_2_PAGED; /* stops before the scales */
  expect_invalid(txattn_reference(&p, &t), "struct_size stops before k_scale");
  t = c.t;
  t.v_data = (const char *)c.v8 + 1;
  expect_invalid(txattn_reference(&p, &t), "txattn_tensors.v");
  /* every entry point refuses alike, before any kernel runs */
  txattn_context *ctx = test_context(1);
  t = c.t;
  t.k_scale = NULL;
  expect_invalid(txattn_attention(ctx, &p, &t), "txattn_tensors.k_scale is NULL");
  double bound;
  expect_invalid(txattn_error_bound(&p, &t, &bound), "txattn_tensors.k_scale is NULL");
  txattn_plan *plan = NULL;
  p.q_type = TXATTN_DTYPE_E4M3;
  expect_invalid(txattn_plan_create(ctx, &p, NULL, &plan), "txattn_problem.q_type = e4m3");
  cr_assert_eq(memcmp(c.o, before, ob), 0, "a refused call wrote o");
  txattn_context_free(ctx);
  free(before);
  kcase_free(&c);
}

/* The host hands an 8-bit k or v only to kernels that declare it: every other kernel declines
   with the host's reason, and the dispatcher's choice declares it. */
Test(kv8, only_kernels_that_declare_8_bit_get_it) {
  txattn_context *ctx = test_context(1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  const txattn_dtype types[] = {TXATTN_DTYPE_Q8_0, TXATTN_DTYPE_E4M3, TXATTN_DTYPE_E5M2,
                                TXATTN_DTYPE_Q4_0};
  const unsigned narrow = TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4;
  int naive_takes = 0;
  for (size_t ti = 0; ti < 4; ti++) {
    txattn_problem p = {.n_q = 1,
                        .n_kv = 64,
                        .d_qk = 64,
                        .heads_q = 8,
                        .heads_kv = 2,
                        .k_type = types[ti],
                        .v_type = types[ti]};
    for (size_t i = 0; i < l.n; i++) {
      if (!l.k[i].usable) continue;
      txattn_plan *plan = NULL;
      txattn_status s = txattn_plan_create(ctx, &p, l.k[i].name, &plan);
      const int takes = (l.k[i].dtypes[1] & TXATTN_DTYPE_BIT(types[ti])) != 0;
      if (!takes) {
        cr_assert_eq(s, TXATTN_E_UNSUPPORTED, "%s was given %s k", l.k[i].name,
                     txattn_dtype_name(types[ti]));
        cr_assert(strstr(txattn_last_error(), "does not take") != NULL, "%s", txattn_last_error());
      }
      cr_assert_eq(l.k[i].dtypes[0] & narrow, 0, "%s declares 8-bit or 4-bit q", l.k[i].name);
      cr_assert_eq(l.k[i].dtypes[3] & narrow, 0, "%s declares 8-bit or 4-bit o", l.k[i].name);
      if (strcmp(l.k[i].name, "naive.scalar") == 0) naive_takes += takes;
      txattn_plan_free(plan);
    }
    txattn_plan *plan = NULL;
    cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
    const txattn_kernel_info *k = test_kernel_find(&l, txattn_plan_kernel(plan));
    cr_assert(k != NULL && (k->dtypes[1] & k->dtypes[2] & TXATTN_DTYPE_BIT(types[ti])),
              "the dispatcher chose %s for %s k/v", txattn_plan_kernel(plan),
              txattn_dtype_name(types[ti]));
    txattn_plan_free(plan);
  }
  cr_assert_eq(naive_takes, 4, "naive.scalar takes every 8-bit and 4-bit type");
  txattn_context_free(ctx);
}
