/* SPDX-License-Identifier: MIT */
/* 16-bit tensors through the banded kernels (banded.<isa>, banded_omp.<isa>: every ISA this CPU
 * has), the dense baseline masked.scalar and naive.scalar, on the shapes their code paths turn on:
 * narrow windows (symmetric and left-only, around the vector widths, a window of one key), causal
 * rows longer than the vector kernels' float chunk of 256 keys, GQA, strided and interleaved
 * layouts, large logits, rows that see no key, NaN rows, d_v != d_qk, tails of columns. Each output
 * is compared with txattn_reference on the same problem (o in the same type) within
 * txattn_error_bound; a NaN row of the reference must be NaN in every column, a row that sees no
 * key +0 in every column, and the bytes of o outside its rows (row, head and batch gaps, and past
 * the end) must be untouched. With problem.lse, lse (in the layout of the shape, gaps included) is
 * judged the same way against the reference's (within txattn_lse_error_bound: lse_tolerance.h),
 * and o must keep the bits it has without lse. banded_omp.<isa> on one thread gives banded.<isa>'s bits in o and lse (its
 * one_thread_same_as); its parallel path runs through its test build
 * (TXATTN_TEST_BOMP_TEAM_PLUGIN_DIR: a team for any work, chunks of BANDED_MR rows). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "lse_tolerance.h"
#include "oracle.h"
#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(banded_dtypes, .init = test_env_clean, .fini = test_check_leaks, .timeout = 300);

#define F32  TXATTN_DTYPE_F32
#define F16  TXATTN_DTYPE_F16
#define BF16 TXATTN_DTYPE_BF16

enum layout { CONTIGUOUS, PADDED, INTERLEAVED };

struct dshape {
  const char *name;
  int64_t batch, heads_q, heads_kv, n_q, n_kv, d_qk, d_v;
  txattn_mask mask;
  int64_t left, right;
  double amplitude; /* inputs uniform in [-amplitude, amplitude), rounded to their type */
  enum layout layout;
  int64_t nan_k, nan_v; /* a NaN in this key's K row / V row of batch 0, kv head 0; -1: none */
};

#define W TXATTN_MASK_WINDOW
static const struct dshape shapes[] = {
    {"sym window 3+3, GQA 4:2, padded, d 24", 1, 4, 2, 70, 0, 24, 0, W, 3, 3, 2, PADDED, -1, -1},
    {"left window 8+0, d 64", 1, 1, 1, 50, 0, 64, 0, W, 8, 0, 2, CONTIGUOUS, -1, -1},
    {"window 4+4 (9 keys), d 40", 2, 2, 1, 45, 0, 40, 0, W, 4, 4, 2, PADDED, -1, -1},
    {"window 7+8 (16 keys), d 16, d_v 40", 1, 2, 2, 61, 0, 16, 40, W, 7, 8, 2, INTERLEAVED, -1, -1},
    {"window 8+8 (17 keys), d 33", 1, 3, 1, 66, 0, 33, 0, W, 8, 8, 2, PADDED, -1, -1},
    {"left window 15+0 (16 keys), d 17, d_v 9", 1, 1, 1, 40, 0, 17, 9, W, 15, 0, 2, PADDED, -1, -1},
    {"window 0+0, d 16, d_v 33", 1, 2, 1, 23, 0, 16, 33, W, 0, 0, 2, PADDED, -1, -1},
    {"causal, GQA 4:1, d 32", 1, 4, 1, 40, 0, 32, 0, TXATTN_MASK_CAUSAL, 0, 0, 2, INTERLEAVED, -1,
     -1},
    {"causal rows of 593+ keys (float chunks), GQA 4:1", 1, 4, 1, 8, 600, 24, 20,
     TXATTN_MASK_CAUSAL, 0, 0, 1, PADDED, -1, -1},
    {"decode n_q 1, 700 keys, GQA 4:2", 2, 4, 2, 1, 700, 64, 0, TXATTN_MASK_NONE, 0, 0, 1, PADDED,
     -1, -1},
    {"large logits, window 6+6", 1, 2, 2, 48, 0, 32, 0, W, 6, 6, 12, PADDED, -1, -1},
    {"causal n_q 20 > n_kv 12: empty rows", 1, 2, 1, 20, 12, 16, 0, TXATTN_MASK_CAUSAL, 0, 0, 2,
     PADDED, -1, -1},
    {"left window 3+0, n_q 30 > n_kv 20: empty rows", 1, 1, 1, 30, 20, 24, 0, W, 3, 0, 2, PADDED,
     -1, -1},
    {"NaN in K at key 20 and V at key 41, window 4+4", 1, 2, 1, 60, 0, 24, 0, W, 4, 4, 2, PADDED,
     20, 41},
};
#undef W

