/* SPDX-License-Identifier: MIT */
/* Mask tensors (txattn_problem.mask_tensor): boolean and additive masks of every type, broadcast
 * through zero strides, combined with the mask kinds, GQA, ragged batches, lse and every score
 * modifier. txattn_reference is checked against an fp64 computation written here from the header's
 * words; every kernel that declares TXATTN_KERNEL_MASK_TENSOR against txattn_reference within
 * txattn_error_bound (and txattn_lse_error_bound) on a battery and on adversarial values; a kernel
 * without the flag is never handed a mask; each refused input is named and leaves o untouched;
 * partial calls over key ranges merge into the whole. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "battery.h"
#include "elements.h"
#include "scratch.h"
#include "test_context.h"
#include "txattn/plugin.h"
#include "txattn/txattn.h"

static char dir[SCRATCH_PATH_MAX];

static void cleanup(void) {
  if (dir[0]) scratch_remove(dir);
  test_check_leaks();
}

TestSuite(masks, .init = test_env_clean, .fini = cleanup, .timeout = 300);

enum pattern {
  RANDOM,      /* each pair hidden with probability `hide`, else a bias in [-bias, bias) */
  DOCS,        /* documents of `doc` keys: a row sees only its own document's keys */
  HIDDEN_ROWS, /* RANDOM, and every third row wholly hidden */
  STRIPES,     /* the keys j % 3 == 1 hidden for every row (a padding mask) */
};

/* One problem with a mask tensor and contiguous inputs. Zero fields take the defaults. */
struct kshape {
  int64_t batch, heads_q, heads_kv, n_q, n_kv, d;
  txattn_mask mask;
  int64_t left, right;
  txattn_mask_tensor kind;
  txattn_dtype mask_type;
  enum pattern pattern;
  double hide, bias; /* RANDOM: the share of hidden pairs and the bias' amplitude */
  int64_t doc;       /* DOCS: keys per document */
  int bcast; /* bit 0: batch stride 0, bit 1: head stride 0, bit 2: row stride 0, bit 3: key 0 */
  float softcap, slope, sink;
  int64_t sink_keys;
  int ragged;
  float amplitude;
  txattn_dtype type;
};

struct kcase {
  struct kshape s;
  txattn_problem p;
  struct battery_data d;
  void *mask;
  txattn_mask_layout ml;
};

/* The mask's value for (b, h, i, j) as the header defines it: 0 / -inf for bool. */
static double mask_at(const struct kcase *c, int64_t b, int64_t h, int64_t i, int64_t j) {
  int64_t at = b * c->ml.batch + h * c->ml.head + i * c->ml.row + j * c->ml.key;
  if (c->p.mask_tensor == TXATTN_MASK_TENSOR_BOOL)
    return ((const unsigned char *)c->mask)[at] ? 0.0 : -INFINITY;
  return elem_load(c->mask, c->p.mask_type, (size_t)at);
}

static void fill_mask(struct kcase *c, uint64_t *st) {
  const struct kshape *s = &c->s;
  int64_t b = c->p.batch, hq = c->p.heads_q, nq = c->p.n_q, nkv = c->p.n_kv;
  c->ml.key = s->bcast & 8 ? 0 : 1;
  c->ml.row = s->bcast & 4 ? 0 : nkv;
  c->ml.head = s->bcast & 2 ? 0 : nq * nkv;
  c->ml.batch = s->bcast & 1 ? 0 : hq * nq * nkv;
  txattn_dtype mt = s->kind == TXATTN_MASK_TENSOR_BOOL ? TXATTN_DTYPE_F32 : s->mask_type;
  size_t n = battery_count(b, hq, nq, nkv),
         esz = s->kind == TXATTN_MASK_TENSOR_BOOL ? 1 : elem_size(mt);
  c->mask = malloc(n * esz + 1);
  cr_assert(c->mask != NULL);
  for (int64_t x = 0; x < b; x++)
    for (int64_t h = 0; h < hq; h++)
      for (int64_t i = 0; i < nq; i++)
        for (int64_t j = 0; j < nkv; j++) {
          int64_t pos = i + nkv - nq;
          int hidden;
          double bias = s->bias * battery_uniform(st);
          switch (s->pattern) {
          case DOCS:
            hidden = j / s->doc != (pos < 0 ? -1 : pos / s->doc);
            break;
          case STRIPES:
            hidden = j % 3 == 1;
            break;
          case HIDDEN_ROWS:
            hidden = i % 3 == 0 || (battery_uniform(st) + 1.0) / 2.0 < s->hide;
            break;
          default:
            hidden = (battery_uniform(st) + 1.0) / 2.0 < s->hide;
            break;
          }
          size_t at = (size_t)(x * c->ml.batch + h * c->ml.head + i * c->ml.row + j * c->ml.key);
          if (s->kind == TXATTN_MASK_TENSOR_BOOL)
            ((unsigned char *)c->mask)[at] = hidden ? 0 : (unsigned char)(1 + (at % 7));
          else
            elem_store(c->mask, mt, at, hidden ? -INFINITY : bias);
        }
}

