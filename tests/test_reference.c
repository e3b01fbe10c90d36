/* SPDX-License-Identifier: MIT */
/* txattn_reference, the oracle every kernel is judged by, on cases a person can check by hand, and
 * against the test's own double-precision oracle and layouts. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "attn_case.h"
#include "case_check.h"
#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(reference, .init = test_env_clean, .fini = test_check_leaks, .timeout = 60);

static void reference(const txattn_problem *p, const float *q, const float *k, const float *v,
                      float *o) {
  txattn_tensors t = {.q = q, .k = k, .v = v, .o = o};
  txattn_status s = txattn_reference(p, &t);
  cr_assert_eq(s, TXATTN_OK, "txattn_reference: %s: %s", txattn_status_name(s),
               txattn_last_error());
}

/* The tolerance of txattn.h, for results that are small sums of the given V values. */
static void expect_near(float got, double want, double max_abs_v, const char *what) {
  double tol = TXATTN_EXACT_TOLERANCE * max_abs_v;
  cr_expect(fabs((double)got - want) <= tol, "%s: got %.9g, want %.9g", what, (double)got, want);
}

static void expect_zero_bits(const float *x, int n, const char *what) {
  for (int c = 0; c < n; c++) {
    uint32_t bits;
    memcpy(&bits, &x[c], sizeof bits);
    cr_expect_eq(bits, 0u, "%s[%d]: want exact +0.0, got %g (bits %08x)", what, c, (double)x[c],
                 bits);
  }
}

Test(reference, one_key_gives_its_value_row) {
  enum { NQ = 5, D = 3, DV = 4 };
  float q[NQ * D], k[D] = {0.3f, -1.5f, 2.0f}, v[DV] = {1.5f, -2.25f, 7.0f, 0.125f}, o[NQ * DV];
  for (int x = 0; x < NQ * D; x++) q[x] = (float)(x % 7) - 3.0f;
  txattn_problem p = {.n_q = NQ, .n_kv = 1, .d_qk = D, .d_v = DV};
  reference(&p, q, k, v, o);
  for (int i = 0; i < NQ; i++)
    for (int c = 0; c < DV; c++) expect_near(o[i * DV + c], v[c], 7.0, "O = V");
}

Test(reference, equal_scores_average_the_visible_values) {
  enum { N = 6, D = 2, DV = 2 };
  float q[N * D] = {0}, k[N * D], v[N * DV], o[N * DV];
  for (int x = 0; x < N * D; x++) k[x] = (float)x * 0.37f - 1.0f;
  for (int x = 0; x < N * DV; x++) v[x] = (float)(x * x % 11) - 4.0f;
  /* q = 0 gives every key the score 0, so each row is the plain mean of the rows it sees */
  struct {
    txattn_mask mask;
    int64_t left, right;
  } masks[] = {{TXATTN_MASK_NONE, 0, 0}, {TXATTN_MASK_CAUSAL, 0, 0}, {TXATTN_MASK_WINDOW, 1, 2}};
  for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
    txattn_problem p = {.n_q = N,
                        .d_qk = D,
                        .mask = masks[m].mask,
                        .window_left = masks[m].left,
                        .window_right = masks[m].right};
    reference(&p, q, k, v, o);
    for (int i = 0; i < N; i++) {
      int lo = masks[m].mask == TXATTN_MASK_WINDOW ? (i - 1 < 0 ? 0 : i - 1) : 0;
      int hi = masks[m].mask == TXATTN_MASK_NONE     ? N - 1
               : masks[m].mask == TXATTN_MASK_CAUSAL ? i
                                                     : (i + 2 > N - 1 ? N - 1 : i + 2);
      for (int c = 0; c < DV; c++) {
        double mean = 0.0;
        for (int j = lo; j <= hi; j++) mean += v[j * DV + c];
        mean /= hi - lo + 1;
        expect_near(o[i * DV + c], mean, 10.0, "mean of the visible rows");
      }
    }
  }
}

