/* SPDX-License-Identifier: MIT */
/* txattn: exact scaled-dot-product attention, dispatched to the fastest exact kernel.
 *
 *   O = softmax(scale * Q K^T + mask) V, for every batch b and query head h, with each of Q, K, V
 *   and O in fp32, fp16 or bf16 (txattn_dtype) and the arithmetic in fp32.
 *
 * Semantics (the contract every kernel follows):
 *  - GQA/MQA: query head h reads key/value head h / (heads_q / heads_kv).
 *  - Query row i sits at position pos(i) = i + (n_kv - n_q) (bottom-right alignment, as when decoding
 *    against a KV cache). Key j is visible to query i when
 *      TXATTN_MASK_NONE:   always;
 *      TXATTN_MASK_CAUSAL: j <= pos(i);
 *      TXATTN_MASK_WINDOW: pos(i) - window_left <= j <= pos(i) + window_right (either side may be
 *                          TXATTN_UNBOUNDED).
 *  - A row with no visible key gets an output row of exact zeros (+0.0f). A NaN in any value a row reads
 *    through a visible key (its q row, or any element of a visible key's k or v row) makes every element
 *    of that output row NaN.
 *  - "Exact": max|O - O_ref| <= txattn_error_bound() against txattn_reference(), where
 *      bound = max|V| * max(TXATTN_EXACT_TOLERANCE, (3 + sqrt(d_qk)) * 2^-24 * L),
 *      L = |scale| * max over visible (query row, key) pairs of sum_c |q_c k_c|,
 *    max|V| over the finite values of the V rows some query sees. For inputs of magnitude about 1
 *    the bound is TXATTN_EXACT_TOLERANCE * max|V|; it grows with L only where fp32 scores must round
 *    (large logits). Rows with NaN are judged by the NaN rule above, not by the bound.
 *  - 16-bit tensors: inputs are read exactly (every f16 and bf16 value is an fp32 value) and the
 *    kernels compute in fp32, so the bound is the same; a 16-bit o is rounded to nearest even (f16
 *    overflow becomes Inf), once by the kernel and once by txattn_reference, so the bound adds one
 *    ulp of o's type at max|V| + the fp32 bound (half an ulp for each rounding).
 *  - 8-bit and 4-bit K and V (q8_0, e4m3, e5m2, q4_0): the kernels compute in fp32 on the values
 *    the cache stores (q8_0 and q4_0: the integer * its block's f16 scale, exact in fp32; fp8: the
 *    fp8 value * its head's fp32
 *    scale, which a kernel may round to fp32 once), and txattn_reference on the exact products
 *    (in double). An fp8 K adds 2^-24 * L to the L term (the coefficient is 4 + sqrt(d_qk)), an
 *    fp8 V adds 2^-24 * max|V|; q8_0 and q4_0 add nothing (docs/error_bound.md, "8-bit K and
 *    V"). max|V| is over the dequantized values. What quantising to 8 or 4 bits loses is the
 *    caller's choice
 *    (txattn_convert) and not part of any bound.
 *
 * Errors: every function returns a status; txattn_last_error() gives this thread's last failure in words.
 * The library never prints unless TXATTN_VERBOSE is set, and never aborts or exits.
 */
#ifndef TXATTN_TXATTN_H
#define TXATTN_TXATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TXATTN_API __attribute__((visibility("default")))
#else
#define TXATTN_API
#endif

#define TXATTN_VERSION_MAJOR  0
#define TXATTN_VERSION_MINOR  2
#define TXATTN_VERSION_PATCH  0
#define TXATTN_VERSION_STRING "0.2.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, as txattn_version() returns it */
#define TXATTN_VERSION                                                                             \
  (TXATTN_VERSION_MAJOR * 10000 + TXATTN_VERSION_MINOR * 100 + TXATTN_VERSION_PATCH)

TXATTN_API int txattn_version(void);                /* of the library linked at run time */
TXATTN_API const char *txattn_version_string(void); /* "0.2.0" */

/* The floor of the bound on max|O - O_ref| / max|V| (txattn_error_bound): what every kernel meets
   wherever the scores are small enough for fp32 to hold them closely (L <= 10 or so). */
#define TXATTN_EXACT_TOLERANCE 1e-5

typedef enum txattn_status {
  TXATTN_OK = 0,
  TXATTN_E_INVALID = 1,     /* a malformed argument; the message names it */
  TXATTN_E_UNSUPPORTED = 2, /* the kernel cannot run here or cannot do this problem */
  TXATTN_E_NOT_FOUND = 3,   /* no such kernel */
  TXATTN_E_NOMEM = 4,
  TXATTN_E_PLUGIN = 5,   /* a plugin failed */
  TXATTN_E_TABLE = 6,    /* the dispatch table is malformed or stale */
  TXATTN_E_IO = 7,       /* a file could not be read or written */
  TXATTN_E_INTERNAL = 8, /* a bug: please report it with txattn_last_error() */
} txattn_status;

TXATTN_API const char *txattn_status_name(txattn_status s); /* "TXATTN_E_INVALID" */
/* This thread's last failure in words, naming the field or file; "" if none. Valid until this thread's
   next call into the library. */
TXATTN_API const char *txattn_last_error(void);

typedef enum txattn_mask {
  TXATTN_MASK_NONE = 0,
  TXATTN_MASK_CAUSAL = 1,
  TXATTN_MASK_WINDOW = 2,
} txattn_mask;
/* "none", "causal", "window" (as txtune and the dispatch table file spell them); "unknown" for a
   value outside the enum, never NULL. */
TXATTN_API const char *txattn_mask_name(txattn_mask mask);
#define TXATTN_UNBOUNDED INT64_C(-1)