static void kcase_init(struct kcase *c, const struct kshape *s, uint64_t seed) {
  memset(c, 0, sizeof *c);
  c->s = *s;
  uint64_t st = seed;
  int64_t hq = s->heads_q ? s->heads_q : 1, hkv = s->heads_kv ? s->heads_kv : hq,
          b = s->batch ? s->batch : 1, nkv = s->n_kv ? s->n_kv : s->n_q;
  double amp = s->amplitude > 0.0f ? s->amplitude : 1.0;
  c->p = (txattn_problem)TXATTN_PROBLEM_INIT;
  c->p.batch = b;
  c->p.heads_q = hq;
  c->p.heads_kv = hkv;
  c->p.n_q = s->n_q;
  c->p.n_kv = nkv;
  c->p.d_qk = s->d;
  c->p.mask = s->mask;
  c->p.window_left = s->left;
  c->p.window_right = s->right;
  c->p.q_type = c->p.k_type = c->p.v_type = c->p.o_type = s->type;
  c->p.lse = 1;
  c->p.ragged = s->ragged;
  c->p.softcap = s->softcap;
  c->p.alibi = s->slope != 0.0f;
  c->p.sinks = s->sink != 0.0f;
  c->p.sink_keys = s->sink_keys;
  c->p.mask_tensor = s->kind;
  c->p.mask_type = s->kind == TXATTN_MASK_TENSOR_ADDITIVE ? s->mask_type : TXATTN_DTYPE_F32;
  battery_data_init(&c->d, &c->p, &st, amp);
  for (int64_t h = 0; h < hq; h++) {
    c->d.slopes[h] = s->slope * (float)(h + 1) / (float)hq;
    c->d.sinks[h] = (float)(s->sink * battery_uniform(&st));
  }
  fill_mask(c, &st);
}

static void kcase_free(struct kcase *c) {
  battery_data_free(&c->d);
  free(c->mask);
}

static txattn_tensors kcase_tensors(const struct kcase *c, int ref) {
  txattn_tensors t = battery_tensors(&c->d, ref);
  t.mask = c->mask;
  t.mask_layout = c->ml;
  return t;
}

static void shape_name(const struct kshape *s, char *buf, size_t size) {
  static const char *const patterns[] = {"random", "docs", "hidden_rows", "stripes"};
  snprintf(buf, size,
           "b%lld h%lld/%lld n%lld/%lld d%lld %s(%lld,%lld) %s/%s %s hide %g bias %g doc %lld "
           "bcast %d softcap %g alibi %g sinks %g sink_keys %lld%s x%g %s",
           (long long)s->batch, (long long)s->heads_q, (long long)s->heads_kv, (long long)s->n_q,
           (long long)s->n_kv, (long long)s->d, txattn_mask_name(s->mask), (long long)s->left,
           (long long)s->right, s->kind == TXATTN_MASK_TENSOR_BOOL ? "bool" : "additive",
           txattn_dtype_name(s->mask_type), patterns[s->pattern], s->hide, s->bias,
           (long long)s->doc, s->bcast, (double)s->softcap, (double)s->slope, (double)s->sink,
           (long long)s->sink_keys, s->ragged ? " ragged" : "", (double)s->amplitude,
           txattn_dtype_name(s->type));
}

/* ---- an fp64 computation from txattn.h's words, independent of the library ---- */

static int in_kind(const txattn_problem *p, int64_t nq, int64_t nkv, int64_t i, int64_t j) {
  int64_t pos = i + nkv - nq;
  if (j < p->sink_keys) return 1;
  if (p->mask == TXATTN_MASK_CAUSAL) return j <= pos;
  if (p->mask == TXATTN_MASK_WINDOW)
    return (p->window_left < 0 || j >= pos - p->window_left) &&
           (p->window_right < 0 || j <= pos + p->window_right);
  return 1;
}