Test(reference, zero_window_picks_the_own_row) {
  enum { NKV = 5, D = 4, DV = 3 };
  float q[NKV * D], k[NKV * D], v[NKV * DV], o[NKV * DV];
  for (int x = 0; x < NKV * D; x++) q[x] = sinf((float)x), k[x] = cosf((float)x * 1.7f);
  for (int x = 0; x < NKV * DV; x++) v[x] = (float)x - 6.5f;
  for (int64_t n_q = NKV; n_q >= 1; n_q -= 2) { /* n_q < n_kv: row i sits at i + n_kv - n_q */
    txattn_problem p = {.n_q = n_q, .n_kv = NKV, .d_qk = D, .d_v = DV, .mask = TXATTN_MASK_WINDOW};
    reference(&p, q, k, v, o);
    for (int64_t i = 0; i < n_q; i++)
      for (int c = 0; c < DV; c++)
        expect_near(o[i * DV + c], v[(i + NKV - n_q) * DV + c], 8.5, "window (0, 0)");
  }
}

Test(reference, causal_rows_before_the_first_key_are_exact_zeros) {
  enum { NQ = 4, NKV = 2, D = 2, DV = 3 };
  float q[NQ * D] = {0}, k[NKV * D] = {1, 2, 3, 4}, v[NKV * DV] = {1, 2, 3, 5, 8, 13}, o[NQ * DV];
  for (int x = 0; x < NQ * DV; x++) o[x] = NAN; /* a row left unwritten would stay NaN */
  txattn_problem p = {.n_q = NQ, .n_kv = NKV, .d_qk = D, .d_v = DV, .mask = TXATTN_MASK_CAUSAL};
  reference(&p, q, k, v, o);
  /* positions -2, -1, 0, 1: the first two rows see no key */
  expect_zero_bits(&o[0], DV, "row 0");
  expect_zero_bits(&o[DV], DV, "row 1");
  for (int c = 0; c < DV; c++) {
    expect_near(o[2 * DV + c], v[c], 13.0, "row 2 sees key 0 only");
    expect_near(o[3 * DV + c], (v[c] + v[DV + c]) / 2.0, 13.0, "row 3 sees both keys equally");
  }
}

Test(reference, two_by_two_by_hand) {
  const float ln2 = (float)M_LN2;
  float q[4] = {1, 0, 0, 1}, k[4] = {ln2, 0, 0, ln2}, v[4] = {3, 0, 0, 6}, o[4];
  /* S = Q K^T = [[ln2, 0], [0, ln2]]: weights [2/3, 1/3] and [1/3, 2/3] */
  txattn_problem p = {.n_q = 2, .d_qk = 2, .scale = 1.0f};
  reference(&p, q, k, v, o);
  const double want[4] = {2, 2, 1, 4};
  for (int x = 0; x < 4; x++) expect_near(o[x], want[x], 6.0, "softmax(QK^T) V");
  /* causal: row 0 sees key 0 alone */
  p.mask = TXATTN_MASK_CAUSAL;
  reference(&p, q, k, v, o);
  const double want_causal[4] = {3, 0, 1, 4};
  for (int x = 0; x < 4; x++) expect_near(o[x], want_causal[x], 6.0, "causal");
}

Test(reference, default_scale_is_one_over_sqrt_d) {
  const float a = (float)(log(3.0) / 2.0);
  float q[4] = {1, 1, 1, 1}, k[8] = {0, 0, 0, 0, a, a, a, a}, v[2] = {4, 8}, o[1];
  /* with scale 1/sqrt(4) the scores are 0 and ln 3: weights 1/4 and 3/4 */
  txattn_problem p = {.n_q = 1, .n_kv = 2, .d_qk = 4, .d_v = 1};
  reference(&p, q, k, v, o);
  expect_near(o[0], 7.0, 8.0, "default scale");
}

