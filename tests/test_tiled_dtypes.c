/* SPDX-License-Identifier: MIT */
/* The tiled kernels (tiled.<isa>, tiled_omp.<isa>) on f16 and bf16 tensors: against
 * txattn_reference of the same problem (o in the same type) within txattn_error_bound, on shapes
 * that take both of their paths -- the direct path (at most 4 stacked query rows per kv head:
 * decode) and the blocked one (packed fp32 K/V blocks) -- with GQA, windows and causal masks whose
 * edges fall inside blocks (the smallest blocks as well as the defaults), padded strides, large
 * logits, rows that see no key, rows that read a NaN in K or V, and bf16 subnormals in q and k
 * (which tiled.avx512bf16's vdpbf16ps would read as zero).
 *
 * Every usable kernel of the build's plugin directory runs (each ISA this CPU has); tiled_omp also
 * through its test build (a team for any work, the smallest blocks: key splits whose merge writes a
 * 16-bit o, packing phases) and, on x86-64, the AVX-512 kernels on emulated intrinsics (the
 * conversions of tests/emulation/avx512_emulation.h). Padding between and after the rows of every
 * input holds NaN, so a read past a row poisons the output; o's padding holds a pattern that must
 * survive the call. And tiled_omp.<isa> on one thread gives the bits of tiled.<isa> on every type
 * (its one_thread_same_as), o and log-sum-exp.
 *
 * The log-sum-exp (problem.lse, ABI 1.5): with it every tiled kernel writes the bits of o it
 * writes without it, and an lse within txattn_lse_error_bound of the reference's (-inf for a row
 * that sees no key, NaN where a NaN score is seen), through a strided lse layout whose padding
 * survives. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "half.h"
#include "lse_tolerance.h"
#include "test_context.h"
#include "txattn/txattn.h"

TestSuite(tiled_dtypes, .init = test_env_clean, .fini = test_check_leaks, .timeout = 300);

#define F32  TXATTN_DTYPE_F32
#define F16  TXATTN_DTYPE_F16
#define BF16 TXATTN_DTYPE_BF16

/* q, k, v, o */
static const txattn_dtype combos[][4] = {
    {F32, F16, F16, F32},  {F32, BF16, BF16, F32}, {BF16, BF16, BF16, BF16}, {F16, F16, F16, F16},
    {F32, F16, F16, BF16}, {F16, BF16, F16, F32},  {BF16, BF16, F16, F32},
};
enum { N_COMBOS = sizeof combos / sizeof combos[0] };

struct shape {
  const char *what;
  txattn_problem p;
  int strided;       /* padded rows, heads and batches (else contiguous) */
  double amp;        /* q and k values in [-amp, amp] (v in [-2, 2]) */
  int64_t nan_v_key; /* this key's V row holds a NaN in column 1 (NO_KEY: none) */
  int64_t nan_k_key; /* this key's K row holds a NaN in column 0 (NO_KEY: none) */
  /* Where q and k are bf16: q's column 3 holds subnormals (2^-128) in positions below 30 and 0
     after, k's column 3 2^127; k's column 5 holds subnormals in keys 40..59 and 0 elsewhere, q's
     2^126: products near 1/2 that vdpbf16ps, reading subnormals as zero, would drop. */
  int bf16_subnormals;
};

