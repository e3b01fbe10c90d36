/* SPDX-License-Identifier: MIT */
/* One context shared by several threads: plans created and executed at once, one plan executed by
 * all threads at once, contexts created in parallel, and each thread keeping its own last error.
 * Workers record failures and the main thread asserts, since Criterion's asserts belong to the
 * test's thread. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "attn_case.h"
#include "case_check.h"
#include "test_context.h"
#include "text_match.h"
#include "txattn/txattn.h"

TestSuite(threads, .init = test_env_clean, .fini = test_check_leaks, .timeout = 180);

enum { WORKERS = 4, ROUNDS = 6 };

struct worker {
  txattn_context *ctx;
  const txattn_plan *shared;
  struct attn_case own, mine_of_shared; /* own problem; own tensors for the shared plan */
  char kernel[64];                      /* "" for the dispatcher */
  char failure[512];
};

static int run_once(struct worker *w, const txattn_plan *plan, struct attn_case *c,
                    const char *what) {
  char msg[400];
  double err;
  txattn_tensors t = case_tensors(c);
  case_clear_output(c);
  txattn_status s = txattn_plan_execute(plan, &t);
  if (s != TXATTN_OK) {
    snprintf(w->failure, sizeof w->failure, "%s: execute: %s", what, txattn_last_error());
    return 0;
  }
  if (!case_check_output(c, &err, msg, sizeof msg)) {
    snprintf(w->failure, sizeof w->failure, "%s: %s", what, msg);
    return 0;
  }
  return 1;
}

static void *work(void *arg) {
  struct worker *w = arg;
  const char *kernel = w->kernel[0] ? w->kernel : NULL;
  for (int round = 0; round < ROUNDS; round++) {
    txattn_plan *plan = NULL;
    if (txattn_plan_create(w->ctx, &w->own.problem, kernel, &plan) != TXATTN_OK) {
      snprintf(w->failure, sizeof w->failure, "plan_create(%s): %s", kernel ? kernel : "NULL",
               txattn_last_error());
      return NULL;
    }
    int ok = run_once(w, plan, &w->own, kernel ? kernel : "own plan");
    txattn_plan_free(plan);
    if (!ok || !run_once(w, w->shared, &w->mine_of_shared, "the shared plan")) return NULL;
  }
  return NULL;
}

/* The i-th kernel that takes every problem, cycling: each worker forces a different one. */
static void pick_kernel(const struct kernel_list *l, int i, char *out, size_t size) {
  size_t n = 0;
  const char *names[TEST_MAX_KERNELS];
  for (size_t k = 0; k < l->n; k++)
    if (l->k[k].usable && test_kernel_takes_every_problem(l->k[k].name)) names[n++] = l->k[k].name;
  cr_assert(n > 0, "no usable kernel");
  snprintf(out, size, "%s", names[(size_t)i % n]);
}

static const struct shape own_shapes[WORKERS] = {
    {.n_q = 33, .n_kv = 33, .d_qk = 16, .mask = TXATTN_MASK_NONE},
    {.batch = 2,
     .heads_q = 4,
     .heads_kv = 2,
     .n_q = 40,
     .n_kv = 40,
     .d_qk = 8,
     .mask = TXATTN_MASK_CAUSAL},
    {.n_q = 60,
     .n_kv = 60,
     .d_qk = 32,
     .d_v = 8,
     .mask = TXATTN_MASK_WINDOW,
     .left = 3,
     .right = 3},
    {.heads_q = 4, .heads_kv = 1, .n_q = 1, .n_kv = 200, .d_qk = 64, .mask = TXATTN_MASK_CAUSAL},
};
static const struct shape shared_shape = {.batch = 2,
                                          .heads_q = 4,
                                          .heads_kv = 2,
                                          .n_q = 50,
                                          .n_kv = 50,
                                          .d_qk = 32,
                                          .mask = TXATTN_MASK_CAUSAL,
                                          .layout = LAYOUT_PADDED};

/* Workers 0 .. WORKERS - 2 force the kernels of kernel[] (the last worker takes the dispatcher's),
   all of them also run one shared plan of the dispatcher's on their own tensors. Cases of `types`. */
