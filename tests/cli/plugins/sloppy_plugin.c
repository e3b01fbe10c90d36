/* SPDX-License-Identifier: MIT */
/* A deliberately inexact kernel for the tests of `txtune profile`: plain attention with every
 * non-empty output row nudged by 1e-3, a hundred times the exactness tolerance. The profile must
 * exclude it, with its error, and never put it in a table's points. */
#include <math.h>

#include "txattn/plugin.h"

static int applicable(const txattn_problem *p, const char **why) {
  (void)p;
  (void)why;
  return 1;
}

static size_t workspace(const txattn_problem *p, int n_threads, const int64_t *tunables) {
  (void)n_threads;
  (void)tunables;
  return (size_t)p->n_kv * sizeof(float);
}

static void one_row(const txattn_kernel_call *c, int64_t b, int64_t h, int64_t i, float *s) {
  const txattn_problem *p = c->problem;
  const txattn_tensors *t = c->tensors;
  int64_t lo, hi, hk = h / (p->heads_q / p->heads_kv);
  txattn_visible_range(p, i, &lo, &hi);
  float *o = txattn_row_mut(t->o, &t->o_layout, b, h, i);
  for (int64_t e = 0; e < p->d_v; e++) o[e] = 0.0f;
  if (hi <= lo) return;
  const float *q = txattn_row(t->q, &t->q_layout, b, h, i);
  float m = -INFINITY, sum = 0.0f;
  for (int64_t j = lo; j < hi; j++) {
    const float *k = txattn_row(t->k, &t->k_layout, b, hk, j);
    float dot = 0.0f;
    for (int64_t e = 0; e < p->d_qk; e++) dot += q[e] * k[e];
    s[j] = p->scale * dot;
    m = s[j] > m ? s[j] : m;
  }
  for (int64_t j = lo; j < hi; j++) {
    s[j] = expf(s[j] - m);
    sum += s[j];
    const float *v = txattn_row(t->v, &t->v_layout, b, hk, j);
    for (int64_t e = 0; e < p->d_v; e++) o[e] += s[j] * v[e];
  }
  for (int64_t e = 0; e < p->d_v; e++) o[e] = o[e] / sum + 1e-3f; /* the deliberate error */
}

static txattn_status run(const txattn_kernel_call *c) {
  const txattn_problem *p = c->problem;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++) one_row(c, b, h, i, c->workspace);
  return TXATTN_OK;
}

static const txattn_kernel_desc kernel = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "sloppy.scalar",
    .summary = "test kernel: attention off by 1e-3, for the profile's exactness check",
    .isa = TXATTN_ISA_SCALAR,
    .speed_hint = 1e6f, /* attractive, so that only the exactness check can keep it out */
    .applicable = applicable,
    .workspace_size = workspace,
    .run = run,
};

static const txattn_kernel_desc *const kernels[] = {&kernel};

static const txattn_plugin_desc plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "sloppy",
    .version = "1.0.0",
    .summary = "txtune test plugin: an inexact kernel",
    .n_kernels = 1,
    .kernels = kernels,
};

TXATTN_PLUGIN_DEFINE(plugin)
