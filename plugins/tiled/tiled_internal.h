/* SPDX-License-Identifier: MIT */
/* Internal interface of the tiled algorithm (hidden symbols), shared by the tiled plugin and by
 * plugins that reuse it (the OpenMP variant links the txattn_tiled_algo static library).
 *
 * Per (batch b, kv head kvh), the query rows of every query head of the GQA group are stacked
 * position-major: row t is query head kvh * group + t % group at position i = t / group. Heads that
 * share K/V thus share one pass over each key block, and the rows of a block have close visible
 * ranges. Query blocks are block_q consecutive rows; key blocks are block_k consecutive keys on a
 * grid aligned to key 0. K and V are packed block by block (tiled_ops.pack_kv) either once for the
 * whole kv head (several query blocks) or into the scratch block buffer as they are needed (a
 * single query block: short prompts).
 *
 * The direct path (g->direct: at most TILED_DIRECT_ROWS rows per (b, kvh), decode with a GQA group
 * of up to 4) packs nothing: it runs 4-row micro-kernels on the K and V rows in place, chunk by
 * chunk, pages of any size included (tiled_direct_algo.h says why), copying them into an L1
 * buffer only for K and V of two types or head sizes with a column tail.
 *
 * A caller that drives threads itself:
 *  - tiled_geom_init(); per thread, tiled_scratch_carve() over tiled_scratch_bytes();
 *  - if g->direct: ops->run_direct() per (b, kvh) over all its rows and keys, or over a split of
 *    the keys (each thread its own partials), followed by tiled_merge_partials();
 *  - else per (b, kvh): ops->pack_kv() of the key blocks in tiled_key_span() into a buffer of
 *    tiled_packed_head_bytes() (or pass kv = NULL to stream); then ops->run_qblocks() on any split
 *    of [0, n_qblocks) across threads; or, with too few query blocks, ops->run_krange() on a split
 *    of the keys (each thread its own partials), followed by tiled_merge_partials().
 */
#ifndef TILED_INTERNAL_H
#define TILED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "txattn/plugin.h"

/* Rows per (batch, kv head) up to which the direct path replaces the tiled one (n_q x group): one
   register group; at two groups the tiled path is as fast or faster (docs/measurements.md). */
#define TILED_DIRECT_ROWS 4
/* Keys per chunk of the direct path where it copies K and V rows: two chunks' rows (32 KiB at
   d = 128) stay in L1 and L2; 16 keys measured faster than 32 on Zen 2. Reading rows in place it
   takes 64: each chunk's softmax and accumulator passes then serve 4x the keys, 1.2x (AVX-512) and
   1.5x (AVX2) faster than 16 with 16-bit rows in L2 on Zen 4 (docs/measurements.md). The score
   rows hold the larger. */
#define TILED_DIRECT_CHUNK          16
#define TILED_DIRECT_CHUNK_IN_PLACE 64
#define TILED_DIRECT_CHUNK_MAX      64

typedef struct tiled_ops tiled_ops;

