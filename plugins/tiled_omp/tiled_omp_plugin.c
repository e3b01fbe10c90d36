/* SPDX-License-Identifier: MIT */
/* The tiled_omp plugin's descriptors: tiled_omp.scalar, tiled_omp.avx2, tiled_omp.avx512 (x86-64)
 * and tiled_omp.neon (arm64), the tiled kernels' algorithm and ISA code on up to n_threads OpenMP
 * threads. Same tunables and defaults as the tiled kernels (tiled_default_blocks). */
#include "kernel_isa.h"
#include "tiled_blocks.h"
#include "tiled_internal.h"
#include "tiled_omp_plan.h"

static void blocks_of(const tiled_ops *ops, const txattn_problem *p, const int64_t *tunables,
                      int64_t *br, int64_t *bc) {
  if (tunables) {
    *br = tunables[0];
    *bc = tunables[1];
  } else {
    tiled_default_blocks(p, NULL, ops->mr, ops->kw, br, bc);
  }
}

static size_t tomp_workspace(const tiled_ops *ops, const txattn_problem *p, int n_threads,
                             const int64_t *tunables) {
  int64_t br, bc;
  tomp_plan pl;
  blocks_of(ops, p, tunables, &br, &bc);
  return tomp_plan_init(&pl, ops, p, NULL, n_threads, br, bc) ? pl.total : SIZE_MAX;
}

/* The single-thread kernel's count: a split of the keys falls on key blocks, which hold whole K
   panels, and every other mode runs whole query blocks. */
static double tomp_pairs(const tiled_ops *ops, const txattn_problem *p, const int64_t *tunables) {
  int64_t br, bc;
  blocks_of(ops, p, tunables, &br, &bc);
  return tiled_problem_cost_pairs(p, ops, br, bc);
}

static txattn_status tomp_run_call(const tiled_ops *ops, const txattn_kernel_call *call) {
  int64_t br, bc;
  tomp_plan pl;
  blocks_of(ops, call->problem, call->tunables, &br, &bc);
  if (!tomp_plan_init(&pl, ops, call->problem, call->tensors, call->n_threads, br, bc))
    return TXATTN_E_INTERNAL;
  if (pl.total > 0 && (!call->workspace || call->workspace_size < pl.total))
    return TXATTN_E_INTERNAL;
  /* the mask read once per call, before the threads start (one pass, bound by memory) */
  if (tiled_mask_summary_bytes(&pl.g) > 0)
    tiled_mask_summarise(&pl.g, (unsigned char *)call->workspace + pl.off_vis);
  tomp_run(&pl, call->workspace);
  return TXATTN_OK;
}

/* The tiled kernels' defaults. The test build (TOMP_TEST_TEAM) takes the smallest blocks instead,
   so that the batteries' small shapes have many query and key blocks: packing phases, and key
   splits over several chunks. */
static void tomp_default_blocks(const txattn_problem *p, const txattn_machine *m, int mr, int kw,
                                int64_t *values) {
#ifdef TOMP_TEST_TEAM
  (void)p;
  (void)m;
  values[0] = mr;
  values[1] = kw;
#else
  tiled_default_blocks(p, m, mr, kw, &values[0], &values[1]);
#endif
}

/* The same problems as the tiled kernels: whatever the tiled geometry can address. */
static int tomp_applicable(const txattn_problem *p, const char **why) {
  int64_t br, bc;
  tomp_plan pl;
  tiled_default_blocks(p, NULL, TILED_SCALAR_MR, TILED_SCALAR_NRS * TILED_SCALAR_W, &br, &bc);
  if (tomp_plan_init(&pl, &tiled_ops_scalar, p, NULL, 1, br, bc)) return 1;
  *why = "the packed K/V of one head (n_kv x (d_qk + d_v) floats) would not fit in memory";
  return 0;
}

/* The descriptor pieces of one ISA: the tiled kernels' tunables (block_q a multiple of the register
   block's rows, block_k of the packed K panel's keys) and wrappers binding the ISA's tiled ops
   table. */
#define TOMP_KERNEL(id, OPS, MR, KW)                                                               \
  static const txattn_tunable tomp_tunables_##id[] = {                                             \
      {sizeof(txattn_tunable), "block_q", TILED_BLOCK_Q_SUMMARY, MR,                               \
       TILED_BLOCK_Q_MAX / (MR) * (MR), MR},                                                       \
      {sizeof(txattn_tunable), "block_k", TILED_BLOCK_K_SUMMARY, KW,                               \
       TILED_BLOCK_K_MAX / (KW) * (KW), KW},                                                       \
  };                                                                                               \
  static size_t tomp_workspace_##id(const txattn_problem *p, int n_threads,                        \
                                    const int64_t *tunables) {                                     \
    return tomp_workspace(&OPS, p, n_threads, tunables);                                           \
  }                                                                                                \
  static txattn_status tomp_run_##id(const txattn_kernel_call *call) {                             \
    return tomp_run_call(&OPS, call);                                                              \
  }                                                                                                \
  static double tomp_pairs_##id(const txattn_problem *p, const int64_t *tunables) {                \
    return tomp_pairs(&OPS, p, tunables);                                                          \
  }                                                                                                \
  static void tomp_defaults_##id(const txattn_problem *p, const txattn_machine *m,                 \
                                 int64_t *values) {                                                \
    tomp_default_blocks(p, m, MR, KW, values);                                                     \
  }                                                                                                \
  static void tomp_fit_##id(const txattn_problem *p, int64_t *values) {                            \
    tiled_fit_blocks(p, MR, KW, values);                                                           \
  }