static void check_reference_by_words(const struct kcase *c, const char *name) {
  const txattn_problem *p = &c->p;
  const txattn_dtype t = p->q_type;
  int64_t d = p->d_qk, hkv = p->heads_kv, hq = p->heads_q;
  double worst = 0.0;
  float scale = p->scale != 0.0f ? p->scale : (float)(1.0 / sqrt((double)d));
  double *s = malloc((size_t)(p->n_kv + 1) * sizeof *s);
  cr_assert(d <= 64 && s != NULL);
  for (int64_t b = 0; b < p->batch; b++) {
    int64_t nq = c->d.q_lens[b], nkv = c->d.kv_lens[b];
    for (int64_t h = 0; h < hq; h++)
      for (int64_t i = 0; i < nq; i++) {
        double m = -INFINITY, z = 0.0, acc[64] = {0};
        for (int64_t j = 0; j < nkv; j++) {
          s[j] = -INFINITY;
          double bias = mask_at(c, b, h, i, j);
          if (!in_kind(p, nq, nkv, i, j) || bias == -INFINITY) continue;
          double dot = 0.0;
          for (int64_t x = 0; x < d; x++)
            dot +=
                elem_load(c->d.q, t, (size_t)(((b * hq + h) * p->n_q + i) * d + x)) *
                elem_load(c->d.k, t, (size_t)(((b * hkv + h / (hq / hkv)) * p->n_kv + j) * d + x));
          double sc = (double)scale * dot;
          if (p->softcap > 0.0f) sc = p->softcap * tanh(sc / p->softcap);
          if (p->alibi) sc += c->d.slopes[h] * (double)(j - (i + nkv - nq));
          s[j] = sc + bias;
          if (s[j] > m) m = s[j];
        }
        for (int64_t j = 0; j < nkv; j++) {
          if (s[j] == -INFINITY) continue;
          double w = exp(s[j] - m);
          z += w;
          for (int64_t x = 0; x < d; x++)
            acc[x] += w * elem_load(c->d.v, t,
                                    (size_t)(((b * hkv + h / (hq / hkv)) * p->n_kv + j) * d + x));
        }
        double den = z + (p->sinks && z > 0.0 ? exp(c->d.sinks[h] - m) : 0.0);
        size_t row = (size_t)((b * hq + h) * p->n_q + i);
        for (int64_t x = 0; x < d; x++) {
          double want = z > 0.0 ? acc[x] / den : 0.0, got = elem_load(c->d.o_ref, t, row * d + x);
          cr_assert(z > 0.0 || got == 0.0, "%s: a wholly hidden row is not zero", name);
          if (fabs(got - want) > worst) worst = fabs(got - want);
        }
        double lse = z > 0.0 ? m + log(z) : -INFINITY, got = c->d.lse_ref[row];
        cr_assert(got == (float)lse || fabs(got - lse) <= 1e-6 * (1.0 + fabs(lse)),
                  "%s: lse_ref of (%lld, %lld, %lld) is %.9g, the words give %.9g", name,
                  (long long)b, (long long)h, (long long)i, got, lse);
      }
  }
  free(s);
  double tol = t == TXATTN_DTYPE_F32 ? 1e-6 : t == TXATTN_DTYPE_F16 ? 1e-3 : 8e-3;
  cr_assert(worst <= tol, "%s: txattn_reference is %.3g from the header's words", name, worst);
}

static void run_reference(struct kcase *c) {
  txattn_tensors t = kcase_tensors(c, 1);
  cr_assert_eq(txattn_reference(&c->p, &t), TXATTN_OK, "%s", txattn_last_error());
}

/* ---- the battery ---- */