/* The element type of a tensor. Products of two 16-bit values are exact in fp32, and kernels
   compute in fp32, so "exact" means the same for every type; a 16-bit o adds the rounding of O to
   it (see txattn_error_bound).
   The 8-bit and 4-bit types are for k and v only (k_type, v_type; refused for q, o and the mask
   tensor):
   Q8_0 is ggml's block format as llama.cpp's `-ctk q8_0` cache holds it: each run of 32 values of
     a row is one 34-byte block, an IEEE f16 scale d then 32 int8 q (txattn_block_q8_0 of
     txattn/plugin.h), value = q * d (exact in fp32: 8 + 11 significant bits). d_qk (for k) and d_v
     (for v) must be multiples of 32, and so must the layout's strides, which count values as for
     every type (element (b, h, i, c) is value c % 32 of block (b*batch + h*head + i*row + c) / 32,
     at 34 bytes each): a cache's layout is the same numbers whatever its type.
   Q4_0 is ggml's 4-bit block format (llama.cpp's `-ctk q4_0`): each run of 32 values is one
     18-byte block, an IEEE f16 scale d then 16 bytes qs, value c = (nibble - 8) * d where value
     c < 16 is the low nibble of qs[c] and value c >= 16 the high nibble of qs[c - 16]
     (txattn_block_q4_0; exact in fp32: 4 + 11 significant bits); d_qk, d_v and the strides are
     multiples of 32 as for Q8_0.
   E4M3 and E5M2 are the OCP 8-bit floats as vLLM's `kv_cache_dtype=fp8` stores them, one byte per
     value, each times an fp32 scale per KV head (txattn_tensors.k_scale / v_scale): value =
     fp8 * scale. E4M3 is "e4m3fn": bias 7, no infinities, 0x7f/0xff NaN, largest 448, smallest
     subnormal 2^-9; E5M2 is IEEE-like: bias 15, infinities 0x7c/0xfc, NaNs above, largest 57344,
     smallest subnormal 2^-16. */
typedef enum txattn_dtype {
  TXATTN_DTYPE_F32 = 0,  /* IEEE binary32 (the default) */
  TXATTN_DTYPE_F16 = 1,  /* IEEE binary16 */
  TXATTN_DTYPE_BF16 = 2, /* bfloat16: the upper half of a binary32 */
  TXATTN_DTYPE_Q8_0 = 3, /* k and v only: ggml's q8_0 blocks (32 int8, one f16 scale) */
  TXATTN_DTYPE_E4M3 = 4, /* k and v only: fp8 e4m3fn, times k_scale / v_scale */
  TXATTN_DTYPE_E5M2 = 5, /* k and v only: fp8 e5m2, times k_scale / v_scale */
  TXATTN_DTYPE_Q4_0 = 6, /* k and v only: ggml's q4_0 blocks (32 4-bit ints, one f16 scale) */
} txattn_dtype;
/* "f32", "f16", "bf16", "q8_0", "e4m3", "e5m2", "q4_0" (as txtune's --dtype spells them);
   "unknown" outside the enum, never NULL. */
/* A set of element types: TXATTN_DTYPE_BIT(t) | ... */
#define TXATTN_DTYPE_BIT(type) (1u << (unsigned)(type))
/* The types every tensor may have (q, k, v, o alike) */
#define TXATTN_DTYPES_ALL                                                                          \
  (TXATTN_DTYPE_BIT(TXATTN_DTYPE_F32) | TXATTN_DTYPE_BIT(TXATTN_DTYPE_F16) |                       \
   TXATTN_DTYPE_BIT(TXATTN_DTYPE_BF16))
/* The 8-bit types, which only k and v may have */
#define TXATTN_DTYPES_KV8                                                                          \
  (TXATTN_DTYPE_BIT(TXATTN_DTYPE_Q8_0) | TXATTN_DTYPE_BIT(TXATTN_DTYPE_E4M3) |                     \
   TXATTN_DTYPE_BIT(TXATTN_DTYPE_E5M2))
/* The 4-bit type, k's and v's only too */
#define TXATTN_DTYPES_KV4 TXATTN_DTYPE_BIT(TXATTN_DTYPE_Q4_0)
TXATTN_API const char *txattn_dtype_name(txattn_dtype dtype);

/* The kind of a mask tensor (txattn_problem.mask_tensor). */
typedef enum txattn_mask_tensor {
  TXATTN_MASK_TENSOR_NONE = 0,
  TXATTN_MASK_TENSOR_BOOL = 1,     /* one byte per element, nonzero: the key is visible */
  TXATTN_MASK_TENSOR_ADDITIVE = 2, /* of txattn_problem.mask_type, added to the score */
} txattn_mask_tensor;
/* Bytes of one block of txattn_dtype_block(dtype) values: 4, 2, 2, 34, 1, 1, 18 (for every type
   but Q8_0 and Q4_0 a block is one element); 0 outside the enum. */
TXATTN_API size_t txattn_dtype_size(txattn_dtype dtype);
/* Values per block: 32 for Q8_0 and Q4_0, 1 for the others; 0 outside the enum. */
TXATTN_API int64_t txattn_dtype_block(txattn_dtype dtype);
/* Bytes of n >= 0 consecutive values from a block's start: ceil(n / block) blocks (n itself for
   an element type); 0 for n < 0 or a dtype outside the enum. */
TXATTN_API int64_t txattn_dtype_bytes(txattn_dtype dtype, int64_t n);

/* Public structs grow by appending fields, and each says how much of it the caller has in
 * struct_size, as the plugin ABI's do. Set it with the TXATTN_*_INIT macros (or to sizeof the
 * struct) and the library reads and writes only that many bytes, so a program built against an
 * older header keeps working with a newer library. struct_size 0 means the struct as this header
 * first defined it with struct_size (version 0.2, TXATTN_*_SIZE_0_2), so a zero-initialised struct
 * always works and never has a newer field read. The library takes, in input and output structs
 * alike, only a struct_size some header gave the struct: 0, a released header's (the
 * TXATTN_*_SIZE_* macros), or this header's sizeof and up to 4096 bytes more (a newer header's;
 * its fields past what the library knows must be zero in an input, E_INVALID otherwise: the
 * program needs a newer library). Any other value, say the garbage of a struct left
 * uninitialised, is refused with E_INVALID naming the struct, and nothing is written. An output
 * struct gets the bytes its struct_size covers (this header's at most), and struct_size is set
 * to the bytes written. txattn_problem and txattn_tensors carry struct_size after their 0.2 fields
 * because plugins (ABI 1.x) read them from the start. */

