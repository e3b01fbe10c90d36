/* SPDX-License-Identifier: MIT */
/* txattn__error_bounds (core/error_bound.h), the one pass over the visible pairs behind both public
 * bounds: the same values, bit for bit, as txattn_error_bound and txattn_lse_error_bound on
 * problems of every kind (element types, masks, GQA, ragged batches, NaN and infinite inputs),
 * with either output alone too; on an invalid problem it fails as they do and leaves its outputs
 * untouched. White-box: built with core/'s sources, since the symbol is hidden in libtxattn. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "error_bound.h"
#include "txattn/txattn.h"

static uint64_t state = 12345;
static double uniform(void) { /* in [0, 1) */
  state = state * 6364136223846793005u + 1442695040888963407u;
  return (double)(state >> 11) * 0x1p-53;
}
static int64_t below(int64_t n) {
  return (int64_t)(uniform() * (double)n);
}

/* 16-bit patterns of magnitude 2^-3 .. 2^1 (f16) or about 2^-31 .. 2^-16 (bf16, the same bits
   read as the high half of a float), either sign unless positive. */
static uint16_t half_bits(int positive) {
  return (uint16_t)(0x3000 + below(0x1000)) | (!positive && uniform() < 0.5 ? 0x8000 : 0);
}

static void fill(void *x, txattn_dtype t, size_t n, float mag, int positive) {
  for (size_t i = 0; i < n; i++)
    if (t == TXATTN_DTYPE_F32)
      ((float *)x)[i] = (float)(positive ? uniform() : 2 * uniform() - 1) * mag;
    else
      ((uint16_t *)x)[i] = half_bits(positive);
}

static const txattn_dtype types[3] = {TXATTN_DTYPE_F32, TXATTN_DTYPE_F16, TXATTN_DTYPE_BF16};

Test(error_bounds, one_pass_gives_the_public_calls_values_bit_for_bit) {
  int ragged_seen = 0, window_seen = 0, typed_seen = 0;
  for (int it = 0; it < 300; it++) {
    txattn_problem p = TXATTN_PROBLEM_INIT;
    p.batch = 1 + below(3);
    p.heads_kv = 1 + below(2);
    p.heads_q = p.heads_kv * (1 + below(2));
    p.n_q = 1 + below(24);
    p.n_kv = 1 + below(40);
    p.d_qk = 1 + below(70);
    p.d_v = 1 + below(20);
    p.mask = (txattn_mask)below(3);
    if (p.mask == TXATTN_MASK_WINDOW) p.window_left = below(10), p.window_right = below(5);
    p.scale = uniform() < 0.5 ? 0.0f : (float)(4 * uniform() - 2); /* 0: 1/sqrt(d_qk) */
    p.q_type = types[below(3)], p.k_type = types[below(3)];
    p.v_type = types[below(3)], p.o_type = types[below(3)];
    int64_t kv_lens[3];
    if (uniform() < 0.3) {
      p.ragged = 1;
      p.n_q = 1;
      for (int64_t b = 0; b < p.batch; b++) kv_lens[b] = below(p.n_kv + 1);
    }
    const size_t nq = (size_t)(p.batch * p.heads_q * p.n_q * p.d_qk),
                 nk = (size_t)(p.batch * p.heads_kv * p.n_kv * p.d_qk),
                 nv = (size_t)(p.batch * p.heads_kv * p.n_kv * p.d_v),
                 no = (size_t)(p.batch * p.heads_q * p.n_q * p.d_v);
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nv * 4), *o = malloc(no * 4);
    cr_assert(q && k && v && o, "out of memory");
    const float mag = (float)pow(10.0, 6 * uniform() - 3);
    fill(q, p.q_type, nq, mag, 0);
    fill(k, p.k_type, nk, mag, 0);
    fill(v, p.v_type, nv, mag, 1);
    if (p.k_type == TXATTN_DTYPE_F32 && uniform() < 0.15) k[below((int64_t)nk)] = NAN;
    if (p.v_type == TXATTN_DTYPE_F32 && uniform() < 0.15) v[below((int64_t)nv)] = INFINITY;
    txattn_tensors t = TXATTN_TENSORS_INIT;
    t.q_data = q, t.k_data = k, t.v_data = v, t.o_data = o;
    if (p.ragged) t.kv_lens = kv_lens;

    double bound, abs_bound, rel_bound, both_o, both_lse[2], only_o, only_lse[2];
    cr_assert_eq(txattn_error_bound(&p, &t, &bound), TXATTN_OK, "%d: %s", it, txattn_last_error());
    cr_assert_eq(txattn_lse_error_bound(&p, &t, &abs_bound, &rel_bound), TXATTN_OK, "%d: %s", it,
                 txattn_last_error());
    cr_assert_eq(txattn__error_bounds("test", &p, &t, &both_o, both_lse), TXATTN_OK, "%d: %s", it,
                 txattn_last_error());
    cr_assert_eq(txattn__error_bounds("test", &p, &t, &only_o, NULL), TXATTN_OK);
    cr_assert_eq(txattn__error_bounds("test", &p, &t, NULL, only_lse), TXATTN_OK);
    cr_expect(
        memcmp(&both_o, &bound, sizeof bound) == 0 && memcmp(&only_o, &bound, sizeof bound) == 0,
        "%d: O bound %a (both), %a (alone), txattn_error_bound %a", it, both_o, only_o, bound);
    cr_expect(memcmp(&both_lse[0], &abs_bound, sizeof abs_bound) == 0 &&
                  memcmp(&only_lse[0], &abs_bound, sizeof abs_bound) == 0 &&
                  memcmp(&both_lse[1], &rel_bound, sizeof rel_bound) == 0 &&
                  memcmp(&only_lse[1], &rel_bound, sizeof rel_bound) == 0,
              "%d: lse bound (%a, %a) (both), (%a, %a) (alone), txattn_lse_error_bound (%a, %a)",
              it, both_lse[0], both_lse[1], only_lse[0], only_lse[1], abs_bound, rel_bound);
    cr_expect(bound >= 0 && abs_bound > 0 && rel_bound > 0, "%d: bounds %g %g %g", it, bound,
              abs_bound, rel_bound);
    ragged_seen += p.ragged;
    window_seen += p.mask == TXATTN_MASK_WINDOW;
    typed_seen += p.k_type != TXATTN_DTYPE_F32 && p.o_type != TXATTN_DTYPE_F32;
    free(q), free(k), free(v), free(o);
  }
  cr_expect(ragged_seen > 20 && window_seen > 20 && typed_seen > 20,
            "the problems covered too little: %d ragged, %d windowed, %d 16-bit k and o",
            ragged_seen, window_seen, typed_seen);
}

Test(error_bounds, fails_as_the_public_calls_and_leaves_the_outputs) {
  float x[4] = {1, 2, 3, 4};
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.n_q = 1, p.n_kv = 1, p.d_qk = 4;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = x, t.k = x, t.v = NULL, t.o = x; /* no v */
  double b = 7, lse[2] = {8, 9};
  char public_message[256];
  cr_expect_eq(txattn_error_bound(&p, &t, &b), TXATTN_E_INVALID);
  snprintf(public_message, sizeof public_message, "%s", txattn_last_error());
  cr_expect_eq(txattn__error_bounds("txattn_error_bound", &p, &t, &b, lse), TXATTN_E_INVALID);
  cr_expect_str_eq(txattn_last_error(), public_message);
  cr_expect(b == 7 && lse[0] == 8 && lse[1] == 9, "outputs written on error: %g %g %g", b, lse[0],
            lse[1]);
}
