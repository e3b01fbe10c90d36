/* SPDX-License-Identifier: MIT */
/* The tiled plugin's descriptors and single-threaded driver: tiled.scalar, tiled.avx2, tiled.avx512
 * (x86-64) and tiled.neon (arm64). Compiled without ISA flags: it only reads the per-ISA tiled_ops
 * tables and calls through them after the host has checked the kernel's ISA. */
#include "kernel_isa.h"
#include "tiled_blocks.h"
#include "tiled_internal.h"

static void blocks_of(const tiled_ops *ops, const txattn_problem *p, const int64_t *tunables,
                      int64_t *br, int64_t *bc) {
  if (tunables) {
    *br = tunables[0];
    *bc = tunables[1];
  } else {
    tiled_default_blocks(p, NULL, ops->mr, ops->kw, br, bc);
  }
}

/* One query block per (b, kv head) -- short prompts -- streams K/V block by block through the
   scratch; otherwise the head is packed once and re-read by every query block. (The direct path of
   decode packs nothing: its scratch ignores this.) */
static int streams(const tiled_geom *g) {
  return g->n_qblocks == 1;
}

static size_t tiled_workspace(const tiled_ops *ops, const txattn_problem *p,
                              const int64_t *tunables) {
  int64_t br, bc;
  tiled_geom g;
  blocks_of(ops, p, tunables, &br, &bc);
  if (!tiled_geom_init(&g, p, NULL, ops, br, bc)) return SIZE_MAX;
  return (streams(&g) ? 0 : tiled_packed_head_bytes(&g)) +
         tiled_scratch_bytes(&g, ops, streams(&g)) + tiled_mask_summary_bytes(&g);
}

static double tiled_pairs(const tiled_ops *ops, const txattn_problem *p, const int64_t *tunables) {
  int64_t br, bc;
  blocks_of(ops, p, tunables, &br, &bc);
  return tiled_problem_cost_pairs(p, ops, br, bc);
}

static txattn_status tiled_run(const tiled_ops *ops, const txattn_kernel_call *call) {
  const txattn_problem *p = call->problem;
  int64_t br, bc, kb0, kb1;
  tiled_geom g;
  tiled_scratch s;
  blocks_of(ops, p, call->tunables, &br, &bc);
  if (!tiled_geom_init(&g, p, call->tensors, ops, br, bc)) return TXATTN_E_INTERNAL;
  const int stream = streams(&g);
  const size_t head = stream ? 0 : tiled_packed_head_bytes(&g),
               scratch = tiled_scratch_bytes(&g, ops, stream), vis = tiled_mask_summary_bytes(&g);
  if (!call->workspace || call->workspace_size < head + scratch + vis) return TXATTN_E_INTERNAL;
  float *kv = stream ? NULL : call->workspace;
  tiled_scratch_carve(&g, ops, stream, (char *)call->workspace + head, &s);
  if (vis) tiled_mask_summarise(&g, (unsigned char *)call->workspace + head + scratch);
  tiled_key_span(&g, &kb0, &kb1);
  for (int64_t b = 0; b < p->batch; b++) {
    for (int64_t kvh = 0; kvh < p->heads_kv; kvh++) {
      if (g.direct) {
        ops->run_direct(&g, b, kvh, 0, g.rows, 0, p->n_kv, NULL, &s);
        continue;
      }
      if (kv) ops->pack_kv(&g, b, kvh, kb0, kb1, kv);
      ops->run_qblocks(&g, kv, b, kvh, 0, g.n_qblocks, &s);
    }
  }
  return TXATTN_OK;
}

static int tiled_applicable(const txattn_problem *p, const char **why) {
  tiled_geom g;
  int64_t br, bc;
  tiled_default_blocks(p, NULL, TILED_SCALAR_MR, TILED_SCALAR_NRS * TILED_SCALAR_W, &br, &bc);
  if (tiled_geom_init(&g, p, NULL, &tiled_ops_scalar, br, bc)) return 1;
  *why = "the packed K/V of one head (n_kv x (d_qk + d_v) floats) would not fit in memory";
  return 0;
}

/* The descriptor pieces of one ISA: tunables (block_q a multiple of the register block's rows,
   block_k of the packed K panel's keys) and wrappers binding the ISA's ops table. */
#define TILED_KERNEL(id, OPS, MR, KW)                                                              \
  static const txattn_tunable tiled_tunables_##id[] = {                                            \
      {sizeof(txattn_tunable), "block_q", TILED_BLOCK_Q_SUMMARY, MR,                               \
       TILED_BLOCK_Q_MAX / (MR) * (MR), MR},                                                       \
      {sizeof(txattn_tunable), "block_k", TILED_BLOCK_K_SUMMARY, KW,                               \
       TILED_BLOCK_K_MAX / (KW) * (KW), KW},                                                       \
  };                                                                                               \
  static size_t tiled_workspace_##id(const txattn_problem *p, int n_threads,                       \
                                     const int64_t *tunables) {                                    \
    (void)n_threads;                                                                               \
    return tiled_workspace(&OPS, p, tunables);                                                     \
  }                                                                                                \
  static txattn_status tiled_run_##id(const txattn_kernel_call *call) {                            \
    return tiled_run(&OPS, call);                                                                  \
  }                                                                                                \
  static double tiled_pairs_##id(const txattn_problem *p, const int64_t *tunables) {               \
    return tiled_pairs(&OPS, p, tunables);                                                         \
  }                                                                                                \
  static void tiled_defaults_##id(const txattn_problem *p, const txattn_machine *m,                \
                                  int64_t *values) {                                               \
    tiled_default_blocks(p, m, MR, KW, &values[0], &values[1]);                                    \
  }                                                                                                \
  static void tiled_fit_##id(const txattn_problem *p, int64_t *values) {                           \
    tiled_fit_blocks(p, MR, KW, values);                                                           \
  }