/* Per-call geometry, derived once from the problem and the block sizes. */
typedef struct tiled_geom {
  const txattn_problem *p; /* resolved */
  const txattn_tensors *t; /* NULL when only sizing the workspace */
  int64_t group;           /* query heads per kv head */
  int64_t rows;            /* stacked query rows per (b, kv head): n_q * group */
  int64_t br, bc;          /* block_q (multiple of mr), block_k (multiple of kw) */
  int64_t n_qblocks, n_kblocks;
  int64_t dqk, dv, dvp; /* dvp: d_v rounded up to the vector width */
  int64_t dqkp;         /* d_qk rounded up to the vector width (the direct path's rows) */
  int64_t kv_block;     /* floats of one packed key block: bc * (dqk + dvp) */
  float scale2;         /* |scale| * log2(e): scores times scale2 are in base 2 */
  float qsign;          /* -1 if scale < 0: queries are negated when packed, so scale2 >= 0 */
  int direct;           /* rows <= TILED_DIRECT_ROWS: ops->run_direct, not the tiled path */
  const tiled_ops *ops; /* the ISA's table the geometry was made for */
  /* problem->lse: where each row's log-sum-exp goes (tensors->lse, through lse_layout), written
     with the row's output by tiled_write_rows and tiled_merge_partials; else NULL */
  float *lse;
  txattn_layout lse_layout;
  /* The score modifiers (txattn.h). With softcap or ALiBi the scores are "modified": each is the
     score itself, fl(scale q.k) capped and biased in the block (tl_modify_rows), so scale2 is
     fl(log2(e)), qsign 1 and lse_scale 1; else lse_scale is |scale|. slopes and sinks are the
     tensors' (NULL: none); sink_keys > 0 adds a pass over keys [0, K) before each row's range.
     Either path takes the modifiers: each runs a pass over the sink keys before the rows' own keys. */
  int modified;
  float scale, softcap, inv_softcap;
  double lse_scale;
  const float *slopes, *sinks;
  int64_t sink_keys;
  /* The mask tensor's kind (TXATTN_MASK_TENSOR_NONE: none; a mask makes the scores modified) and
     its key stride; each row's mask row is in tiled_scratch.mrow. */
  txattn_mask_tensor mask;
  int64_t mask_key;
  /* paged K/V: keys per page (txattn_page_size_of), 0 if not paged; rows go through tl_kv_row */
  int64_t page_size;
  /* The call's summary of the mask tensor (tiled_mask_summarise), or NULL (each query block then
     summarises its own rows): byte ((b vis_b + h vis_h) n_q + i) n_kblocks + kb is what the mask
     does to the keys of block kb within the ranges of row i of (b, h) (tiled_mask_scan's bits: a
     tile it shows wholly needs no pass over the mask). vis_b and vis_h are 0
     where the mask's stride is 0, so a mask shared by every head is read once per batch. */
  const unsigned char *vis;
  int64_t vis_b, vis_h;
} tiled_geom;

/* What a group of mr rows sees of a key block: the union [ga, gb) and the common part [ca, cb). */
typedef struct tiled_span {
  int64_t ga, gb, ca, cb;
} tiled_span;

/* One thread's scratch, carved by tiled_scratch_carve(); every array is 64-byte aligned. The
   direct path has TILED_DIRECT_ROWS rows (R) where the tiled path has br, chunks of
   TILED_DIRECT_CHUNK keys (C) where it has key blocks of bc, and its own query layout. The running
   sums l are fp64: each takes one term per key block (direct: per chunk), and an fp32 sum of
   millions of nearly equal terms drifts past the lse bound (docs/error_bound.md, "The bound on
   lse", item 4); one fp64 step per row and block costs nothing next to the block's FMAs. */
typedef struct tiled_scratch {
  /* the queries (times qsign): br * dqk as [br / mr][dqk][mr]; direct: R rows of dqkp floats, d_qk
     padded with zeros to whole vectors */
  float *qp;
  float *acc;        /* br * dvp: unnormalised outputs */
  float *acc_c;      /* br * dvp: acc's Kahan terms (tl_kahan_add): the output is acc - acc_c */
  float *pv;         /* direct: R * dvp: P V of the current span of chunks (td_flush); else NULL */
  float *pv_alpha;   /* direct: R: the span's alphas multiplied, still to scale acc by; else NULL */
  float *m;          /* br: running max (base-2 units) */
  double *l;         /* br: running sum of exp2(score - m), in fp64 (above) */
  float *s;          /* br * bc (direct: R x C): the block's scores, then its probabilities */
  float *alpha;      /* br: this key block's rescale factor of each row */
  tiled_span *spans; /* br / mr: each row group's view of the current key block; direct: NULL */
  float *kv;      /* kv_block, or NULL: the key block being streamed when no packed head is given */
  float *kc, *vc; /* direct: two chunks' K and V rows, zero-padded to dqkp and dvp; else NULL */
  int64_t *lo, *hi; /* br: each row's visible keys, clipped to the key range being processed */
  /* br each: with sink keys, the mask's range [lo2, hi2) each row sees after the pass over the sink
     keys (held in lo, hi then; the direct path holds the sink keys in lo2, hi2 until their pass,
     td_run); each row's position and ALiBi slope */
  int64_t *lo2, *hi2, *pos;
  float *slope;
  const void **mrow; /* br (direct: R), with a mask tensor: each row's row of the mask */
  /* br x n_kblocks, tiled path with a mask tensor (NULL where that would pass TILED_MASK_SUMMARY):
     what the mask does to the row's keys of each block within its ranges (tiled_mask_scan's bits: a
     tile it shows wholly is not masked key by key, one it hides wholly is skipped), copied from g->vis or
     else read once per query block row by row (sequentially), so that a tile all hidden costs a
     byte per row to skip */
  unsigned char *msum;
} tiled_scratch;
#define TILED_MASK_SUMMARY (INT64_C(1) << 24)

