/* SPDX-License-Identifier: MIT */
/* The score modifiers of txattn.h: softcap, ALiBi, sink logits and sink keys. txattn_reference is
 * checked against an fp64 computation written here from the header's words; every kernel that
 * declares a modifier against txattn_reference within txattn_error_bound (and its lse within
 * txattn_lse_error_bound) on a battery of shapes, combinations, ragged batches, 16-bit types and
 * adversarial values; every kernel that does not declare one is never handed it; txattn_merge
 * applies sinks once; txattn_alibi_slopes gives ggml's slopes; the visible-pair count includes the
 * sink keys. */
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

TestSuite(modifiers, .init = test_env_clean, .fini = cleanup, .timeout = 300);

/* One modified problem with contiguous inputs. Zero fields take the library's defaults. */
struct mshape {
  int64_t batch, heads_q, heads_kv, n_q, n_kv, d;
  txattn_mask mask;
  int64_t left, right;
  float softcap;
  float
      max_bias; /* > 0: ALiBi with txattn_alibi_slopes(heads_q, max_bias); < 0: slopes -max_bias */
  float sink;   /* 0: no sinks; else sink logits uniform in [-sink, sink), or sink_value */
  int sink_fixed; /* 1: every sink logit is sink_value */
  float sink_value;
  int64_t sink_keys;
  int ragged;        /* 1: sequence b has q_len n_q - b, kv_len n_kv - 2b (at least 0) */
  float amplitude;   /* inputs uniform in [-amplitude, amplitude); 0 means 1 */
  txattn_dtype type; /* of q, k, v and o */
};

struct mcase {
  struct mshape s;
  txattn_problem p;
  struct battery_data d;
};

static void mcase_init(struct mcase *c, const struct mshape *s, uint64_t seed) {
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
  c->p.alibi = s->max_bias != 0.0f;
  c->p.sinks = s->sink != 0.0f || s->sink_fixed;
  c->p.sink_keys = s->sink_keys;
  battery_data_init(&c->d, &c->p, &st, amp);
  if (s->max_bias > 0.0f)
    cr_assert_eq(txattn_alibi_slopes(hq, s->max_bias, c->d.slopes), TXATTN_OK);
  else
    for (int64_t h = 0; h < hq; h++) c->d.slopes[h] = -s->max_bias * (float)(h + 1) / (float)hq;
  for (int64_t h = 0; h < hq; h++)
    c->d.sinks[h] = s->sink_fixed ? s->sink_value : (float)(s->sink * battery_uniform(&st));
}

static void mcase_free(struct mcase *c) {
  battery_data_free(&c->d);
}

static txattn_tensors mcase_tensors(const struct mcase *c, int ref) {
  return battery_tensors(&c->d, ref);
}

static void shape_name(const struct mshape *s, char *buf, size_t size) {
  snprintf(buf, size,
           "b%lld h%lld/%lld n%lld/%lld d%lld %s(%lld,%lld) softcap %g alibi %g sinks %g%s "
           "sink_keys %lld%s x%g %s",
           (long long)s->batch, (long long)s->heads_q, (long long)s->heads_kv, (long long)s->n_q,
           (long long)s->n_kv, (long long)s->d, txattn_mask_name(s->mask), (long long)s->left,
           (long long)s->right, (double)s->softcap, (double)s->max_bias,
           s->sink_fixed ? (double)s->sink_value : (double)s->sink, s->sink_fixed ? "(fixed)" : "",
           (long long)s->sink_keys, s->ragged ? " ragged" : "", (double)s->amplitude,
           txattn_dtype_name(s->type));
}

/* ---- an fp64 computation from txattn.h's words, independent of the library ---- */

static int visible(const txattn_problem *p, int64_t nq, int64_t nkv, int64_t i, int64_t j) {
  int64_t pos = i + nkv - nq;
  if (j < p->sink_keys) return 1;
  if (p->mask == TXATTN_MASK_CAUSAL) return j <= pos;
  if (p->mask == TXATTN_MASK_WINDOW)
    return (p->window_left < 0 || j >= pos - p->window_left) &&
           (p->window_right < 0 || j <= pos + p->window_right);
  return 1;
}

