/* SPDX-License-Identifier: MIT */
/* Two exact kernels for the tests of what txtune says when a kernel cannot plan (issue 16):
 * bigbroken.scalar, whose default_tunables break its own declaration (block_k outside [8, 1024])
 * from n_kv = FAIL_FROM_N on, as the tiled kernels' did on a 2 MiB L2, so the host refuses every
 * plan of it there with TXATTN_E_PLUGIN; and steady.scalar, the same kernel with defaults that
 * always hold. bigbroken's speed hint makes it the estimate's pick wherever both can run. The
 * arithmetic is the test oracle's (tests/plugins/exact_kernel.c), so both pass every exactness
 * check. Built with DECLINE_DECODE, both decline decode problems (n_q = 1 against more keys). */
#include "exact_kernel.h"

#ifndef FAIL_FROM_N
#define FAIL_FROM_N 2048
#endif

static int applicable(const txattn_problem *p, const char **why) {
#ifdef DECLINE_DECODE /* a build that leaves the decode classes to other kernels */
  if (p->n_q == 1 && p->n_kv > 1) {
    *why = "declines decode (a test build)";
    return 0;
  }
#endif
  return test_exact_applicable(p, why);
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
    .workspace_size = test_exact_workspace,
    .run = test_exact_run,
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
    .workspace_size = test_exact_workspace,
    .run = test_exact_run,
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