static void run_workers(txattn_context *ctx, struct worker *w, struct case_types types,
                        char kernel[WORKERS - 1][64]) {
  txattn_plan *plan = NULL;
  for (int i = 0; i < WORKERS; i++) {
    struct shape own = own_shapes[i], shared = shared_shape;
    own.types = shared.types = types;
    memset(&w[i], 0, sizeof w[i]);
    w[i].ctx = ctx;
    case_init(&w[i].own, &own, 31 + i);
    case_run_reference(&w[i].own);
    case_init(&w[i].mine_of_shared, &shared, 41 + i);
    case_run_reference(&w[i].mine_of_shared);
    if (i < WORKERS - 1) snprintf(w[i].kernel, sizeof w[i].kernel, "%s", kernel[i]);
  }
  cr_assert_eq(txattn_plan_create(ctx, &w[0].mine_of_shared.problem, NULL, &plan), TXATTN_OK, "%s",
               txattn_last_error());
  pthread_t th[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    w[i].shared = plan;
    cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < WORKERS; i++)
    cr_expect_eq(w[i].failure[0], '\0', "worker %d (%s): %s", i,
                 w[i].kernel[0] ? w[i].kernel : "dispatcher", w[i].failure);
  cr_log_info("the shared plan runs %s", txattn_plan_kernel(plan));
  txattn_plan_free(plan);
  for (int i = 0; i < WORKERS; i++) case_free(&w[i].own), case_free(&w[i].mine_of_shared);
}

Test(threads, one_context_many_plans_and_one_shared_plan_at_once) {
  static struct worker w[WORKERS];
  char kernel[WORKERS - 1][64];
  txattn_context *ctx = test_context(0);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  for (int i = 0; i < WORKERS - 1; i++) pick_kernel(&l, i, kernel[i], sizeof kernel[i]);
  run_workers(ctx, w, (struct case_types){0}, kernel);
  txattn_context_free(ctx);
}

static void add_name(char *list, size_t size, const char *name) {
  size_t n = strlen(list);
  snprintf(list + n, size - n, "%s%s", n ? ", " : "", name);
}

/* The same with every tensor f16 (q, k, v and o). Worker 0 forces naive.scalar, which takes every
   type, so the test cannot pass on kernels that decline; workers 1 and 2 force the next kernels that
   plan every worker's problem in f16 (naive.scalar again while no other does), and the dispatcher's
   shared plan runs whichever kernel it picks. */
Test(threads, a_16_bit_plan_runs_on_many_threads_at_once) {
  const struct case_types f16 = {TXATTN_DTYPE_F16, TXATTN_DTYPE_F16, TXATTN_DTYPE_F16,
                                 TXATTN_DTYPE_F16};
  static struct worker w[WORKERS];
  char kernel[WORKERS - 1][64], takes[TEST_MAX_KERNELS][64], declined[1024] = "";
  txattn_context *ctx = test_context(0);
  struct kernel_list l;
  struct attn_case c[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    struct shape s = own_shapes[i];
    s.types = f16;
    case_init(&c[i], &s, 1);
  }
  test_kernel_list(ctx, &l);
  size_t n = 0;
  for (size_t k = 0; k < l.n; k++) {
    if (!l.k[k].usable || strcmp(l.k[k].name, "naive.scalar") == 0) continue;
    int plans = 1;
    for (int i = 0; i < WORKERS && plans; i++) {
      txattn_plan *plan = NULL;
      plans = txattn_plan_create(ctx, &c[i].problem, l.k[k].name, &plan) == TXATTN_OK;
      txattn_plan_free(plan);
    }
    if (plans)
      snprintf(takes[n++], sizeof takes[0], "%s", l.k[k].name);
    else
      add_name(declined, sizeof declined, l.k[k].name);
  }
  for (int i = 0; i < WORKERS; i++) case_free(&c[i]);
  snprintf(kernel[0], sizeof kernel[0], "naive.scalar");
  for (int i = 1; i < WORKERS - 1; i++)
    snprintf(kernel[i], sizeof kernel[i], "%s", n ? takes[(size_t)(i - 1) % n] : "naive.scalar");
  cr_log_info("f16 workers force %s, %s and %s; kernels that do not plan every worker's problem in "
              "f16: %s",
              kernel[0], kernel[1], kernel[2], declined[0] ? declined : "none");
  run_workers(ctx, w, f16, kernel);
  txattn_context_free(ctx);
}