#define NO_KEY -1
static const struct shape shapes[] = {
    {.what = "decode, 8 query heads over 2, direct path",
     .p = {.batch = 2, .heads_q = 8, .heads_kv = 2, .n_q = 1, .n_kv = 300, .d_qk = 64},
     .strided = 1,
     .amp = 2.0,
     .nan_v_key = NO_KEY,
     .nan_k_key = NO_KEY},
    {.what = "2 positions x GQA 2, causal, odd head sizes, a NaN in V seen by one position",
     .p = {.heads_q = 4,
           .heads_kv = 2,
           .n_q = 2,
           .n_kv = 77,
           .d_qk = 40,
           .d_v = 24,
           .mask = TXATTN_MASK_CAUSAL},
     .amp = 2.0,
     .nan_v_key = 76,
     .nan_k_key = NO_KEY},
    {.what = "3 positions over 2 keys, causal: the first sees no key",
     .p = {.n_q = 3, .n_kv = 2, .d_qk = 16, .mask = TXATTN_MASK_CAUSAL},
     .strided = 1,
     .amp = 2.0,
     .nan_v_key = NO_KEY,
     .nan_k_key = NO_KEY},
    {.what = "4 positions, window 20 + 3, odd head sizes, large logits",
     .p = {.n_q = 4,
           .n_kv = 45,
           .d_qk = 17,
           .d_v = 9,
           .mask = TXATTN_MASK_WINDOW,
           .window_left = 20,
           .window_right = 3,
           .scale = 3.0f},
     .strided = 1,
     .amp = 4.0,
     .nan_v_key = NO_KEY,
     .nan_k_key = NO_KEY},
    {.what =
         "2 positions x GQA 2, window 11 + 2 across two chunks, head sizes whole vectors, a NaN "
         "in V seen by the first position",
     .p = {.heads_q = 4,
           .heads_kv = 2,
           .n_q = 2,
           .n_kv = 40,
           .d_qk = 32,
           .d_v = 16,
           .mask = TXATTN_MASK_WINDOW,
           .window_left = 11,
           .window_right = 2},
     .strided = 1,
     .amp = 2.0,
     .nan_v_key = 27,
     .nan_k_key = NO_KEY},
    {.what = "prefill 70 x GQA 2 over 200 keys, causal, a NaN in K seen from position 20 on",
     .p = {.heads_q = 4,
           .heads_kv = 2,
           .n_q = 70,
           .n_kv = 200,
           .d_qk = 40,
           .d_v = 33,
           .mask = TXATTN_MASK_CAUSAL},
     .strided = 1,
     .amp = 2.0,
     .nan_v_key = NO_KEY,
     .nan_k_key = 150},
    {.what = "96 positions over 80 keys, window 9 + 4: the first 12 see no key",
     .p = {.heads_q = 2,
           .heads_kv = 1,
           .n_q = 96,
           .n_kv = 80,
           .d_qk = 20,
           .d_v = 20,
           .mask = TXATTN_MASK_WINDOW,
           .window_left = 9,
           .window_right = 4},
     .amp = 2.0,
     .nan_v_key = NO_KEY,
     .nan_k_key = NO_KEY},
    {.what = "prefill 70 x GQA 2 over 150 keys, causal, d_qk 33, bf16 subnormals against values "
             "near 2^127",
     .p = {.heads_q = 4,
           .heads_kv = 2,
           .n_q = 70,
           .n_kv = 150,
           .d_qk = 33,
           .d_v = 16,
           .mask = TXATTN_MASK_CAUSAL},
     .amp = 2.0,
     .nan_v_key = NO_KEY,
     .nan_k_key = NO_KEY,
     .bf16_subnormals = 1},
    {.what = "2 x 64 x 64, no mask, large logits",
     .p = {.batch = 2, .n_q = 64, .d_qk = 64, .scale = 2.5f},
     .strided = 1,
     .amp = 4.0,
     .nan_v_key = NO_KEY,
     .nan_k_key = NO_KEY},
};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

static size_t esize(txattn_dtype t) {
  return t == F32 ? 4 : 2;
}

/* A tensor of n rows of d elements per (batch, head), its layout and where its elements are. */
struct tensor {
  txattn_dtype type;
  txattn_layout l;
  int64_t batch, heads, n, d;
  size_t len; /* elements, padding included */
  unsigned char *data;
};

static void tensor_init(struct tensor *x, txattn_dtype type, int64_t batch, int64_t heads,
                        int64_t n, int64_t d, int strided) {
  x->type = type;
  x->batch = batch, x->heads = heads, x->n = n, x->d = d;
  x->l.row = d + (strided ? 3 : 0);
  x->l.head = n * x->l.row + (strided ? 5 : 0);
  x->l.batch = heads * x->l.head + (strided ? 7 : 0);
  x->len = (size_t)(batch * x->l.batch);
  x->data = malloc(x->len * esize(type));
  cr_assert(x->data != NULL, "out of memory");
}

static size_t tensor_at(const struct tensor *x, int64_t b, int64_t h, int64_t i, int64_t c) {
  return (size_t)(b * x->l.batch + h * x->l.head + i * x->l.row + c);
}

