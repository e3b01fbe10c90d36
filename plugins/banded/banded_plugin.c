/* The banded plugin's descriptor: banded.scalar everywhere, banded.avx2 and banded.avx512 on x86-64,
 * banded.neon on arm64 (each ISA's head function is built only for its architecture). */
#include "banded.h"

/* Every valid problem: the row loop reads only through txattn_row and txattn_visible_range, and the
   inner loops take any row stride, 0 included. */
static int banded_applicable(const txattn_problem *p, const char **why) {
  (void)p;
  (void)why;
  return 1;
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

static const txattn_kernel_desc banded_scalar = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.scalar",
    .summary = "only the visible scores of each row, auto-vectorised C (1 thread)",
    .isa = TXATTN_ISA_SCALAR,
    .flags = TXATTN_KERNEL_SPARSE,
    /* GFLOP/s of one thread, 2 * (d_qk + d_v) flops per visible pair, measured by calling run()
       directly (d = 64, flops over CPU time, the 2-core VM shared with other jobs): 12.5 with no
       mask or causal at n = 1024 and 4096; 10.4-10.6 with a window of 8 + 8 (short rows). */
    .speed_hint = 11.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_scalar_workspace,
    .run = banded_scalar_run,
};

#if defined(__x86_64__)
static const txattn_kernel_desc banded_avx2 = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.avx2",
    .summary = "only the visible scores, 4 query rows at a time, AVX2+FMA (1 thread)",
    .isa = TXATTN_ISA_AVX2,
    .flags = TXATTN_KERNEL_SPARSE,
    /* GFLOP/s of one thread over visible pairs, 2 * (d_qk + d_v) flops each, from `txtune bench
       --threads 1` (medians of 5 interleaved rounds, d = 64, the 2-core VM shared with other
       jobs): 57 with a window of 64 + 64 (n = 16384), 58 with no mask or causal (n = 4096), 26
       with a window of 8 + 8 (n = 16384, where the per-row softmax and the 41% of panel keys a
       narrow row does not see dominate). 50 weighs the wide cases. */
    .speed_hint = 50.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_vector_workspace,
    .run = banded_avx2_run,
};

static const txattn_kernel_desc banded_avx512 = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.avx512",
    .summary = "only the visible scores, 4 query rows at a time, AVX-512 (1 thread)",
    .isa = TXATTN_ISA_AVX512,
    .flags = TXATTN_KERNEL_SPARSE,
    /* Not measured (no AVX-512 on the development VM): banded.avx2's 50 for twice the lanes per
       FMA, the scaling the tiled plugin's descriptors use (70 -> 140). */
    .speed_hint = 100.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_vector_workspace,
    .run = banded_avx512_run,
};
#endif

#if defined(__aarch64__)
static const txattn_kernel_desc banded_neon = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.neon",
    .summary = "only the visible scores, 4 query rows at a time, NEON (1 thread)",
    .isa = TXATTN_ISA_NEON,
    .flags = TXATTN_KERNEL_SPARSE,
    /* Not measured (no arm64 hardware here; qemu's timings say nothing about it): banded.avx2's 50
       scaled as the tiled plugin scales its NEON kernel against AVX2 (20 / 70). */
    .speed_hint = 14.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_vector_workspace,
    .run = banded_neon_run,
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