#define BOOL_MASK TXATTN_MASK_TENSOR_BOOL
#define ADD_MASK  TXATTN_MASK_TENSOR_ADDITIVE
static const struct kshape battery[] = {
    /* bool and additive of each type, each mask kind */
    {.n_q = 37, .d = 16, .kind = BOOL_MASK, .hide = 0.4},
    {.n_q = 37, .d = 16, .mask = TXATTN_MASK_CAUSAL, .kind = BOOL_MASK, .hide = 0.3},
    {.n_q = 37, .d = 16, .mask = TXATTN_MASK_CAUSAL, .kind = ADD_MASK, .hide = 0.3, .bias = 2.0},
    {.n_q = 37, .d = 16, .kind = ADD_MASK, .mask_type = TXATTN_DTYPE_F16, .hide = 0.3, .bias = 3.0},
    {.n_q = 37,
     .d = 16,
     .kind = ADD_MASK,
     .mask_type = TXATTN_DTYPE_BF16,
     .hide = 0.3,
     .bias = 3.0},
    {.n_q = 90,
     .d = 16,
     .mask = TXATTN_MASK_WINDOW,
     .left = 20,
     .right = 5,
     .kind = BOOL_MASK,
     .hide = 0.2},
    /* block-diagonal documents, with tiles wholly hidden, and n_q != n_kv */
    {.n_q = 300,
     .d = 32,
     .mask = TXATTN_MASK_CAUSAL,
     .kind = BOOL_MASK,
     .pattern = DOCS,
     .doc = 70},
    {.n_q = 260,
     .n_kv = 300,
     .d = 16,
     .mask = TXATTN_MASK_CAUSAL,
     .kind = ADD_MASK,
     .mask_type = TXATTN_DTYPE_F16,
     .pattern = DOCS,
     .doc = 64},
    {.n_q = 200, .d = 16, .kind = ADD_MASK, .pattern = HIDDEN_ROWS, .hide = 0.5, .bias = 1.0},
    {.n_q = 200, .d = 24, .kind = BOOL_MASK, .pattern = STRIPES},
    /* broadcast strides, GQA, batches */
    {.batch = 3,
     .heads_q = 4,
     .heads_kv = 2,
     .n_q = 45,
     .d = 16,
     .mask = TXATTN_MASK_CAUSAL,
     .kind = BOOL_MASK,
     .hide = 0.3,
     .bcast = 1},
    {.batch = 2,
     .heads_q = 6,
     .heads_kv = 2,
     .n_q = 45,
     .n_kv = 80,
     .d = 16,
     .kind = ADD_MASK,
     .mask_type = TXATTN_DTYPE_BF16,
     .hide = 0.2,
     .bias = 1.5,
     .bcast = 3},
    {.batch = 2,
     .heads_q = 3,
     .n_q = 33,
     .d = 16,
     .kind = BOOL_MASK,
     .pattern = STRIPES,
     .bcast = 7},
    /* ragged: each sequence's own rows and keys */
    {.batch = 4,
     .heads_q = 2,
     .n_q = 50,
     .n_kv = 60,
     .d = 16,
     .mask = TXATTN_MASK_CAUSAL,
     .kind = ADD_MASK,
     .hide = 0.3,
     .bias = 2.0,
     .ragged = 1},
    {.batch = 3,
     .heads_q = 2,
     .n_q = 130,
     .d = 16,
     .mask = TXATTN_MASK_CAUSAL,
     .kind = BOOL_MASK,
     .pattern = DOCS,
     .doc = 40,
     .ragged = 1,
     .bcast = 2},
    /* every modifier with a mask tensor */
    {.heads_q = 4,
     .heads_kv = 2,
     .n_q = 120,
     .d = 16,
     .mask = TXATTN_MASK_WINDOW,
     .left = 40,
     .right = 0,
     .kind = ADD_MASK,
     .mask_type = TXATTN_DTYPE_F16,
     .hide = 0.3,
     .bias = 2.0,
     .softcap = 5.0f,
     .slope = 0.5f,
     .sink = 2.0f,
     .sink_keys = 4,
     .amplitude = 2.0f},
    {.heads_q = 2,
     .n_q = 150,
     .d = 16,
     .mask = TXATTN_MASK_CAUSAL,
     .kind = BOOL_MASK,
     .pattern = DOCS,
     .doc = 50,
     .sink_keys = 3,
     .softcap = 3.0f},
    /* 16-bit tensors */
    {.n_q = 70,
     .d = 16,
     .mask = TXATTN_MASK_CAUSAL,
     .kind = BOOL_MASK,
     .hide = 0.3,
     .type = TXATTN_DTYPE_F16},
    {.n_q = 70,
     .d = 16,
     .kind = ADD_MASK,
     .mask_type = TXATTN_DTYPE_BF16,
     .hide = 0.3,
     .bias = 2.0,
     .type = TXATTN_DTYPE_BF16},
    /* decode: a few rows against many keys (tiled's direct path: chunks with hidden keys add the
       shown runs only, the others as without a mask), f32 copied and f16 read in place */
    {.heads_q = 8, .heads_kv = 2, .n_q = 1, .n_kv = 700, .d = 32, .kind = BOOL_MASK, .hide = 0.5},
    {.heads_q = 4,
     .heads_kv = 1,
     .n_q = 1,
     .n_kv = 600,
     .d = 64,
     .mask = TXATTN_MASK_CAUSAL,
     .kind = ADD_MASK,
     .mask_type = TXATTN_DTYPE_F16,
     .hide = 0.02,
     .bias = 2.0,
     .type = TXATTN_DTYPE_F16},
    {.heads_q = 2,
     .heads_kv = 1,
     .n_q = 2,
     .n_kv = 500,
     .d = 32,
     .mask = TXATTN_MASK_CAUSAL,
     .kind = BOOL_MASK,
     .pattern = DOCS,
     .doc = 100,
     .sink_keys = 3},
    /* decode with every modifier (banded's one-row path too), and a mask broadcast over the keys:
       one value a row, so some rows are hidden wholly */
    {.heads_q = 4,
     .heads_kv = 2,
     .n_q = 3,
     .n_kv = 500,
     .d = 32,
     .mask = TXATTN_MASK_WINDOW,
     .left = 200,
     .right = 0,
     .kind = ADD_MASK,
     .mask_type = TXATTN_DTYPE_F16,
     .hide = 0.3,
     .bias = 2.0,
     .softcap = 5.0f,
     .slope = 0.5f,
     .sink = 2.0f,
     .sink_keys = 4,
     .amplitude = 2.0f},
    {.heads_q = 8,
     .heads_kv = 2,
     .n_q = 1,
     .n_kv = 400,
     .d = 32,
     .mask = TXATTN_MASK_WINDOW,
     .left = 150,
     .right = 0,
     .kind = ADD_MASK,
     .mask_type = TXATTN_DTYPE_BF16,
     .hide = 0.4,
     .bias = 2.0,
     .bcast = 8,
     .sink_keys = 4,
     .sink = 1.0f},
};
#define N_BATTERY (sizeof battery / sizeof battery[0])

/* Large and adversarial values: biases of +-1e4 (each shifts the max), rows mostly hidden, large
   logits beside a bias. */
static const struct kshape adversarial[] = {
    {.n_q = 64, .d = 16, .kind = ADD_MASK, .hide = 0.2, .bias = 1e4},
    {.n_q = 64,
     .d = 16,
     .mask = TXATTN_MASK_CAUSAL,
     .kind = ADD_MASK,
     .mask_type = TXATTN_DTYPE_F16,
     .hide = 0.1,
     .bias = 1e4},
    {.n_q = 300, .d = 16, .kind = ADD_MASK, .hide = 0.97, .bias = 10.0},
    {.n_q = 300, .d = 16, .kind = BOOL_MASK, .pattern = HIDDEN_ROWS, .hide = 0.99},
    {.n_q = 100, .d = 32, .kind = ADD_MASK, .hide = 0.3, .bias = 30.0, .amplitude = 8.0f},
    {.n_q = 100,
     .d = 16,
     .kind = ADD_MASK,
     .mask_type = TXATTN_DTYPE_BF16,
     .hide = 0.5,
     .bias = 1e4,
     .softcap = 20.0f,
     .slope = 2.0f,
     .amplitude = 4.0f},
};
#define N_ADVERSARIAL (sizeof adversarial / sizeof adversarial[0])