struct combo {
  txattn_dtype q, k, v, o;
};
static const struct combo combos[] = {
    {F32, F16, F16, F32}, {F32, BF16, BF16, F32}, {BF16, BF16, BF16, BF16},
    {F16, F16, F16, F16}, {F32, BF16, BF16, F16},
};

/* ---- values of the three types (f16 through the compiler's _Float16) ---- */

static size_t esize(txattn_dtype t) {
  return t == F32 ? 4 : 2;
}

static double value_at(const unsigned char *base, txattn_dtype t, int64_t at) {
  if (t == F32) {
    float f;
    memcpy(&f, base + at * 4, 4);
    return f;
  }
  uint16_t b;
  memcpy(&b, base + at * 2, 2);
  if (t == F16) {
    _Float16 h;
    memcpy(&h, &b, 2);
    return (double)h;
  }
  uint32_t wide = (uint32_t)b << 16;
  float f;
  memcpy(&f, &wide, 4);
  return f;
}

static void put_value(unsigned char *base, txattn_dtype t, int64_t at, double x) {
  float f = (float)x;
  if (t == F32) {
    memcpy(base + at * 4, &f, 4);
  } else if (t == F16) {
    _Float16 h = (_Float16)x;
    memcpy(base + at * 2, &h, 2);
  } else { /* truncation of an fp32: an exact bf16 value */
    uint32_t wide;
    memcpy(&wide, &f, 4);
    uint16_t b = (uint16_t)(wide >> 16);
    memcpy(base + at * 2, &b, 2);
  }
}

static void put_nan(unsigned char *base, txattn_dtype t, int64_t at) {
  if (t == F32) {
    float f = NAN;
    memcpy(base + at * 4, &f, 4);
  } else {
    uint16_t b = t == F16 ? 0x7e00 : 0x7fc0;
    memcpy(base + at * 2, &b, 2);
  }
}

/* ---- tensors with gaps ---- */

struct dtensor {
  unsigned char *data;
  size_t bytes;
  txattn_dtype type;
  txattn_layout layout;
  int64_t batch, heads, rows, dim;
};

#define GAP_BYTE 0x5a /* o's gaps, before and after a kernel runs */

static int64_t at_of(const struct dtensor *t, int64_t b, int64_t h, int64_t i, int64_t c) {
  return b * t->layout.batch + h * t->layout.head + i * t->layout.row + c;
}

static void tensor_init(struct dtensor *t, txattn_dtype type, enum layout kind, int64_t batch,
                        int64_t heads, int64_t rows, int64_t dim) {
  *t = (struct dtensor){.type = type, .batch = batch, .heads = heads, .rows = rows, .dim = dim};
  if (kind == CONTIGUOUS)
    t->layout = (txattn_layout){heads * rows * dim, rows * dim, dim};
  else if (kind == PADDED)
    t->layout = (txattn_layout){heads * (rows * (dim + 3) + 5) + 7, rows * (dim + 3) + 5, dim + 3};
  else /* [b][n][h][d], with a gap after every row of heads */
    t->layout = (txattn_layout){rows * (heads * dim + 2), dim, heads * dim + 2};
  int64_t n = at_of(t, batch - 1, heads - 1, rows - 1, dim) + 11; /* a tail past the last row */
  t->bytes = (size_t)n * esize(type);
  t->data = malloc(t->bytes);
  cr_assert(t->data != NULL);
}

