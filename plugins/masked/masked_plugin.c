/* SPDX-License-Identifier: MIT */
/* The masked plugin's descriptor: masked.scalar, the dense BLAS baseline (see masked_block.c). ISA
   scalar because this code needs none: OpenBLAS picks its own SIMD kernels at run time. */
#include "masked.h"

#include <cblas.h>

/* Every valid problem, except sizes OpenBLAS's 32-bit integers cannot pass: strides are no limit
   (rows that BLAS cannot take in place are packed). */
static int masked_applicable(const txattn_problem *p, const char **why) {
  if ((int64_t)(blasint)p->n_kv != p->n_kv || (int64_t)(blasint)p->d_qk != p->d_qk ||
      (int64_t)(blasint)p->d_v != p->d_v) {
    *why = "n_kv, d_qk and d_v must fit OpenBLAS's 32-bit int";
    return 0;
  }
  return 1;
}

static const txattn_tunable masked_tunables[] = {
    {.struct_size = sizeof(txattn_tunable),
     .name = "block_rows",
     .summary = "query rows (of all heads sharing a K/V head) per dense S block",
     .min = 1,
     .max = 4096,
     .multiple_of = 1},
};

static void masked_default_tunables(const txattn_problem *p, const txattn_machine *m,
                                    int64_t *values) {
  (void)m;
  values[0] = masked_default_block(p);
}

/* A block of a whole head's rows or more stacks block / n_q heads of the group (masked_geometry.c):
   every length that stacks as many is the same call as the shortest, heads x n_q. */
static void masked_fit_tunables(const txattn_problem *p, int64_t *values) {
  const int64_t group = p->heads_q / p->heads_kv;
  if (values[0] < p->n_q) return;
  const int64_t heads = values[0] / p->n_q;
  values[0] = (heads < group ? heads : group) * p->n_q;
}

static const txattn_kernel_desc masked_scalar = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "masked.scalar",
    .summary = "dense: S = Q K^T with OpenBLAS over all keys, mask, softmax, O = P V",
    .isa = TXATTN_ISA_SCALAR,
    /* not SPARSE: every block pays for all n_kv keys whatever the mask hides */
    .flags = TXATTN_KERNEL_THREADED | TXATTN_KERNEL_LSE | TXATTN_KERNEL_MASK_TENSOR,
    /* GFLOP/s of one thread over the dense n_q x n_kv pairs (what the dispatcher counts for a
       kernel that is not SPARSE), no mask (docs/measurements.md). */
    .speed_hint = 32.0f,
    .applicable = masked_applicable,
    .workspace_size = masked_workspace_size,
    .run = masked_run,
    .n_tunables = sizeof masked_tunables / sizeof masked_tunables[0],
    .tunables = masked_tunables,
    .default_tunables = masked_default_tunables,
    .fit_tunables = masked_fit_tunables,
    /* 16-bit tensors are widened into fp32 blocks and o narrowed at the end (masked_block.c). */
    .dtypes = {TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL},
};

static const txattn_kernel_desc *const masked_kernels[] = {&masked_scalar};

static const txattn_plugin_desc masked_plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "masked",
    .version = "1.0.0",
    .summary = "the dense BLAS baseline: every score computed, the mask applied after",
    .n_kernels = sizeof masked_kernels / sizeof masked_kernels[0],
    .kernels = masked_kernels,
};

TXATTN_PLUGIN_DEFINE(masked_plugin)