typedef struct txattn_problem {      /* zero-initialised fields take the defaults in brackets */
  int64_t batch, heads_q, heads_kv;  /* [1], [1], [heads_q]; heads_q % heads_kv == 0 */
  int64_t n_q, n_kv;                 /* n_q >= 1; n_kv [n_q] */
  int64_t d_qk, d_v;                 /* d_qk >= 1; d_v [d_qk] */
  txattn_mask mask;                  /* [NONE] */
  int64_t window_left, window_right; /* for WINDOW: >= 0 or TXATTN_UNBOUNDED */
  float scale;                       /* [1/sqrt(d_qk)]; finite, |scale| <= FLT_MAX / log2(e) */
  txattn_dtype q_type, k_type, v_type, o_type; /* [F32] the tensors' element types */
  size_t struct_size;                          /* [0: TXATTN_PROBLEM_SIZE_0_2] */
  /* Serving calls (past version 0.2's struct). lse [0]: 1 also writes tensors.lse, the natural
     log-sum-exp of each output row, log(sum over visible keys of exp(scale q.k)) in fp32, -inf for
     a row that sees no key. ragged [0]: 1 gives each sequence b of the batch its own lengths,
     tensors.q_lens[b] <= n_q queries and tensors.kv_lens[b] <= n_kv keys (n_q and n_kv are then
     the tensors' rows per sequence); positions align bottom-right within each sequence, so masks
     mean for it what they mean for a single one. Keys past a sequence's kv_len are never read; its
     rows past q_len, in o and lse, are neither read nor written; a sequence with kv_len 0 gets o
     rows of 0 and lse -inf. */
  int lse, ragged;
  /* Score modifiers (past the serving fields, TXATTN_PROBLEM_SIZE_0_2_SERVING), as Gemma 2,
     BLOOM, gpt-oss and StreamingLLM use them; each combines with every other field. The score of
     query row i (head h) and key j is s = scale q.k, then:
     softcap [0: off]: c > 0 (finite) makes it c tanh(s / c), before the ALiBi term and the mask.
     alibi [0]: 1 adds m_h (j - pos(i)) to it, m_h = tensors.alibi_slopes[h] (heads_q finite
       floats; txattn_alibi_slopes gives the standard ones); pos as above, per sequence if ragged.
     sinks [0]: 1 adds exp(t_h) to every row's softmax denominator, t_h = tensors.sinks[h] (heads_q
       floats, finite or -inf for no sink): o = sum_j exp(s_j) v_j / (exp(t_h) + sum_j exp(s_j)).
       lse stays the log-sum-exp over the keys alone (the sink is not in it), so partials over
       disjoint key sets, each computed without sinks, merge with txattn_merge, which applies the
       sinks once when its p->sinks is 1. A row that sees no key still gets zeros.
     sink_keys [0]: K >= 0 makes the first K keys of each sequence (at most its kv_len) visible to
       every query row beside what the mask shows (StreamingLLM's sink tokens with a window,
       Longformer's global tokens). */
  float softcap;
  int alibi, sinks;
  int64_t sink_keys;
  /* A mask tensor (past the score modifiers, TXATTN_PROBLEM_SIZE_0_2_MODIFIERS), as PyTorch's
     attn_mask and ggml's KQ mask: tensors.mask, element (b, h, i, j) for query row i of head h and
     key j, broadcast through strides that may be 0 (txattn_mask_layout). It combines with the mask
     kind, the sink keys and every modifier: key j is visible to row i when the mask kind (or a sink
     key) shows it and the tensor does too.
     mask_tensor [TXATTN_MASK_TENSOR_NONE]: BOOL (one byte per element, nonzero: visible) or
       ADDITIVE (elements of mask_type: the value is added to the score after softcap, beside the
       ALiBi term; -inf hides the key, +inf and NaN are no scores and make the row NaN, as a NaN
       input does; they are not searched for).
     mask_type [F32]: ADDITIVE's element type (F32, F16 or BF16; each is exact in fp32). */
  txattn_mask_tensor mask_tensor;
  txattn_dtype mask_type;
  /* KV caches as servers keep them (after the mask tensor).
     page_size [0: K and V are tensors as above] P >= 1: K and V live in a pool of n_pages pages of
       P keys each, tensors.k/.v with k_layout/v_layout whose `batch` stride is the page's (all
       zero: [n_pages][heads_kv][P][d]; token-major [n_pages][P][heads_kv][d] is batch = P heads_kv
       d, head = d, row = heads_kv d). Key j of sequence b is row j % P of page
       tensors.block_table[b * max_pages + j / P] (vLLM's block table, int32). Pages are read in
       place and may be shared between sequences; only the ceil(kv_len / P) entries a sequence
       needs are read, each within 0..n_pages - 1. n_kv stays each sequence's key count (or its
       capacity when ragged).
     max_pages [ceil(n_kv / page_size)]: the block table's row length; n_pages >= 1 when paged.
     packed [0]: 1 stores q, o and lse without padding: sequence b's rows are rows q_offsets[b] ..
       q_offsets[b + 1] - 1 (batch + 1 non-decreasing entries from 0, cu_seqlens) of tensors whose
       layout's `row` and `head` strides address them (`batch` is not used; all zero:
       [rows][heads][d], lse [rows][heads_q]); n_q is then the most rows a sequence may have.
       Packed implies ragged (resolve sets it): kv_lens, when given, are each sequence's keys and
       q_lens must be NULL. */
  int64_t page_size, max_pages, n_pages;
  int packed;
} txattn_problem;
#define TXATTN_PROBLEM_INIT                                                                        \
  { .struct_size = sizeof(txattn_problem) }
/* The sizes a caller's struct_size may have: TXATTN_PROBLEM_SIZE_0_2 (also what 0 means),
   TXATTN_PROBLEM_SIZE_0_2_SERVING (with lse and ragged), TXATTN_PROBLEM_SIZE_0_2_MODIFIERS (with
   the score modifiers) and sizeof(txattn_problem) (with the mask tensor, paged K/V and packed
   queries); any other size is refused (see "Public structs grow" above). */
#define TXATTN_PROBLEM_SIZE_0_2           (offsetof(txattn_problem, struct_size) + sizeof(size_t))
#define TXATTN_PROBLEM_SIZE_0_2_SERVING   offsetof(txattn_problem, softcap)
#define TXATTN_PROBLEM_SIZE_0_2_MODIFIERS offsetof(txattn_problem, mask_tensor)

/* Element (b, h, i, c) of a tensor is at data[b*batch + h*head + i*row + c] (strides in elements of
   the tensor's type, >= 0; for Q8_0 and Q4_0 in values, each a multiple of 32: see txattn_dtype). All-zero
   strides mean contiguous [batch][heads][rows][dim]. */
