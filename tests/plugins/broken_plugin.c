/* SPDX-License-Identifier: MIT */
/* A plugin with exactly one defect, chosen by the BREAK_* macro CMake defines (one build per
 * defect; BROKEN_DEFECT is the defect's name as a string). The loader must skip each of these with
 * a reason and keep loading the others. Everything the defect does not touch is well-formed, so the
 * reason can only come from that defect. */
#include <stddef.h>

#include "exact_kernel.h"

/* with BREAK_NULL_KERNELS nothing refers to these */
#define MAYBE_UNUSED __attribute__((unused))

#if defined(BREAK_KERNEL_NAME)
#define KERNEL_NAME "Bad Name!"
#else /* its own name per defect, so that one broken plugin let through cannot clash with another  \
       */
#define KERNEL_NAME "broken_" BROKEN_DEFECT ".scalar"
#endif

MAYBE_UNUSED static const txattn_kernel_desc kernel = {
#if defined(                                                                                       \
    BREAK_KERNEL_TRUNCATED) /* ends before run(): the host must not read past struct_size  \
                                     */
    .struct_size = offsetof(txattn_kernel_desc, run),
#else
    .struct_size = sizeof(txattn_kernel_desc),
#endif
    .name = KERNEL_NAME,
    .summary = "a kernel in a deliberately broken test plugin",
    .isa = TXATTN_ISA_SCALAR,
#if defined(BREAK_TWIN_NOT_THREADED) /* a one-thread twin for a kernel that never threads */
    .flags = 0,
    .one_thread_same_as = "naive.scalar",
#elif defined(BREAK_TWIN_SELF)
    .flags = TXATTN_KERNEL_THREADED,
    .one_thread_same_as = KERNEL_NAME,
#elif defined(BREAK_TWIN_NAME)
    .flags = TXATTN_KERNEL_THREADED,
    .one_thread_same_as = "Naive",
#else
    .flags = 0,
#endif
#if defined(BREAK_KV8_Q) /* 8-bit q: only k and v may be 8-bit */
    .dtypes = {TXATTN_DTYPE_BIT(TXATTN_DTYPE_Q8_0), TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL,
               TXATTN_DTYPES_ALL},
#endif
    .speed_hint = 0.1f,
    .applicable = test_exact_applicable,
    .workspace_size = test_exact_workspace,
#if !defined(BREAK_NULL_RUN)
    .run = test_exact_run,
#endif
};

MAYBE_UNUSED static const txattn_kernel_desc *const kernels[] = {&kernel};

static const txattn_plugin_desc plugin = {
#if defined(BREAK_DESC_TRUNCATED) /* ends before n_kernels */
    .struct_size = offsetof(txattn_plugin_desc, n_kernels),
#else
    .struct_size = sizeof(txattn_plugin_desc),
#endif
#if defined(BREAK_WRONG_ABI)
    .abi_version = TXATTN_PLUGIN_ABI_VERSION + 1,
#else
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
#endif
    .name = "broken",
    .version = "1.0.0",
    .summary = "a deliberately broken test plugin",
    .n_kernels = 1,
#if !defined(BREAK_NULL_KERNELS)
    .kernels = kernels,
#endif
};

#if defined(BREAK_NO_ENTRY)
/* a misspelt entry point: the file loads, but the host finds no txattn_plugin_entry */
TXATTN_PLUGIN_EXPORT const txattn_plugin_desc *txattn_plugin_entry_v1(uint32_t host_abi_version);
TXATTN_PLUGIN_EXPORT const txattn_plugin_desc *txattn_plugin_entry_v1(uint32_t host_abi_version) {
  (void)host_abi_version;
  return &plugin;
}
#elif defined(BREAK_NULL_ENTRY)
/* a plugin that only serves the next ABI, so it answers this host with NULL */
TXATTN_PLUGIN_EXPORT const txattn_plugin_desc *txattn_plugin_entry(uint32_t host_abi_version);
TXATTN_PLUGIN_EXPORT const txattn_plugin_desc *txattn_plugin_entry(uint32_t host_abi_version) {
  return host_abi_version == TXATTN_PLUGIN_ABI_VERSION + 1 ? &plugin : NULL;
}
#elif defined(BREAK_WRONG_ABI)
/* ignores the host's version and hands over a descriptor of another ABI */
TXATTN_PLUGIN_EXPORT const txattn_plugin_desc *txattn_plugin_entry(uint32_t host_abi_version);
TXATTN_PLUGIN_EXPORT const txattn_plugin_desc *txattn_plugin_entry(uint32_t host_abi_version) {
  (void)host_abi_version;
  return &plugin;
}
#else
TXATTN_PLUGIN_DEFINE(plugin)
#endif