/* Partial results of rows [t0, t1) over a key range, for the split-KV merge: row r (= t - t0) has
   max m[r] (unscaled, as the scores), sum l[r] and unnormalised output acc[r * ld + c], c < d_v. */
typedef struct tiled_partial {
  float *m, *l, *acc;
  int64_t ld;
} tiled_partial;

/* What an ISA build of the algorithm provides (tiled_<isa>.c). */
struct tiled_ops {
  txattn_isa isa;
  int w, mr, kw; /* vector width, rows per register block, keys per packed K panel */
  /* Packs key blocks [kb0, kb1) of (b, kvh) into head + kb * kv_block for each kb. */
  void (*pack_kv)(const tiled_geom *g, int64_t b, int64_t kvh, int64_t kb0, int64_t kb1,
                  float *head);
  /* Computes and writes the output rows of query blocks [qb0, qb1) of (b, kvh); kv is the packed
     head (covering tiled_key_span()) or NULL to pack each key block into s->kv as it is needed. */
  void (*run_qblocks)(const tiled_geom *g, const float *kv, int64_t b, int64_t kvh, int64_t qb0,
                      int64_t qb1, const tiled_scratch *s);
  /* Rows [t0, t1) (at most br of them) against keys [k0, k1) only: writes partials, not the output.
   */
  void (*run_krange)(const tiled_geom *g, const float *kv, int64_t b, int64_t kvh, int64_t t0,
                     int64_t t1, int64_t k0, int64_t k1, const tiled_partial *out,
                     const tiled_scratch *s);
  /* The direct path (only when g->direct): rows [t0, t1) of (b, kvh) against keys [k0, k1), K and
     V read in place; writes the output rows when out is NULL, else partials as run_krange does. */
  void (*run_direct)(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                     int64_t k0, int64_t k1, const tiled_partial *out, const tiled_scratch *s);
  /* y[i] = 2^x[i] for x[i] <= 127 with the softmax's vectorised exp2 (for tests and measurements). */
  void (*exp2_array)(const float *x, float *y, size_t n);
  /* y[i] = tanh(x[i]) with the softcap's vectorised tanh (vf_tanh, for tests). */
  void (*tanh_array)(const float *x, float *y, size_t n);
  /* tiled_mask_scan's bits for the boolean bytes m[j0, j1) (a row of key stride 1), by vectors of
     bytes where the ISA has them. */
  unsigned (*bool_scan)(const unsigned char *m, int64_t j0, int64_t j1, unsigned want);
  /* n floats narrowed into a row of 16-bit type (f16 or bf16), round to nearest even (the vector
     layer's conversion: the bits of half.h's). */
  void (*narrow_row)(const float *src, int64_t n, void *dst, txattn_dtype type);
};

/* Max error of exp2_array (the softmax's vf_exp2) on [-126, 0], in ulp of the correctly rounded
   result, where the vector layer has a fused multiply-add (AVX2, AVX-512, NEON) and in
   tiled.scalar, whose a * b + c rounds twice: just above the maxima measured over every float of
   the range (docs/measurements.md). tests/test_vexp.c asserts these bounds. */
/* Max absolute error of tanh_array (vf_tanh) over every float, in units of 2^-24: below the 5.2
   derived in docs/error_bound.md ("Score modifiers"), which txattn_error_bound takes as 6. */
