/* SPDX-License-Identifier: MIT */
/* A kernel whose call time is set by a tunable, for the tests of `txtune validate --fail-above`:
 * spin.scalar waits spin_us microseconds (busy, on the clock) and then computes exact attention
 * with the test oracle (tests/plugins/exact_kernel.c). With its default (0) it is as fast as its
 * arithmetic; a table that makes the dispatcher pick it with spin_us = 50000 is provably a bad
 * table, whatever the timing noise. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <time.h>

#include "exact_kernel.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static txattn_status run(const txattn_kernel_call *c) {
  double until = now_us() + (double)c->tunables[0];
  while (now_us() < until) {
  }
  return test_exact_run(c);
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
    .applicable = test_exact_applicable,
    .workspace_size = test_exact_workspace,
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
