/* SPDX-License-Identifier: MIT */
/* txattn plugin ABI, version 1.9: how a shared object adds attention kernels to libtxattn.
 *
 * A plugin is a shared object that exports one symbol, `txattn_plugin_entry` (TXATTN_PLUGIN_ENTRY_SYMBOL):
 *
 *     const txattn_plugin_desc *txattn_plugin_entry(uint32_t host_abi_version);
 *
 * The host passes the ABI version it speaks; the plugin returns its descriptor, or NULL if it cannot
 * serve that host. The host then checks desc->abi_version == TXATTN_PLUGIN_ABI_VERSION (both ways: a
 * plugin from another ABI is skipped with a reason, never fatal), validates every field, refuses duplicate
 * kernel names and checks each kernel's ISA against cpuid and the OS-enabled register state before it
 * calls anything in the kernel. Descriptors are const data that must live as long as the plugin is
 * loaded; every struct starts with struct_size so a minor version can append fields: the host reads
 * only the fields the plugin's struct_size covers.
 *
 * Versions. TXATTN_PLUGIN_ABI_VERSION is the major version: host and plugin must agree on it both
 * ways. TXATTN_PLUGIN_ABI_MINOR is the newest minor version this header describes; each minor
 * version appends optional fields to txattn_kernel_desc, which the host reads only where the
 * descriptor's struct_size covers them (TXATTN_KERNEL_DESC_HAS), so a plugin built against an older
 * header keeps loading. A plugin that must also build against older headers tests
 * `#if TXATTN_PLUGIN_ABI_MINOR >= 3`. The minor versions added (docs/plugins.md has the log with commits and dates):
 *   1.0  txattn_plugin_entry, TXATTN_PLUGIN_DEFINE, txattn_plugin_desc; txattn_kernel_desc from
 *        struct_size to default_tunables; txattn_tunable, txattn_machine, txattn_kernel_call.
 *   1.1  txattn_kernel_desc.cost_pairs; TXATTN_KERNEL_DESC_MIN_SIZE and TXATTN_KERNEL_DESC_HAS.
 *   1.2  txattn_kernel_desc.one_thread_same_as.
 *   1.3  txattn_kernel_desc.fit_tunables.
 *   1.4  txattn_kernel_desc.dtypes; txattn_problem's element types (q_type ... o_type) and
 *        struct_size, read by kernels that declare dtypes.
 *   1.5  TXATTN_KERNEL_LSE and TXATTN_KERNEL_RAGGED; txattn_problem.lse/.ragged and
 *        txattn_tensors.lse/.lse_layout/.q_lens/.kv_lens, read by kernels with those flags
 *        (txattn_lse_out tells whether a call writes lse).
 *   1.6  TXATTN_KERNEL_SOFTCAP, _ALIBI, _SINKS and _SINK_KEYS; txattn_problem.softcap/.alibi/
 *        .sinks/.sink_keys and txattn_tensors.alibi_slopes/.sinks, read by kernels with those flags
 *        (txattn_softcap_of, txattn_alibi_slopes_of, txattn_sinks_of, txattn_sink_keys_of and
 *        txattn_visible_ranges read them).
 *   1.7  TXATTN_KERNEL_MASK_TENSOR; txattn_problem.mask_tensor/.mask_type and
 *        txattn_tensors.mask/.mask_layout, read by kernels with the flag (txattn_mask_tensor_of,
 *        txattn_mask_row and txattn_mask_elem_size read them). TXATTN_KERNEL_PAGED and
 *        TXATTN_KERNEL_PACKED; txattn_problem.page_size/.max_pages/.n_pages/.packed and
 *        txattn_tensors.block_table/.q_offsets, read by kernels with those flags (txattn_kv_row_of
 *        addresses a key's K or V row, paged or not).
 *   1.8  8-bit K and V: TXATTN_DTYPE_Q8_0, _E4M3 and _E5M2 bits in dtypes[1] (k) and dtypes[2] (v)
 *        only (TXATTN_DTYPES_KV8; the host refuses them in dtypes[0] and dtypes[3], and a plugin
 *        older than 1.8 could not declare them, so it never sees them); txattn_tensors.k_scale/
 *        .v_scale, read by kernels that declare an fp8 type (txattn_k_scale_of, txattn_v_scale_of).
 *        txattn_row_of and txattn_kv_row_of address rows of every type (a Q8_0 row starts at a
 *        block); txattn_block_q8_0, txattn_e4m3_value, txattn_e5m2_value and txattn_row_to_f32
 *        decode them.
 *   1.9  4-bit K and V: the TXATTN_DTYPE_Q4_0 bit (TXATTN_DTYPES_KV4) in dtypes[1] and dtypes[2]
 *        only, as the 8-bit ones; txattn_block_q4_0 and txattn_row_to_f32 decode it.
 *
 * Writing a plugin (see plugins/naive for a complete one):
 *   - build it with -fvisibility=hidden and export only the entry, e.g. with TXATTN_PLUGIN_DEFINE(desc);
 *   - name each kernel "<algorithm>.<isa>" ("tiled.avx2"); names are unique across all plugins;
 *   - run() gets a validated problem with every default resolved and explicit strides, and must honour
 *     the semantics of txattn/txattn.h exactly (see txattn_visible_range below);
 *   - run() must not print, abort or exit, must not keep pointers to the tensors after returning, and
 *     must never use more than call->n_threads busy threads (BLAS and OpenMP included);
 *   - install the .so into a plugin directory (`txtune list` shows whether it loaded and why not); the
 *     file and its directory must not be writable by group or others.
 */