static void store(struct tensor *x, size_t at, double v) {
  if (x->type == F32) {
    float f = (float)v;
    memcpy(x->data + 4 * at, &f, 4);
  } else {
    uint16_t h = x->type == F16 ? txh_f32_to_f16((float)v) : txh_f32_to_bf16((float)v);
    memcpy(x->data + 2 * at, &h, 2);
  }
}

static double load(const struct tensor *x, size_t at) {
  if (x->type == F32) {
    float f;
    memcpy(&f, x->data + 4 * at, 4);
    return (double)f;
  }
  uint16_t h;
  memcpy(&h, x->data + 2 * at, 2);
  return (double)(x->type == F16 ? txh_f16_to_f32(h) : txh_bf16_to_f32(h));
}

/* Padding NaN (every byte 0xff is a NaN in each type), elements uniform in [-amp, amp]. */
static void tensor_fill(struct tensor *x, double amp, uint32_t *state) {
  memset(x->data, 0xff, x->len * esize(x->type));
  for (int64_t b = 0; b < x->batch; b++)
    for (int64_t h = 0; h < x->heads; h++)
      for (int64_t i = 0; i < x->n; i++)
        for (int64_t c = 0; c < x->d; c++) {
          *state = *state * 1664525u + 1013904223u;
          store(x, tensor_at(x, b, h, i, c), ((double)(*state >> 8) / (1 << 24) * 2 - 1) * amp);
        }
}

/* One shape in one combination of types: inputs, the reference's output and the bound. */
struct tcase {
  const struct shape *s;
  txattn_problem p; /* resolved */
  struct tensor q, k, v, o, want;
  double bound;
  char desc[320];
  /* tcase_lse_init: lse [batch][heads_q][n_q] in lse_l (padded: LSE_PATTERN between rows), and
     the reference's; else NULL */
  float *lse, *want_lse;
  txattn_layout lse_l;
  size_t lse_len;
  lse_tolerance lse_tol; /* tcase_lse_init: how far lse may be from want_lse */
};

#define O_PATTERN 0xa5

static void tcase_init(struct tcase *c, const struct shape *s, const txattn_dtype *types,
                       uint32_t seed) {
  txattn_problem p = s->p;
  p.q_type = types[0], p.k_type = types[1], p.v_type = types[2], p.o_type = types[3];
  p.struct_size = sizeof p;
  c->p.struct_size = sizeof c->p; /* resolved as this header's struct (lse included) */
  c->lse = c->want_lse = NULL;
  cr_assert_eq(txattn_problem_resolve(&p, &c->p), TXATTN_OK, "%s", txattn_last_error());
  const txattn_problem *r = &c->p;
  c->s = s;
  snprintf(c->desc, sizeof c->desc, "%s; q %s, k %s, v %s, o %s", s->what,
           txattn_dtype_name(types[0]), txattn_dtype_name(types[1]), txattn_dtype_name(types[2]),
           txattn_dtype_name(types[3]));
  tensor_init(&c->q, types[0], r->batch, r->heads_q, r->n_q, r->d_qk, s->strided);
  tensor_init(&c->k, types[1], r->batch, r->heads_kv, r->n_kv, r->d_qk, s->strided);
  tensor_init(&c->v, types[2], r->batch, r->heads_kv, r->n_kv, r->d_v, s->strided);
  tensor_init(&c->o, types[3], r->batch, r->heads_q, r->n_q, r->d_v, 1); /* always padded */
  tensor_init(&c->want, types[3], r->batch, r->heads_q, r->n_q, r->d_v, 1);
  uint32_t state = seed;
  tensor_fill(&c->q, s->amp, &state);
  tensor_fill(&c->k, s->amp, &state);
  tensor_fill(&c->v, 2.0, &state);
  for (int64_t b = 0; b < r->batch; b++)
    for (int64_t h = 0; h < r->heads_kv; h++) {
      if (s->nan_v_key != NO_KEY) store(&c->v, tensor_at(&c->v, b, h, s->nan_v_key, 1), NAN);
      if (s->nan_k_key != NO_KEY) store(&c->k, tensor_at(&c->k, b, h, s->nan_k_key, 0), NAN);
    }
  if (s->bf16_subnormals && types[0] == BF16 && types[1] == BF16) {
    for (int64_t b = 0; b < r->batch; b++) {
      for (int64_t h = 0; h < r->heads_q; h++)
        for (int64_t i = 0; i < r->n_q; i++) {
          const double sign = (i + h) % 3 ? 1.0 : -1.0;
          store(&c->q, tensor_at(&c->q, b, h, i, 3), i < 30 ? sign * 0x1p-128 : 0.0);
          store(&c->q, tensor_at(&c->q, b, h, i, 5), sign * 0x1p126);
        }
      for (int64_t h = 0; h < r->heads_kv; h++)
        for (int64_t j = 0; j < r->n_kv; j++) {
          store(&c->k, tensor_at(&c->k, b, h, j, 3), 0x1p127);
          store(&c->k, tensor_at(&c->k, b, h, j, 5), j >= 40 && j < 60 ? 0x1.8p-127 : 0.0);
        }
    }
  }
  memset(c->want.data, O_PATTERN, c->want.len * esize(c->want.type));
  txattn_tensors t = {.q_data = c->q.data,
                      .k_data = c->k.data,
                      .v_data = c->v.data,
                      .o_data = c->want.data,
                      .q_layout = c->q.l,
                      .k_layout = c->k.l,
                      .v_layout = c->v.l,
                      .o_layout = c->want.l};
  cr_assert_eq(txattn_reference(&c->p, &t), TXATTN_OK, "%s: %s", c->desc, txattn_last_error());
  cr_assert_eq(txattn_error_bound(&c->p, &t, &c->bound), TXATTN_OK, "%s", txattn_last_error());
}