/* Random inputs; every gap holds NaNs, so that a kernel reading one would show it. */
static void tensor_fill(struct dtensor *t, double amplitude, uint32_t *state) {
  int64_t n = (int64_t)(t->bytes / esize(t->type));
  for (int64_t x = 0; x < n; x++) put_nan(t->data, t->type, x);
  for (int64_t b = 0; b < t->batch; b++)
    for (int64_t h = 0; h < t->heads; h++)
      for (int64_t i = 0; i < t->rows; i++)
        for (int64_t c = 0; c < t->dim; c++) {
          *state = *state * 1664525u + 1013904223u;
          double u = (double)(*state >> 8) / (1 << 24) - 0.5;
          put_value(t->data, t->type, at_of(t, b, h, i, c), 2 * amplitude * u);
        }
}

/* An output before a run: its rows all-ones bytes (a NaN in every type, so that an element left
   unwritten shows), its gaps GAP_BYTE. */
static void output_clear(struct dtensor *o) {
  memset(o->data, GAP_BYTE, o->bytes);
  size_t es = esize(o->type);
  for (int64_t b = 0; b < o->batch; b++)
    for (int64_t h = 0; h < o->heads; h++)
      for (int64_t i = 0; i < o->rows; i++)
        memset(o->data + (size_t)at_of(o, b, h, i, 0) * es, 0xff, (size_t)o->dim * es);
}

/* ---- one case: a shape in a combination of types ---- */

struct dcase {
  const struct dshape *s;
  const struct combo *cb;
  txattn_problem p, r; /* as given (without lse), resolved */
  struct dtensor q, k, v, o, want;
  struct dtensor lse, want_lse; /* f32 [batch][heads_q][n_q][1] in the shape's layout */
  lse_tolerance lse_tol;        /* of the inputs */
  double bound;
};

