/* SPDX-License-Identifier: MIT */
/* A third-party plugin for libtxattn, built outside the txattn tree against the installed
 * <txattn/plugin.h> only (see the CMakeLists.txt beside it). Its one kernel,
 * "example_online.scalar", computes each query row in a single pass over its visible keys with an
 * online softmax: a running maximum m and sum, and the output accumulated in double in the
 * workspace, rescaled whenever m grows.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <txattn/plugin.h>

static int online_applicable(const txattn_problem *p, const char **why) {
  (void)p;
  (void)why;
  return 1; /* every problem libtxattn accepts */
}

static size_t online_workspace_size(const txattn_problem *p, int n_threads,
                                    const int64_t *tunables) {
  (void)n_threads;
  (void)tunables;
  return (size_t)p->d_v * sizeof(double);
}

/* One output row; acc has d_v doubles */
static void online_row(const txattn_problem *p, const float *q, const float *k_head,
                       const float *v_head, const txattn_tensors *t, int64_t lo, int64_t hi,
                       double *acc, float *o) {
  const int64_t d_qk = p->d_qk, d_v = p->d_v;
  if (lo >= hi) { /* no visible key: exact zeros */
    memset(o, 0, (size_t)d_v * sizeof *o);
    return;
  }
  double m = -INFINITY, sum = 0;
  memset(acc, 0, (size_t)d_v * sizeof *acc);
  for (int64_t j = lo; j < hi; j++) {
    const float *k = k_head + j * t->k_layout.row, *v = v_head + j * t->v_layout.row;
    double s = 0;
    for (int64_t c = 0; c < d_qk; c++) s += (double)q[c] * k[c];
    s *= p->scale;
    if (s > m) { /* a new maximum: rescale what was summed so far */
      double alpha = exp(m - s);
      sum *= alpha;
      for (int64_t c = 0; c < d_v; c++) acc[c] *= alpha;
      m = s;
    }
    double w = exp(s - m); /* NaN when s is NaN: never skip a key, 0 * NaN must stay NaN */
    sum += w;
    for (int64_t c = 0; c < d_v; c++) acc[c] += w * v[c];
  }
  for (int64_t c = 0; c < d_v; c++) o[c] = (float)(acc[c] / sum);
  txattn_row_spread_nan(o, d_v); /* a NaN in one V element reached only its column */
}

static txattn_status online_run(const txattn_kernel_call *call) {
  const txattn_problem *p = call->problem;
  const txattn_tensors *t = call->tensors;
  const int64_t group = p->heads_q / p->heads_kv;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++) {
      const float *k_head = txattn_row(t->k, &t->k_layout, b, h / group, 0);
      const float *v_head = txattn_row(t->v, &t->v_layout, b, h / group, 0);
      for (int64_t i = 0; i < p->n_q; i++) {
        int64_t lo, hi;
        txattn_visible_range(p, i, &lo, &hi);
        online_row(p, txattn_row(t->q, &t->q_layout, b, h, i), k_head, v_head, t, lo, hi,
                   call->workspace, txattn_row_mut(t->o, &t->o_layout, b, h, i));
      }
    }
  return TXATTN_OK;
}

static const txattn_kernel_desc online_scalar = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "example_online.scalar",
    .summary = "example third-party plugin: one pass per row, online softmax in double",
    .isa = TXATTN_ISA_SCALAR,
    .flags = TXATTN_KERNEL_SPARSE, /* it reads only the visible keys */
    .speed_hint = 0.5f,
    .applicable = online_applicable,
    .workspace_size = online_workspace_size,
    .run = online_run,
};

static const txattn_kernel_desc *const kernels[] = {&online_scalar};

static const txattn_plugin_desc plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "example_online",
    .version = "1.0.0",
    .summary = "a minimal out-of-tree plugin (examples/plugin)",
    .n_kernels = sizeof kernels / sizeof kernels[0],
    .kernels = kernels,
};

TXATTN_PLUGIN_DEFINE(plugin)