static void tcase_free(struct tcase *c) {
  free(c->q.data), free(c->k.data), free(c->v.data), free(c->o.data), free(c->want.data);
  free(c->lse), free(c->want_lse);
}

#define LSE_PATTERN 1234.5f

static void lse_reset(float *lse, size_t n) {
  for (size_t at = 0; at < n; at++) lse[at] = LSE_PATTERN;
}

static size_t lse_at(const struct tcase *c, int64_t b, int64_t h, int64_t i) {
  return (size_t)(b * c->lse_l.batch + h * c->lse_l.head + i * c->lse_l.row);
}

/* c's lse tensor, padded (a gap after every row, head and batch), the reference's lse and its
   tolerance. */
static void tcase_lse_init(struct tcase *c) {
  const txattn_problem *r = &c->p;
  c->lse_l.row = 2;
  c->lse_l.head = r->n_q * c->lse_l.row + 1;
  c->lse_l.batch = r->heads_q * c->lse_l.head + 3;
  c->lse_len = (size_t)(r->batch * c->lse_l.batch);
  c->lse = malloc(c->lse_len * sizeof(float));
  c->want_lse = malloc(c->lse_len * sizeof(float));
  cr_assert(c->lse != NULL && c->want_lse != NULL, "out of memory");
  lse_reset(c->want_lse, c->lse_len);
  txattn_problem p = c->p;
  p.lse = 1;
  txattn_tensors t = {.q_data = c->q.data,
                      .k_data = c->k.data,
                      .v_data = c->v.data,
                      .o_data = c->want.data, /* rewritten with the same values */
                      .q_layout = c->q.l,
                      .k_layout = c->k.l,
                      .v_layout = c->v.l,
                      .o_layout = c->want.l,
                      .struct_size = sizeof t,
                      .lse = c->want_lse,
                      .lse_layout = c->lse_l};
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s: %s", c->desc, txattn_last_error());
  c->lse_tol = lse_tolerance_of(&p, &t);
}

static txattn_tensors tcase_tensors(const struct tcase *c) {
  return (txattn_tensors){.q_data = c->q.data,
                          .k_data = c->k.data,
                          .v_data = c->v.data,
                          .o_data = c->o.data,
                          .q_layout = c->q.l,
                          .k_layout = c->k.l,
                          .v_layout = c->v.l,
                          .o_layout = c->o.l};
}

/* The output against the reference's: NaN where it is NaN (whole rows), the same infinity, else
   within the bound; every byte of o outside the rows' d_v elements as it was. */