#ifndef TXATTN_PLUGIN_H
#define TXATTN_PLUGIN_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "txattn/txattn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TXATTN_PLUGIN_ABI_VERSION  1u /* major: host and plugin agree on it both ways */
#define TXATTN_PLUGIN_ABI_MINOR    9u /* the newest minor version this header describes */
#define TXATTN_PLUGIN_ENTRY_SYMBOL "txattn_plugin_entry"

/* The instruction set a kernel needs. The host checks cpuid and XGETBV (x86) or HWCAP (arm64). */
typedef enum txattn_isa {
  TXATTN_ISA_SCALAR = 0,     /* portable C, any CPU */
  TXATTN_ISA_AVX2 = 1,       /* x86-64: AVX2 + FMA (+ F16C), YMM state enabled by the OS */
  TXATTN_ISA_AVX512 = 2,     /* x86-64: AVX-512 F/CD/BW/DQ/VL + AVX2 + FMA, ZMM + opmask state on */
  TXATTN_ISA_NEON = 3,       /* arm64: Advanced SIMD (ASIMD) */
  TXATTN_ISA_AVX512BF16 = 4, /* x86-64: TXATTN_ISA_AVX512 + AVX512_BF16 (vdpbf16ps) */
  TXATTN_ISA_COUNT_ = 5
} txattn_isa;
/* "scalar", "avx2", "avx512", "neon", "avx512bf16" (as in kernel names and
   txattn_kernel_info.isa); "unknown"
   for a value outside the enum, never NULL. The library implements it, for programs and txtune: a
   plugin links nothing of the library and must not call it. */
TXATTN_API const char *txattn_isa_name(txattn_isa isa);

/* Kernel capability flags */
#define TXATTN_KERNEL_THREADED (1u << 0) /* uses up to call->n_threads threads */
#define TXATTN_KERNEL_SPARSE   (1u << 1) /* cost grows with visible pairs, not n_q x n_kv */
/* (1.5) run() writes tensors->lse (through its explicit lse_layout) when problem->lse is 1. The host
   hands a problem with lse only to kernels with this flag. */
#define TXATTN_KERNEL_LSE (1u << 2)
/* (1.5) run() takes ragged problems (problem->ragged, tensors->q_lens and kv_lens, never NULL
   then) itself. A kernel without it never sees one: the host runs each sequence as a call of its
   own (batch 1, its q_len and kv_len, the tensors offset to it). */