Test(reference, query_heads_share_kv_heads_in_groups) {
  enum { B = 2, HQ = 4, D = 2, DV = 3 };
  float q[B * HQ * D], k[B * 2 * D], v[B * 2 * DV], o[B * HQ * DV];
  for (int x = 0; x < B * HQ * D; x++) q[x] = (float)x;
  for (int x = 0; x < B * 2 * D; x++) k[x] = -(float)x;
  for (int x = 0; x < B * 2 * DV; x++) v[x] = (float)(x + 1) * 1.25f;
  for (int64_t heads_kv = 1; heads_kv <= 2; heads_kv++) {
    /* one key per head: O[b][h] = V[b][h / (HQ / heads_kv)], so group 4/2 maps heads 0,1 -> 0 */
    txattn_problem p = {
        .batch = B, .heads_q = HQ, .heads_kv = heads_kv, .n_q = 1, .n_kv = 1, .d_qk = D, .d_v = DV};
    reference(&p, q, k, v, o);
    for (int b = 0; b < B; b++)
      for (int h = 0; h < HQ; h++)
        for (int c = 0; c < DV; c++)
          expect_near(o[(b * HQ + h) * DV + c], v[(b * heads_kv + h / (HQ / heads_kv)) * DV + c],
                      15.0, "GQA mapping");
  }
}

/* For a square problem pos(i) = i under any alignment, so the last rows of a square problem check
   the bottom-right alignment of n_q < n_kv without trusting the reference's handling of it. */
Test(reference, fewer_queries_are_the_last_rows_of_the_square_problem) {
  struct shape square = {.n_q = 33,
                         .n_kv = 33,
                         .d_qk = 8,
                         .d_v = 5,
                         .mask = TXATTN_MASK_WINDOW,
                         .left = 3,
                         .right = 2};
  for (int mask = TXATTN_MASK_CAUSAL; mask <= TXATTN_MASK_WINDOW; mask++) {
    struct attn_case full, part;
    square.mask = (txattn_mask)mask;
    case_init(&full, &square, 7);
    case_run_reference(&full);
    struct shape tail = square;
    tail.n_q = 5;
    case_init(&part, &tail, 7);
    memcpy(part.k_dense, full.k_dense, sizeof(float) * 33 * 8);
    memcpy(part.v_dense, full.v_dense, sizeof(float) * 33 * 5);
    memcpy(part.q_dense, full.q_dense + 28 * 8, sizeof(float) * 5 * 8);
    case_run_reference(&part);
    for (int x = 0; x < 5 * 5; x++)
      expect_near(part.o_ref[x], full.o_ref[28 * 5 + x], 1.0, "n_q = 5 of n_kv = 33");
    case_free(&full);
    case_free(&part);
  }
}

/* The reference against the test oracle, including the contract's zero and NaN rows, and its own
   handling of strided layouts against its contiguous result. */