static void case_make(struct dcase *c, const struct dshape *s, const struct combo *cb) {
  memset(c, 0, sizeof *c);
  c->s = s;
  c->cb = cb;
  c->p = (txattn_problem){.batch = s->batch,
                          .heads_q = s->heads_q,
                          .heads_kv = s->heads_kv,
                          .n_q = s->n_q,
                          .n_kv = s->n_kv,
                          .d_qk = s->d_qk,
                          .d_v = s->d_v,
                          .mask = s->mask,
                          .window_left = s->left,
                          .window_right = s->right,
                          .q_type = cb->q,
                          .k_type = cb->k,
                          .v_type = cb->v,
                          .o_type = cb->o,
                          .struct_size = sizeof(txattn_problem)};
  c->r = (txattn_problem)TXATTN_PROBLEM_INIT;
  cr_assert_eq(txattn_problem_resolve(&c->p, &c->r), TXATTN_OK, "%s", txattn_last_error());
  const txattn_problem *r = &c->r;
  uint32_t state = (uint32_t)(s->n_q * 131 + s->d_qk * 7 + cb->k * 3 + cb->q);
  tensor_init(&c->q, cb->q, s->layout, r->batch, r->heads_q, r->n_q, r->d_qk);
  tensor_init(&c->k, cb->k, s->layout, r->batch, r->heads_kv, r->n_kv, r->d_qk);
  tensor_init(&c->v, cb->v, s->layout, r->batch, r->heads_kv, r->n_kv, r->d_v);
  tensor_init(&c->o, cb->o, s->layout, r->batch, r->heads_q, r->n_q, r->d_v);
  tensor_init(&c->want, cb->o, s->layout, r->batch, r->heads_q, r->n_q, r->d_v);
  tensor_init(&c->lse, F32, s->layout, r->batch, r->heads_q, r->n_q, 1);
  tensor_init(&c->want_lse, F32, s->layout, r->batch, r->heads_q, r->n_q, 1);
  tensor_fill(&c->q, s->amplitude, &state);
  tensor_fill(&c->k, s->amplitude, &state);
  tensor_fill(&c->v, s->amplitude, &state);
  if (s->nan_k >= 0) put_nan(c->k.data, cb->k, at_of(&c->k, 0, 0, s->nan_k, 1));
  if (s->nan_v >= 0) put_nan(c->v.data, cb->v, at_of(&c->v, 0, 0, s->nan_v, r->d_v - 1));
  output_clear(&c->want);
  output_clear(&c->want_lse);
  txattn_tensors t = {.q_data = c->q.data,
                      .k_data = c->k.data,
                      .v_data = c->v.data,
                      .o_data = c->want.data,
                      .q_layout = c->q.layout,
                      .k_layout = c->k.layout,
                      .v_layout = c->v.layout,
                      .o_layout = c->want.layout,
                      .struct_size = sizeof(txattn_tensors),
                      .lse = (float *)c->want_lse.data,
                      .lse_layout = c->want_lse.layout};
  txattn_problem with_lse = c->p;
  with_lse.lse = 1;
  cr_assert_eq(txattn_reference(&with_lse, &t), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(txattn_error_bound(&c->p, &t, &c->bound), TXATTN_OK, "%s", txattn_last_error());
  c->lse_tol = lse_tolerance_of(&with_lse, &t);
}

static void case_free(struct dcase *c) {
  free(c->q.data), free(c->k.data), free(c->v.data), free(c->o.data), free(c->want.data);
  free(c->lse.data), free(c->want_lse.data);
}

/* Every byte of t outside its rows as output_clear left it. */
static void gaps_untouched(const struct dtensor *t, const char *what, const char *kernel,
                           const char *shape, const char *cn) {
  const size_t es = esize(t->type);
  unsigned char *mark = calloc(t->bytes, 1);
  cr_assert(mark != NULL);
  for (int64_t b = 0; b < t->batch; b++)
    for (int64_t h = 0; h < t->heads; h++)
      for (int64_t i = 0; i < t->rows; i++)
        memset(mark + (size_t)at_of(t, b, h, i, 0) * es, 1, (size_t)t->dim * es);
  for (size_t x = 0; x < t->bytes; x++)
    if (!mark[x] && t->data[x] != GAP_BYTE) {
      free(mark);
      cr_assert_fail("%s, %s, %s: byte %zu of %s, outside its rows, was written", kernel, shape, cn,
                     x, what);
    }
  free(mark);
}

/* lse (kernel's run with problem.lse) against the reference's: -inf exactly for a row that sees no
   key, NaN where the reference's is (a NaN score: a NaN in V leaves lse alone), else within
   c->lse_tol. */
static void lse_judge(const struct dcase *c, const char *kernel, const char *cn) {
  const txattn_problem *r = &c->r;
  for (int64_t b = 0; b < r->batch; b++)
    for (int64_t h = 0; h < r->heads_q; h++)
      for (int64_t i = 0; i < r->n_q; i++) {
        int64_t at = at_of(&c->lse, b, h, i, 0);
        double got = value_at(c->lse.data, F32, at), want = value_at(c->want_lse.data, F32, at);
        if (oracle_visible_count(r, i) == 0)
          cr_assert(isinf(got) && got < 0,
                    "%s, %s, %s: row (%ld, %ld, %ld) sees no key, lse = %a, want -inf", kernel,
                    c->s->name, cn, (long)b, (long)h, (long)i, got);
        else if (isnan(want))
          cr_assert(isnan(got), "%s, %s, %s: row (%ld, %ld, %ld) reads a NaN score, lse = %a",
                    kernel, c->s->name, cn, (long)b, (long)h, (long)i, got);
        else
          cr_assert(fabs(got - want) <= lse_tolerance_at(c->lse_tol, want),
                    "%s, %s, %s: lse(%ld, %ld, %ld) = %a, want %a (bound %g)", kernel, c->s->name,
                    cn, (long)b, (long)h, (long)i, got, want, lse_tolerance_at(c->lse_tol, want));
      }
  gaps_untouched(&c->lse, "lse", kernel, c->s->name, cn);
}

static const char *combo_name(const struct combo *cb, char *buf, size_t size) {
  snprintf(buf, size, "q %s k %s v %s o %s", txattn_dtype_name(cb->q), txattn_dtype_name(cb->k),
           txattn_dtype_name(cb->v), txattn_dtype_name(cb->o));
  return buf;
}

/* Runs `kernel` on the case (o and lse cleared first), with problem.lse if `lse`, and judges o
   (and lse). */
static void case_run(txattn_context *ctx, struct dcase *c, const char *kernel, int lse) {
  char cn[64];
  combo_name(c->cb, cn, sizeof cn);
  txattn_plan *plan = NULL;
  txattn_problem p = c->p;
  p.lse = lse;
  txattn_status st = txattn_plan_create(ctx, &p, kernel, &plan);
  cr_assert_eq(st, TXATTN_OK, "%s, %s, %s: plan: %s", kernel, c->s->name, cn, txattn_last_error());
  output_clear(&c->o);
  output_clear(&c->lse);
  txattn_tensors t = {.q_data = c->q.data,
                      .k_data = c->k.data,
                      .v_data = c->v.data,
                      .o_data = c->o.data,
                      .q_layout = c->q.layout,
                      .k_layout = c->k.layout,
                      .v_layout = c->v.layout,
                      .o_layout = c->o.layout,
                      .struct_size = sizeof(txattn_tensors),
                      .lse = lse ? (float *)c->lse.data : NULL,
                      .lse_layout = c->lse.layout};
  st = txattn_plan_execute(plan, &t);
  txattn_plan_free(plan);
  cr_assert_eq(st, TXATTN_OK, "%s, %s, %s: %s", kernel, c->s->name, cn, txattn_last_error());

  const txattn_problem *r = &c->r;
  const size_t es = esize(c->cb->o);
  int nan_rows = 0, empty_rows = 0;
  for (int64_t b = 0; b < r->batch; b++)
    for (int64_t h = 0; h < r->heads_q; h++)
      for (int64_t i = 0; i < r->n_q; i++) {
        const int empty = oracle_visible_count(r, i) == 0;
        const int nan_row = isnan(value_at(c->want.data, c->cb->o, at_of(&c->want, b, h, i, 0)));
        empty_rows += empty;
        nan_rows += nan_row;
        for (int64_t x = 0; x < r->d_v; x++) {
          int64_t at = at_of(&c->o, b, h, i, x);
          double got = value_at(c->o.data, c->cb->o, at),
                 want = value_at(c->want.data, c->cb->o, at);
          if (empty) {
            static const unsigned char zero[4];
            cr_assert(memcmp(c->o.data + (size_t)at * es, zero, es) == 0,
                      "%s, %s, %s: row (%ld, %ld, %ld) sees no key, o[%ld] = %a, want +0", kernel,
                      c->s->name, cn, (long)b, (long)h, (long)i, (long)x, got);
          } else if (nan_row) {
            cr_assert(isnan(got), "%s, %s, %s: row (%ld, %ld, %ld) reads a NaN, o[%ld] = %a",
                      kernel, c->s->name, cn, (long)b, (long)h, (long)i, (long)x, got);
          } else {
            cr_assert(fabs(got - want) <= c->bound,
                      "%s, %s, %s: o(%ld, %ld, %ld)[%ld] = %a, want %a (bound %g)", kernel,
                      c->s->name, cn, (long)b, (long)h, (long)i, (long)x, got, want, c->bound);
          }
        }
      }
  if (c->s->nan_k >= 0) cr_assert_gt(nan_rows, 0, "%s: no NaN row to check", c->s->name);
  if (strstr(c->s->name, "empty rows")) cr_assert_gt(empty_rows, 0, "%s: no empty row", c->s->name);
  gaps_untouched(&c->o, "o", kernel, c->s->name, cn);
  if (lse) lse_judge(c, kernel, cn);
}

/* case_run with lse, then without, and o must have the same bits both times: lse only reads the
   softmax's max and sum. */
static void case_run_both(txattn_context *ctx, struct dcase *c, const char *kernel) {
  case_run(ctx, c, kernel, 1);
  unsigned char *with = malloc(c->o.bytes);
  cr_assert(with != NULL);
  memcpy(with, c->o.data, c->o.bytes);
  case_run(ctx, c, kernel, 0);
  int same = memcmp(with, c->o.data, c->o.bytes) == 0;
  free(with);
  char cn[64];
  cr_assert(same, "%s, %s, %s: o differs with and without lse", kernel, c->s->name,
            combo_name(c->cb, cn, sizeof cn));
}

/* The kernels this file tests, among those usable here. */
static int tested(const txattn_kernel_info *k) {
  return k->usable &&
         (strncmp(k->name, "banded.", 7) == 0 || strncmp(k->name, "banded_omp.", 11) == 0 ||
          strcmp(k->name, "masked.scalar") == 0 || strcmp(k->name, "naive.scalar") == 0);
}

Test(banded_dtypes, banded_and_masked_are_exact_on_16_bit_tensors) {
  txattn_context *ctx = test_context(1);
  struct kernel_list kl;
  test_kernel_list(ctx, &kl);
  int runs[TEST_MAX_KERNELS] = {0};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (size_t ci = 0; ci < sizeof combos / sizeof combos[0]; ci++) {
      struct dcase c;
      case_make(&c, &shapes[si], &combos[ci]);
      for (size_t ki = 0; ki < kl.n; ki++) {
        if (!tested(&kl.k[ki])) continue;
        case_run_both(ctx, &c, kl.k[ki].name);
        runs[ki]++;
      }
      case_free(&c);
    }
  const int want = (int)(sizeof shapes / sizeof shapes[0] * (sizeof combos / sizeof combos[0]));
  int families[4] = {0};
  for (size_t ki = 0; ki < kl.n; ki++) {
    if (!tested(&kl.k[ki])) continue;
    cr_expect_eq(runs[ki], want, "%s ran %d cases of %d", kl.k[ki].name, runs[ki], want);
    families[strncmp(kl.k[ki].name, "banded.", 7) == 0        ? 0
             : strncmp(kl.k[ki].name, "banded_omp.", 11) == 0 ? 1
             : strcmp(kl.k[ki].name, "masked.scalar") == 0    ? 2
                                                              : 3]++;
  }
  cr_assert(families[0] > 0 && families[1] > 0 && families[2] > 0 && families[3] > 0,
            "banded %d, banded_omp %d, masked %d, naive %d kernels usable", families[0],
            families[1], families[2], families[3]);
  txattn_context_free(ctx);
}

/* On one thread banded_omp.<isa> runs banded.<isa>'s loop: the same bits in every type, in o and
   in lse. */
Test(banded_dtypes, banded_omp_on_one_thread_gives_the_bits_of_banded) {
  txattn_context *ctx = test_context(1);
  struct kernel_list kl;
  test_kernel_list(ctx, &kl);
  int pairs = 0;
  for (size_t ki = 0; ki < kl.n; ki++) {
    const txattn_kernel_info *k = &kl.k[ki];
    if (!k->usable || strncmp(k->name, "banded_omp.", 11) != 0) continue;
    cr_assert(k->one_thread_same_as != NULL, "%s names no twin", k->name);
    const txattn_kernel_info *twin = test_kernel_find(&kl, k->one_thread_same_as);
    cr_assert(twin != NULL && twin->usable, "%s: twin %s not usable", k->name,
              k->one_thread_same_as);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
      for (size_t ci = 0; ci < sizeof combos / sizeof combos[0]; ci++) {
        struct dcase c;
        case_make(&c, &shapes[si], &combos[ci]);
        case_run(ctx, &c, twin->name, 1);
        unsigned char *first = malloc(c.o.bytes), *first_lse = malloc(c.lse.bytes);
        cr_assert(first != NULL && first_lse != NULL);
        memcpy(first, c.o.data, c.o.bytes);
        memcpy(first_lse, c.lse.data, c.lse.bytes);
        case_run(ctx, &c, k->name, 1);
        int same = memcmp(first, c.o.data, c.o.bytes) == 0,
            same_lse = memcmp(first_lse, c.lse.data, c.lse.bytes) == 0;
        free(first);
        free(first_lse);
        char cn[64];
        cr_assert(same, "%s and %s differ in o on %s, %s", k->name, twin->name, shapes[si].name,
                  combo_name(&combos[ci], cn, sizeof cn));
        cr_assert(same_lse, "%s and %s differ in lse on %s, %s", k->name, twin->name,
                  shapes[si].name, combo_name(&combos[ci], cn, sizeof cn));
        case_free(&c);
        pairs++;
      }
  }
  cr_assert_gt(pairs, 0, "no banded_omp kernel usable");
  txattn_context_free(ctx);
}

/* banded_omp's parallel path (chunks of rows on a team, its test build) and masked.scalar's (tasks
   on 2 threads), with lse. */
Test(banded_dtypes, the_parallel_paths_are_exact_on_16_bit_tensors) {
  txattn_context *team = test_context_at(TXATTN_TEST_BOMP_TEAM_PLUGIN_DIR, 2);
  txattn_context *two = test_context(2);
  struct kernel_list kl_team, kl_two;
  test_kernel_list(team, &kl_team);
  test_kernel_list(two, &kl_two);
  int runs = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (size_t ci = 0; ci < sizeof combos / sizeof combos[0]; ci++) {
      struct dcase c;
      case_make(&c, &shapes[si], &combos[ci]);
      for (size_t ki = 0; ki < kl_team.n; ki++)
        if (kl_team.k[ki].usable && strncmp(kl_team.k[ki].name, "banded_omp.", 11) == 0) {
          case_run(team, &c, kl_team.k[ki].name, 1);
          runs++;
        }
      case_run(two, &c, "masked.scalar", 1);
      case_free(&c);
    }
  cr_assert_gt(runs, 0, "no banded_omp kernel in %s", TXATTN_TEST_BOMP_TEAM_PLUGIN_DIR);
  txattn_context_free(two);
  txattn_context_free(team);
}

#ifdef TXATTN_TEST_EMU512_PLUGIN_DIR
/* banded.avx512 and banded_omp.avx512 built on emulated AVX-512 intrinsics (tests/emulation), so
   that their 16-bit loads and stores run on a CPU without AVX-512 as well; banded_omp's parallel
   path through the emulated build of its test build. */
Test(banded_dtypes, the_emulated_avx512_kernels_are_exact_on_16_bit_tensors) {
  static const char *const dirs[] = {TXATTN_TEST_EMU512_PLUGIN_DIR,
                                     TXATTN_TEST_EMU512_TEAM_PLUGIN_DIR};
  for (int di = 0; di < 2; di++) {
    txattn_context *ctx = test_context_at(dirs[di], di + 1);
    struct kernel_list kl;
    test_kernel_list(ctx, &kl);
    int runs = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
      for (size_t ci = 0; ci < sizeof combos / sizeof combos[0]; ci++) {
        struct dcase c;
        case_make(&c, &shapes[si], &combos[ci]);
        for (size_t ki = 0; ki < kl.n; ki++)
          if (kl.k[ki].usable && (strcmp(kl.k[ki].name, "banded.avx512") == 0 ||
                                  strcmp(kl.k[ki].name, "banded_omp.avx512") == 0)) {
            case_run(ctx, &c, kl.k[ki].name, 1);
            runs++;
          }
        case_free(&c);
      }
    cr_assert_gt(runs, 0, "no emulated banded kernel usable in %s", dirs[di]);
    txattn_context_free(ctx);
  }
}
#endif