#define TXATTN_KERNEL_RAGGED (1u << 3)
/* (1.6) The score modifiers of txattn/txattn.h a kernel computes: problem->softcap > 0,
   problem->alibi (tensors->alibi_slopes), problem->sinks (tensors->sinks) and problem->sink_keys
   > 0. The host hands a problem with a modifier only to kernels with its flag, and a plugin older
   than 1.6 has none of them. */
#define TXATTN_KERNEL_SOFTCAP   (1u << 4)
#define TXATTN_KERNEL_ALIBI     (1u << 5)
#define TXATTN_KERNEL_SINKS     (1u << 6)
#define TXATTN_KERNEL_SINK_KEYS (1u << 7)
#define TXATTN_KERNEL_MODIFIERS                                                                    \
  (TXATTN_KERNEL_SOFTCAP | TXATTN_KERNEL_ALIBI | TXATTN_KERNEL_SINKS | TXATTN_KERNEL_SINK_KEYS)
/* (1.7) run() takes a mask tensor (problem->mask_tensor, tensors->mask and mask_layout): boolean
   or additive, combined with the mask kind and every modifier. The host hands a problem with one
   only to kernels with this flag. */
#define TXATTN_KERNEL_MASK_TENSOR (1u << 8)
/* (1.7) run() reads paged K and V (problem->page_size > 0) through tensors->block_table, e.g. with
   txattn_kv_row_of; the host hands a paged problem only to kernels with this flag. */
#define TXATTN_KERNEL_PAGED (1u << 9)
/* (1.7) run() takes packed queries (problem->packed: q, o and lse rows of sequence b from
   tensors->q_offsets[b]); such a kernel also has TXATTN_KERNEL_RAGGED. A kernel without it never
   sees one: the host runs each sequence as a call of its own, its rows offset to it. */
#define TXATTN_KERNEL_PACKED (1u << 10)
#define TXATTN_KERNEL_FLAGS_ALL_                                                                   \
  (TXATTN_KERNEL_THREADED | TXATTN_KERNEL_SPARSE | TXATTN_KERNEL_LSE | TXATTN_KERNEL_RAGGED |      \
   TXATTN_KERNEL_MODIFIERS | TXATTN_KERNEL_MASK_TENSOR | TXATTN_KERNEL_PAGED |                     \
   TXATTN_KERNEL_PACKED)
/* "threaded", "sparse", "lse", "ragged", "softcap", "alibi", "sinks", "sink_keys", "mask_tensor",
   "paged", "packed" for one
   TXATTN_KERNEL_* bit (as txtune list and txattn.kernels() spell them); NULL for anything else.
   The library implements it, for programs and txtune, as txattn_isa_name. */
TXATTN_API const char *txattn_kernel_flag_name(unsigned flag);

/* What the host knows of the machine, for cache-derived tunable defaults. */
typedef struct txattn_machine {
  size_t struct_size;
  int64_t l1d_bytes, l2_bytes, l3_bytes; /* per core, plausibility-checked; 0 if unknown */
  int n_cores;
} txattn_machine;

/* A parameter the tuner may set (block sizes). Values v satisfy min <= v <= max, v % multiple_of == 0. */
typedef struct txattn_tunable {
  size_t struct_size;
  const char *name;    /* "block_q" */
  const char *summary; /* "query rows per block" */
  int64_t min, max, multiple_of;
} txattn_tunable;

/* One call of a kernel. Everything here has been validated by the host. */
typedef struct txattn_kernel_call {
  size_t struct_size;
  const txattn_problem *problem; /* every default filled in: batch, heads, n_kv, d_v, scale ... */
  const txattn_tensors *tensors; /* every layout explicit (never all-zero); element stride is 1 */
  void *workspace; /* workspace_size() bytes, 64-byte aligned, reused across calls, not zeroed */
  size_t workspace_size;
  int n_threads; /* >= 1; at most this many busy threads (1 unless TXATTN_KERNEL_THREADED) */
  const int64_t *tunables; /* n_tunables values within their declared ranges; NULL if none */
} txattn_kernel_call;