ParameterizedTestParameters(reference, agrees_with_oracle_and_layouts) {
  static struct shape shapes[] = {
      {.batch = 2,
       .heads_q = 4,
       .heads_kv = 2,
       .n_q = 17,
       .n_kv = 17,
       .d_qk = 16,
       .d_v = 3,
       .mask = TXATTN_MASK_CAUSAL,
       .layout = LAYOUT_INTERLEAVED},
      {.batch = 1,
       .heads_q = 4,
       .heads_kv = 1,
       .n_q = 7,
       .n_kv = 33,
       .d_qk = 5,
       .d_v = 9,
       .mask = TXATTN_MASK_WINDOW,
       .left = 4,
       .right = TXATTN_UNBOUNDED,
       .layout = LAYOUT_PADDED},
      {.batch = 2,
       .heads_q = 2,
       .heads_kv = 2,
       .n_q = 40,
       .n_kv = 9,
       .d_qk = 3,
       .d_v = 3,
       .mask = TXATTN_MASK_CAUSAL,
       .layout = LAYOUT_MIXED},
      {.batch = 2,
       .heads_q = 2,
       .heads_kv = 1,
       .n_q = 20,
       .n_kv = 20,
       .d_qk = 8,
       .d_v = 8,
       .mask = TXATTN_MASK_WINDOW,
       .left = 0,
       .right = 3,
       .layout = LAYOUT_SEQ_MAJOR},
      {.batch = 1,
       .heads_q = 1,
       .heads_kv = 1,
       .n_q = 12,
       .n_kv = 12,
       .d_qk = 4,
       .d_v = 4,
       .mask = TXATTN_MASK_NONE,
       .scale = -0.75f,
       .amplitude = 100.0f},
      {.batch = 2,
       .heads_q = 4,
       .heads_kv = 2,
       .n_q = 9,
       .n_kv = 9,
       .d_qk = 6,
       .d_v = 6,
       .mask = TXATTN_MASK_CAUSAL,
       .poison = POISON_K},
      {.batch = 2,
       .heads_q = 2,
       .heads_kv = 1,
       .n_q = 9,
       .n_kv = 13,
       .d_qk = 6,
       .d_v = 4,
       .mask = TXATTN_MASK_WINDOW,
       .left = 2,
       .right = 2,
       .poison = POISON_V},
      {.batch = 1,
       .heads_q = 2,
       .heads_kv = 2,
       .n_q = 8,
       .n_kv = 8,
       .d_qk = 3,
       .d_v = 3,
       .mask = TXATTN_MASK_NONE,
       .poison = POISON_Q},
      {.batch = 1,
       .heads_q = 1,
       .heads_kv = 1,
       .n_q = 10,
       .n_kv = 4,
       .d_qk = 3,
       .d_v = 2,
       .mask = TXATTN_MASK_CAUSAL,
       .poison = POISON_Q_EMPTY_ROW},
  };
  return cr_make_param_array(struct shape, shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(struct shape *s, reference, agrees_with_oracle_and_layouts) {
  char desc[256], msg[512];
  double err;
  struct attn_case c;
  shape_describe(s, desc, sizeof desc);
  case_init(&c, s, 11);
  case_run_reference(&c);
  cr_assert(case_check_reference(&c, msg, sizeof msg), "%s: %s", desc, msg);
  txattn_tensors t = case_tensors(&c);
  txattn_status st = txattn_reference(&c.problem, &t);
  cr_assert_eq(st, TXATTN_OK, "%s: strided txattn_reference: %s", desc, txattn_last_error());
  cr_assert(case_check_output(&c, &err, msg, sizeof msg), "%s: strided reference: %s", desc, msg);
  case_free(&c);
}

/* ---- txattn_error_bound: the formula of txattn.h on inputs whose L is worked out by hand ---- */

TestSuite(error_bound, .init = test_env_clean, .fini = test_check_leaks, .timeout = 60);

static double bound_of(const txattn_problem *p, const float *q, const float *k, const float *v,
                       float *o) {
  txattn_tensors t = {.q = q, .k = k, .v = v, .o = o};
  double b = -1.0;
  txattn_status s = txattn_error_bound(p, &t, &b);
  cr_assert_eq(s, TXATTN_OK, "txattn_error_bound: %s: %s", txattn_status_name(s),
               txattn_last_error());
  return b;
}

static double formula(double max_v, int64_t d_qk, double l) {
  double rel = (3.0 + sqrt((double)d_qk)) * 0x1p-24 * l;
  return max_v * (rel > TXATTN_EXACT_TOLERANCE ? rel : TXATTN_EXACT_TOLERANCE);
}

static void expect_bound(double got, double want, const char *what) {
  cr_expect(fabs(got - want) <= 1e-12 * want, "%s: bound %.17g, want %.17g", what, got, want);
}

Test(error_bound, l_counts_only_the_pairs_a_causal_mask_shows) {
  /* rows at positions 1 and 2 (n_q 2, n_kv 3): row 0 sees keys 0-1, row 1 keys 0-2 */
  float q[4] = {1000, -2000, 3, 4}, k[6] = {1000, 500, -7, 1, 2000, 2000};
  float v[6] = {1, -4, 2, 3, -0.5f, 0.25f}, o[4];
  txattn_problem p = {.n_q = 2, .n_kv = 3, .d_qk = 2, .mask = TXATTN_MASK_CAUSAL, .scale = 0.5f};
  /* visible sums of |q_c k_c|: 2e6, 9000 (row 0); 5000, 23, 14000 (row 1). Row 0 with key 2 would
     give 6e6, but it cannot see key 2. */
  expect_bound(bound_of(&p, q, k, v, o), formula(4.0, 2, 0.5 * 2e6), "causal");
  p.mask = TXATTN_MASK_NONE; /* now row 0 sees key 2 */
  expect_bound(bound_of(&p, q, k, v, o), formula(4.0, 2, 0.5 * 6e6), "no mask");
  p.scale = -0.5f; /* |scale| */
  expect_bound(bound_of(&p, q, k, v, o), formula(4.0, 2, 0.5 * 6e6), "negative scale");
}

Test(error_bound, a_window_hides_a_large_pair_and_its_value_row) {
  /* window (0, 0), n_q 2, n_kv 4: rows at positions 2 and 3 see only keys 2 and 3; key 0 has huge
     k and v, which count for nothing */
  float q[2 * 3] = {1, 2, 3, -1, 0.5f, 2}, o[2 * 2];
  float k[4 * 3] = {1e4f, 1e4f, 1e4f, 0, 0, 0, 1, 1, 1, 2, -2, 0.25f};
  float v[4 * 2] = {1e3f, -1e3f, 0, 0, 0.5f, -0.75f, 0.125f, 0.5f};
  txattn_problem p = {
      .n_q = 2, .n_kv = 4, .d_qk = 3, .d_v = 2, .mask = TXATTN_MASK_WINDOW, .scale = 1.0f};
  /* row 0 . key 2: 1 + 2 + 3 = 6; row 1 . key 3: 2 + 1 + 0.5 = 3.5: L = 6, far below the floor */
  expect_bound(bound_of(&p, q, k, v, o), TXATTN_EXACT_TOLERANCE * 0.75, "window (0, 0)");
  /* scale 1e6 makes L = 6e6: the second term takes over */
  p.scale = 1e6f;
  expect_bound(bound_of(&p, q, k, v, o), formula(0.75, 3, 6e6), "window (0, 0), scale 1e6");
}

Test(error_bound, query_heads_pair_with_their_kv_heads) {
  /* two query heads, one query and one key each; kv head 1 holds the large key */
  float q[2 * 2] = {1, 1, 300, 300}, k[2 * 2] = {1, -1, 200, 200}, v[2 * 1] = {1, 2}, o[2];
  txattn_problem p = {.heads_q = 2, .heads_kv = 2, .n_q = 1, .d_qk = 2, .d_v = 1, .scale = 1.0f};
  /* 2 kv heads: head 0 . kv 0 = 2, head 1 . kv 1 = 120000 */
  expect_bound(bound_of(&p, q, k, v, o), formula(2.0, 2, 120000), "GQA 2/2");
  /* 1 kv head: both query heads read kv head 0: 2 and 600; V row of kv head 0 only */
  p.heads_kv = 1;
  expect_bound(bound_of(&p, q, k, v, o), formula(1.0, 2, 600), "MQA 2/1");
}

Test(error_bound, nan_and_infinite_inputs_are_left_to_the_nan_rule) {
  float q[2 * 2] = {NAN, 1e4f, 1, 1}, k[2 * 2] = {1e4f, 1e4f, 1, INFINITY};
  float v[2 * 2] = {NAN, 3, -INFINITY, 0.5f}, o[4];
  txattn_problem p = {.n_q = 2, .d_qk = 2, .scale = 1.0f};
  /* row 0 reads a NaN and row 1 . key 1 is infinite: only row 1 . key 0 counts (2e4); max|V| over
     the finite values is 3 */
  double b = bound_of(&p, q, k, v, o);
  cr_expect(isfinite(b), "bound %g", b);
  expect_bound(b, formula(3.0, 2, 2e4), "NaN and Inf");
}

Test(error_bound, zero_values_give_a_zero_bound) {
  float q[2] = {1e6f, 1e6f}, k[2] = {1e6f, -1e6f}, v[2] = {0, 0}, o[2];
  txattn_problem p = {.n_q = 1, .d_qk = 2};
  cr_expect_eq(bound_of(&p, q, k, v, o), 0.0, "a zero V averages to exactly zero");
}

Test(error_bound, refuses_what_txattn_reference_refuses_and_leaves_the_bound_alone) {
  float q[4] = {1, 2, 3, 4}, k[4] = {1, 2, 3, 4}, v[4] = {1, 2, 3, 4}, o[4];
  txattn_problem good = {.n_q = 2, .d_qk = 2};
  txattn_tensors t = {.q = q, .k = k, .v = v, .o = o};
  double b = 12345.0;
  cr_expect_eq(txattn_error_bound(NULL, &t, &b), TXATTN_E_INVALID);
  cr_expect_eq(txattn_error_bound(&good, NULL, &b), TXATTN_E_INVALID);
  cr_expect_eq(txattn_error_bound(&good, &t, NULL), TXATTN_E_INVALID);
  txattn_problem bad = good;
  bad.d_qk = 0;
  cr_expect_eq(txattn_error_bound(&bad, &t, &b), TXATTN_E_INVALID);
  bad = good;
  bad.mask = (txattn_mask)7;
  cr_expect_eq(txattn_error_bound(&bad, &t, &b), TXATTN_E_INVALID);
  bad = good;
  bad.scale = NAN;
  cr_expect_eq(txattn_error_bound(&bad, &t, &b), TXATTN_E_INVALID);
  txattn_tensors overlap = t;
  overlap.o = (float *)q; /* o must not overlap q */
  cr_expect_eq(txattn_error_bound(&good, &overlap, &b), TXATTN_E_INVALID);
  txattn_tensors no_k = t;
  no_k.k = NULL;
  cr_expect_eq(txattn_error_bound(&good, &no_k, &b), TXATTN_E_INVALID);
  cr_expect_neq(txattn_last_error()[0], '\0', "no reason given");
  cr_expect_eq(b, 12345.0, "*bound was written on error: %g", b);
  /* and what txattn_reference accepts, it accepts */
  cr_expect_eq(txattn_error_bound(&good, &t, &b), TXATTN_OK, "%s", txattn_last_error());
  cr_expect_eq(b, TXATTN_EXACT_TOLERANCE * 4.0);
}

/* Inputs of magnitude about 1, q, k and v uniform in [-1, 1): the bound is exactly the plain
   tolerance at every head size up to 256 (L stays below 6, under the L = 168 / (3 + sqrt(d_qk)) at
   which the second term takes over), for every mask: the ordinary case is not a bit looser. */
Test(error_bound, is_the_plain_tolerance_for_inputs_of_magnitude_one) {
  static const int64_t dims[] = {1, 16, 64, 128, 256};
  for (size_t x = 0; x < sizeof dims / sizeof dims[0]; x++)
    for (int mask = TXATTN_MASK_NONE; mask <= TXATTN_MASK_WINDOW; mask++) {
      struct shape s = {
          .n_q = 96, .n_kv = 128, .d_qk = dims[x], .d_v = 32, .mask = (txattn_mask)mask, .left = 8};
      struct attn_case c;
      case_init(&c, &s, 5 + (uint64_t)x);
      double max_v = 0.0;
      for (size_t e = 0; e < (size_t)(128 * 32); e++)
        if (fabs((double)c.v_dense[e]) > max_v) max_v = fabs((double)c.v_dense[e]);
      if (mask == TXATTN_MASK_WINDOW) { /* keys 0..23 are visible to no row: recompute */
        max_v = 0.0;
        for (size_t e = 24 * 32; e < (size_t)(128 * 32); e++)
          if (fabs((double)c.v_dense[e]) > max_v) max_v = fabs((double)c.v_dense[e]);
      }
      cr_expect_eq(c.tolerance, TXATTN_EXACT_TOLERANCE * max_v,
                   "d %lld mask %d: bound %.9g, the plain tolerance %.9g (L = %g)",
                   (long long)dims[x], mask, c.tolerance, TXATTN_EXACT_TOLERANCE * max_v,
                   case_logit_scale(&c));
      case_free(&c);
    }
}
