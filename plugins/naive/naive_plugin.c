/* SPDX-License-Identifier: MIT */
/* The naive plugin's descriptor: one kernel, naive.scalar (see naive_kernel.c). */
#include "naive.h"

/* Every valid problem: the kernel reads only through txattn_row_of, txattn_kv_row_of (paged K/V
   too) and txattn_visible_range, so no
   batch, head grouping, size, stride (0 included), mask or element type is out of its reach. */
static int naive_applicable(const txattn_problem *p, const char **why) {
  (void)p;
  (void)why;
  return 1;
}

static const txattn_kernel_desc naive_scalar = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "naive.scalar",
    .summary = "reference: row by row, visible scores, softmax, weighted sum (float, 1 thread)",
    .isa = TXATTN_ISA_SCALAR,
    /* SPARSE: only the visible keys of a row are touched, so the cost follows the visible pairs. */
    .flags = TXATTN_KERNEL_SPARSE | TXATTN_KERNEL_LSE | TXATTN_KERNEL_MODIFIERS |
             TXATTN_KERNEL_MASK_TENSOR | TXATTN_KERNEL_PAGED,
    /* GFLOP/s of one thread, 2 * (d_qk + d_v) flops per visible pair, at the larger n measured
       (docs/measurements.md). */
    .speed_hint = 2.0f,
    .applicable = naive_applicable,
    .workspace_size = naive_workspace_size,
    .run = naive_run,
    /* every type each tensor may have: 8-bit K and V too, so every call has an exact kernel */
    .dtypes = {TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL | TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4,
               TXATTN_DTYPES_ALL | TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4, TXATTN_DTYPES_ALL},
};

static const txattn_kernel_desc *const naive_kernels[] = {&naive_scalar};

static const txattn_plugin_desc naive_plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "naive",
    .version = "1.0.0",
    .summary = "the readable reference kernel",
    .n_kernels = sizeof naive_kernels / sizeof naive_kernels[0],
    .kernels = naive_kernels,
};

TXATTN_PLUGIN_DEFINE(naive_plugin)