typedef struct txattn_kernel_desc {
  size_t struct_size;  /* sizeof(txattn_kernel_desc) as the plugin was built */
  const char *name;    /* "<algorithm>.<isa>", [a-z0-9_.-], at most 63 characters */
  const char *summary; /* one line */
  txattn_isa isa;
  unsigned flags; /* TXATTN_KERNEL_* */
  /* rough GFLOP/s per thread on a current core; used only by the fallback estimate, which ranks a
     third-party kernel (not a shipped plugin in the library's own plugin directory) that no loaded
     table measured after the shipped kernels, whatever it claims here */
  float speed_hint;
  /* 1 if the kernel computes p (validated, defaults resolved) exactly; else 0 and *why says why. */
  int (*applicable)(const txattn_problem *p, const char **why);
  /* Bytes of scratch one call needs (0 for none). */
  size_t (*workspace_size)(const txattn_problem *p, int n_threads, const int64_t *tunables);
  /* Computes the attention. Returns TXATTN_OK or a status (e.g. TXATTN_E_INTERNAL); must not print. */
  txattn_status (*run)(const txattn_kernel_call *call);
  /* Optional: tunable parameters, and their defaults for a problem on a machine. */
  size_t n_tunables;
  const txattn_tunable *tunables;
  void (*default_tunables)(const txattn_problem *p, const txattn_machine *m, int64_t *values);
  /* (1.1) Optional: what one call costs for p with these tunables, in score pairs: the (query, key)
     pairs it computes, counting the padding of its blocks (a tiled kernel computes whole blocks at
     a window's edge), plus its fixed per-row work (packing, rescaling, writing rows) counted as the
     pairs that would take as long. Used only by the fallback estimate:
     time = 2 (d_qk + d_v) cost_pairs / (speed_hint 1e9 threads). NULL: the visible pairs for
     TXATTN_KERNEL_SPARSE kernels, all batch heads_q n_q n_kv pairs otherwise. */
  double (*cost_pairs)(const txattn_problem *p, const int64_t *tunables);
  /* (1.2) Optional, for a TXATTN_KERNEL_THREADED kernel: the name of the kernel whose loop this one
     runs on one thread (the single-thread kernel it splits across threads), bit for bit its
     results. txtune does not time this kernel on one thread where that one is loaded, usable and
     applicable: two names for one loop only split their ties on noise, and the profile's time goes
     to the kernels that differ. NULL: none. */
  const char *one_thread_same_as;
  /* (1.3) Optional, for a kernel with tunables: cuts values (n_tunables of them, each within its
     declared range) in place to the smallest that make the same call for p, bit for bit: a key
     block longer than p's keys is one block of all the keys, as long as the keys are. The host
     passes every plan's tunables through it (defaults, a table's and a caller's alike), so a plan
     reports the tiles it runs, sizes its workspace for them, and two settings that compute the same
     thing are one (txtune does not time a tile twice where the problem makes two tiles one). A
     fitted value must stay within the declared range and be no larger than the one given: the host
     refuses the plan (TXATTN_E_PLUGIN) otherwise. NULL: the values as given. */
  void (*fit_tunables)(const txattn_problem *p, int64_t *values);
  /* (1.4) Optional: the element types the kernel takes for q, k, v and o, each a mask of
     TXATTN_DTYPE_BIT(type); it takes every combination of them. 0 (or a descriptor without the
     field): f32 only, so the host hands such a kernel only f32 problems. The tensors' pointers
     point at elements of the types p->q_type ... p->o_type, the strides count elements (values,
     for Q8_0: multiples of 32). (1.8) dtypes[1] and dtypes[2] may add TXATTN_DTYPES_KV8 bits; a
     kernel that declares one computes on the values txattn_row_to_f32 gives (or any rounding
     docs/error_bound.md allows for them: one fp32 rounding of each fp8 value times its scale). */
  unsigned dtypes[4];
} txattn_kernel_desc;
/* TXATTN_DTYPE_BIT and TXATTN_DTYPES_ALL: txattn/txattn.h */

