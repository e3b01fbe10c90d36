/* SPDX-License-Identifier: MIT */
/* The banded plugin's descriptor: banded.scalar everywhere, banded.avx2 and banded.avx512 on x86-64,
 * banded.neon on arm64 (each ISA's head function is built only for its architecture). */
#include "banded.h"
#include "kernel_isa.h"

/* Every valid problem: the row loop reads only through txattn_row_of and txattn_visible_range,
   and the inner loops take any row stride, 0 included; a mask tensor only for decode
   (banded_mask_applicable), which only the vector kernels are handed. */
static int banded_applicable(const txattn_problem *p, const char **why) {
  return banded_mask_applicable(p, why);
}

static size_t banded_scalar_workspace(const txattn_problem *p, int n_threads,
                                      const int64_t *tunables) {
  (void)n_threads;
  (void)tunables;
  return banded_workspace_bytes(p, 0);
}
/* The vector kernels also keep transposed K panels (banded_algo.h). */
static size_t banded_vector_workspace(const txattn_problem *p, int n_threads,
                                      const int64_t *tunables) {
  (void)n_threads;
  (void)tunables;
  return banded_workspace_bytes(p, 1);
}

static txattn_status banded_scalar_run(const txattn_kernel_call *call) {
  return banded_run(call, banded_head_scalar, 0);
}
#if defined(__x86_64__)
static txattn_status banded_avx2_run(const txattn_kernel_call *call) {
  return banded_run(call, banded_head_avx2, 1);
}
static txattn_status banded_avx512_run(const txattn_kernel_call *call) {
  return banded_run(call, banded_head_avx512, 1);
}
#endif
#if defined(__aarch64__)
static txattn_status banded_neon_run(const txattn_kernel_call *call) {
  return banded_run(call, banded_head_neon, 1);
}
#endif

/* Every kernel takes f32, f16 and bf16 for each of q, k, v and o, in any combination. */
#define BANDED_DTYPES                                                                              \
  { TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL }

/* What each kernel costs: banded_pairs.c. */
#define BANDED_PAIRS(id, ISA)                                                                      \
  static double banded_##id##_pairs(const txattn_problem *p, const int64_t *tunables) {            \
    (void)tunables;                                                                                \
    return banded_vector_cost_pairs(p, BANDED_##ISA##_W, BANDED_##ISA##_NP, BANDED_##ISA##_ROW_KB, \
                                    INFINITY);                                                     \
  }
#if defined(__x86_64__)
BANDED_PAIRS(avx2, AVX2)
BANDED_PAIRS(avx512, AVX512)
#endif
#if defined(__aarch64__)
BANDED_PAIRS(neon, NEON)
#endif

static double banded_scalar_pairs(const txattn_problem *p, const int64_t *tunables) {
  (void)tunables;
  return banded_scalar_cost_pairs(p, INFINITY);
}

static const txattn_kernel_desc banded_scalar = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.scalar",
    .summary = "only the visible scores of each row, auto-vectorised C (1 thread)",
    .isa = TXATTN_ISA_SCALAR,
    .flags = TXATTN_KERNEL_SPARSE | TXATTN_KERNEL_LSE | TXATTN_KERNEL_MODIFIERS,
    /* GFLOP/s of one thread, 2 * (d_qk + d_v) flops per visible pair, once the per-row work is
       counted apart: the slope of time against visible pairs (docs/measurements.md). */
    .speed_hint = 13.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_scalar_workspace,
    .run = banded_scalar_run,
    .cost_pairs = banded_scalar_pairs,
    .dtypes = BANDED_DTYPES,
};

#if defined(__x86_64__)
static const txattn_kernel_desc banded_avx2 = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.avx2",
    .summary = "only the visible scores, 4 query rows at a time, AVX2+FMA (1 thread)",
    .isa = TXATTN_ISA_AVX2,
    .flags = TXATTN_KERNEL_SPARSE | TXATTN_KERNEL_LSE | TXATTN_KERNEL_MODIFIERS |
             TXATTN_KERNEL_MASK_TENSOR,
    /* GFLOP/s of one thread over its computed pairs, 2 * (d_qk + d_v) flops each, once the per-row
       work is counted apart (BANDED_ROW_COST_PAIRS): the slope of time against visible pairs
       (docs/measurements.md). */
    .speed_hint = 61.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_vector_workspace,
    .run = banded_avx2_run,
    .cost_pairs = banded_avx2_pairs,
    .dtypes = BANDED_DTYPES,
};

static const txattn_kernel_desc banded_avx512 = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.avx512",
    .summary = "only the visible scores, 4 query rows at a time, AVX-512 (1 thread)",
    .isa = KERNEL_ISA_AVX512,
    .flags = TXATTN_KERNEL_SPARSE | TXATTN_KERNEL_LSE | TXATTN_KERNEL_MODIFIERS |
             TXATTN_KERNEL_MASK_TENSOR,
    /* Not measured (no AVX-512 on the development VM): banded.avx2's 61 for twice the lanes per
       FMA. */
    .speed_hint = 122.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_vector_workspace,
    .run = banded_avx512_run,
    .cost_pairs = banded_avx512_pairs,
    .dtypes = BANDED_DTYPES,
};
#endif

#if defined(__aarch64__)
static const txattn_kernel_desc banded_neon = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.neon",
    .summary = "only the visible scores, 4 query rows at a time, NEON (1 thread)",
    .isa = TXATTN_ISA_NEON,
    .flags = TXATTN_KERNEL_SPARSE | TXATTN_KERNEL_LSE | TXATTN_KERNEL_MODIFIERS |
             TXATTN_KERNEL_MASK_TENSOR,
    /* Not measured (no arm64 hardware here; qemu's timings say nothing about it): banded.avx2's 61
       scaled as the tiled plugin scales its NEON kernel against AVX2 (20 / 70). */
    .speed_hint = 17.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_vector_workspace,
    .run = banded_neon_run,
    .cost_pairs = banded_neon_pairs,
    .dtypes = BANDED_DTYPES,
};
#endif

static const txattn_kernel_desc *const banded_kernels[] = {
    &banded_scalar,
#if defined(__x86_64__)
    &banded_avx2,
    &banded_avx512,
#endif
#if defined(__aarch64__)
    &banded_neon,
#endif
};

static const txattn_plugin_desc banded_plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "banded",
    .version = "1.0.0",
    .summary = "computes only the visible scores: the fast path for narrow windows",
    .n_kernels = sizeof banded_kernels / sizeof banded_kernels[0],
    .kernels = banded_kernels,
};

TXATTN_PLUGIN_DEFINE(banded_plugin)