struct creator {
  struct attn_case c;
  char failure[512];
};

static void *create_and_run(void *arg) {
  struct creator *cr = arg;
  txattn_options opts = {.table_path = "", .n_threads = 1};
  txattn_context *ctx = NULL;
  txattn_plan *plan = NULL;
  char msg[400];
  double err;
  if (txattn_context_create(&opts, &ctx) != TXATTN_OK ||
      txattn_plan_create(ctx, &cr->c.problem, NULL, &plan) != TXATTN_OK) {
    snprintf(cr->failure, sizeof cr->failure, "%s", txattn_last_error());
  } else {
    txattn_tensors t = case_tensors(&cr->c);
    if (txattn_plan_execute(plan, &t) != TXATTN_OK)
      snprintf(cr->failure, sizeof cr->failure, "execute: %s", txattn_last_error());
    else if (!case_check_output(&cr->c, &err, msg, sizeof msg))
      snprintf(cr->failure, sizeof cr->failure, "%s", msg);
  }
  txattn_plan_free(plan);
  txattn_context_free(ctx);
  return NULL;
}

Test(threads, contexts_created_in_parallel) {
  static struct creator cr[WORKERS];
  const struct shape s = {.n_q = 20, .n_kv = 30, .d_qk = 8, .mask = TXATTN_MASK_CAUSAL};
  pthread_t th[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    memset(&cr[i], 0, sizeof cr[i]);
    case_init(&cr[i].c, &s, 50 + i);
    case_run_reference(&cr[i].c);
    case_clear_output(&cr[i].c);
  }
  for (int i = 0; i < WORKERS; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, create_and_run, &cr[i]), 0);
  for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < WORKERS; i++) {
    cr_expect_eq(cr[i].failure[0], '\0', "thread %d: %s", i, cr[i].failure);
    case_free(&cr[i].c);
  }
}

struct blamer {
  int which;
  pthread_barrier_t *barrier;
  char failure[512];
};

/* Each thread fails on its own field, waits until all have failed, then reads its message. */
static void *fail_and_read(void *arg) {
  struct blamer *b = arg;
  static const char *fields[WORKERS] = {"n_q", "d_qk", "heads_kv", "scale"};
  txattn_problem p = {.heads_q = 4, .n_q = 4, .d_qk = 4}, r = TXATTN_PROBLEM_INIT;
  switch (b->which) {
  case 0:
    p.n_q = 0;
    break;
  case 1:
    p.d_qk = -1;
    break;
  case 2:
    p.heads_kv = 3;
    break;
  default:
    p.scale = NAN;
    break;
  }
  for (int round = 0; round < 50; round++) { /* no early exit: the others wait at the barrier */
    txattn_status s = txattn_problem_resolve(&p, &r);
    pthread_barrier_wait(b->barrier);
    const char *msg = txattn_last_error();
    if (!b->failure[0] && (s != TXATTN_E_INVALID || !text_mentions(msg, fields[b->which], NULL)))
      snprintf(b->failure, sizeof b->failure, "round %d: status %s, message \"%s\", want %s", round,
               txattn_status_name(s), msg, fields[b->which]);
    pthread_barrier_wait(b->barrier);
  }
  return NULL;
}

Test(threads, each_thread_keeps_its_own_last_error) {
  pthread_barrier_t barrier;
  static struct blamer b[WORKERS];
  pthread_t th[WORKERS];
  cr_assert_eq(pthread_barrier_init(&barrier, NULL, WORKERS), 0);
  for (int i = 0; i < WORKERS; i++) {
    memset(&b[i], 0, sizeof b[i]);
    b[i].which = i;
    b[i].barrier = &barrier;
    cr_assert_eq(pthread_create(&th[i], NULL, fail_and_read, &b[i]), 0);
  }
  for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
  for (int i = 0; i < WORKERS; i++)
    cr_expect_eq(b[i].failure[0], '\0', "thread %d: %s", i, b[i].failure);
}