/* The smallest struct_size of a kernel descriptor (ABI 1.0), and whether desc carries `field` (the
   host reads a field of 1.1 or later only when it does). */
#define TXATTN_KERNEL_DESC_MIN_SIZE                                                                \
  (offsetof(txattn_kernel_desc, default_tunables) + sizeof(void (*)(void)))
#define TXATTN_KERNEL_DESC_HAS(desc, field)                                                        \
  ((desc)->struct_size >= offsetof(txattn_kernel_desc, field) + sizeof((desc)->field))

typedef struct txattn_plugin_desc {
  size_t struct_size;   /* sizeof(txattn_plugin_desc) as the plugin was built */
  uint32_t abi_version; /* TXATTN_PLUGIN_ABI_VERSION the plugin was built for */
  const char *name;     /* "tiled" */
  const char *version;  /* the plugin's own version, "1.0.0" */
  const char *summary;  /* one line */
  size_t n_kernels;
  const txattn_kernel_desc *const *kernels;
} txattn_plugin_desc;

typedef const txattn_plugin_desc *(*txattn_plugin_entry_fn)(uint32_t host_abi_version);

#if defined(__GNUC__)
#define TXATTN_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define TXATTN_PLUGIN_EXPORT
#endif

/* Defines the entry point for a plugin whose descriptor is the variable `desc`. */
#define TXATTN_PLUGIN_DEFINE(desc)                                                                 \
  TXATTN_PLUGIN_EXPORT const txattn_plugin_desc *txattn_plugin_entry(uint32_t host_abi_version);   \
  TXATTN_PLUGIN_EXPORT const txattn_plugin_desc *txattn_plugin_entry(uint32_t host_abi_version) {  \
    return host_abi_version == TXATTN_PLUGIN_ABI_VERSION ? &(desc) : NULL;                         \
  }

/* ---- helpers every kernel needs (header-only, so plugins link nothing of the host) ---- */

/* The visible keys of query row i are [*lo, *hi) (empty when *lo >= *hi). p must be resolved. */
static inline void txattn_visible_range(const txattn_problem *p, int64_t i, int64_t *lo,
                                        int64_t *hi) {
  int64_t pos = i + (p->n_kv - p->n_q); /* may be negative when n_q > n_kv */
  int64_t a = 0, b = p->n_kv;
  if (p->mask == TXATTN_MASK_CAUSAL) {
    if (pos + 1 < b) b = pos + 1;
  } else if (p->mask == TXATTN_MASK_WINDOW) { /* written so that huge windows cannot overflow */
    if (p->window_left != TXATTN_UNBOUNDED && p->window_left < pos) a = pos - p->window_left;
    if (p->window_right != TXATTN_UNBOUNDED && p->window_right < p->n_kv - 1 - pos)
      b = pos + p->window_right + 1;
  }
  if (b < a) b = a;
  *lo = a;
  *hi = b;
}

/* The contract makes a whole output row NaN when the row reads a NaN through a visible key. A NaN in
   q or k already spreads through the scores; one in a single V element would, by plain arithmetic,
   reach only its own column, so every kernel ends each row with this (d_v comparisons: free next to
   the row's n_kv * d work). */
static inline void txattn_row_spread_nan(float *o, int64_t d_v) {
  int nan = 0;
  for (int64_t c = 0; c < d_v; c++) nan |= o[c] != o[c];
  if (nan)
    for (int64_t c = 0; c < d_v; c++) o[c] = NAN;
}

/* Row i of head h in batch b of a tensor with layout l. */
static inline const float *txattn_row(const float *base, const txattn_layout *l, int64_t b,
                                      int64_t h, int64_t i) {
  return base + b * l->batch + h * l->head + i * l->row;
}
static inline float *txattn_row_mut(float *base, const txattn_layout *l, int64_t b, int64_t h,
                                    int64_t i) {
  return base + b * l->batch + h * l->head + i * l->row;
}