/* Checks txattn_reference's o_ref and lse_ref against the words of the header. */
static void check_reference_by_words(const struct mcase *c, const char *name) {
  const txattn_problem *p = &c->p;
  const txattn_dtype t = p->q_type;
  int64_t d = p->d_qk, hkv = p->heads_kv, hq = p->heads_q;
  double worst = 0.0;
  for (int64_t b = 0; b < p->batch; b++) {
    int64_t nq = c->d.q_lens[b], nkv = c->d.kv_lens[b];
    for (int64_t h = 0; h < hq; h++)
      for (int64_t i = 0; i < nq; i++) {
        double m = -INFINITY, z = 0.0, acc[64] = {0};
        double *s = malloc((size_t)(nkv + 1) * sizeof *s);
        cr_assert(d <= 64 && s != NULL);
        for (int64_t j = 0; j < nkv; j++) {
          if (!visible(p, nq, nkv, i, j)) continue;
          double dot = 0.0;
          for (int64_t x = 0; x < d; x++)
            dot +=
                elem_load(c->d.q, t, (size_t)(((b * hq + h) * p->n_q + i) * d + x)) *
                elem_load(c->d.k, t, (size_t)(((b * hkv + h / (hq / hkv)) * p->n_kv + j) * d + x));
          float scale = p->scale != 0.0f ? p->scale : (float)(1.0 / sqrt((double)d));
          double sc = (double)scale * dot;
          if (p->softcap > 0.0f) sc = p->softcap * tanh(sc / p->softcap);
          if (p->alibi) sc += c->d.slopes[h] * (double)(j - (i + nkv - nq));
          s[j] = sc;
          if (sc > m) m = sc;
        }
        for (int64_t j = 0; j < nkv; j++) {
          if (!visible(p, nq, nkv, i, j)) continue;
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
          double err = fabs(got - want);
          if (err > worst) worst = err;
        }
        double lse = z > 0.0 ? m + log(z) : -INFINITY, got = c->d.lse_ref[row];
        cr_assert(got == (float)lse || fabs(got - lse) <= 1e-6 * (1.0 + fabs(lse)),
                  "%s: lse_ref of (%lld, %lld, %lld) is %.9g, the words give %.9g", name,
                  (long long)b, (long long)h, (long long)i, got, lse);
        free(s);
      }
  }
  /* one rounding of O to its type */
  double tol = t == TXATTN_DTYPE_F32 ? 1e-6 : t == TXATTN_DTYPE_F16 ? 1e-3 : 8e-3;
  cr_assert(worst <= tol, "%s: txattn_reference is %.3g from the header's words", name, worst);
}

static void run_reference(struct mcase *c) {
  txattn_tensors t = mcase_tensors(c, 1);
  cr_assert_eq(txattn_reference(&c->p, &t), TXATTN_OK, "%s", txattn_last_error());
}

/* ---- the battery ---- */

static const struct mshape battery[] = {
    /* each modifier alone */
    {.n_q = 37, .d = 16, .mask = TXATTN_MASK_CAUSAL, .softcap = 2.0f, .amplitude = 3.0f},
    {.n_q = 37, .d = 16, .mask = TXATTN_MASK_CAUSAL, .max_bias = 8.0f, .heads_q = 4},
    {.n_q = 37, .d = 16, .mask = TXATTN_MASK_CAUSAL, .sink = 3.0f, .heads_q = 2},
    {.n_q = 70, .d = 16, .mask = TXATTN_MASK_WINDOW, .left = 9, .right = 0, .sink_keys = 4},
    /* combinations, GQA, windows on both sides, n_q != n_kv */
    {.heads_q = 4,
     .heads_kv = 2,
     .n_q = 45,
     .n_kv = 80,
     .d = 32,
     .mask = TXATTN_MASK_WINDOW,
     .left = 12,
     .right = 3,
     .softcap = 5.0f,
     .max_bias = 8.0f,
     .sink = 2.0f,
     .sink_keys = 3},
    {.heads_q = 3,
     .n_q = 8,
     .n_kv = 300,
     .d = 24,
     .mask = TXATTN_MASK_CAUSAL,
     .softcap = 30.0f,
     .sink = 1.0f,
     .amplitude = 4.0f},
    {.heads_q = 8,
     .heads_kv = 1,
     .n_q = 1,
     .n_kv = 513,
     .d = 64,
     .mask = TXATTN_MASK_WINDOW,
     .left = 127,
     .right = 0,
     .max_bias = 8.0f,
     .sink = 2.0f,
     .sink_keys = 4},
    {.n_q = 300, .d = 16, .mask = TXATTN_MASK_NONE, .max_bias = -0.25f, .softcap = 1.0f},
    {.n_q = 130, .n_kv = 40, .d = 8, .mask = TXATTN_MASK_CAUSAL, .sink_keys = 5, .sink = 1.0f},
    {.n_q = 260, .d = 40, .mask = TXATTN_MASK_WINDOW, .left = 31, .right = 31, .sink_keys = 64},
    /* ragged: positions and sink keys per sequence */
    {.batch = 3,
     .heads_q = 2,
     .n_q = 33,
     .n_kv = 40,
     .d = 16,
     .mask = TXATTN_MASK_WINDOW,
     .left = 6,
     .right = 0,
     .max_bias = 4.0f,
     .sink = 1.0f,
     .sink_keys = 2,
     .softcap = 3.0f,
     .ragged = 1},
    {.batch = 4,
     .n_q = 1,
     .n_kv = 90,
     .d = 32,
     .mask = TXATTN_MASK_CAUSAL,
     .max_bias = 8.0f,
     .sink_keys = 4,
     .ragged = 1},
    /* StreamingLLM (sink keys beside a window) in groups of rows and row by row; a window wider
       than one float chunk of the banded kernels with every modifier; decode rows (at most 4 rows
       per kv head: tiled's direct path), f32 and f16 */
    {.heads_q = 4,
     .heads_kv = 2,
     .n_q = 200,
     .d = 32,
     .mask = TXATTN_MASK_WINDOW,
     .left = 60,
     .right = 0,
     .sink_keys = 4},
    {.heads_q = 2,
     .n_q = 40,
     .n_kv = 700,
     .d = 24,
     .mask = TXATTN_MASK_WINDOW,
     .left = 300,
     .right = 0,
     .softcap = 8.0f,
     .max_bias = 8.0f,
     .sink = 2.0f,
     .sink_keys = 4,
     .amplitude = 2.0f},
    {.heads_q = 4,
     .heads_kv = 1,
     .n_q = 1,
     .n_kv = 600,
     .d = 40,
     .mask = TXATTN_MASK_CAUSAL,
     .softcap = 10.0f,
     .max_bias = 4.0f,
     .sink = 1.0f},
    {.heads_q = 2,
     .heads_kv = 1,
     .n_q = 2,
     .n_kv = 300,
     .d = 32,
     .mask = TXATTN_MASK_WINDOW,
     .left = 200,
     .right = 0,
     .softcap = 3.0f,
     .max_bias = 8.0f,
     .type = TXATTN_DTYPE_F16},
    /* decode with sink keys beside a window (tiled's direct path: a pass over the sink keys, then
       the window), f32 copied and f16 read in place */
    {.heads_q = 4,
     .heads_kv = 1,
     .n_q = 1,
     .n_kv = 700,
     .d = 64,
     .mask = TXATTN_MASK_WINDOW,
     .left = 100,
     .right = 0,
     .sink_keys = 4,
     .max_bias = 8.0f,
     .sink = 1.0f},
    {.heads_q = 2,
     .heads_kv = 1,
     .n_q = 2,
     .n_kv = 500,
     .d = 64,
     .mask = TXATTN_MASK_WINDOW,
     .left = 200,
     .right = 0,
     .sink_keys = 5,
     .softcap = 5.0f,
     .type = TXATTN_DTYPE_F16},
    /* 16-bit tensors */
    {.heads_q = 2,
     .n_q = 50,
     .d = 32,
     .mask = TXATTN_MASK_CAUSAL,
     .softcap = 4.0f,
     .max_bias = 8.0f,
     .sink = 2.0f,
     .type = TXATTN_DTYPE_F16},
    {.n_q = 66,
     .d = 16,
     .mask = TXATTN_MASK_WINDOW,
     .left = 10,
     .right = 2,
     .sink_keys = 3,
     .softcap = 2.0f,
     .type = TXATTN_DTYPE_BF16},
};
#define N_BATTERY (sizeof battery / sizeof battery[0])