static void tcase_check(const struct tcase *c, const char *kernel, const char *how) {
  const struct tensor *o = &c->o, *w = &c->want;
  unsigned char *mine = calloc(o->len, 1);
  cr_assert(mine != NULL, "out of memory");
  for (int64_t b = 0; b < o->batch; b++)
    for (int64_t h = 0; h < o->heads; h++)
      for (int64_t i = 0; i < o->n; i++)
        for (int64_t c2 = 0; c2 < o->d; c2++) {
          const size_t at = tensor_at(o, b, h, i, c2);
          const double got = load(o, at), want = load(w, at);
          mine[at] = 1;
          if (isnan(want))
            cr_assert(isnan(got), "%s (%s) on %s: o[%lld][%lld][%lld][%lld] = %a, want NaN", kernel,
                      how, c->desc, (long long)b, (long long)h, (long long)i, (long long)c2, got);
          else if (isinf(want))
            cr_assert(got == want, "%s (%s) on %s: o[%lld][%lld][%lld][%lld] = %a, want %a", kernel,
                      how, c->desc, (long long)b, (long long)h, (long long)i, (long long)c2, got,
                      want);
          else
            cr_assert(fabs(got - want) <= c->bound,
                      "%s (%s) on %s: o[%lld][%lld][%lld][%lld] = %a, want %a (bound %g)", kernel,
                      how, c->desc, (long long)b, (long long)h, (long long)i, (long long)c2, got,
                      want, c->bound);
        }
  const size_t es = esize(o->type);
  for (size_t at = 0; at < o->len; at++) {
    if (mine[at]) continue;
    for (size_t byte = 0; byte < es; byte++)
      cr_assert_eq(o->data[at * es + byte], O_PATTERN,
                   "%s (%s) on %s: wrote element %zu of o, which is padding", kernel, how, c->desc,
                   at);
  }
  free(mine);
}

/* Runs kernel on c into c->o (its padding reset first) with its default tunables, or with every
   tunable at its smallest (blocks of a few rows and keys: windows straddle them). Returns 0 when
   the kernel declines the problem. */
static int run_into(txattn_context *ctx, const char *kernel, struct tcase *c, int smallest,
                    const txattn_problem *p, struct tensor *o) {
  txattn_plan *plan = NULL;
  txattn_status s = txattn_plan_create(ctx, p, kernel, &plan);
  if (s == TXATTN_E_UNSUPPORTED) return 0;
  cr_assert_eq(s, TXATTN_OK, "%s on %s: %s", kernel, c->desc, txattn_last_error());
  if (smallest) {
    enum { MAX_TUNABLES = 8 };
    char names[MAX_TUNABLES][64];
    const char *name_ptrs[MAX_TUNABLES];
    int64_t values[MAX_TUNABLES];
    size_t n = txattn_plan_tunable_count(plan);
    cr_assert_leq(n, MAX_TUNABLES);
    for (size_t i = 0; i < n; i++) {
      txattn_tunable_info info = TXATTN_TUNABLE_INFO_INIT;
      cr_assert_eq(txattn_plan_tunable_info(plan, i, &info), TXATTN_OK);
      snprintf(names[i], sizeof names[i], "%s", info.name);
      name_ptrs[i] = names[i];
      values[i] = (info.min + info.multiple_of - 1) / info.multiple_of * info.multiple_of;
    }
    txattn_plan_free(plan);
    plan = NULL;
    s = txattn_plan_create_tuned(ctx, p, kernel, name_ptrs, values, n, &plan);
    cr_assert_eq(s, TXATTN_OK, "%s on %s, smallest tunables: %s", kernel, c->desc,
                 txattn_last_error());
  }
  memset(o->data, O_PATTERN, o->len * esize(o->type));
  txattn_tensors t = tcase_tensors(c);
  t.o_data = o->data;
  t.o_layout = o->l;
  if (p->lse) { /* c->lse, reset to its pattern */
    cr_assert(c->lse != NULL, "tcase_lse_init was not called");
    lse_reset(c->lse, c->lse_len);
    t.struct_size = sizeof t;
    t.lse = c->lse;
    t.lse_layout = c->lse_l;
  }
  s = txattn_plan_execute(plan, &t);
  txattn_plan_free(plan);
  cr_assert_eq(s, TXATTN_OK, "%s on %s: %s", kernel, c->desc, txattn_last_error());
  return 1;
}
static int run(txattn_context *ctx, const char *kernel, struct tcase *c, int smallest) {
  return run_into(ctx, kernel, c, smallest, &c->p, &c->o);
}

/* A 16-bit o is the kernel's fp32 output rounded once, to nearest even: the same kernel with an
   f32 o (the same arithmetic) gives o's bits after half.h's rounding. */
