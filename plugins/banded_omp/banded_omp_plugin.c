/* SPDX-License-Identifier: MIT */
/* The banded_omp plugin's descriptors: banded_omp.scalar, banded_omp.avx2, banded_omp.avx512
 * (x86-64) and banded_omp.neon (arm64), the banded kernels' head functions (plugins/banded, static
 * library txattn_banded_algo) on up to n_threads OpenMP threads. */
#include "banded_omp_plan.h"
#include "kernel_isa.h"

/* Every valid problem, as the banded kernels (a mask tensor only for decode). */
static int bomp_applicable(const txattn_problem *p, const char **why) {
  return banded_mask_applicable(p, why);
}

static size_t bomp_workspace(const bomp_kernel *k, const txattn_problem *p, int n_threads) {
  bomp_plan pl;
  return bomp_plan_init(&pl, k, p, n_threads) ? pl.total : SIZE_MAX;
}

static txattn_status bomp_run_call(const bomp_kernel *k, const txattn_kernel_call *call) {
  bomp_plan pl;
  if (!bomp_plan_init(&pl, k, call->problem, call->n_threads)) return TXATTN_E_INTERNAL;
  if (!call->workspace || call->workspace_size < pl.total) return TXATTN_E_INTERNAL;
  return bomp_run(&pl, call);
}

static double bomp_scalar_cost(const txattn_problem *p, double enough) {
  return banded_scalar_cost_pairs(p, enough);
}
#define BOMP_VECTOR_COST(id, ISA)                                                                  \
  static double bomp_##id##_cost(const txattn_problem *p, double enough) {                         \
    return banded_vector_cost_pairs(p, BANDED_##ISA##_W, BANDED_##ISA##_NP, BANDED_##ISA##_ROW_KB, \
                                    enough);                                                       \
  }

/* cost_pairs: banded.<isa>'s, the pairs of the whole call. The host's fallback estimate divides
   THREADED kernels' time by n_threads; below the plan's threshold the kernel runs on one thread
   (banded.<isa> itself), where that overstates its speed, but only on calls too small for the
   difference to matter. Chunks start at multiples of BANDED_MR, so rows group as in banded.<isa>
   whenever the head's groups do (windows with n_q <= n_kv). speed_hint: banded.<isa>'s, per
   thread. dtypes: banded.<isa>'s (every type of each tensor), which the head functions read from
   the problem. FLAGS: banded.<isa>'s beyond the common ones (the vector kernels' mask tensor). */
#define BOMP_KERNEL(id, ISA_ENUM, HEAD, PANELS, COST, SUMMARY, SPEED, FLAGS)                       \
  static const bomp_kernel bomp_kernel_##id = {HEAD, PANELS, COST};                                \
  static size_t bomp_workspace_##id(const txattn_problem *p, int n_threads,                        \
                                    const int64_t *tunables) {                                     \
    (void)tunables;                                                                                \
    return bomp_workspace(&bomp_kernel_##id, p, n_threads);                                        \
  }                                                                                                \
  static txattn_status bomp_run_##id(const txattn_kernel_call *call) {                             \
    return bomp_run_call(&bomp_kernel_##id, call);                                                 \
  }                                                                                                \
  static double bomp_pairs_##id(const txattn_problem *p, const int64_t *tunables) {                \
    (void)tunables;                                                                                \
    return COST(p, INFINITY);                                                                      \
  }                                                                                                \
  static const txattn_kernel_desc bomp_##id = {                                                    \
      .struct_size = sizeof(txattn_kernel_desc),                                                   \
      .name = "banded_omp." #id,                                                                   \
      .summary = SUMMARY,                                                                          \
      .isa = ISA_ENUM,                                                                             \
      .flags = TXATTN_KERNEL_THREADED | TXATTN_KERNEL_SPARSE | TXATTN_KERNEL_LSE |                 \
               TXATTN_KERNEL_MODIFIERS | (FLAGS),                                                  \
      .speed_hint = SPEED,                                                                         \
      .applicable = bomp_applicable,                                                               \
      .workspace_size = bomp_workspace_##id,                                                       \
      .run = bomp_run_##id,                                                                        \
      .cost_pairs = bomp_pairs_##id,                                                               \
      .one_thread_same_as = "banded." #id,                                                         \
      .dtypes = {TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL, TXATTN_DTYPES_ALL},      \
  };

BOMP_KERNEL(scalar, TXATTN_ISA_SCALAR, banded_head_scalar, 0, bomp_scalar_cost,
            "only the visible scores of each row, auto-vectorised C, OpenMP threads", 13.0f, 0)
#if defined(__x86_64__)
BOMP_VECTOR_COST(avx2, AVX2)
BOMP_KERNEL(avx2, TXATTN_ISA_AVX2, banded_head_avx2, 1, bomp_avx2_cost,
            "only the visible scores, 4 query rows at a time, AVX2+FMA, OpenMP threads", 61.0f,
            TXATTN_KERNEL_MASK_TENSOR)
BOMP_VECTOR_COST(avx512, AVX512)
BOMP_KERNEL(avx512, KERNEL_ISA_AVX512, banded_head_avx512, 1, bomp_avx512_cost,
            "only the visible scores, 4 query rows at a time, AVX-512, OpenMP threads", 122.0f,
            TXATTN_KERNEL_MASK_TENSOR)
#endif
#if defined(__aarch64__)
BOMP_VECTOR_COST(neon, NEON)
BOMP_KERNEL(neon, TXATTN_ISA_NEON, banded_head_neon, 1, bomp_neon_cost,
            "only the visible scores, 4 query rows at a time, NEON, OpenMP threads", 17.0f,
            TXATTN_KERNEL_MASK_TENSOR)
#endif

static const txattn_kernel_desc *const bomp_kernels[] = {
    &bomp_scalar,
#if defined(__x86_64__)
    &bomp_avx2,
    &bomp_avx512,
#endif
#if defined(__aarch64__)
    &bomp_neon,
#endif
};

static const txattn_plugin_desc bomp_plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "banded_omp",
    .version = "1.0.0",
    .summary = "the banded kernels on OpenMP threads: chunks of query rows, taken dynamically",
    .n_kernels = sizeof bomp_kernels / sizeof bomp_kernels[0],
    .kernels = bomp_kernels,
};

TXATTN_PLUGIN_DEFINE(bomp_plugin)