typedef struct txattn_layout {
  int64_t batch, head, row;
} txattn_layout;

/* Element (b, h, i, j) of a mask tensor is at mask[b*batch + h*head + i*row + j*key] (elements of
   its type, >= 0, each may be 0 to broadcast; taken as given: all zero is one element for every
   pair). */
typedef struct txattn_mask_layout {
  int64_t batch, head, row, key;
} txattn_mask_layout;

typedef struct txattn_tensors {
  /* q [batch][heads_q][n_q][d_qk], k [batch][heads_kv][n_kv][d_qk], v [batch][heads_kv][n_kv][d_v],
     o [batch][heads_q][n_q][d_v] (o must not overlap q, k or v), each of the element type its
     txattn_problem.*_type names: set q (a float pointer) or q_data (any pointer) alike. */
  union {
    const float *q;
    const void *q_data;
  };
  union {
    const float *k;
    const void *k_data;
  };
  union {
    const float *v;
    const void *v_data;
  };
  union {
    float *o;
    void *o_data;
  };
  txattn_layout q_layout, k_layout, v_layout, o_layout;
  size_t struct_size; /* [0: TXATTN_TENSORS_SIZE_0_2] */
  /* Past version 0.2's struct, read where the problem asks (txattn_problem.lse, .ragged).
     lse [batch][heads_q][n_q] fp32 (lse_layout in floats; all zero: contiguous), must not overlap
     the other tensors. q_lens, kv_lens [batch]: each sequence's rows, 0..n_q and 0..n_kv; NULL:
     n_q (n_kv) for every sequence. */
  float *lse;
  txattn_layout lse_layout;
  const int64_t *q_lens, *kv_lens;
  /* The score modifiers' data (past TXATTN_TENSORS_SIZE_0_2_SERVING), read where the problem asks
     (txattn_problem.alibi, .sinks): heads_q floats each, ALiBi's slope and the sink logit of each
     query head. alibi_slopes must be finite; sinks finite or -inf (no sink for that head). */
  const float *alibi_slopes, *sinks;
  /* The mask tensor (past TXATTN_TENSORS_SIZE_0_2_MODIFIERS), read where txattn_problem.mask_tensor
     asks: [batch][heads_q][n_q][n_kv] through mask_layout, of one byte (BOOL) or mask_type
     (ADDITIVE) per element, aligned to its elements, not overlapping o or lse. Ragged: sequence b's
     row i and key j (its own, from 0) are element (b, h, i, j). */
  const void *mask;
  txattn_mask_layout mask_layout;
  /* Paged K/V and packed queries (after the mask tensor), read where the problem
     asks (txattn_problem.page_size, .packed): block_table [batch][max_pages] page indices;
     q_offsets [batch + 1] the first row of each sequence in q, o and lse, then the total. */
  const int32_t *block_table;
  const int64_t *q_offsets;
  /* 8-bit K/V scales (after q_offsets, TXATTN_TENSORS_SIZE_0_2_PAGED): heads_kv fp32 scales
     each, read when k_type (k_scale) or v_type (v_scale) is E4M3 or E5M2: K/V head h's value is
     its fp8 value times k_scale[h] (v_scale[h]); one scale for the whole cache (vLLM's per-tensor
     scale) is that scale repeated. Each is finite and > 0, and small and large enough that every
     fp8 value times it is a normal fp32 or 0: 2^-117 <= s <= FLT_MAX / 448 for E4M3,
     2^-110 <= s <= FLT_MAX / 57344 for E5M2 (so its rounding is relative, 2^-24 at most). Must be
     NULL for the other types, where no scale applies (Q8_0 blocks carry their own). */
  const float *k_scale, *v_scale;
} txattn_tensors;
#define TXATTN_TENSORS_INIT                                                                        \
  { .struct_size = sizeof(txattn_tensors) }
/* Sizes as for txattn_problem: TXATTN_TENSORS_SIZE_0_2 (what 0 means), ..._SERVING (lse and the
   lengths), ..._MODIFIERS (the modifiers' data), ..._PAGED (the mask tensor, the block table and
   q_offsets) and sizeof(txattn_tensors) (the 8-bit scales). */
#define TXATTN_TENSORS_SIZE_0_2           (offsetof(txattn_tensors, struct_size) + sizeof(size_t))
#define TXATTN_TENSORS_SIZE_0_2_SERVING   offsetof(txattn_tensors, alibi_slopes)
#define TXATTN_TENSORS_SIZE_0_2_MODIFIERS offsetof(txattn_tensors, mask)
#define TXATTN_TENSORS_SIZE_0_2_PAGED     offsetof(txattn_tensors, k_scale)

/* struct_size comes first here, where version 0.1 had plugin_path: a 0.1-style positional
   initialiser such as {"plugins", "table.json", 4} still compiles (with int-conversion warnings)
   but means something new: the pointer lands in struct_size (which the library refuses as no size
   of the struct) and every value shifts one field. Name the fields: {.struct_size =
   sizeof(txattn_options), .plugin_path = ...}, or TXATTN_OPTIONS_INIT and assignments. */
typedef struct txattn_options {
  size_t struct_size; /* TXATTN_OPTIONS_INIT; 0: TXATTN_OPTIONS_SIZE_0_2 */
  /* directories separated by ':'; NULL: $TXATTN_PLUGIN_PATH, else the installed ones */
  const char *plugin_path;
  const char *table_path; /* dispatch table; NULL: $TXATTN_TABLE, else the default; "": none */
  int n_threads;          /* 0: every CPU this process may run on */
  /* cache sizes "l1d=48K,l2=1M,l3=32M" (any subset) instead of what hwloc reports (checked for
     plausibility); NULL: $TXATTN_CACHES; "": no override */
  const char *caches;
} txattn_options;
#define TXATTN_OPTIONS_INIT                                                                        \
  { .struct_size = sizeof(txattn_options) }
#define TXATTN_OPTIONS_SIZE_0_2 sizeof(txattn_options)

typedef struct txattn_context txattn_context;
typedef struct txattn_plan txattn_plan;

/* A context loads the plugins once; it is safe to share between threads. opts may be NULL. */
TXATTN_API txattn_status txattn_context_create(const txattn_options *opts, txattn_context **out);
TXATTN_API void txattn_context_free(txattn_context *ctx); /* NULL is fine; free its plans first */
TXATTN_API int txattn_context_threads(const txattn_context *ctx); /* the resolved thread count */