/* Adversarial values: scores far past the cap, steep slopes, sinks that dominate, no sink. */
static const struct mshape adversarial[] = {
    {.n_q = 64, .d = 64, .mask = TXATTN_MASK_CAUSAL, .softcap = 50.0f, .amplitude = 30.0f},
    {.n_q = 64, .d = 64, .mask = TXATTN_MASK_NONE, .softcap = 0.5f, .amplitude = 8.0f},
    {.heads_q = 2, .n_q = 200, .d = 16, .mask = TXATTN_MASK_NONE, .max_bias = -4.0f},
    {.n_q = 300, .d = 16, .mask = TXATTN_MASK_CAUSAL, .max_bias = -0.5f, .amplitude = 4.0f},
    {.heads_q = 2,
     .n_q = 40,
     .d = 16,
     .mask = TXATTN_MASK_CAUSAL,
     .sink_fixed = 1,
     .sink_value = 1e30f},
    {.heads_q = 2,
     .n_q = 40,
     .d = 16,
     .mask = TXATTN_MASK_CAUSAL,
     .sink_fixed = 1,
     .sink_value = 60.0f,
     .amplitude = 2.0f},
    {.heads_q = 2,
     .n_q = 40,
     .d = 16,
     .mask = TXATTN_MASK_CAUSAL,
     .sink_fixed = 1,
     .sink_value = -INFINITY,
     .sink_keys = 3},
    {.n_q = 100,
     .d = 32,
     .mask = TXATTN_MASK_WINDOW,
     .left = 3,
     .right = 0,
     .sink_keys = 2,
     .max_bias = -2.0f,
     .softcap = 20.0f,
     .sink = 40.0f,
     .amplitude = 10.0f},
};
#define N_ADVERSARIAL (sizeof adversarial / sizeof adversarial[0])

Test(modifiers, the_reference_follows_the_headers_words) {
  for (int set = 0; set < 2; set++)
    for (size_t i = 0; i < (set ? N_ADVERSARIAL : N_BATTERY); i++) {
      const struct mshape *s = set ? &adversarial[i] : &battery[i];
      char name[256];
      shape_name(s, name, sizeof name);
      struct mcase c;
      mcase_init(&c, s, 11 + i);
      run_reference(&c);
      check_reference_by_words(&c, name);
      mcase_free(&c);
    }
}