static void check_rounded_once(txattn_context *ctx, const char *kernel, struct tcase *c,
                               int smallest) {
  if (c->o.type == F32) return;
  txattn_problem p32 = c->p;
  p32.o_type = F32;
  struct tensor o32;
  tensor_init(&o32, F32, c->o.batch, c->o.heads, c->o.n, c->o.d, 1);
  cr_assert(run_into(ctx, kernel, c, smallest, &p32, &o32), "%s declines f32 o", kernel);
  for (int64_t b = 0; b < o32.batch; b++)
    for (int64_t h = 0; h < o32.heads; h++)
      for (int64_t i = 0; i < o32.n; i++)
        for (int64_t x = 0; x < o32.d; x++) {
          const size_t at = tensor_at(&c->o, b, h, i, x);
          float f;
          uint16_t got, want;
          memcpy(&f, o32.data + 4 * tensor_at(&o32, b, h, i, x), 4);
          memcpy(&got, c->o.data + 2 * at, 2);
          want = c->o.type == F16 ? txh_f32_to_f16(f) : txh_f32_to_bf16(f);
          cr_assert_eq(got, want,
                       "%s on %s: o[%lld][%lld][%lld][%lld] = 0x%04x, its fp32 value %a rounds "
                       "to 0x%04x",
                       kernel, c->desc, (long long)b, (long long)h, (long long)i, (long long)x, got,
                       (double)f, want);
        }
  free(o32.data);
}

/* Whether kernel is one of the tiled kernels this test is about (in the emulated build, only the
   emulated AVX-512 ones: the others are the build's own, run from its own directory). */
static int selected(const char *kernel, int avx512_only) {
  const char *dot = strchr(kernel, '.');
  if (!dot) return 0;
  const size_t alg = (size_t)(dot - kernel);
  if (!((alg == 5 && strncmp(kernel, "tiled", 5) == 0) ||
        (alg == 9 && strncmp(kernel, "tiled_omp", 9) == 0)))
    return 0;
  return !avx512_only || strcmp(dot, ".avx512") == 0 || strcmp(dot, ".avx512bf16") == 0;
}

/* The kernels on AVX512_BF16 take bf16 q and k only (and decline the rest). */
static int takes(const char *kernel, const txattn_dtype *types) {
  const char *dot = strchr(kernel, '.');
  return strcmp(dot, ".avx512bf16") != 0 || (types[0] == BF16 && types[1] == BF16);
}

/* Every selected usable kernel of the context on every shape and combination, with the default
   and the smallest tunables; returns how many kernels ran. */
static int check_plugin_dir(const char *plugin_path, int threads, int avx512_only) {
  setenv("TXATTN_CACHES", "l1d=48K,l2=1M,l3=32M", 1); /* the default blocks, whatever the CPU */
  txattn_context *ctx = plugin_path ? test_context_at(plugin_path, threads) : test_context(threads);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  int kernels = 0;
  for (size_t ki = 0; ki < l.n; ki++) {
    if (!l.k[ki].usable || !selected(l.k[ki].name, avx512_only)) continue;
    kernels++;
    for (int si = 0; si < N_SHAPES; si++)
      for (int ci = 0; ci < N_COMBOS; ci++) {
        struct tcase c;
        if (!takes(l.k[ki].name, combos[ci])) continue;
        tcase_init(&c, &shapes[si], combos[ci], (uint32_t)(si * 31 + ci));
        for (int smallest = 0; smallest < 2; smallest++) {
          cr_assert(run(ctx, l.k[ki].name, &c, smallest), "%s declines %s", l.k[ki].name, c.desc);
          tcase_check(&c, l.k[ki].name, smallest ? "smallest blocks" : "default blocks");
          check_rounded_once(ctx, l.k[ki].name, &c, smallest);
        }
        tcase_free(&c);
      }
  }
  txattn_context_free(ctx);
  return kernels;
}

/* c->lse against the reference's: NaN where it is NaN, the same infinity (-inf: no visible key),
   else within c->lse_tol; the padding as it was. */