typedef struct txattn_kernel_info {
  size_t struct_size; /* TXATTN_KERNEL_INFO_INIT; see "Public structs grow" above */
  const char *name;   /* unique, "<algorithm>.<isa>": "banded.scalar", "tiled.avx512" */
  const char *summary, *plugin, *path;
  int usable; /* 0 when this CPU/OS lacks what it needs */
  const char *why_unusable;
  const char *isa;            /* txattn_isa_name() of the kernel's ISA */
  unsigned flags;             /* TXATTN_KERNEL_* of txattn/plugin.h */
  const char *plugin_version; /* the plugin's own version string */
  const char *plugin_build;   /* "fnv1a64x4:<16 hex digits>": a hash of the plugin file's bytes */
  /* the kernel whose loop this threaded one runs on one thread (txattn/plugin.h), NULL if none */
  const char *one_thread_same_as;
  /* (after 0.2's first struct) the element types the kernel takes for q, k and v and makes for o,
     each a set of TXATTN_DTYPE_BIT; a problem goes to it only if every tensor's type is in its set */
  unsigned dtypes[4];
} txattn_kernel_info;
#define TXATTN_KERNEL_INFO_INIT                                                                    \
  { .struct_size = sizeof(txattn_kernel_info) }
#define TXATTN_KERNEL_INFO_SIZE_0_2 offsetof(txattn_kernel_info, dtypes)

TXATTN_API size_t txattn_kernel_count(const txattn_context *ctx);
TXATTN_API txattn_status txattn_kernel_get(const txattn_context *ctx, size_t i,
                                           txattn_kernel_info *out);

/* A plugin file the loader skipped, and why. */
typedef struct txattn_rejected_info {
  size_t struct_size; /* TXATTN_REJECTED_INFO_INIT */
  const char *path;
  const char *reason;
} txattn_rejected_info;
#define TXATTN_REJECTED_INFO_INIT                                                                  \
  { .struct_size = sizeof(txattn_rejected_info) }
#define TXATTN_REJECTED_INFO_SIZE_0_2 sizeof(txattn_rejected_info)
TXATTN_API size_t txattn_rejected_count(const txattn_context *ctx);
TXATTN_API txattn_status txattn_rejected_get(const txattn_context *ctx, size_t i,
                                             txattn_rejected_info *out);

/* kernel == NULL: the dispatcher chooses; else that kernel, or E_NOT_FOUND / E_UNSUPPORTED with the
   reason. TXATTN_FORCE_KERNEL=name in the environment forces the dispatcher's choice. When the
   kernel the dispatcher chose (by table or estimate) cannot plan p (E_PLUGIN, E_NOMEM, an
   unexpected E_UNSUPPORTED), the next of the estimate's ranking is tried, and so on;
   txattn_plan_why and TXATTN_VERBOSE name each kernel that failed and why. Only when none plans
   does this fail, listing each one's reason, with E_UNSUPPORTED if every kernel declined, else
   the first failure's status. A named or forced kernel's own error is returned as it is. */
TXATTN_API txattn_status txattn_plan_create(txattn_context *ctx, const txattn_problem *p,
                                            const char *kernel, txattn_plan **out);
/* Callable from many threads at once on one plan. */
TXATTN_API txattn_status txattn_plan_execute(const txattn_plan *plan, const txattn_tensors *t);
TXATTN_API const char *txattn_plan_kernel(const txattn_plan *plan);
/* Why the dispatcher chose this kernel, in one line ("forced by TXATTN_FORCE_KERNEL", "estimate: ...",
   after any kernel that could not plan: "a.b could not plan (TXATTN_E_PLUGIN: ...); estimate: ...") */
TXATTN_API const char *txattn_plan_why(const txattn_plan *plan);
/* The same failures as data: the kernels the dispatcher tried before the plan's and that could not
   plan the problem, each with its status (E_UNSUPPORTED: it declined when planned), in the order
   tried (at most 8). *kernel lives as
   long as the plan's context. E_INVALID for an index past txattn_plan_failed_count. */
TXATTN_API size_t txattn_plan_failed_count(const txattn_plan *plan);
TXATTN_API txattn_status txattn_plan_failed_get(const txattn_plan *plan, size_t i,
                                                const char **kernel, txattn_status *status);
/* The plan in one line: kernel, tunables, threads, problem. Returns what snprintf would. */
TXATTN_API int txattn_plan_describe(const txattn_plan *plan, char *buf, size_t size);
TXATTN_API void txattn_plan_free(txattn_plan *plan); /* NULL is fine */

/* plan + execute, with a small per-context cache of plans. Plans as txattn_plan_create(kernel
   NULL) does; when that kernel then fails to run (E_PLUGIN, E_INTERNAL, E_NOMEM, E_UNSUPPORTED),
   the next candidate that plans computes the whole output instead and its plan is the one cached
   (not when TXATTN_FORCE_KERNEL names the kernel); when every kernel fails, the error lists them. */
TXATTN_API txattn_status txattn_attention(txattn_context *ctx, const txattn_problem *p,
                                          const txattn_tensors *t);
/* fp64 accumulation, single-threaded: the oracle (lse and ragged too) */
TXATTN_API txattn_status txattn_reference(const txattn_problem *p, const txattn_tensors *t);
/* Combines partial results of one attention over disjoint sets of keys into the result over all
   of them, as the online softmax does: per row, L = log(sum_i exp(lse_i)) and
   o = sum_i exp(lse_i - L) o_i, in fp32 from the largest lse_i down; parts with lse -inf add
   nothing, and a row where every lse_i is -inf gets o = 0, lse -inf. A part's lse is +inf where
   its row's scores overflow fp32 (the part's o is still exact): L is then +inf, and the parts at
   +inf share the row equally (o = their mean; exact when their true lse agree, and within the
   attention's own bound at such scores otherwise) while the finite ones weigh 0. As the NaN rule
   above says of the whole, a NaN lse_i makes the row's o and lse NaN, and a NaN in a read part's
   o row (its keys read a NaN in V) makes the row's o NaN. p gives the shape (batch,
   heads_q, n_q, d_v), o's type and, with p->ragged, out->q_lens the rows per sequence; parts[i]
   gives o_data, o_layout, lse and lse_layout of partial i (what a call with p->lse wrote for its
   keys), out the o (and, if out->lse is not NULL, the lse) of the whole. out's o may be parts[0]'s
   (in place); no other tensors may overlap. The error adds at most a few fp32 roundings of max|V|
   to the parts' own (docs/error_bound.md, "Merging"). With p->sinks, the parts are computed
   without sinks (p->sinks 0 for each) and the merge applies out->sinks once, to the whole:
   o *= 1 / (1 + exp(t_h - L)); lse stays L. E_INVALID names what is malformed. */
