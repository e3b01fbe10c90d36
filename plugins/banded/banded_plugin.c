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

static size_t banded_workspace_size(const txattn_problem *p, int n_threads,
                                    const int64_t *tunables) {
  (void)n_threads;
  (void)tunables;
  return banded_workspace_bytes(p);
}

static txattn_status banded_scalar_run(const txattn_kernel_call *call) {
  return banded_run(call, banded_head_scalar);
}
#if defined(__x86_64__)
static txattn_status banded_avx2_run(const txattn_kernel_call *call) {
  return banded_run(call, banded_head_avx2);
}
static txattn_status banded_avx512_run(const txattn_kernel_call *call) {
  return banded_run(call, banded_head_avx512);
}
#endif
#if defined(__aarch64__)
static txattn_status banded_neon_run(const txattn_kernel_call *call) {
  return banded_run(call, banded_head_neon);
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
    .workspace_size = banded_workspace_size,
    .run = banded_scalar_run,
};

#if defined(__x86_64__)
static const txattn_kernel_desc banded_avx2 = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.avx2",
    .summary = "only the visible scores of each row, AVX2+FMA, 8 keys per block (1 thread)",
    .isa = TXATTN_ISA_AVX2,
    .flags = TXATTN_KERNEL_SPARSE,
    .speed_hint = 40.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_workspace_size,
    .run = banded_avx2_run,
};

static const txattn_kernel_desc banded_avx512 = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.avx512",
    .summary = "only the visible scores of each row, AVX-512, 16 keys per block (1 thread)",
    .isa = TXATTN_ISA_AVX512,
    .flags = TXATTN_KERNEL_SPARSE,
    .speed_hint = 80.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_workspace_size,
    .run = banded_avx512_run,
};
#endif

#if defined(__aarch64__)
static const txattn_kernel_desc banded_neon = {
    .struct_size = sizeof(txattn_kernel_desc),
    .name = "banded.neon",
    .summary = "only the visible scores of each row, NEON, 8 keys per block (1 thread)",
    .isa = TXATTN_ISA_NEON,
    .flags = TXATTN_KERNEL_SPARSE,
    .speed_hint = 20.0f,
    .applicable = banded_applicable,
    .workspace_size = banded_workspace_size,
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