#define TOMP_DESC(id, ISA_ENUM, SUMMARY, SPEED)                                                    \
  TOMP_DESC_TYPES(id, ISA_ENUM, SUMMARY, SPEED, TXATTN_DTYPES_ALL,                                 \
                  TXATTN_DTYPES_ALL | TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4)
/* Q, K: the element types q and k may have (v takes every type, 8- and 4-bit included, o every 16- and
   32-bit one); tiled_omp.avx512bf16 takes bf16 q and k only. */
#define TOMP_DESC_TYPES(id, ISA_ENUM, SUMMARY, SPEED, Q, K)                                        \
  static const txattn_kernel_desc tomp_##id = {                                                    \
      .struct_size = sizeof(txattn_kernel_desc),                                                   \
      .name = "tiled_omp." #id,                                                                    \
      .summary = SUMMARY,                                                                          \
      .isa = ISA_ENUM,                                                                             \
      .flags = TXATTN_KERNEL_THREADED | TXATTN_KERNEL_SPARSE | TXATTN_KERNEL_LSE |                 \
               TXATTN_KERNEL_MODIFIERS | TXATTN_KERNEL_MASK_TENSOR | TXATTN_KERNEL_PAGED,          \
      .speed_hint = SPEED,                                                                         \
      .applicable = tomp_applicable,                                                               \
      .workspace_size = tomp_workspace_##id,                                                       \
      .run = tomp_run_##id,                                                                        \
      .n_tunables = 2,                                                                             \
      .tunables = tomp_tunables_##id,                                                              \
      .default_tunables = tomp_defaults_##id,                                                      \
      .cost_pairs = tomp_pairs_##id,                                                               \
      .one_thread_same_as = "tiled." #id,                                                          \
      .fit_tunables = tomp_fit_##id,                                                               \
      .dtypes = {Q, K, TXATTN_DTYPES_ALL | TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4,                  \
                 TXATTN_DTYPES_ALL},                                                               \
  };

/* speed_hint: GFLOP/s per thread on 2 threads, no mask, d = 64; AVX-512 is the AVX2 figure scaled
   by the two FMA peaks and NEON is tiled.neon's hint, neither measured on its hardware
   (docs/measurements.md). */
TOMP_KERNEL(scalar, tiled_ops_scalar, TILED_SCALAR_MR, TILED_SCALAR_NRS *TILED_SCALAR_W)
TOMP_DESC(scalar, TXATTN_ISA_SCALAR, "online-softmax tiles, portable C, OpenMP threads", 9.0f)
#if defined(__x86_64__)
TOMP_KERNEL(avx2, tiled_ops_avx2, TILED_AVX2_MR, TILED_AVX2_NRS *TILED_AVX2_W)
TOMP_DESC(avx2, TXATTN_ISA_AVX2,
          "online-softmax tiles, 6x16 AVX2+FMA micro-kernels, OpenMP threads", 84.0f)
TOMP_KERNEL(avx512, tiled_ops_avx512, TILED_AVX512_MR, TILED_AVX512_NRS *TILED_AVX512_W)
TOMP_DESC(avx512, KERNEL_ISA_AVX512,
          "online-softmax tiles, 6x64 AVX-512 micro-kernels, OpenMP threads", 170.0f)
TOMP_KERNEL(avx512bf16, tiled_ops_avx512bf16, TILED_AVX512_MR, TILED_AVX512_NRS *TILED_AVX512_W)
TOMP_DESC_TYPES(avx512bf16, KERNEL_ISA_AVX512BF16,
                "online-softmax tiles, 6x64 AVX-512 micro-kernels, Q K^T on AVX512_BF16, OpenMP "
                "threads",
                210.0f, TXATTN_DTYPE_BIT(TXATTN_DTYPE_BF16), TXATTN_DTYPE_BIT(TXATTN_DTYPE_BF16))
#endif
#if defined(__aarch64__)
TOMP_KERNEL(neon, tiled_ops_neon, TILED_NEON_MR, TILED_NEON_NRS *TILED_NEON_W)
TOMP_DESC(neon, TXATTN_ISA_NEON, "online-softmax tiles, 6x12 NEON micro-kernels, OpenMP threads",
          20.0f)
#endif

static const txattn_kernel_desc *const tomp_kernels[] = {
    &tomp_scalar,
#if defined(__x86_64__)
    &tomp_avx2,   &tomp_avx512, &tomp_avx512bf16,
#endif
#if defined(__aarch64__)
    &tomp_neon,
#endif
};

static const txattn_plugin_desc tomp_plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "tiled_omp",
    .version = "1.0.0",
    .summary = "the tiled online-softmax kernels on OpenMP threads: query blocks, or split keys",
    .n_kernels = sizeof tomp_kernels / sizeof tomp_kernels[0],
    .kernels = tomp_kernels,
};

TXATTN_PLUGIN_DEFINE(tomp_plugin)