static void tcase_check_lse(const struct tcase *c, const char *kernel, const char *how) {
  const txattn_problem *r = &c->p;
  char *mine = calloc(c->lse_len, 1);
  cr_assert(mine != NULL, "out of memory");
  for (int64_t b = 0; b < r->batch; b++)
    for (int64_t h = 0; h < r->heads_q; h++)
      for (int64_t i = 0; i < r->n_q; i++) {
        const size_t at = lse_at(c, b, h, i);
        const double got = c->lse[at], want = c->want_lse[at];
        const double tol = lse_tolerance_at(c->lse_tol, want);
        mine[at] = 1;
        if (isnan(want) || isinf(want))
          cr_assert(got == want || (isnan(got) && isnan(want)),
                    "%s (%s) on %s: lse[%lld][%lld][%lld] = %a, want %a", kernel, how, c->desc,
                    (long long)b, (long long)h, (long long)i, got, want);
        else
          cr_assert(fabs(got - want) <= tol,
                    "%s (%s) on %s: lse[%lld][%lld][%lld] = %.9g, want %.9g (tolerance %g)", kernel,
                    how, c->desc, (long long)b, (long long)h, (long long)i, got, want, tol);
      }
  for (size_t at = 0; at < c->lse_len; at++)
    cr_assert(mine[at] || c->lse[at] == LSE_PATTERN,
              "%s (%s) on %s: wrote element %zu of lse, which is padding", kernel, how, c->desc,
              at);
  free(mine);
}

/* lse on: the kernel writes the o bits it writes without (c->o), and c->lse. */
static void check_lse(txattn_context *ctx, const char *kernel, struct tcase *c, int smallest) {
  const char *how = smallest ? "smallest blocks, lse" : "default blocks, lse";
  const size_t bytes = c->o.len * esize(c->o.type);
  unsigned char *without = malloc(bytes);
  cr_assert(without != NULL, "out of memory");
  memcpy(without, c->o.data, bytes);
  txattn_problem p = c->p;
  p.lse = 1;
  cr_assert(run_into(ctx, kernel, c, smallest, &p, &c->o), "%s declines lse on %s", kernel,
            c->desc);
  cr_assert(memcmp(without, c->o.data, bytes) == 0, "%s (%s) on %s: o differs from o without lse",
            kernel, how, c->desc);
  tcase_check_lse(c, kernel, how);
  free(without);
}

/* The combinations the lse battery runs: fp32 q and o, all bf16 (tiled.avx512bf16), all f16. */
static const int lse_combos[] = {0, 2, 3};

/* Every selected usable kernel of the context on every shape and the lse combinations, with the
   default and the smallest tunables, without lse and with it; returns how many kernels ran. */
static int check_plugin_dir_lse(const char *plugin_path, int threads) {
  setenv("TXATTN_CACHES", "l1d=48K,l2=1M,l3=32M", 1);
  txattn_context *ctx = plugin_path ? test_context_at(plugin_path, threads) : test_context(threads);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  int kernels = 0;
  for (size_t ki = 0; ki < l.n; ki++) {
    if (!l.k[ki].usable || !selected(l.k[ki].name, 0)) continue;
    kernels++;
    for (int si = 0; si < N_SHAPES; si++)
      for (size_t li = 0; li < sizeof lse_combos / sizeof lse_combos[0]; li++) {
        const txattn_dtype *types = combos[lse_combos[li]];
        struct tcase c;
        if (!takes(l.k[ki].name, types)) continue;
        tcase_init(&c, &shapes[si], types, (uint32_t)(si * 13 + li + 3));
        tcase_lse_init(&c);
        for (int smallest = 0; smallest < 2; smallest++) {
          cr_assert(run(ctx, l.k[ki].name, &c, smallest), "%s declines %s", l.k[ki].name, c.desc);
          tcase_check(&c, l.k[ki].name, smallest ? "smallest blocks" : "default blocks");
          check_lse(ctx, l.k[ki].name, &c, smallest);
        }
        tcase_free(&c);
      }
  }
  txattn_context_free(ctx);
  return kernels;
}

/* lse (issue 20): the build's kernels on 2 threads, and tiled_omp's test build on 3 (key splits:
   the lse of the merged partials). */
Test(tiled_dtypes, every_tiled_kernel_writes_lse_and_the_same_o) {
  cr_assert_geq(check_plugin_dir_lse(NULL, 2), 2, "tiled.scalar and tiled_omp.scalar did not run");
  cr_assert_geq(check_plugin_dir_lse(TXATTN_TEST_TEAM_PLUGIN_DIR, 3), 1);
}