static unsigned needed_flags(const txattn_problem *p) {
  return (p->softcap > 0.0f ? TXATTN_KERNEL_SOFTCAP : 0) | (p->alibi ? TXATTN_KERNEL_ALIBI : 0) |
         (p->sinks ? TXATTN_KERNEL_SINKS : 0) |
         (p->sink_keys > 0 && p->mask != TXATTN_MASK_NONE ? TXATTN_KERNEL_SINK_KEYS : 0);
}

/* Kernel k on c (battery_check_kernel): 1 if it ran within the bounds, 0 if it declined the shape,
   or, rightly, a modifier it does not declare (saying so). */
static int check_kernel(txattn_context *ctx, const txattn_kernel_info *k, struct mcase *c,
                        const char *name, double *worst) {
  const struct battery_call call = {&c->p, mcase_tensors(c, 0), c->d.o_ref, c->d.lse_ref,
                                    c->d.q_lens};
  const int ran = battery_check_kernel(ctx, k, needed_flags(&c->p), &call, name, worst);
  if (ran < 0)
    cr_assert(strstr(txattn_last_error(), "does not compute") != NULL ||
                  strstr(txattn_last_error(), "does not write lse") != NULL,
              "%s: %s: %s", name, k->name, txattn_last_error());
  return ran > 0;
}

static void kernels_on(const struct mshape *set, size_t n, int threads) {
  txattn_context *ctx = test_context(threads);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  for (size_t i = 0; i < n; i++) {
    char name[256];
    shape_name(&set[i], name, sizeof name);
    struct mcase c;
    mcase_init(&c, &set[i], 101 + i);
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
    cr_assert(ran >= 1, "%s: no kernel ran it (naive.scalar takes every modifier)", name);
    mcase_free(&c);
  }
  txattn_context_free(ctx);
}

Test(modifiers, every_kernel_that_declares_them_is_within_the_bound) {
  kernels_on(battery, N_BATTERY, 1);
}

Test(modifiers, every_kernel_on_two_threads) {
  kernels_on(battery, N_BATTERY, 2);
}

Test(modifiers, adversarial_values_stay_within_the_bound) {
  kernels_on(adversarial, N_ADVERSARIAL, 1);
}

/* The banded kernels, threaded or not, declare every modifier and run every unragged case of the
   battery within the bound, on 1, 2 and 3 threads (banded_omp splits a head's rows between
   threads, each range starting its own groups). */
Test(modifiers, banded_kernels_take_every_modifier_on_every_thread_count) {
  for (int threads = 1; threads <= 3; threads++) {
    txattn_context *ctx = test_context(threads);
    struct kernel_list l;
    test_kernel_list(ctx, &l);
    int kernels = 0;
    for (size_t j = 0; j < l.n; j++) {
      if (strncmp(l.k[j].name, "banded", 6) != 0 || !l.k[j].usable) continue;
      kernels++;
      cr_assert_eq(l.k[j].flags & TXATTN_KERNEL_MODIFIERS, TXATTN_KERNEL_MODIFIERS,
                   "%s lacks a modifier's flag", l.k[j].name);
      for (size_t i = 0; i < N_BATTERY; i++) {
        if (battery[i].ragged) continue; /* the banded kernels take no ragged batch */
        char name[256];
        shape_name(&battery[i], name, sizeof name);
        struct mcase c;
        mcase_init(&c, &battery[i], 301 + i);
        run_reference(&c);
        double worst = 0.0;
        cr_assert(check_kernel(ctx, &l.k[j], &c, name, &worst), "%s: %s declined it (%s)", name,
                  l.k[j].name, txattn_last_error());
        mcase_free(&c);
      }
    }
    cr_assert(kernels >= 4, "%d banded kernels usable (scalar and a vector one, each threaded)",
              kernels);
    txattn_context_free(ctx);
  }
}

/* Every kernel that takes all four modifiers is listed, with naive among them. */
Test(modifiers, naive_takes_every_modifier) {
  txattn_context *ctx = test_context(1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  const txattn_kernel_info *k = test_kernel_find(&l, "naive.scalar");
  cr_assert(k != NULL);
  cr_assert_eq(k->flags & TXATTN_KERNEL_MODIFIERS, TXATTN_KERNEL_MODIFIERS);
  txattn_context_free(ctx);
}

/* A sink logit of -inf is no sink, bit for bit, on the kernels that take sinks. */
Test(modifiers, a_sink_of_minus_inf_is_no_sink) {
  struct mshape s = {.heads_q = 2,
                     .n_q = 40,
                     .d = 16,
                     .mask = TXATTN_MASK_CAUSAL,
                     .sink_fixed = 1,
                     .sink_value = -INFINITY,
                     .softcap = 3.0f};
  txattn_context *ctx = test_context(1);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  struct mcase c;
  mcase_init(&c, &s, 5);
  size_t n = battery_count(1, 2, 40, 16);
  float *plain = malloc(n * sizeof *plain);
  cr_assert(plain != NULL);
  for (size_t j = 0; j < l.n; j++) {
    if (!l.k[j].usable || !(l.k[j].flags & TXATTN_KERNEL_SINKS) ||
        !test_kernel_takes_types(&l.k[j], &c.p))
      continue;
    txattn_tensors t = mcase_tensors(&c, 0);
    c.p.sinks = 0;
    txattn_plan *plan = NULL;
    cr_assert_eq(txattn_plan_create(ctx, &c.p, l.k[j].name, &plan), TXATTN_OK);
    cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK);
    txattn_plan_free(plan);
    memcpy(plain, c.d.o, n * sizeof *plain);
    c.p.sinks = 1;
    cr_assert_eq(txattn_plan_create(ctx, &c.p, l.k[j].name, &plan), TXATTN_OK);
    cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK);
    txattn_plan_free(plan);
    cr_assert(memcmp(plain, c.d.o, n * sizeof *plain) == 0, "%s: a -inf sink changed o",
              l.k[j].name);
  }
  free(plain);
  mcase_free(&c);
  txattn_context_free(ctx);
}