TXATTN_API txattn_status txattn_merge(const txattn_problem *p, const txattn_tensors *parts,
                                      size_t n_parts, const txattn_tensors *out);
/* *bound = the largest max|O - O_ref| a kernel may have on these inputs (the formula at the top of
   this file; t->o is checked as txattn_reference checks it, not read). Validates as
   txattn_reference does; *bound is untouched on error. Costs about what txattn_reference costs.
   The sqrt(d_qk) term is the rounding of the d_qk-term dot products; see docs/error_bound.md. */
TXATTN_API txattn_status txattn_error_bound(const txattn_problem *p, const txattn_tensors *t,
                                            double *bound);
/* The bound on a kernel's lse (p->lse): every row that sees a key and reads no NaN has
   |lse - lse_ref| <= *abs_bound + *rel_bound * |lse_ref| against txattn_reference's lse_ref, where
     abs_bound = (2 + min(d_qk - 1, 6 sqrt(d_qk - 1))) * 2^-24 * L
                 + (3 + 3 ln n + min(4.6 (n - 1), 6 sqrt(8.76 (n - 1)))) * 2^-24,
     rel_bound = 2^-23,
   L as for txattn_error_bound and n the most keys a row sees (per sequence when ragged): the
   scores' error, which lse takes whole, the exponentials', their sum's and the two roundings of
   lse to fp32. Takes p with or without p->lse; validates as txattn_error_bound does and leaves
   both untouched on error. Derived in docs/error_bound.md, "The bound on lse". */
TXATTN_API txattn_status txattn_lse_error_bound(const txattn_problem *p, const txattn_tensors *t,
                                                double *abs_bound, double *rel_bound);

/* The machine as the library sees it: what tile sizes are derived from and what a dispatch table is
   tied to. Cache sizes are per core, in bytes. */
typedef struct txattn_machine_info {
  size_t struct_size; /* TXATTN_MACHINE_INFO_INIT */
  char vendor[16];    /* "AuthenticAMD", "GenuineIntel", "ARM" ... */
  char brand[64];     /* the CPU's brand string, "" if unknown */
  int family, model,
      stepping;      /* x86: cpuid leaf 1 (extended family/model folded in); arm64: MIDR */
  unsigned isa_mask; /* bit (1u << txattn_isa) for each ISA the CPU and OS enable (no cap) */
  int n_cores, n_pus, n_numa;                     /* physical cores, hardware threads, NUMA nodes */
  int64_t l1d_bytes, l2_bytes, l3_bytes;          /* used: checked, clamped or overridden */
  int64_t hw_l1d_bytes, hw_l2_bytes, hw_l3_bytes; /* as reported by hwloc; 0 if it reported none */
  char cache_source[64];                          /* "hwloc", "hwloc+override", ... */
  char cache_notes[1024]; /* every value ignored, clamped or overridden, and why; "" if none */
  /* what the hw_* shares were computed from, for people */
  int64_t hw_cache_total_bytes[3]; /* l1d, l2, l3: one cache's size as hwloc reports it; 0: none */
  int hw_cache_cores[3];           /* the cores sharing that cache (hw_* = total / cores) */
  /* "hwloc 2.9.0: Linux backend, this system", "hwloc: XML file F (HWLOC_XMLFILE), ..."; F is
     the whole path, or where the path does not fit, a stand-in naming topology_file (as in
     cache_notes): a path is never cut */
  char topology_source[192];
  /* (after 0.2's first struct) the file $HWLOC_XMLFILE named, whole, whether or not hwloc could
     read it; NULL when the variable was unset. Lives as long as the library is loaded. */
  const char *topology_file;
} txattn_machine_info;
#define TXATTN_MACHINE_INFO_INIT                                                                   \
  { .struct_size = sizeof(txattn_machine_info) }
#define TXATTN_MACHINE_INFO_SIZE_0_2 offsetof(txattn_machine_info, topology_file)
TXATTN_API txattn_status txattn_context_machine(const txattn_context *ctx,
                                                txattn_machine_info *out);

/* A plan's tunables (block sizes), as its kernel declares them and as the plan set them: the
   dispatch table's values, else the kernel's cache-derived defaults. Names and summaries live as
   long as the plan. name or value may be NULL when not wanted. */
TXATTN_API size_t txattn_plan_tunable_count(const txattn_plan *plan);
TXATTN_API txattn_status txattn_plan_tunable_get(const txattn_plan *plan, size_t i,
                                                 const char **name, int64_t *value);
typedef struct txattn_tunable_info {
  size_t struct_size;            /* TXATTN_TUNABLE_INFO_INIT */
  const char *name, *summary;    /* "block_k", the kernel's one-line description of it */
  int64_t value;                 /* the plan's */
  int64_t min, max, multiple_of; /* the kernel accepts min <= v <= max, v % multiple_of == 0 */
} txattn_tunable_info;
#define TXATTN_TUNABLE_INFO_INIT                                                                   \
  { .struct_size = sizeof(txattn_tunable_info) }
#define TXATTN_TUNABLE_INFO_SIZE_0_2 sizeof(txattn_tunable_info)
TXATTN_API txattn_status txattn_plan_tunable_info(const txattn_plan *plan, size_t i,
                                                  txattn_tunable_info *out);

/* Tunables a kernel declares (value is 0: no plan), by kernel index as for txattn_kernel_get. */
TXATTN_API size_t txattn_kernel_tunable_count(const txattn_context *ctx, size_t kernel);
TXATTN_API txattn_status txattn_kernel_tunable_get(const txattn_context *ctx, size_t kernel,
                                                   size_t i, txattn_tunable_info *out);
/* A plan for the named kernel with the n tunables names[i] = values[i] (the others as
   txattn_plan_create sets them); E_INVALID naming a tunable the kernel does not declare or a value
   outside its declared range. */
