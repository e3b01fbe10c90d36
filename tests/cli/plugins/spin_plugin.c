/* A kernel whose call time is set by a tunable, for the tests of `txtune validate --fail-above`:
 * spin.scalar waits spin_us microseconds (busy, on the clock) and then computes exact attention
 * for small problems. With its default (0) it is as fast as its arithmetic; a table that makes
 * the dispatcher pick it with spin_us = 50000 is provably a bad table, whatever the timing noise. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <math.h>
#include <time.h>

#include "txattn/plugin.h"

static int applicable(const txattn_problem *p, const char **why) {
  (void)p;
  (void)why;
  return 1;
}

static size_t workspace(const txattn_problem *p, int n_threads, const int64_t *tunables) {
  (void)n_threads;
  (void)tunables;
  return (size_t)p->n_kv * sizeof(double);
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Plain attention in fp64 (no NaN handling: the validate tests use finite inputs only). */
static void one_row(const txattn_kernel_call *c, int64_t b, int64_t h, int64_t i, double *s) {
  const txattn_problem *p = c->problem;
  const txattn_tensors *t = c->tensors;
  int64_t lo, hi, hk = h / (p->heads_q / p->heads_kv);
  txattn_visible_range(p, i, &lo, &hi);
  float *o = txattn_row_mut(t->o, &t->o_layout, b, h, i);
  for (int64_t e = 0; e < p->d_v; e++) o[e] = 0.0f;
  if (hi <= lo) return;
  const float *q = txattn_row(t->q, &t->q_layout, b, h, i);
  double m = -INFINITY, sum = 0.0;
  for (int64_t j = lo; j < hi; j++) {
    const float *k = txattn_row(t->k, &t->k_layout, b, hk, j);
    double dot = 0.0;
    for (int64_t e = 0; e < p->d_qk; e++) dot += (double)q[e] * k[e];
    s[j] = p->scale * dot;
    m = s[j] > m ? s[j] : m;
  }
  for (int64_t j = lo; j < hi; j++) sum += (s[j] = exp(s[j] - m));
  for (int64_t e = 0; e < p->d_v; e++) {
    double acc = 0.0;
    for (int64_t j = lo; j < hi; j++) acc += s[j] * txattn_row(t->v, &t->v_layout, b, hk, j)[e];
    o[e] = (float)(acc / sum);
  }
}

static txattn_status run(const txattn_kernel_call *c) {
  const txattn_problem *p = c->problem;
  double until = now_us() + (double)c->tunables[0];
  while (now_us() < until) {
  }
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++) one_row(c, b, h, i, c->workspace);
  return TXATTN_OK;
}

static const txattn_tunable tunables[] = {
    {sizeof(txattn_tunable), "spin_us", "microseconds each call waits before it computes", 0,
     1000000, 1},
};

static void defaults(const txattn_problem *p, const txattn_machine *m, int64_t *values) {
  (void)p;
  (void)m;
  values[0] = 0;
}

static const txattn_kernel_desc kernel = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "spin.scalar",
    .summary = "test kernel: exact, after waiting spin_us microseconds",
    .isa = TXATTN_ISA_SCALAR,
    .speed_hint = 1.0f,
    .applicable = applicable,
    .workspace_size = workspace,
    .run = run,
    .n_tunables = 1,
    .tunables = tunables,
    .default_tunables = defaults,
};

static const txattn_kernel_desc *const kernels[] = {&kernel};

static const txattn_plugin_desc plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "spin",
    .version = "1.0.0",
    .summary = "txtune test plugin: a kernel as slow as a tunable says",
    .n_kernels = 1,
    .kernels = kernels,
};

TXATTN_PLUGIN_DEFINE(plugin)