/* ---- the dispatcher never hands a kernel a modifier it does not declare ---- */

#define BIGHINT_FILE   "txattn_test_bighint.so"
#define BIGHINT_KERNEL "bighint.scalar"

Test(modifiers, a_kernel_without_the_flags_is_never_handed_a_modifier) {
  static const struct {
    float softcap;
    int alibi, sinks;
    int64_t sink_keys;
    const char *why;
  } asks[] = {{2.0f, 0, 0, 0, "does not compute softcap"},
              {0.0f, 1, 0, 0, "does not compute ALiBi"},
              {0.0f, 0, 1, 0, "does not compute sink logits"},
              {0.0f, 0, 0, 4, "does not compute sink keys"}};
  float slopes[2] = {0.5f, 0.25f}, sinks[2] = {1.0f, 2.0f};
  char path[2 * SCRATCH_PATH_MAX + 2];
  scratch_dir(dir, sizeof dir, 0755);
  scratch_copy_plugin(dir, BIGHINT_FILE, NULL, 0644);
  /* alone, the kernel that claims a million GFLOP/s (ABI flags of 1.5: no modifier) cannot plan */
  txattn_context *alone = test_context_at(dir, 1);
  snprintf(path, sizeof path, "%s:%s", TXATTN_TEST_PLUGIN_BUILD_DIR, dir);
  txattn_context *both = test_context_at(path, 1);
  for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
    txattn_problem p = {
        .heads_q = 2, .n_q = 20, .d_qk = 8, .mask = TXATTN_MASK_CAUSAL, .struct_size = sizeof p};
    p.softcap = asks[i].softcap;
    p.alibi = asks[i].alibi;
    p.sinks = asks[i].sinks;
    p.sink_keys = asks[i].sink_keys;
    txattn_plan *plan = NULL;
    cr_assert_eq(txattn_plan_create(alone, &p, NULL, &plan), TXATTN_E_UNSUPPORTED);
    cr_assert(strstr(txattn_last_error(), asks[i].why) != NULL, "%s", txattn_last_error());
    cr_assert_eq(txattn_plan_create(alone, &p, BIGHINT_KERNEL, &plan), TXATTN_E_UNSUPPORTED);
    cr_assert(strstr(txattn_last_error(), asks[i].why) != NULL, "%s", txattn_last_error());
    cr_assert_eq(txattn_plan_create(both, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
    cr_assert_str_neq(txattn_plan_kernel(plan), BIGHINT_KERNEL);
    txattn_plan_free(plan);
    /* txattn_attention follows the same gate */
    float q[2 * 20 * 8] = {0}, o[2 * 20 * 8];
    txattn_tensors t = TXATTN_TENSORS_INIT;
    t.q = t.k = t.v = q;
    t.o = o;
    t.alibi_slopes = slopes;
    t.sinks = sinks;
    cr_assert_eq(txattn_attention(alone, &p, &t), TXATTN_E_UNSUPPORTED);
    /* without the modifier, it plans */
    p.softcap = 0.0f;
    p.alibi = p.sinks = 0;
    p.sink_keys = 0;
    cr_assert_eq(txattn_plan_create(alone, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
    txattn_plan_free(plan);
  }
  txattn_context_free(alone);
  txattn_context_free(both);
}

/* ---- txattn_attention's plan cache ---- */

Test(modifiers, attention_caches_a_plan_per_modified_problem) {
  /* one context, the same shape with and without each modifier, in turns: each call runs a plan
     of its own problem (the cache's key includes the modifiers) */
  struct mshape with[] = {
      {.heads_q = 2, .n_q = 9, .d = 8, .mask = TXATTN_MASK_CAUSAL, .softcap = 0.5f},
      {.heads_q = 2, .n_q = 9, .d = 8, .mask = TXATTN_MASK_CAUSAL, .max_bias = 8.0f},
      {.heads_q = 2, .n_q = 9, .d = 8, .mask = TXATTN_MASK_CAUSAL, .sink = 3.0f},
      {.heads_q = 2, .n_q = 9, .d = 8, .mask = TXATTN_MASK_WINDOW, .left = 1, .sink_keys = 3},
  };
  txattn_context *ctx = test_context(1);
  for (size_t i = 0; i < sizeof with / sizeof with[0]; i++) {
    struct mshape plain = with[i];
    plain.softcap = plain.max_bias = plain.sink = 0.0f;
    plain.sink_keys = 0;
    const struct mshape *turns[3] = {&plain, &with[i], &plain};
    for (int k = 0; k < 3; k++) {
      char name[256];
      shape_name(turns[k], name, sizeof name);
      struct mcase c;
      mcase_init(&c, turns[k], 31 + i);
      run_reference(&c);
      txattn_tensors t = mcase_tensors(&c, 0), r = mcase_tensors(&c, 1);
      cr_assert_eq(txattn_attention(ctx, &c.p, &t), TXATTN_OK, "%s: %s", name, txattn_last_error());
      double bound = 0.0;
      cr_assert_eq(txattn_error_bound(&c.p, &r, &bound), TXATTN_OK);
      for (size_t x = 0; x < battery_count(1, 2, 9, 8); x++) {
        double e = fabs((double)((float *)c.d.o)[x] - ((float *)c.d.o_ref)[x]);
        cr_assert(e <= bound, "%s, turn %d: |o - ref| = %.3g > %.3g at %zu", name, k, e, bound, x);
      }
      mcase_free(&c);
    }
  }
  txattn_context_free(ctx);
}

/* ---- txattn_merge applies the sinks once ---- */

Test(modifiers, merge_applies_the_sinks_once) {
  /* mask none and a softcap: the score of a key does not depend on which part holds it */
  const int64_t hq = 3, nq = 7, nkv = 50, d = 16, cuts[4] = {0, 9, 10, 50};
  struct mshape s = {.heads_q = hq,
                     .n_q = nq,
                     .n_kv = nkv,
                     .d = d,
                     .mask = TXATTN_MASK_NONE,
                     .softcap = 4.0f,
                     .sink = 3.0f,
                     .amplitude = 2.0f};
  struct mcase c;
  mcase_init(&c, &s, 77);
  c.d.sinks[1] = 30.0f;     /* a dominating sink */
  c.d.sinks[2] = -INFINITY; /* none */
  run_reference(&c);
  float *po[3], *pl[3];
  txattn_tensors parts[3] = {TXATTN_TENSORS_INIT, TXATTN_TENSORS_INIT, TXATTN_TENSORS_INIT};
  for (int i = 0; i < 3; i++) {
    txattn_problem p = c.p;
    p.sinks = 0;
    p.n_kv = cuts[i + 1] - cuts[i];
    po[i] = malloc((size_t)(hq * nq * d) * sizeof(float));
    pl[i] = malloc((size_t)(hq * nq) * sizeof(float));
    cr_assert(po[i] && pl[i]);
    txattn_tensors t = TXATTN_TENSORS_INIT;
    t.q_data = c.d.q;
    t.k = (const float *)c.d.k + cuts[i] * d;
    t.v = (const float *)c.d.v + cuts[i] * d;
    t.k_layout = t.v_layout = (txattn_layout){hq * nkv * d, nkv * d, d};
    t.o = po[i];
    t.lse = pl[i];
    cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
    parts[i] = t;
  }
  float *o = malloc((size_t)(hq * nq * d) * sizeof *o), *lse = malloc((size_t)(hq * nq) * 4);
  cr_assert(o && lse);
  txattn_tensors out = TXATTN_TENSORS_INIT;
  out.o = o;
  out.lse = lse;
  out.sinks = c.d.sinks;
  cr_assert_eq(txattn_merge(&c.p, parts, 3, &out), TXATTN_OK, "%s", txattn_last_error());
  double worst = 0.0;
  for (int64_t r = 0; r < hq * nq; r++) {
    for (int64_t x = 0; x < d; x++) {
      double e = fabs((double)o[r * d + x] - ((float *)c.d.o_ref)[r * d + x]);
      if (e > worst) worst = e;
    }
    cr_assert(fabs(lse[r] - c.d.lse_ref[r]) <= 1e-6 * (1.0 + fabs(c.d.lse_ref[r])),
              "row %lld: merged lse %.9g, whole %.9g", (long long)r, lse[r], c.d.lse_ref[r]);
  }
  /* parts within u/2, 3 parts' merge within (3n + 3 + max|lse|) u max|V| (docs/error_bound.md) */
  cr_assert(worst <= 0x1p-24 * (12.0 + 10.0), "merged o is %.3g from the whole", worst);
  /* the head whose sink dominates is nearly zero, and not the plain merge */
  cr_assert(fabs(o[1 * nq * d]) < 1e-6);
  /* sinks asked but missing: E_INVALID, o untouched */
  out.sinks = NULL;
  o[0] = 12345.0f;
  cr_assert_eq(txattn_merge(&c.p, parts, 3, &out), TXATTN_E_INVALID);
  cr_assert(strstr(txattn_last_error(), "sinks") != NULL, "%s", txattn_last_error());
  cr_assert(o[0] == 12345.0f);
  for (int i = 0; i < 3; i++) {
    free(po[i]);
    free(pl[i]);
  }
  free(o);
  free(lse);
  mcase_free(&c);
}

/* ---- the API's edges ---- */

Test(modifiers, alibi_slopes_are_ggmls) {
  float m[12];
  cr_assert_eq(txattn_alibi_slopes(8, 8.0f, m), TXATTN_OK);
  for (int h = 0; h < 8; h++) cr_assert_eq(m[h], ldexpf(1.0f, -(h + 1)), "head %d: %g", h, m[h]);
  /* 12 heads: 8 from m0 = 2^-1, then m1 = 2^-0.5 to the odd powers 1, 3, 5, 7 */
  cr_assert_eq(txattn_alibi_slopes(12, 8.0f, m), TXATTN_OK);
  for (int h = 0; h < 8; h++) cr_assert_eq(m[h], ldexpf(1.0f, -(h + 1)));
  for (int h = 8; h < 12; h++) {
    float want = powf(powf(2.0f, -4.0f / 8.0f), (float)(2 * (h - 8) + 1));
    cr_assert_eq(m[h], want, "head %d: %.9g, want %.9g", h, m[h], want);
    cr_assert(fabs(m[h] - pow(2.0, -0.5 * (2 * (h - 8) + 1))) < 1e-6);
  }
  cr_assert_eq(txattn_alibi_slopes(1, 8.0f, m), TXATTN_OK);
  cr_assert_eq(m[0], 1.0f / 256.0f);
  cr_assert_eq(txattn_alibi_slopes(0, 8.0f, m), TXATTN_E_INVALID);
  cr_assert_eq(txattn_alibi_slopes(4, -1.0f, m), TXATTN_E_INVALID);
  cr_assert_eq(txattn_alibi_slopes(4, NAN, m), TXATTN_E_INVALID);
  cr_assert_eq(txattn_alibi_slopes(4, 8.0f, NULL), TXATTN_E_INVALID);
}

static void expect_invalid(const txattn_problem *p, const txattn_tensors *t, const char *needle) {
  float o0 = t->o[0];
  cr_assert_eq(txattn_reference(p, t), TXATTN_E_INVALID, "accepted (%s)", needle);
  cr_assert(strstr(txattn_last_error(), needle) != NULL, "'%s' does not name %s",
            txattn_last_error(), needle);
  cr_assert(t->o[0] == o0, "o changed on error");
}

Test(modifiers, the_fields_are_validated) {
  float x[4 * 8] = {0}, o[4 * 8] = {1.0f}, slopes[2] = {0.5f, 0.25f}, sinks[2] = {0.0f, 1.0f};
  txattn_problem p = {.heads_q = 2, .n_q = 2, .d_qk = 8, .struct_size = sizeof p};
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = t.k = t.v = x;
  t.o = o;
  p.softcap = -1.0f;
  expect_invalid(&p, &t, "softcap");
  p.softcap = INFINITY;
  expect_invalid(&p, &t, "softcap");
  p.softcap = 0.0f;
  p.alibi = 2;
  expect_invalid(&p, &t, "alibi");
  p.alibi = 1;
  expect_invalid(&p, &t, "alibi_slopes is NULL");
  t.alibi_slopes = slopes;
  slopes[1] = NAN;
  expect_invalid(&p, &t, "alibi_slopes[1]");
  slopes[1] = 0.25f;
  p.sinks = 1;
  expect_invalid(&p, &t, "sinks is NULL");
  t.sinks = sinks;
  sinks[0] = INFINITY;
  expect_invalid(&p, &t, "sinks[0]");
  sinks[0] = NAN;
  expect_invalid(&p, &t, "sinks[0]");
  sinks[0] = -INFINITY; /* no sink for head 0 */
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
  p.sink_keys = -1;
  expect_invalid(&p, &t, "sink_keys");
  /* a caller built before the modifiers has none: the bytes past its struct_size are not read */
  txattn_problem old = p;
  old.struct_size = TXATTN_PROBLEM_SIZE_0_2_SERVING;
  old.softcap = -1.0f; /* garbage past what it has */
  txattn_problem r = TXATTN_PROBLEM_INIT;
  cr_assert_eq(txattn_problem_resolve(&old, &r), TXATTN_OK, "%s", txattn_last_error());
  cr_assert(r.softcap == 0.0f && r.alibi == 0 && r.sinks == 0 && r.sink_keys == 0);
  /* a tensors struct without the modifiers' fields: a problem asking for them has no data */
  p.sink_keys = 0;
  txattn_tensors told = t;
  told.struct_size = TXATTN_TENSORS_SIZE_0_2_SERVING;
  expect_invalid(&p, &told, "alibi_slopes is NULL");
}

Test(modifiers, sink_keys_resolve_within_the_keys) {
  txattn_problem p = {.n_q = 10,
                      .n_kv = 20,
                      .d_qk = 4,
                      .mask = TXATTN_MASK_CAUSAL,
                      .sink_keys = 1000,
                      .struct_size = sizeof p},
                 r = TXATTN_PROBLEM_INIT;
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK);
  cr_assert_eq(r.sink_keys, 20);
  p.mask = TXATTN_MASK_NONE; /* every key is visible anyway */
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK);
  cr_assert_eq(r.sink_keys, 0);
}

/* txattn_problem_visible_pairs counts the sink keys, against a count pair by pair. */
Test(modifiers, visible_pairs_count_the_sink_keys) {
  const int64_t sizes[][2] = {{1, 1}, {7, 7}, {5, 30}, {30, 5}, {64, 100}, {100, 64}};
  const int64_t ks[] = {0, 1, 3, 8, 40};
  const struct {
    txattn_mask m;
    int64_t l, r;
  } masks[] = {{TXATTN_MASK_CAUSAL, 0, 0}, {TXATTN_MASK_WINDOW, 0, 0},  {TXATTN_MASK_WINDOW, 3, 0},
               {TXATTN_MASK_WINDOW, 5, 2}, {TXATTN_MASK_WINDOW, -1, 4}, {TXATTN_MASK_WINDOW, 2, -1},
               {TXATTN_MASK_WINDOW, 0, 9}};
  for (size_t a = 0; a < sizeof sizes / sizeof sizes[0]; a++)
    for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++)
      for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
        txattn_problem p = {.n_q = sizes[a][0],
                            .n_kv = sizes[a][1],
                            .d_qk = 4,
                            .mask = masks[m].m,
                            .window_left = masks[m].l,
                            .window_right = masks[m].r,
                            .heads_q = 2,
                            .batch = 3,
                            .struct_size = sizeof p};
        p.sink_keys = ks[b];
        double want = 0.0;
        for (int64_t i = 0; i < p.n_q; i++)
          for (int64_t j = 0; j < p.n_kv; j++) want += visible(&p, p.n_q, p.n_kv, i, j);
        want *= 6.0;
        double got = txattn_problem_visible_pairs(&p);
        cr_assert_eq(got, want, "n %lld/%lld, K %lld, mask %d (%lld, %lld): %g, want %g",
                     (long long)p.n_q, (long long)p.n_kv, (long long)p.sink_keys, (int)p.mask,
                     (long long)p.window_left, (long long)p.window_right, got, want);
      }
}