Test(masks, the_reference_follows_the_headers_words) {
  const struct kshape *sets[2] = {battery, adversarial};
  size_t ns[2] = {N_BATTERY, N_ADVERSARIAL};
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < ns[k]; i++) {
      char name[400];
      shape_name(&sets[k][i], name, sizeof name);
      struct kcase c;
      kcase_init(&c, &sets[k][i], 11 + i);
      run_reference(&c);
      check_reference_by_words(&c, name);
      kcase_free(&c);
    }
}

/* Kernel k on c (battery_check_kernel): 1 if it ran within the bounds, 0 if it declined the shape
   (a kernel without TXATTN_KERNEL_MASK_TENSOR must). */
static int check_kernel(txattn_context *ctx, const txattn_kernel_info *k, struct kcase *c,
                        const char *name, double *worst) {
  const struct battery_call call = {&c->p, kcase_tensors(c, 0), c->d.o_ref, c->d.lse_ref,
                                    c->d.q_lens};
  return battery_check_kernel(ctx, k, TXATTN_KERNEL_MASK_TENSOR, &call, name, worst) > 0;
}

static void kernels_on(const struct kshape *set, size_t n, int threads) {
  txattn_context *ctx = test_context(threads);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  for (size_t i = 0; i < n; i++) {
    char name[400];
    shape_name(&set[i], name, sizeof name);
    struct kcase c;
    kcase_init(&c, &set[i], 101 + i);
    run_reference(&c);
    int ran = 0;
    for (size_t j = 0; j < l.n; j++) {
      if (!l.k[j].usable || !test_kernel_takes_types(&l.k[j], &c.p)) continue;
      double worst = 0.0;
      if (check_kernel(ctx, &l.k[j], &c, name, &worst)) {
        ran++;
        cr_log_info("%s: %s at %.3f of the bound", name, l.k[j].name, worst);
      }
    }
    cr_assert(ran >= 1, "%s: no kernel ran it (naive.scalar takes masks)", name);
    kcase_free(&c);
  }
  txattn_context_free(ctx);
}

Test(masks, every_kernel_with_the_flag_is_within_the_bound) {
  kernels_on(battery, N_BATTERY, 1);
}

Test(masks, every_kernel_on_three_threads) {
  kernels_on(battery, N_BATTERY, 3);
}

Test(masks, adversarial_values_stay_within_the_bound) {
  kernels_on(adversarial, N_ADVERSARIAL, 1);
}

/* A bool mask and the additive mask of the same 0 / -inf pattern give the same output, and a mask
   that hides nothing gives the plain call's output, bit for bit on naive. */
Test(masks, bool_and_additive_agree_and_an_open_mask_changes_nothing) {
  struct kshape s = {.heads_q = 2,
                     .n_q = 60,
                     .d = 16,
                     .mask = TXATTN_MASK_CAUSAL,
                     .kind = BOOL_MASK,
                     .pattern = DOCS,
                     .doc = 25};
  txattn_context *ctx = test_context(1);
  struct kcase c;
  kcase_init(&c, &s, 3);
  size_t n = battery_count(1, 2, 60, 16), cells = battery_count(1, 2, 60, 60);
  float *bool_o = malloc(n * sizeof *bool_o), *add = malloc(cells * sizeof *add);
  cr_assert(bool_o && add);
  for (size_t i = 0; i < cells; i++) add[i] = ((unsigned char *)c.mask)[i] ? 0.0f : -INFINITY;
  txattn_tensors t = kcase_tensors(&c, 0);
  cr_assert_eq(txattn_attention(ctx, &c.p, &t), TXATTN_OK, "%s", txattn_last_error());
  memcpy(bool_o, c.d.o, n * sizeof *bool_o);
  c.p.mask_tensor = ADD_MASK;
  t.mask = add;
  cr_assert_eq(txattn_attention(ctx, &c.p, &t), TXATTN_OK, "%s", txattn_last_error());
  double bound;
  cr_assert_eq(txattn_error_bound(&c.p, &t, &bound), TXATTN_OK);
  for (size_t i = 0; i < n; i++)
    cr_assert(fabs(bool_o[i] - ((float *)c.d.o)[i]) <= 2 * bound, "bool and additive differ at %zu",
              i);
  /* an open mask (all zero bias) is the plain call */
  for (size_t i = 0; i < cells; i++) add[i] = 0.0f;
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &c.p, "naive.scalar", &plan), TXATTN_OK);
  cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK);
  txattn_plan_free(plan);
  memcpy(bool_o, c.d.o, n * sizeof *bool_o);
  c.p.mask_tensor = TXATTN_MASK_TENSOR_NONE;
  cr_assert_eq(txattn_plan_create(ctx, &c.p, "naive.scalar", &plan), TXATTN_OK);
  cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK);
  txattn_plan_free(plan);
  cr_assert(memcmp(bool_o, c.d.o, n * sizeof *bool_o) == 0, "a zero bias changed naive's o");
  free(bool_o);
  free(add);
  kcase_free(&c);
  txattn_context_free(ctx);
}

