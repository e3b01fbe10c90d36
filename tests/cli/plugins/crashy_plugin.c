/* SPDX-License-Identifier: MIT */
/* A kernel that crashes, for the tests of `txtune profile`: it raises SIGSEGV on every call, as a
 * third-party kernel with a wild pointer would. The profile must exclude it, with the signal as
 * the reason, and still write its table. */
#include <signal.h>

#include "txattn/plugin.h"

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

static txattn_status run(const txattn_kernel_call *c) {
  (void)c;
  raise(SIGSEGV);
  return TXATTN_OK;
}

static const txattn_kernel_desc kernel = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "crashy.scalar",
    .summary = "test kernel: crashes on every call, for the profile's isolated checks",
    .isa = TXATTN_ISA_SCALAR,
    .speed_hint = 1e6f, /* attractive, so that only the check can keep it out */
    .applicable = applicable,
    .workspace_size = workspace,
    .run = run,
};

static const txattn_kernel_desc *const kernels[] = {&kernel};

static const txattn_plugin_desc plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "crashy",
    .version = "1.0.0",
    .summary = "txtune test plugin: a kernel that crashes",
    .n_kernels = 1,
    .kernels = kernels,
};

TXATTN_PLUGIN_DEFINE(plugin)
