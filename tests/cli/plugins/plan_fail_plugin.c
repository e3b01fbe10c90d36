/* Two exact kernels for the tests of what txtune says when a kernel cannot plan (issue 16):
 * bigbroken.scalar, whose default_tunables break its own declaration (block_k outside [8, 1024])
 * from n_kv = FAIL_FROM_N on, as the tiled kernels' did on a 2 MiB L2, so the host refuses every
 * plan of it there with TXATTN_E_PLUGIN; and steady.scalar, the same kernel with defaults that
 * always hold. bigbroken's speed hint makes it the estimate's pick wherever both can run. The
 * arithmetic is the fp64 reference's, so both pass every exactness check. Built with
 * DECLINE_DECODE, both decline decode problems (n_q = 1 against more keys). */
#include <math.h>

#include "txattn/plugin.h"

#ifndef FAIL_FROM_N
#define FAIL_FROM_N 2048
#endif

static int applicable(const txattn_problem *p, const char **why) {
#ifdef DECLINE_DECODE /* a build that leaves the decode classes to other kernels */
  if (p->n_q == 1 && p->n_kv > 1) {
    *why = "declines decode (a test build)";
    return 0;
  }
#else
  (void)p;
#endif
  (void)why;
  return 1;
}

static size_t workspace(const txattn_problem *p, int n_threads, const int64_t *tunables) {
  (void)n_threads;
  (void)tunables;
  return (size_t)p->n_kv * sizeof(double);
}

/* Whether row i of head h reads a NaN: in its query or a visible key's k or v row. */
static int reads_nan(const txattn_kernel_call *c, int64_t b, int64_t h, int64_t i, int64_t lo,
                     int64_t hi) {
  const txattn_problem *p = c->problem;
  const txattn_tensors *t = c->tensors;
  int64_t hk = h / (p->heads_q / p->heads_kv);
  const float *q = txattn_row(t->q, &t->q_layout, b, h, i);
  for (int64_t e = 0; e < p->d_qk; e++)
    if (isnan(q[e])) return 1;
  for (int64_t j = lo; j < hi; j++) {
    const float *k = txattn_row(t->k, &t->k_layout, b, hk, j);
    const float *v = txattn_row(t->v, &t->v_layout, b, hk, j);
    for (int64_t e = 0; e < p->d_qk; e++)
      if (isnan(k[e])) return 1;
    for (int64_t e = 0; e < p->d_v; e++)
      if (isnan(v[e])) return 1;
  }
  return 0;
}

static void one_row(const txattn_kernel_call *c, int64_t b, int64_t h, int64_t i, double *s) {
  const txattn_problem *p = c->problem;
  const txattn_tensors *t = c->tensors;
  int64_t lo, hi, hk = h / (p->heads_q / p->heads_kv);
  txattn_visible_range(p, i, &lo, &hi);
  float *o = txattn_row_mut(t->o, &t->o_layout, b, h, i);
  if (hi <= lo) {
    for (int64_t e = 0; e < p->d_v; e++) o[e] = 0.0f;
    return;
  }
  if (reads_nan(c, b, h, i, lo, hi)) {
    for (int64_t e = 0; e < p->d_v; e++) o[e] = NAN;
    return;
  }
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
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++) one_row(c, b, h, i, c->workspace);
  return TXATTN_OK;
}

static const txattn_tunable tunables[] = {
    {sizeof(txattn_tunable), "block_k", "keys per block (unused: the kernel is not blocked)", 8,
     1024, 8},
};

static void broken_defaults(const txattn_problem *p, const txattn_machine *m, int64_t *values) {
  (void)m;
  values[0] = p->n_kv < FAIL_FROM_N ? 64 : 2000; /* the deliberate defect */
}

static void steady_defaults(const txattn_problem *p, const txattn_machine *m, int64_t *values) {
  (void)p;
  (void)m;
  values[0] = 64;
}

static const txattn_kernel_desc broken = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "bigbroken.scalar",
    .summary = "test kernel: exact, but its default block_k breaks its declaration at large n",
    .isa = TXATTN_ISA_SCALAR,
    .speed_hint = 1e6f, /* the estimate's pick wherever it can plan */
    .applicable = applicable,
    .workspace_size = workspace,
    .run = run,
    .n_tunables = 1,
    .tunables = tunables,
    .default_tunables = broken_defaults,
};

static const txattn_kernel_desc steady = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "steady.scalar",
    .summary = "test kernel: exact, with defaults that always hold",
    .isa = TXATTN_ISA_SCALAR,
    .speed_hint = 1.0f,
    .applicable = applicable,
    .workspace_size = workspace,
    .run = run,
    .n_tunables = 1,
    .tunables = tunables,
    .default_tunables = steady_defaults,
};

static const txattn_kernel_desc *const kernels[] = {&broken, &steady};

static const txattn_plugin_desc plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "planfail",
    .version = "1.0.0",
    .summary = "txtune test plugin: a kernel whose defaults break at large n, and a sound one",
    .n_kernels = 2,
    .kernels = kernels,
};

TXATTN_PLUGIN_DEFINE(plugin)