/* The bound grows by the modifiers' own terms: softcap c adds c (6 + 2) 2^-24, ALiBi the
   rounding of its bias, a sink nothing. */
Test(modifiers, the_bound_has_the_modifiers_terms) {
  struct mshape s = {.n_q = 64, .d = 16, .mask = TXATTN_MASK_CAUSAL};
  struct mcase c;
  mcase_init(&c, &s, 3);
  txattn_tensors t = mcase_tensors(&c, 0);
  double plain, capped, alibi, sunk, abs0, abs1, rel;
  txattn_problem p = c.p;
  cr_assert_eq(txattn_error_bound(&p, &t, &plain), TXATTN_OK);
  cr_assert_eq(txattn_lse_error_bound(&p, &t, &abs0, &rel), TXATTN_OK);
  p.softcap = 50.0f;
  cr_assert_eq(txattn_error_bound(&p, &t, &capped), TXATTN_OK);
  cr_assert_eq(txattn_lse_error_bound(&p, &t, &abs1, &rel), TXATTN_OK);
  double max_v = plain / TXATTN_EXACT_TOLERANCE;
  /* the floor, then (3 + sqrt(16)) u L with L <= 16 |scale| = 4, plus the softcap's 400 u */
  cr_assert(capped >= max_v * 400.0 * 0x1p-24 && capped <= max_v * (400.0 + 28.0) * 0x1p-24, "%g",
            capped / max_v);
  cr_assert(fabs(abs1 - abs0 - 50.0 * 8.0 * 0x1p-24) <= 1e-12);
  p.softcap = 0.0f;
  p.alibi = 1;
  for (int h = 0; h < 1; h++) c.d.slopes[h] = 4.0f;
  cr_assert_eq(txattn_error_bound(&p, &t, &alibi), TXATTN_OK);
  /* the farthest key of the last row: |bias| = 4 * 63 */
  cr_assert(alibi >= max_v * 0x1p-24 * 3.0 * 4.0 * 63.0, "%g", alibi / max_v);
  p.alibi = 0;
  p.sinks = 1;
  c.d.sinks[0] = 5.0f;
  cr_assert_eq(txattn_error_bound(&p, &t, &sunk), TXATTN_OK);
  cr_assert_eq(sunk, plain);
  mcase_free(&c);
}

/* The plan says which modifiers it computes. */
Test(modifiers, the_plan_describes_them) {
  txattn_context *ctx = test_context(1);
  txattn_problem p = {.heads_q = 2,
                      .n_q = 20,
                      .d_qk = 8,
                      .mask = TXATTN_MASK_CAUSAL,
                      .softcap = 30.0f,
                      .alibi = 1,
                      .sinks = 1,
                      .sink_keys = 4,
                      .struct_size = sizeof p};
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_OK, "%s", txattn_last_error());
  char line[512];
  txattn_plan_describe(plan, line, sizeof line);
  cr_assert(strstr(line, " softcap=30 alibi sinks sink_keys=4") != NULL, "%s", line);
  txattn_plan_free(plan);
  txattn_context_free(ctx);
}
