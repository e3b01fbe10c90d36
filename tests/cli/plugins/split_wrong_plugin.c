/* SPDX-License-Identifier: MIT */
/* A kernel for the test of `txtune bench --merge` (issue 20): plain attention with lse, exact on
 * calls of at least SPLIT_WRONG_BELOW keys and off by 1e-3 in o (a hundred times the exactness
 * tolerance) on calls with fewer. The whole call passes; its partials, merged, must not. */
#include <math.h>

#include "txattn/plugin.h"

#define SPLIT_WRONG_BELOW 256

static int applicable(const txattn_problem *p, const char **why) {
  if (p->ragged) {
    *why = "takes no ragged batch";
    return 0;
  }
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
  const float nudge = p->n_kv < SPLIT_WRONG_BELOW ? 1e-3f : 0.0f; /* the deliberate error */
  int64_t lo, hi, hk = h / (p->heads_q / p->heads_kv);
  txattn_visible_range(p, i, &lo, &hi);
  float *o = txattn_row_mut(t->o, &t->o_layout, b, h, i);
  float *lse =
      p->lse ? &t->lse[b * t->lse_layout.batch + h * t->lse_layout.head + i * t->lse_layout.row]
             : NULL;
  for (int64_t e = 0; e < p->d_v; e++) o[e] = 0.0f;
  if (lse) *lse = -INFINITY;
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
  for (int64_t e = 0; e < p->d_v; e++) o[e] = o[e] / sum + nudge;
  if (lse) *lse = m + logf(sum);
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
    .name = "splitwrong.scalar",
    .summary = "test kernel: attention with lse, off by 1e-3 on calls of fewer than 256 keys",
    .isa = TXATTN_ISA_SCALAR,
    .flags = TXATTN_KERNEL_LSE,
    .speed_hint = 1.0f,
    .applicable = applicable,
    .workspace_size = workspace,
    .run = run,
};

static const txattn_kernel_desc *const kernels[] = {&kernel};

static const txattn_plugin_desc plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "splitwrong",
    .version = "1.0.0",
    .summary = "txtune test plugin: a kernel wrong only on few keys",
    .n_kernels = 1,
    .kernels = kernels,
};

TXATTN_PLUGIN_DEFINE(plugin)