#define TILED_TANH_MAX_ERR_U      5.2
#define TILED_EXP2_MAX_ULP_FMA    1.02
#define TILED_EXP2_MAX_ULP_NO_FMA 1.30

extern const tiled_ops tiled_ops_scalar;
#if defined(__x86_64__)
extern const tiled_ops tiled_ops_avx2;
extern const tiled_ops tiled_ops_avx512;
extern const tiled_ops tiled_ops_avx512bf16; /* only where q and k are bf16 */
/* tiled.avx512's run_direct, which tiled.avx512bf16 shares (tiled_avx512.c). */
void tiled_run_direct_avx512(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                             int64_t k0, int64_t k1, const tiled_partial *out,
                             const tiled_scratch *s);
#endif
#if defined(__aarch64__)
extern const tiled_ops tiled_ops_neon;
#endif

/* tiled_geom.c */
/* Fills g for problem p (resolved) and block sizes br, bc; t may be NULL. Returns 0 if the sizes
   overflow what the workspace can address. */
int tiled_geom_init(tiled_geom *g, const txattn_problem *p, const txattn_tensors *t,
                    const tiled_ops *ops, int64_t br, int64_t bc);
/* streaming: the tiled path packs each key block into the scratch (ignored on the direct path). */
size_t tiled_scratch_bytes(const tiled_geom *g, const tiled_ops *ops, int streaming);
/* Carves s out of mem (64-byte aligned, tiled_scratch_bytes() long); s->kv is NULL unless
 * streaming, s->kc and s->vc unless g->direct. */
void tiled_scratch_carve(const tiled_geom *g, const tiled_ops *ops, int streaming, void *mem,
                         tiled_scratch *s);
size_t tiled_packed_head_bytes(const tiled_geom *g);
/* What the mask tensor does to keys [j0, j1) of a row of it (txattn_mask_row): TILED_MASK_SHOWS if
   it shows one of them, | TILED_MASK_HIDES if it hides one (a zero byte, an additive -inf); the scan
   stops once it has seen every bit of want. Boolean rows of key stride 1 go 32 bytes at a time. */
#define TILED_MASK_SHOWS 1u
#define TILED_MASK_HIDES 2u
#define TILED_MASK_BOTH  3u
unsigned tiled_mask_scan(const tiled_geom *g, const void *row, int64_t j0, int64_t j1,
                         unsigned want);
/* The summaries' bits for keys [j0, j1) of a mask row: a boolean row's exactly; an additive row's
   TILED_MASK_SHOWS exactly (the scan stops at the first key shown) and TILED_MASK_HIDES always: its
   values are added to every score anyway, and a scan for -inf would read every element. */
unsigned tiled_mask_bits(const tiled_geom *g, const void *row, int64_t j0, int64_t j1);
/* Bytes of the call's mask summary (g->vis), for any strides: 0 without a mask tensor or past
   TILED_MASK_SUMMARY (each query block then summarises its rows itself). */
size_t tiled_mask_summary_bytes(const tiled_geom *g);
/* Fills mem (tiled_mask_summary_bytes long, > 0) with the call's mask summary and points g->vis
   at it: each distinct row of the mask within the rows' visible ranges read once, in order. */
void tiled_mask_summarise(tiled_geom *g, unsigned char *mem);
/* The key blocks [*kb0, *kb1) that some query row can see (the same for every (b, kv head)). */
void tiled_key_span(const tiled_geom *g, int64_t *kb0, int64_t *kb1);
/* The (query, key) score pairs one call computes, exactly, in O(1) of n (tiled_geom.c). */
double tiled_pairs_computed(const tiled_geom *g, const tiled_ops *ops);
/* What a blocked (not direct) call does per query row besides its score pairs: packing K and V,
   rescaling, normalising and writing the row, counted in score pairs of the same time: fitted to
   tiled.avx2's time against windows of 1 to 1025 keys (docs/measurements.md). */
#define TILED_ROW_COST_PAIRS 48
/* The fallback estimate's cost of one call (cost_pairs in plugin.h): the computed pairs plus
   TILED_ROW_COST_PAIRS a query row on the blocked path. */
