/* SPDX-License-Identifier: MIT */
/* A well-formed plugin with one exact kernel, whose claims come from compile definitions: its
 * plugin name (CLAIMS_PLUGIN_NAME), kernel name (CLAIMS_KERNEL_NAME), speed_hint
 * (CLAIMS_SPEED_HINT) and version (CLAIMS_VERSION_KIND, one of the strings below). CMake builds it
 * as a third-party kernel that claims to be a thousand times faster than anything (the dispatcher
 * must not take its word for it), as a third-party plugin that takes a shipped plugin's names, and
 * once for each version string the loader must refuse or accept. */
#include "exact_kernel.h"

#ifndef CLAIMS_PLUGIN_NAME
#error "CLAIMS_PLUGIN_NAME must be defined"
#endif
#ifndef CLAIMS_KERNEL_NAME
#error "CLAIMS_KERNEL_NAME must be defined"
#endif
#ifndef CLAIMS_SPEED_HINT
#define CLAIMS_SPEED_HINT 0.1f
#endif
#ifndef CLAIMS_VERSION_KIND
#define CLAIMS_VERSION_KIND 0
#endif

#if CLAIMS_VERSION_KIND == 0
#define CLAIMS_VERSION "1.0.0"
#elif CLAIMS_VERSION_KIND == 1 /* a terminal escape: clears the screen when printed raw */
#define CLAIMS_VERSION "1.0\033[2J"
#elif CLAIMS_VERSION_KIND == 2 /* a line break */
#define CLAIMS_VERSION "1.0\nfake line"
#elif CLAIMS_VERSION_KIND == 3 /* a byte beyond ASCII */
#define CLAIMS_VERSION "1.0\xff"
#elif CLAIMS_VERSION_KIND == 4 /* 64 bytes: one more than a table holds */
#define CLAIMS_VERSION "1234567890123456789012345678901234567890123456789012345678901234"
#elif CLAIMS_VERSION_KIND == 5 /* 63 bytes: the longest a table holds */
#define CLAIMS_VERSION "123456789012345678901234567890123456789012345678901234567890123"
#elif CLAIMS_VERSION_KIND == 6
#define CLAIMS_VERSION ""
#else
#error "unknown CLAIMS_VERSION_KIND"
#endif

static const txattn_kernel_desc kernel = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = CLAIMS_KERNEL_NAME,
    .summary = "test kernel: exact attention by the test oracle, with made-up claims",
    .isa = TXATTN_ISA_SCALAR,
    .flags = TXATTN_KERNEL_THREADED | TXATTN_KERNEL_SPARSE,
    .speed_hint = CLAIMS_SPEED_HINT,
    .applicable = test_exact_applicable,
    .workspace_size = test_exact_workspace,
    .run = test_exact_run,
};

static const txattn_kernel_desc *const kernels[] = {&kernel};

static const txattn_plugin_desc plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = CLAIMS_PLUGIN_NAME,
    .version = CLAIMS_VERSION,
    .summary = "txattn test plugin with made-up claims",
    .n_kernels = 1,
    .kernels = kernels,
};

TXATTN_PLUGIN_DEFINE(plugin)