/* Bytes from a tensor's start to its element number `at` (an offset in elements, b*batch + ...;
   for Q8_0 and Q4_0 a multiple of 32, which the host's checks make every row start). */
static inline int64_t txattn_elem_offset(txattn_dtype type, int64_t at) {
  switch (type) {
  case TXATTN_DTYPE_F32:
    return at * 4;
  case TXATTN_DTYPE_F16:
  case TXATTN_DTYPE_BF16:
    return at * 2;
  case TXATTN_DTYPE_Q8_0:
    return at / 32 * 34;
  case TXATTN_DTYPE_Q4_0:
    return at / 32 * 18;
  default:
    return at; /* E4M3, E5M2 */
  }
}

/* Row i of head h in batch b of a tensor of element type `type` (strides count elements), for
   kernels that take 16-bit (ABI 1.4) or 8-bit (1.8) tensors. */
static inline const void *txattn_row_of(const void *base, txattn_dtype type, const txattn_layout *l,
                                        int64_t b, int64_t h, int64_t i) {
  int64_t at = b * l->batch + h * l->head + i * l->row;
  return (const unsigned char *)base + txattn_elem_offset(type, at);
}
static inline void *txattn_row_of_mut(void *base, txattn_dtype type, const txattn_layout *l,
                                      int64_t b, int64_t h, int64_t i) {
  return (void *)txattn_row_of(base, type, l, b, h, i);
}

/* (1.8) ggml's q8_0 block: 32 values q[c] * d, d an IEEE binary16 (its bits). A Q8_0 row of d
   values is d / 32 of them back to back; the struct has no padding (34 bytes, 2-byte aligned). */
typedef struct txattn_block_q8_0 {
  uint16_t d;
  int8_t qs[32];
} txattn_block_q8_0;

/* (1.9) ggml's q4_0 block: 32 values (q - 8) * d, d an IEEE binary16 (its bits), q of value c < 16
   the low nibble of qs[c] and of value c >= 16 the high nibble of qs[c - 16] (18 bytes, 2-byte
   aligned, no padding). */
typedef struct txattn_block_q4_0 {
  uint16_t d;
  uint8_t qs[16];
} txattn_block_q4_0;
/* The integer (-8 .. 7) of value c (< 32) of a q4_0 block. */
static inline int txattn_q4_0_int(const txattn_block_q4_0 *blk, int64_t c) {
  const int q = c < 16 ? blk->qs[c] & 0x0f : blk->qs[c - 16] >> 4;
  return q - 8;
}

/* (1.8) The value of an IEEE binary16, an fp8 e4m3fn and an fp8 e5m2 (their bits), exactly. */
static inline float txattn_f16_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const float v = e == 0    ? ldexpf((float)m, -24)
                  : e == 31 ? (m ? NAN : INFINITY)
                            : ldexpf((float)(m | 0x400), e - 25);
  return h & 0x8000 ? -v : v;
}
static inline float txattn_e4m3_value(uint8_t x) {
  const int e = (x >> 3) & 0xf, m = x & 0x7;
  const float v = (x & 0x7f) == 0x7f ? NAN
                  : e == 0           ? ldexpf((float)m, -9)
                                     : ldexpf((float)(m | 0x8), e - 10);
  return x & 0x80 ? -v : v;
}
static inline float txattn_e5m2_value(uint8_t x) {
  const int e = (x >> 2) & 0x1f, m = x & 0x3;
  const float v = e == 0    ? ldexpf((float)m, -16)
                  : e == 31 ? (m ? NAN : INFINITY)
                            : ldexpf((float)(m | 0x4), e - 17);
  return x & 0x80 ? -v : v;
}

/* (1.8) The fp32 scales of an fp8 K (V): heads_kv floats, scale[h] for KV head h; NULL when
   k_type (v_type) is not fp8 or a host older than 1.8 passed a struct that stops before them. */