/* Runs kernel k on c if it is usable, takes mask tensors and plans c; returns whether it ran. */
static int run_masked(txattn_context *ctx, const txattn_kernel_info *k, struct kcase *c) {
  txattn_plan *plan = NULL;
  if (!k->usable || !(k->flags & TXATTN_KERNEL_MASK_TENSOR) ||
      txattn_plan_create(ctx, &c->p, k->name, &plan) != TXATTN_OK)
    return 0;
  txattn_tensors t = kcase_tensors(c, 0);
  cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK, "%s: %s", k->name, txattn_last_error());
  txattn_plan_free(plan);
  return 1;
}

/* +inf or NaN in an additive mask at a visible pair makes that row NaN and no other (as a NaN
   input does); a NaN in the V row of a key the mask hides from every row reaches no row. */
Test(masks, non_finite_biases_and_hidden_nans) {
  struct kshape s = {.n_q = 40, .d = 16, .kind = ADD_MASK, .hide = 0.0, .bias = 1.0};
  txattn_context *ctx = test_context(1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  struct kcase c;
  kcase_init(&c, &s, 9);
  float *m = c.mask;
  m[5 * 40 + 7] = INFINITY;
  m[9 * 40 + 3] = NAN;
  for (int64_t i = 0; i < 40; i++) m[i * 40 + 20] = -INFINITY; /* key 20 hidden from all */
  for (int64_t x = 0; x < 16; x++) ((float *)c.d.v)[20 * 16 + x] = NAN;
  for (size_t j = 0; j < l.n; j++) {
    if (!run_masked(ctx, &l.k[j], &c)) continue;
    for (int64_t i = 0; i < 40; i++)
      for (int64_t x = 0; x < 16; x++) {
        float o = ((float *)c.d.o)[i * 16 + x];
        cr_assert((i == 5 || i == 9) == isnan(o), "%s: row %lld column %lld is %g", l.k[j].name,
                  (long long)i, (long long)x, o);
      }
  }
  run_reference(&c);
  for (int64_t i = 0; i < 40; i++)
    cr_assert((i == 5 || i == 9) == isnan(((float *)c.d.o_ref)[i * 16]), "reference row %lld",
              (long long)i);
  kcase_free(&c);
  txattn_context_free(ctx);
}

/* At decode (four heads over one kv head, a window and sink keys), on every kernel with the flag:
   a NaN in the V row of a key the mask hides from every row (a sink key, a key of the window)
   reaches no row, a row the mask hides wholly gets zeros and lse -inf, and a NaN bias at a visible
   key makes its own row NaN only. */
Test(masks, decode_rows_hidden_nans_empty_and_poisoned_rows) {
  struct kshape s = {.heads_q = 4,
                     .heads_kv = 1,
                     .n_q = 1,
                     .n_kv = 300,
                     .d = 16,
                     .mask = TXATTN_MASK_WINDOW,
                     .left = 100,
                     .right = 0,
                     .kind = ADD_MASK,
                     .bias = 1.0,
                     .sink_keys = 2};
  txattn_context *ctx = test_context(1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  struct kcase c;
  kcase_init(&c, &s, 23);
  float *m = c.mask, *o = c.d.o;
  for (int64_t h = 0; h < 4; h++) m[h * c.ml.head + 1] = m[h * c.ml.head + 260] = -INFINITY;
  for (int64_t x = 0; x < 16; x++)
    ((float *)c.d.v)[1 * 16 + x] = ((float *)c.d.v)[260 * 16 + x] = NAN;
  for (int64_t j = 0; j < 300; j++) m[1 * c.ml.head + j] = -INFINITY;
  m[2 * c.ml.head + 250] = NAN;
  int banded = 0, tiled = 0;
  for (size_t j = 0; j < l.n; j++) {
    if (!run_masked(ctx, &l.k[j], &c)) continue;
    banded += strncmp(l.k[j].name, "banded", 6) == 0;
    tiled += strncmp(l.k[j].name, "tiled", 5) == 0;
    for (int64_t x = 0; x < 16; x++) {
      cr_assert(isfinite(o[x]) && isfinite(o[3 * 16 + x]), "%s: column %lld of head 0 or 3",
                l.k[j].name, (long long)x);
      cr_assert(o[16 + x] == 0.0f, "%s: head 1 (hidden) column %lld is %g", l.k[j].name,
                (long long)x, (double)o[16 + x]);
      cr_assert(isnan(o[2 * 16 + x]), "%s: head 2 (a NaN bias) column %lld is %g", l.k[j].name,
                (long long)x, (double)o[2 * 16 + x]);
    }
    cr_assert(c.d.lse[1] == -INFINITY, "%s: the hidden row's lse is %g", l.k[j].name,
              (double)c.d.lse[1]);
  }
  cr_assert(banded >= 1 && tiled >= 1, "banded kernels: %d, tiled: %d ran the decode call", banded,
            tiled);
  kcase_free(&c);
  txattn_context_free(ctx);
}

/* ---- the dispatcher never hands a kernel a mask tensor it does not declare ---- */

#define BIGHINT_FILE   "txattn_test_bighint.so"
#define BIGHINT_KERNEL "bighint.scalar"

Test(masks, a_kernel_without_the_flag_is_never_handed_a_mask) {
  unsigned char mask[20 * 20];
  memset(mask, 1, sizeof mask);
  char path[2 * SCRATCH_PATH_MAX + 2];
  scratch_dir(dir, sizeof dir, 0755);
  scratch_copy_plugin(dir, BIGHINT_FILE, NULL, 0644);
  txattn_context *alone = test_context_at(dir, 1);
  snprintf(path, sizeof path, "%s:%s", TXATTN_TEST_PLUGIN_BUILD_DIR, dir);
  txattn_context *both = test_context_at(path, 1);
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.heads_q = 2;
  p.n_q = 20;
  p.d_qk = 8;
  p.mask = TXATTN_MASK_CAUSAL;
  p.mask_tensor = BOOL_MASK;
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(alone, &p, NULL, &plan), TXATTN_E_UNSUPPORTED);
  cr_assert(strstr(txattn_last_error(), "does not take a mask tensor") != NULL, "%s",
            txattn_last_error());
  cr_assert_eq(txattn_plan_create(alone, &p, BIGHINT_KERNEL, &plan), TXATTN_E_UNSUPPORTED);
  cr_assert(strstr(txattn_last_error(), "does not take a mask tensor") != NULL, "%s",
            txattn_last_error());
  cr_assert_eq(txattn_plan_create(both, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_str_neq(txattn_plan_kernel(plan), BIGHINT_KERNEL);
  txattn_plan_free(plan);
  float q[2 * 20 * 8] = {0}, o[2 * 20 * 8];
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = t.k = t.v = q;
  t.o = o;
  t.mask = mask;
  t.mask_layout = (txattn_mask_layout){0, 0, 20, 1};
  cr_assert_eq(txattn_attention(alone, &p, &t), TXATTN_E_UNSUPPORTED);
  p.mask_tensor = TXATTN_MASK_TENSOR_NONE;
  cr_assert_eq(txattn_plan_create(alone, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
  txattn_plan_free(plan);
  txattn_context_free(alone);
  txattn_context_free(both);
}

/* ---- validation ---- */

static void expect_invalid(const txattn_problem *p, const txattn_tensors *t, const char *needle) {
  float o0 = t->o[0];
  cr_assert_eq(txattn_reference(p, t), TXATTN_E_INVALID, "accepted (%s)", needle);
  cr_assert(strstr(txattn_last_error(), needle) != NULL, "'%s' does not name %s",
            txattn_last_error(), needle);
  cr_assert(t->o[0] == o0, "o changed on error");
  txattn_context *ctx = test_context(1);
  cr_assert_eq(txattn_attention(ctx, p, t), TXATTN_E_INVALID, "attention accepted (%s)", needle);
  cr_assert(t->o[0] == o0, "o changed on error");
  txattn_context_free(ctx);
}

Test(masks, the_fields_are_validated) {
  float x[2 * 4 * 8] = {0}, o[2 * 4 * 8 + 64] = {1.0f}, lse[8];
  float bias[2 * 4 * 4 + 1] = {0};
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.heads_q = 2;
  p.n_q = 4;
  p.d_qk = 8;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = t.k = t.v = x;
  t.o = o;
  t.mask = bias;
  t.mask_layout = (txattn_mask_layout){0, 16, 4, 1};
  p.mask_tensor = 3;
  expect_invalid(&p, &t, "mask_tensor = 3");
  p.mask_tensor = ADD_MASK;
  p.mask_type = 7;
  expect_invalid(&p, &t, "mask_type = 7");
  p.mask_type = TXATTN_DTYPE_F32;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
  t.mask = NULL;
  expect_invalid(&p, &t, "mask is NULL");
  t.mask = (const unsigned char *)bias + 2; /* an f32 mask off its alignment */
  expect_invalid(&p, &t, "not aligned");
  t.mask = bias;
  t.mask_layout.row = -4;
  expect_invalid(&p, &t, "mask_layout.row");
  t.mask_layout.row = 4;
  t.mask_layout.key = INT64_C(1) << 60;
  expect_invalid(&p, &t, "mask_layout.key");
  t.mask_layout.key = 1;
  t.mask_layout.head = INT64_C(1) << 54;
  expect_invalid(&p, &t, "mask_layout");
  t.mask_layout.head = 16;
  t.mask = o + 16; /* inside o */
  expect_invalid(&p, &t, "o overlaps mask");
  t.mask = bias;
  p.lse = 1;
  t.lse = (float *)bias + 4;
  expect_invalid(&p, &t, "overlaps mask");
  t.lse = lse;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
  /* a caller built before the mask tensor has none: bytes past its struct_size are not read */
  txattn_problem old = p;
  old.struct_size = TXATTN_PROBLEM_SIZE_0_2_MODIFIERS;
  old.mask_tensor = 9;
  txattn_problem r = TXATTN_PROBLEM_INIT;
  cr_assert_eq(txattn_problem_resolve(&old, &r), TXATTN_OK, "%s", txattn_last_error());
  cr_assert(r.mask_tensor == TXATTN_MASK_TENSOR_NONE);
  txattn_tensors told = t;
  told.struct_size = TXATTN_TENSORS_SIZE_0_2_MODIFIERS;
  expect_invalid(&p, &told, "mask is NULL");
  /* a bool mask resolves its type to 0: equal problems resolve equal */
  p.mask_tensor = BOOL_MASK;
  p.mask_type = TXATTN_DTYPE_BF16;
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK);
  cr_assert_eq(r.mask_type, TXATTN_DTYPE_F32);
}

/* The bound grows with the bias: the rounding of s + bias is taken at the bias' magnitude. */
Test(masks, the_bound_has_the_bias_term) {
  struct kshape s = {.n_q = 16, .d = 16, .kind = ADD_MASK, .bias = 1.0};
  struct kcase c;
  kcase_init(&c, &s, 21);
  txattn_tensors t = kcase_tensors(&c, 0);
  double small, large, lse_small, lse_large, rel;
  cr_assert_eq(txattn_error_bound(&c.p, &t, &small), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(txattn_lse_error_bound(&c.p, &t, &lse_small, &rel), TXATTN_OK);
  for (size_t i = 0; i < 16 * 16; i++) ((float *)c.mask)[i] *= 1e4f;
  cr_assert_eq(txattn_error_bound(&c.p, &t, &large), TXATTN_OK);
  cr_assert_eq(txattn_lse_error_bound(&c.p, &t, &lse_large, &rel), TXATTN_OK);
  cr_assert(large > 10 * small && lse_large > 10 * lse_small, "%g %g, %g %g", small, large,
            lse_small, lse_large);
  /* a hidden pair adds nothing: every bias -inf but one of 0 per row is the small bound's */
  for (size_t i = 0; i < 16 * 16; i++) ((float *)c.mask)[i] = i % 16 == 3 ? 0.0f : -INFINITY;
  cr_assert_eq(txattn_error_bound(&c.p, &t, &large), TXATTN_OK);
  cr_assert(large <= small, "%g %g", large, small);
  kcase_free(&c);
}

/* Two partial calls over disjoint key ranges (the mask offset to each) merge into the whole. */
Test(masks, partial_calls_merge_into_the_whole) {
  const int64_t nkv = 90, cut = 37;
  struct kshape s = {.heads_q = 2,
                     .n_q = 20,
                     .n_kv = nkv,
                     .d = 16,
                     .kind = ADD_MASK,
                     .mask_type = TXATTN_DTYPE_F16,
                     .hide = 0.4,
                     .bias = 2.0};
  struct kcase c;
  kcase_init(&c, &s, 31);
  run_reference(&c);
  txattn_context *ctx = test_context(1);
  size_t n = battery_count(1, 2, 20, 16);
  float *o[2], *l[2];
  txattn_tensors parts[2] = {TXATTN_TENSORS_INIT, TXATTN_TENSORS_INIT};
  for (int k = 0; k < 2; k++) {
    o[k] = malloc(n * sizeof(float));
    l[k] = malloc(2 * 20 * sizeof(float));
    cr_assert(o[k] && l[k]);
    txattn_problem p = c.p;
    p.n_kv = k ? nkv - cut : cut;
    txattn_tensors t = TXATTN_TENSORS_INIT;
    int64_t k0 = k ? cut : 0;
    t.q_data = c.d.q;
    t.k_data = (const float *)c.d.k + k0 * 16;
    t.v_data = (const float *)c.d.v + k0 * 16;
    t.k_layout = t.v_layout = (txattn_layout){0, nkv * 16, 16};
    t.o = o[k];
    t.lse = l[k];
    t.mask = (const uint16_t *)c.mask + k0;
    t.mask_layout = c.ml;
    cr_assert_eq(txattn_attention(ctx, &p, &t), TXATTN_OK, "%s", txattn_last_error());
    parts[k] = t;
  }
  txattn_tensors whole = TXATTN_TENSORS_INIT;
  float *mo = malloc(n * sizeof(float)), *ml = malloc(2 * 20 * sizeof(float));
  cr_assert(mo && ml);
  whole.o = mo;
  whole.lse = ml;
  txattn_problem mp = c.p;
  cr_assert_eq(txattn_merge(&mp, parts, 2, &whole), TXATTN_OK, "%s", txattn_last_error());
  txattn_tensors rt = kcase_tensors(&c, 1);
  double bound;
  cr_assert_eq(txattn_error_bound(&c.p, &rt, &bound), TXATTN_OK);
  for (size_t i = 0; i < n; i++)
    cr_assert(fabs(mo[i] - ((float *)c.d.o_ref)[i]) <= 2 * bound + 1e-6, "merged o[%zu] %g vs %g",
              i, mo[i], ((float *)c.d.o_ref)[i]);
  for (int k = 0; k < 2; k++) {
    free(o[k]);
    free(l[k]);
  }
  free(mo);
  free(ml);
  kcase_free(&c);
  txattn_context_free(ctx);
}

Test(masks, the_plan_describes_it) {
  txattn_context *ctx = test_context(1);
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.n_q = 8;
  p.d_qk = 8;
  p.mask_tensor = ADD_MASK;
  p.mask_type = TXATTN_DTYPE_F16;
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
  char buf[512];
  txattn_plan_describe(plan, buf, sizeof buf);
  cr_assert(strstr(buf, "mask_tensor=f16") != NULL, "%s", buf);
  txattn_plan_free(plan);
  txattn_context_free(ctx);
  cr_assert_str_eq(txattn_kernel_flag_name(TXATTN_KERNEL_MASK_TENSOR), "mask_tensor");
}