TXATTN_API txattn_status txattn_plan_create_tuned(txattn_context *ctx, const txattn_problem *p,
                                                  const char *kernel, const char *const *names,
                                                  const int64_t *values, size_t n,
                                                  txattn_plan **out);

/* One call of a kernel in the plugin scanner's process (txattn-scan, docs/plugins.md), where a
   kernel that crashes, hangs, exits, prints or writes outside its buffers does so without harm to
   the caller: kernel `kernel` of ctx (its index, as for txattn_kernel_get) on the problem p with
   the n tunables names[i] = values[i] (the others its defaults), on n_threads threads if it is
   threaded, on inputs the scanner makes; with compare, its output is held to txattn_reference
   within txattn_error_bound. TXATTN_OK with the outcome in *t; E_INVALID for bad arguments,
   E_UNSUPPORTED for paged or packed problems. */
typedef enum txattn_trial_outcome {
  TXATTN_TRIAL_RAN,         /* it returned OK (within the bound, where compared) */
  TXATTN_TRIAL_INEXACT,     /* it returned OK above the bound, or not finite (error NaN) */
  TXATTN_TRIAL_FAILED,      /* it returned status */
  TXATTN_TRIAL_CRASHED,     /* a signal (signal) or an exit (exit_status) ended the process */
  TXATTN_TRIAL_HUNG,        /* no answer within timeout_s */
  TXATTN_TRIAL_PRINTED,     /* it wrote `printed` bytes to stdout, why the first of them */
  TXATTN_TRIAL_OUTSIDE,     /* it wrote `after` bytes past o, `before` before it, or as why says */
  TXATTN_TRIAL_DECLINED,    /* not run: the kernel does not take p or these tunables (why) */
  TXATTN_TRIAL_UNAVAILABLE, /* the scanner could not be started (why): no verdict */
} txattn_trial_outcome;
typedef struct txattn_trial {
  size_t struct_size; /* TXATTN_TRIAL_INIT */
  double timeout_s;   /* in [60] */
  int compare;        /* in: 1 compares the output with the reference (a small p: it is fp64) */
  txattn_trial_outcome outcome;
  txattn_status status;
  int signal, exit_status;
  double seconds, error, bound; /* the call's time, max|O - O_ref| (-1: not compared), the bound */
  size_t printed, after, before;
  char why[512];
} txattn_trial;
#define TXATTN_TRIAL_INIT                                                                          \
  { .struct_size = sizeof(txattn_trial) }
TXATTN_API txattn_status txattn_kernel_trial(const txattn_context *ctx, size_t kernel,
                                             const txattn_problem *p, const char *const *names,
                                             const int64_t *values, size_t n, int n_threads,
                                             txattn_trial *t);

/* The dispatch table a context follows (txattn/table.h builds and reads tables). The context loads
   it at creation from txattn_options.table_path, else $TXATTN_TABLE, else
   $XDG_CACHE_HOME/txtune/dispatch.json, else ~/.cache/txtune/dispatch.json. A missing, malformed
   or stale table never fails txattn_context_create: the built-in estimate chooses instead.
   PARTIAL was added after 0.2's first release (the values before it are unchanged): a program that
   tests for LOADED to learn whether the table is followed should test for PARTIAL too. */
typedef enum txattn_table_status {
  TXATTN_TABLE_LOADED = 0,    /* followed by txattn_plan_create */
  TXATTN_TABLE_NONE = 1,      /* no file there, or tables are off (table_path "") */
  TXATTN_TABLE_STALE = 2,     /* made for another machine or library, or none of these plugins */
  TXATTN_TABLE_MALFORMED = 3, /* unreadable or not a valid table */
  /* partly valid: made for this machine and library, but a plugin is new to it, another version
     or build, or gone. It is followed for the kernels it measured as they are; the state names
     the others, and `txtune profile --update` measures them (docs/dispatch_table.md) */
  TXATTN_TABLE_PARTIAL = 4,
} txattn_table_status;
TXATTN_API txattn_table_status txattn_context_table_status(const txattn_context *ctx);
/* The state in one line, naming the file: "loaded PATH: ...", "partly valid table PATH: ...;
   plugin example 1.0.0 (...) is loaded here, not in the table (its kernel example.scalar is not
   measured): ...", "no table at PATH: run `txtune profile` ...", "stale table PATH:
   machine.model is 85 in the table, 86 here; ...: run ...", "malformed dispatch table
   PATH:3:14: ...". Lives as long as ctx. */
TXATTN_API const char *txattn_context_table_state(const txattn_context *ctx);
/* The table file the context looked for; "" when none (tables off, or no location known). */
TXATTN_API const char *txattn_context_table_path(const txattn_context *ctx);

/* Conversions between element types, so that a caller never writes the 8-bit formats by hand.
   Converts the n values at src (of src_type) to dst_type at dst: one row of a tensor, or any run
   of values contiguous in both (a whole cache, its heads and rows back to back). With Q8_0 or Q4_0
   on either side, n is a multiple of 32 and the run starts at a block. src and dst must not overlap.
   `scale` is the fp32 scale of an fp8 side (txattn_tensors.k_scale[h] of the head the values
   belong to, within the range k_scale takes) and must be 1 otherwise. E_INVALID names what is wrong (nothing is
   written then); 8-bit or 4-bit to 8-bit or 4-bit is refused (convert through F32).
   To Q8_0 (src f32, f16 or bf16): as ggml's quantize_row_q8_0: per block amax = max |x|,
     d = amax / 127, q = roundf(x * (1 / d)) (half away from zero; all q 0 when amax is 0), d
     stored as f16 (nearest even). Refused, naming the value, for a NaN or infinite value or one
     whose block's d overflows f16 (|x| > 65504 * 127).
   To Q4_0 (src f32, f16 or bf16): as ggml's quantize_row_q4_0: per block m = the value of largest
     magnitude (the first if several), d = m / -8, q = min(15, (int)(x * (1 / d) + 8.5)) (all q 8
     when m is 0), stored as nibbles q, d as f16 (nearest even); value (q - 8) * d. Refused as for
     Q8_0 for a NaN or infinite value or a d that overflows f16 (|x| > 65504 * 8).
   To E4M3 / E5M2: x / scale in fp32, then rounded to nearest even in the fp8 format; values past
     the largest (448, 57344), infinities included, saturate to it with their sign (as vLLM's
     saturating cast); NaN stays NaN.
   From 8 or 4 bits (to f32, f16, bf16): the value the kernels compute on (q * d, exact; fp8 * scale
     rounded to fp32 once), then rounded to nearest even to dst_type.
   Between f32, f16 and bf16: rounded to nearest even (f16 overflow becomes Inf), as kernels round
   their o. */