static inline const float *txattn_k_scale_of(const txattn_problem *p, const txattn_tensors *t) {
  if (!t || (p->k_type != TXATTN_DTYPE_E4M3 && p->k_type != TXATTN_DTYPE_E5M2) ||
      t->struct_size < offsetof(txattn_tensors, k_scale) + sizeof t->k_scale)
    return NULL;
  return t->k_scale;
}
static inline const float *txattn_v_scale_of(const txattn_problem *p, const txattn_tensors *t) {
  if (!t || (p->v_type != TXATTN_DTYPE_E4M3 && p->v_type != TXATTN_DTYPE_E5M2) ||
      t->struct_size < offsetof(txattn_tensors, v_scale) + sizeof t->v_scale)
    return NULL;
  return t->v_scale;
}

/* (1.8) The n values of a row of type `type` (from txattn_row_of / txattn_kv_row_of) as the fp32
   values every kernel computes on: f32 as it is, f16/bf16, q8_0 (q * d) and q4_0 ((q - 8) * d)
   exactly, fp8 times `scale` (its head's) rounded to fp32 once; `scale` is ignored for the other
   types. n is a multiple of 32 for Q8_0 and Q4_0. */
static inline void txattn_row_to_f32(const void *row, txattn_dtype type, float scale, int64_t n,
                                     float *out) {
  const unsigned char *r = (const unsigned char *)row;
  for (int64_t c = 0; c < n; c++) {
    switch (type) {
    case TXATTN_DTYPE_F32:
      out[c] = ((const float *)row)[c];
      break;
    case TXATTN_DTYPE_F16:
      out[c] = txattn_f16_value(((const uint16_t *)row)[c]);
      break;
    case TXATTN_DTYPE_BF16: {
      union {
        uint32_t u;
        float f;
      } w = {(uint32_t)((const uint16_t *)row)[c] << 16};
      out[c] = w.f;
      break;
    }
    case TXATTN_DTYPE_Q8_0: {
      const txattn_block_q8_0 *blk = (const txattn_block_q8_0 *)row + c / 32;
      out[c] = (float)blk->qs[c % 32] * txattn_f16_value(blk->d);
      break;
    }
    case TXATTN_DTYPE_Q4_0: {
      const txattn_block_q4_0 *blk = (const txattn_block_q4_0 *)row + c / 32;
      out[c] = (float)txattn_q4_0_int(blk, c % 32) * txattn_f16_value(blk->d);
      break;
    }
    case TXATTN_DTYPE_E4M3:
      out[c] = txattn_e4m3_value(r[c]) * scale;
      break;
    default:
      out[c] = txattn_e5m2_value(r[c]) * scale;
      break;
    }
  }
}
/* (1.5) Where this call's lse goes: tensors->lse when problem->lse is 1 and both structs are long
   enough to hold the fields (a host older than ABI 1.5 passes shorter ones, whose lse fields must
   not be read); NULL otherwise, t NULL included. Rows go through tensors->lse_layout. */
static inline float *txattn_lse_out(const txattn_problem *p, const txattn_tensors *t) {
  if (!t || p->struct_size < offsetof(txattn_problem, lse) + sizeof p->lse || !p->lse ||
      t->struct_size < offsetof(txattn_tensors, lse_layout) + sizeof t->lse_layout)
    return NULL;
  return t->lse;
}

/* (1.6) The score modifiers of a call, 0 or NULL where the problem asks for none or a host older
   than 1.6 passed structs that stop before them. */
#define TXATTN__HAS_FIELD(s, type, field)                                                          \
  ((s)->struct_size >= offsetof(type, field) + sizeof(s)->field)
static inline float txattn_softcap_of(const txattn_problem *p) {
  return TXATTN__HAS_FIELD(p, txattn_problem, softcap) ? p->softcap : 0.0f;
}
static inline int64_t txattn_sink_keys_of(const txattn_problem *p) {
  return TXATTN__HAS_FIELD(p, txattn_problem, sink_keys) ? p->sink_keys : 0;
}
/* heads_q slopes, or NULL */
static inline const float *txattn_alibi_slopes_of(const txattn_problem *p,
                                                  const txattn_tensors *t) {
  if (!t || !TXATTN__HAS_FIELD(p, txattn_problem, alibi) || !p->alibi ||
      !TXATTN__HAS_FIELD(t, txattn_tensors, alibi_slopes))
    return NULL;
  return t->alibi_slopes;
}
/* heads_q sink logits, or NULL */
static inline const float *txattn_sinks_of(const txattn_problem *p, const txattn_tensors *t) {
  if (!t || !TXATTN__HAS_FIELD(p, txattn_problem, sinks) || !p->sinks ||
      !TXATTN__HAS_FIELD(t, txattn_tensors, sinks))
    return NULL;
  return t->sinks;
}