Test(tiled_dtypes, every_tiled_kernel_is_exact_on_16_bit_tensors) {
  /* tiled and tiled_omp of every ISA up to the cap, at least scalar */
  cr_assert_geq(check_plugin_dir(NULL, 2, 0), 2, "tiled.scalar and tiled_omp.scalar did not run");
}

/* The test build of tiled_omp: a team for any work (2 and 3 threads), the smallest blocks. */
Test(tiled_dtypes, tiled_omp_parallel_paths_are_exact_on_16_bit_tensors) {
  cr_assert_geq(check_plugin_dir(TXATTN_TEST_TEAM_PLUGIN_DIR, 3, 0), 1);
  cr_assert_geq(check_plugin_dir(TXATTN_TEST_TEAM_PLUGIN_DIR, 2, 0), 1);
}

#ifdef TXATTN_TEST_EMU512_PLUGIN_DIR
/* The AVX-512 kernels on emulated intrinsics (they declare AVX2: skipped under a lower cap). */
Test(tiled_dtypes, emulated_avx512_kernels_are_exact_on_16_bit_tensors) {
  const int ran = check_plugin_dir(TXATTN_TEST_EMU512_PLUGIN_DIR, 2, 1) +
                  check_plugin_dir(TXATTN_TEST_EMU512_TEAM_PLUGIN_DIR, 3, 1);
  if (ran == 0) cr_skip_test("no usable emulated AVX-512 kernel (the ISA is capped below AVX2)");
  cr_assert_eq(ran, 6, "tiled.avx512, tiled_omp.avx512 and its test build, and their avx512bf16");
}
#endif

/* tiled_omp.<isa> on one thread runs tiled.<isa>'s loop: the same bits, padding included, in o
   and lse (run with lse: o is the same without, every_tiled_kernel_writes_lse_and_the_same_o). */
Test(tiled_dtypes, tiled_omp_on_one_thread_gives_the_bits_of_tiled_on_16_bit_tensors) {
  setenv("TXATTN_CACHES", "l1d=48K,l2=1M,l3=32M", 1);
  txattn_context *ctx = test_context(1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  int pairs = 0;
  for (size_t ki = 0; ki < l.n; ki++) {
    const char *name = l.k[ki].name;
    if (!l.k[ki].usable || strncmp(name, "tiled_omp.", 10) != 0) continue;
    char twin[64];
    snprintf(twin, sizeof twin, "tiled.%s", name + 10);
    const txattn_kernel_info *tk = test_kernel_find(&l, twin);
    cr_assert(tk != NULL && tk->usable, "%s is usable, %s is not", name, twin);
    for (int si = 0; si < N_SHAPES; si++)
      for (int ci = 0; ci < N_COMBOS; ci++) {
        struct tcase c;
        if (!takes(name, combos[ci])) continue;
        tcase_init(&c, &shapes[si], combos[ci], (uint32_t)(si * 17 + ci + 5));
        tcase_lse_init(&c);
        txattn_problem p = c.p;
        p.lse = 1;
        const size_t bytes = c.o.len * esize(c.o.type), lse_bytes = c.lse_len * sizeof(float);
        unsigned char *first = malloc(bytes);
        float *first_lse = malloc(lse_bytes);
        cr_assert(first != NULL && first_lse != NULL, "out of memory");
        cr_assert(run_into(ctx, name, &c, 0, &p, &c.o), "%s declines %s", name, c.desc);
        memcpy(first, c.o.data, bytes);
        memcpy(first_lse, c.lse, lse_bytes);
        cr_assert(run_into(ctx, twin, &c, 0, &p, &c.o), "%s declines %s", twin, c.desc);
        cr_assert(memcmp(first, c.o.data, bytes) == 0, "%s on one thread differs from %s on %s",
                  name, twin, c.desc);
        cr_assert(memcmp(first_lse, c.lse, lse_bytes) == 0,
                  "%s on one thread writes another lse than %s on %s", name, twin, c.desc);
        free(first);
        free(first_lse);
        tcase_free(&c);
      }
    pairs++;
  }
  cr_assert_geq(pairs, 1, "no usable tiled_omp kernel");
  txattn_context_free(ctx);
}