double tiled_cost_pairs(const tiled_geom *g, const tiled_ops *ops);
/* The same for problem p and blocks br, bc; where their geometry does not fit (tiled_geom_init
   fails: blocks of terabytes, which no workspace holds either), every pair plus the row cost, so
   that the count is always finite and >= 0. */
double tiled_problem_cost_pairs(const txattn_problem *p, const tiled_ops *ops, int64_t br,
                                int64_t bc);
/* The declared ranges of the tunables (tiled and tiled_omp kernels): block_q in [mr, this rounded
   down to mr] in steps of mr, block_k in [kw, this rounded down to kw] in steps of kw. */
#define TILED_BLOCK_Q_MAX 1024
#define TILED_BLOCK_K_MAX 2048
/* The default rule's inputs and bounds (tiled_geom.c): caches assumed when unknown, the largest
   caches it sizes from, and its largest blocks (within the declared ranges). */
#define TILED_RULE_L2_UNKNOWN (INT64_C(512) << 10)
#define TILED_RULE_L3_UNKNOWN (INT64_C(8) << 20)
#define TILED_RULE_L2_MAX     (INT64_C(1) << 20)
#define TILED_RULE_L3_MAX     (INT64_C(16) << 20)
#define TILED_RULE_BLOCK_Q    256
#define TILED_RULE_BLOCK_K    512
_Static_assert(TILED_RULE_BLOCK_Q <= TILED_BLOCK_Q_MAX && TILED_RULE_BLOCK_K <= TILED_BLOCK_K_MAX,
               "the default rule's blocks must lie within the declared ranges");
/* What `txtune topo` shows of the rule (the tunables' summaries). */
#define TILED_BLOCK_Q_SUMMARY                                                                      \
  "stacked query rows (all heads of a GQA group) per block; default: the block's scores, "         \
  "queries and accumulators in a quarter of L2 (half when a head's packed K/V exceeds half the "   \
  "L3 share), at most 256 rows, L2 counted as at most 1 MiB and the L3 share as at most 16 MiB"
#define TILED_BLOCK_K_SUMMARY                                                                      \
  "keys per packed K/V block; default: the largest block (block_k x (d_qk + d_v) floats) that "    \
  "fits in L2 counted as at most 1 MiB (one K panel if none does), at most 512 keys"
/* Cache-derived default block sizes (see the rule in tiled_geom.c); m may be NULL. Always a valid
   value of each tunable (a multiple of mr, kw within the declared range), whatever m and p. */
void tiled_default_blocks(const txattn_problem *p, const txattn_machine *m, int mr, int kw,
                          int64_t *br, int64_t *bc);
/* fit_tunables (plugin.h, ABI 1.3) of the tiled kernels: blocks = {block_q, block_k}, each cut to
   what p has (its stacked rows, its keys) rounded up to mr rows and kw keys. */
void tiled_fit_blocks(const txattn_problem *p, int mr, int kw, int64_t *blocks);

/* tiled_merge.c
 * Element types: the algorithm computes in fp32 whatever the tensors' types. K and V are widened
 * exactly where they are read (packed into fp32 blocks, or copied into the direct path's fp32
 * chunks), Q as its rows are loaded into the scratch; a row of a 16-bit o is computed in fp32
 * (the NaN rule applied there) and rounded to o's type to nearest even once, when it is written. */
/* Writes the output rows [t0, t1) of (b, kvh) from unnormalised outputs acc (row r at r * g->dvp),
   maxima m and (fp64) sums l: o = acc / l, exact zeros where l == 0 (no visible key), the whole
   row NaN if any element is; and, with g->lse, each row's log-sum-exp from m and l. For a 16-bit
   o, each row of acc is overwritten with the fp32 output row first. */
void tiled_write_rows(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                      float *acc, const float *m, const double *l);
/* Combines n_parts partial results of rows [t0, t1) of (b, kvh) and writes their output rows (and
   log-sum-exp, with g->lse); row (d_v floats) holds the fp32 row of a 16-bit o (unused for an f32
   o). */
void tiled_merge_partials(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                          const tiled_partial *parts, int n_parts, float *row);

#endif /* TILED_INTERNAL_H */