#define TILED_DESC(id, ISA_ENUM, SUMMARY, SPEED)                                                   \
  TILED_DESC_TYPES(id, ISA_ENUM, SUMMARY, SPEED, TXATTN_DTYPES_ALL,                                \
                   TXATTN_DTYPES_ALL | TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4)
/* Q, K: the element types q and k may have (v takes every type, 8- and 4-bit included, o every 16- and
   32-bit one); tiled.avx512bf16 takes bf16 q and k only. */
#define TILED_DESC_TYPES(id, ISA_ENUM, SUMMARY, SPEED, Q, K)                                       \
  static const txattn_kernel_desc tiled_##id = {                                                   \
      .struct_size = sizeof(txattn_kernel_desc),                                                   \
      .name = "tiled." #id,                                                                        \
      .summary = SUMMARY,                                                                          \
      .isa = ISA_ENUM,                                                                             \
      .flags = TXATTN_KERNEL_SPARSE | TXATTN_KERNEL_LSE | TXATTN_KERNEL_MODIFIERS |                \
               TXATTN_KERNEL_MASK_TENSOR | TXATTN_KERNEL_PAGED,                                    \
      .speed_hint = SPEED,                                                                         \
      .applicable = tiled_applicable,                                                              \
      .workspace_size = tiled_workspace_##id,                                                      \
      .run = tiled_run_##id,                                                                       \
      .n_tunables = 2,                                                                             \
      .tunables = tiled_tunables_##id,                                                             \
      .default_tunables = tiled_defaults_##id,                                                     \
      .cost_pairs = tiled_pairs_##id,                                                              \
      .fit_tunables = tiled_fit_##id,                                                              \
      .dtypes = {Q, K, TXATTN_DTYPES_ALL | TXATTN_DTYPES_KV8 | TXATTN_DTYPES_KV4,                  \
                 TXATTN_DTYPES_ALL},                                                               \
  };

/* speed_hint: GFLOP/s of one thread at n 4096, d 64; avx512 and neon were not measured on their
   hardware and are scaled from avx2 by FMA peaks (docs/measurements.md); avx512bf16 is avx512's
   times the 1.25x it measured over tiled.avx512 on all-bf16 tensors on Zen 4. tiled_omp uses the
   same figures per thread. */
TILED_KERNEL(scalar, tiled_ops_scalar, TILED_SCALAR_MR, TILED_SCALAR_NRS *TILED_SCALAR_W)
TILED_DESC(scalar, TXATTN_ISA_SCALAR,
           "online-softmax tiles, register-blocked, portable C (1 thread)", 9.0f)
#if defined(__x86_64__)
TILED_KERNEL(avx2, tiled_ops_avx2, TILED_AVX2_MR, TILED_AVX2_NRS *TILED_AVX2_W)
TILED_DESC(avx2, TXATTN_ISA_AVX2, "online-softmax tiles, 6x16 AVX2+FMA micro-kernels (1 thread)",
           84.0f)
TILED_KERNEL(avx512, tiled_ops_avx512, TILED_AVX512_MR, TILED_AVX512_NRS *TILED_AVX512_W)
TILED_DESC(avx512, KERNEL_ISA_AVX512, "online-softmax tiles, 6x64 AVX-512 micro-kernels (1 thread)",
           170.0f)
TILED_KERNEL(avx512bf16, tiled_ops_avx512bf16, TILED_AVX512_MR, TILED_AVX512_NRS *TILED_AVX512_W)
TILED_DESC_TYPES(
    avx512bf16, KERNEL_ISA_AVX512BF16,
    "online-softmax tiles, 6x64 AVX-512 micro-kernels, Q K^T on AVX512_BF16 (1 thread)", 210.0f,
    TXATTN_DTYPE_BIT(TXATTN_DTYPE_BF16), TXATTN_DTYPE_BIT(TXATTN_DTYPE_BF16))
#endif
#if defined(__aarch64__)
TILED_KERNEL(neon, tiled_ops_neon, TILED_NEON_MR, TILED_NEON_NRS *TILED_NEON_W)
TILED_DESC(neon, TXATTN_ISA_NEON, "online-softmax tiles, 6x12 NEON micro-kernels (1 thread)", 20.0f)
#endif

static const txattn_kernel_desc *const tiled_kernels[] = {
    &tiled_scalar,
#if defined(__x86_64__)
    &tiled_avx2,   &tiled_avx512, &tiled_avx512bf16,
#endif
#if defined(__aarch64__)
    &tiled_neon,
#endif
};

static const txattn_plugin_desc tiled_plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = "tiled",
    .version = "1.0.0",
    .summary = "exact attention in online-softmax tiles with register-blocked SIMD micro-kernels",
    .n_kernels = sizeof tiled_kernels / sizeof tiled_kernels[0],
    .kernels = tiled_kernels,
};

TXATTN_PLUGIN_DEFINE(tiled_plugin)