TXATTN_API txattn_status txattn_convert(const void *src, txattn_dtype src_type, void *dst,
                                        txattn_dtype dst_type, int64_t n, float scale);
/* The scale that maps the largest |x| of n values at src (f32, f16 or bf16; NaN skipped) onto
   fp8_type's largest value: amax / 448 (E4M3) or amax / 57344 (E5M2), rounded to fp32, as vLLM
   computes its dynamic scale; raised to the least scale txattn_tensors.k_scale takes (2^-117,
   2^-110) when smaller, and 1 when every value is 0. E_INVALID for an infinite value, a src_type
   that is 8-bit or an fp8_type that is not fp8. */
TXATTN_API txattn_status txattn_convert_scale(const void *src, txattn_dtype src_type, int64_t n,
                                              txattn_dtype fp8_type, float *scale);

/* Helpers for callers and tools */
/* Validates p and writes it to *out with every default filled in. */
TXATTN_API txattn_status txattn_problem_resolve(const txattn_problem *p, txattn_problem *out);
/* The standard ALiBi slopes of heads_q heads into out[0 .. heads_q - 1], as llama.cpp (ggml) computes
   them from max_bias (the ALiBi paper's default is 8): with n = 2^floor(log2(heads_q)),
   m0 = 2^(-max_bias / n) and m1 = 2^(-max_bias / 2 / n), head h < n gets m0^(h + 1) and head
   h >= n gets m1^(2 (h - n) + 1). E_INVALID unless heads_q >= 1, max_bias finite and >= 0 and out
   not NULL (max_bias 0 gives slopes of 1, as in ggml, where 0 means no ALiBi at all). */
TXATTN_API txattn_status txattn_alibi_slopes(int64_t heads_q, float max_bias, float *out);
/* The number of (query row, key) pairs visible over the whole problem (batch and heads included),
   as the mask kind and the sink keys show them (a mask tensor is not read: it may hide more);
   -1 if p is invalid. FLOPs are 2 * (d_qk + d_v) per visible pair. */
TXATTN_API double txattn_problem_visible_pairs(const txattn_problem *p);

/* The catalogue of real models: the attention layers of published models, as their configurations
   give them, so that servers, txtune (`txtune models`, `check --model`, `bench --model`) and the
   Python package read one table. Model i (0 <= i < txattn_model_count()) has n_kinds kinds of
   attention layer, each read with txattn_model_layer. */
typedef struct txattn_model_info {
  size_t struct_size; /* TXATTN_MODEL_INFO_INIT */
  const char *name;   /* what `txtune --model` takes: "llama-3.1-8b", "gemma-2-9b", ... */
  const char *title;  /* "Llama 3.1 8B" */
  /* Where the numbers come from: the published configuration (an address) and the fields read */
  const char *source;
  /* What txattn does not compute of the model's attention, or "" (T5's relative bias) */
  const char *note;
  int64_t n_kinds; /* kinds of attention layer, 1 to TXATTN_MODEL_MAX_KINDS */
  int64_t layers;  /* the model's attention layers, all kinds together */
} txattn_model_info;
#define TXATTN_MODEL_INFO_INIT                                                                     \
  { .struct_size = sizeof(txattn_model_info) }
/* The sizes a caller's struct_size may have (see "Public structs grow" above): this one, what 0
   means. */
#define TXATTN_MODEL_INFO_SIZE_0_2_MODELS sizeof(txattn_model_info)
#define TXATTN_MODEL_MAX_KINDS            4

/* One kind of attention layer of a model: a txattn_problem for each call of it, but for the number
   of tokens (n_q and n_kv 0 where they are the tokens). */
typedef struct txattn_model_layer_info {
  size_t struct_size; /* TXATTN_MODEL_LAYER_INFO_INIT */
  const char *kind;   /* "self", "local", "global", "encoder", "cross", ... */
  int64_t layers;     /* the model's layers of this kind */
  int64_t heads_q, heads_kv, d_qk, d_v;
  txattn_mask mask;
  int64_t window_left, window_right; /* for TXATTN_MASK_WINDOW */
  float scale;                       /* the query scale, as the model computes it */
  float softcap;                     /* 0: none */
  int alibi; /* 1: ALiBi, slopes txattn_alibi_slopes(heads_q, alibi_max_bias) */
  float alibi_max_bias;
  int sinks;         /* 1: a learned sink logit per query head */
  int64_t sink_keys; /* 0: none */
  /* Fixed lengths, 0 where they are the tokens: Whisper's cross-attention has n_q 448 (the
     decoder's context) and n_kv 1500 (the encoder's frames) */
  int64_t n_q, n_kv;
  int decode;        /* 1: the layer runs for each generated token (n_q 1); 0: encoder only */
  int ragged;        /* 1: batches of unequal lengths, padded (BERT): a ragged batch */
  int relative_bias; /* 1: a learned relative position bias (T5): an additive mask tensor */
} txattn_model_layer_info;
#define TXATTN_MODEL_LAYER_INFO_INIT                                                               \
  { .struct_size = sizeof(txattn_model_layer_info) }
#define TXATTN_MODEL_LAYER_INFO_SIZE_0_2_MODELS sizeof(txattn_model_layer_info)

/* The number of models in the catalogue. */
TXATTN_API int64_t txattn_model_count(void);
/* Model i; E_INVALID (out untouched) unless 0 <= i < txattn_model_count() and out is a
   txattn_model_info of a size some header gave it. The strings are static. */
TXATTN_API txattn_status txattn_model_get(int64_t i, txattn_model_info *out);
/* Kind `kind` (0 <= kind < n_kinds) of model i; E_INVALID as txattn_model_get. */
TXATTN_API txattn_status txattn_model_layer(int64_t i, int64_t kind, txattn_model_layer_info *out);
/* The index of the model named `name` (as txattn_model_info.name spells it); E_NOT_FOUND with the
   names the catalogue has in the message. */
TXATTN_API txattn_status txattn_model_find(const char *name, int64_t *index);

#ifdef __cplusplus
}
#endif
#endif /* TXATTN_TXATTN_H */
