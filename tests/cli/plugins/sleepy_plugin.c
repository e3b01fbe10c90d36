/* SPDX-License-Identifier: MIT */
/* Two kernels whose calls cost the time the tests of `txtune bench --time-limit` need, and little
 * else, so that problems large enough to be probed stay cheap. They are not attention: each output
 * row is the value row of the first key its query sees (finite, zero where no key is seen), so the
 * tests run them with --no-verify; what they check is the time limit, not an answer.
 *   coldstart.scalar: the first call in the process sleeps COLD_S, every later one is quick (a
 *                     kernel that sets up something once, as a JIT or a large table would);
 *   perpair.scalar:   every call sleeps PAIR_NS per visible (query, key) pair, so its time grows
 *                     with the work and a call of the whole problem is known to be long. */
#define _POSIX_C_SOURCE 199309L /* nanosleep */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "txattn/plugin.h"

#define COLD_S  0.3
#define PAIR_NS 100.0

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static int applicable(const txattn_problem *p, const char **why) {
  (void)p;
  (void)why;
  return 1;
}

static size_t workspace(const txattn_problem *p, int n_threads, const int64_t *tunables) {
  (void)p;
  (void)n_threads;
  (void)tunables;
  return 0;
}

/* Each row of o: the value row of the first key the row sees, or zeros. Returns the visible pairs. */
static double first_values(const txattn_kernel_call *c) {
  const txattn_problem *p = c->problem;
  const txattn_tensors *t = c->tensors;
  const int64_t group = p->heads_q / p->heads_kv;
  double pairs = 0;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++) {
        int64_t lo, hi;
        txattn_visible_range(p, i, &lo, &hi);
        float *o = t->o + b * t->o_layout.batch + h * t->o_layout.head + i * t->o_layout.row;
        const float *v =
            t->v + b * t->v_layout.batch + (h / group) * t->v_layout.head + lo * t->v_layout.row;
        if (hi > lo)
          memcpy(o, v, (size_t)p->d_v * sizeof *o);
        else
          memset(o, 0, (size_t)p->d_v * sizeof *o);
        pairs += (double)(hi > lo ? hi - lo : 0);
      }
  return pairs;
}

static atomic_int called;

static txattn_status run_coldstart(const txattn_kernel_call *c) {
  if (atomic_exchange(&called, 1) == 0) sleep_s(COLD_S);
  first_values(c);
  return TXATTN_OK;
}

static txattn_status run_perpair(const txattn_kernel_call *c) {
  sleep_s(1e-9 * PAIR_NS * first_values(c));
  return TXATTN_OK;
}

static const txattn_kernel_desc coldstart = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "coldstart.scalar",
    .summary = "test kernel (not attention): its first call sleeps, the others are quick",
    .isa = TXATTN_ISA_SCALAR,
    .speed_hint = 1.0f,
    .applicable = applicable,
    .workspace_size = workspace,
    .run = run_coldstart,
};

static const txattn_kernel_desc perpair = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "perpair.scalar",
    .summary = "test kernel (not attention): each call sleeps in proportion to its pairs",
    .isa = TXATTN_ISA_SCALAR,
    .speed_hint = 1.0f,
    .applicable = applicable,
    .workspace_size = workspace,
    .run = run_perpair,
};

static const txattn_kernel_desc *const kernels[] = {&coldstart, &perpair};

static const txattn_plugin_desc plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "sleepy",
    .version = "1.0.0",
    .summary = "txtune test plugin: calls that take the time the --time-limit tests need",
    .n_kernels = 2,
    .kernels = kernels,
};

TXATTN_PLUGIN_DEFINE(plugin)