/* (1.7) The call's mask tensor kind: TXATTN_MASK_TENSOR_NONE where the problem has none or a host
   older than 1.7 passed structs that stop before it. */
static inline txattn_mask_tensor txattn_mask_tensor_of(const txattn_problem *p,
                                                       const txattn_tensors *t) {
  if (!t || !TXATTN__HAS_FIELD(p, txattn_problem, mask_type) ||
      !TXATTN__HAS_FIELD(t, txattn_tensors, mask_layout))
    return TXATTN_MASK_TENSOR_NONE;
  return p->mask_tensor;
}
/* Bytes of one mask element: 1 (BOOL) or mask_type's (ADDITIVE). */
static inline int64_t txattn_mask_elem_size(const txattn_problem *p) {
  return p->mask_tensor == TXATTN_MASK_TENSOR_BOOL ? 1 : p->mask_type == TXATTN_DTYPE_F32 ? 4 : 2;
}
/* Element (b, h, i, 0) of the mask tensor; element j of the row is mask_layout.key elements on. */
static inline const void *txattn_mask_row(const txattn_problem *p, const txattn_tensors *t,
                                          int64_t b, int64_t h, int64_t i) {
  const txattn_mask_layout *l = &t->mask_layout;
  return (const unsigned char *)t->mask +
         (b * l->batch + h * l->head + i * l->row) * txattn_mask_elem_size(p);
}

/* (1.7) The page size of a paged problem, 0 when K and V are plain tensors (or a host older than
   1.7 passed a struct that stops before the field). */
static inline int64_t txattn_page_size_of(const txattn_problem *p) {
  return TXATTN__HAS_FIELD(p, txattn_problem, page_size) ? p->page_size : 0;
}
/* (1.7) The K or V row (layout l, element type `type`) of key j of kv head h in sequence b: row
   j % P of page block_table[b * max_pages + j / P] when paged, else row j of batch b as
   txattn_row_of has it. */
static inline const void *txattn_kv_row_of(const txattn_problem *p, const txattn_tensors *t,
                                           const void *base, txattn_dtype type,
                                           const txattn_layout *l, int64_t b, int64_t h,
                                           int64_t j) {
  const int64_t P = txattn_page_size_of(p);
  if (P == 0) return txattn_row_of(base, type, l, b, h, j);
  const int64_t page = t->block_table[b * p->max_pages + j / P];
  return txattn_row_of(base, type, l, page, h, j % P);
}

/* (1.6) The keys query row i sees with sink keys: [0, *sink_hi) and [*lo, *hi), disjoint, with
   *sink_hi < *lo when *sink_hi > 0 (either may be empty). Without sink keys this is
   txattn_visible_range with *sink_hi = 0; where the sink keys touch or overlap the mask's range, the
   two are one range [0, *hi). */
static inline void txattn_visible_ranges(const txattn_problem *p, int64_t i, int64_t *sink_hi,
                                         int64_t *lo, int64_t *hi) {
  int64_t k = txattn_sink_keys_of(p);
  if (k > p->n_kv) k = p->n_kv;
  txattn_visible_range(p, i, lo, hi);
  *sink_hi = 0;
  if (k <= 0) return;
  if (*lo >= *hi || *lo <= k) {
    if (*lo >= *hi || *hi < k) *hi = k;
    *lo = 0;
  } else {
    *sink_hi = k;
  }
}

#ifdef __cplusplus
}
#endif
#endif /* TXATTN_PLUGIN_H */
