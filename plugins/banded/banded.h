/* SPDX-License-Identifier: MIT */
/* Internal to the banded kernels (static library txattn_banded_algo, hidden symbols, linked by the
 * banded and banded_omp plugins): the split between the ISA-free row loop and the per-ISA kernels.
 *
 * banded_rows.c walks batches and heads and is compiled without ISA flags; everything inside one
 * head's range of rows (the rows, their visible key ranges, scores, max, exponentials, weighted
 * sums) is a banded_head_fn, one per ISA file, so that a vector kernel keeps its rows, registers
 * and loops to itself. banded.scalar builds its head from the banded_ops inner loops of
 * banded_scalar.c; the vector kernels come from banded_algo.h compiled once per ISA.
 *
 * A caller that drives threads itself (banded_omp): per thread, a banded_head over a scratch of
 * banded_workspace_bytes(); per task, banded_head_at() for a (batch, query head) and a row range
 * [row0, row1) whose row0 is a multiple of BANDED_MR, then the ISA's banded_head_fn. Ranges of one
 * head may go to different threads: a head function only reads K, V and Q and writes its own rows.
 */
#ifndef TXATTN_BANDED_H
#define TXATTN_BANDED_H

#include <math.h>

#include "txattn/plugin.h"

/* Keys per float partial sum (see banded_rows.c) in banded.scalar. */
#define BANDED_CHUNK 64
/* The same in the vector kernels: a window of up to 256 keys is then one float sum per row, with no
   double pass, which is faster, and the error stays far from the tolerance (both measured:
   docs/measurements.md). A multiple of every vector width. */
#define BANDED_VEC_CHUNK 256
/* Floats of slack after the scores of a row: a vector kernel may write one whole block of keys
   (at most 16) past the last visible key, and pads the scores to a whole vector. */
#define BANDED_PAD 32
/* Query rows the vector kernels process together (banded_algo.h). */
#define BANDED_MR 4
/* The widest vector of any ISA, in floats (AVX-512): bounds the workspace of every vector kernel. */
#define BANDED_MAX_W 16

/* The vector kernels' score blocks, per ISA (banded_<isa>.c says why each): W floats per vector, NP
   K panels of W keys per group score block, ROW_KB keys per single-row score block. Here so that
   banded_pairs_computed(), built without ISA flags, counts what each kernel computes. */
#define BANDED_AVX2_W        8
#define BANDED_AVX2_NP       3
#define BANDED_AVX2_ROW_KB   8
#define BANDED_AVX512_W      16
#define BANDED_AVX512_NP     3
#define BANDED_AVX512_ROW_KB 16
#define BANDED_NEON_W        4
#define BANDED_NEON_NP       4
#define BANDED_NEON_ROW_KB   8

/* One (batch, query head) of a call: its rows start at q and o, those of its kv head at k and v
   (elements of the types p->q_type ... p->o_type; row strides in elements); a head function
   computes its query rows [row0, row1). */
typedef struct banded_head {
  const txattn_problem *p;
  const void *q, *k, *v;
  void *o;
  float *lse; /* the head's row 0 of tensors->lse, or NULL: the call writes no lse */
  int64_t q_row, k_row, v_row, o_row, lse_row;
  int64_t row0, row1; /* 0 <= row0 <= row1 <= n_q */
  void *workspace;    /* banded_workspace_bytes(p, kernel's panels) bytes, 64-byte aligned */
  /* The score modifiers (txattn.h). Without softcap and ALiBi a score is sign(scale) q.k and the
     softmax scales s - max by |scale| (exp2_scale, lse_scale = |scale|); with either ("modified")
     a score is the modified score itself, fl(scale q.k) capped and biased (banded_modify), so
     exp2_scale is fl(log2 e) and lse_scale 1. slope and sink are the head's ALiBi slope (0: none)
     and sink logit (-inf: none); pos_shift = n_kv - n_q puts row i at key position i + pos_shift;
     sink_keys > 0 adds keys [0, sink_keys) beside a row's range (txattn_visible_ranges), their
     scores kept in the first sink_stride floats of each score row. A mask tensor (mask: its kind,
     0 for none; the vector kernels' one-row path only, banded_mask_applicable) is read from
     mask0, the head's row 0, mask_row bytes a row; an additive one makes the scores modified. */
  int modified, alibi, mask;
  const txattn_tensors *t;
  const unsigned char *mask0;
  int64_t mask_row;
  float abs_scale, exp2_scale, softcap, inv_softcap, slope;
  double lse_scale, sink;
  int64_t pos_shift, sink_keys, sink_stride;
} banded_head;

/* Which problems with a mask tensor the vector kernels take: those of fewer than BANDED_MR query
   rows (decode), whose rows all go the one-row path, where the mask is applied to a row's scores
   before its max. Rows in groups would need the mask inside the panel blocks; the tiled kernels
   (which skip tiles the mask hides) serve those. Every problem without one is taken. */
static inline int banded_mask_applicable(const txattn_problem *p, const char **why) {
  if (p->mask_tensor == TXATTN_MASK_TENSOR_NONE || p->n_q < BANDED_MR) return 1;
  *why = "a mask tensor is taken only with fewer than 4 query rows (decode)";
  return 0;
}

/* Computes query rows [row0, row1) of one head. The vector kernels group rows from row0 on, so a
   row's result (within the tolerance either way) depends on where its range starts: ranges from
   multiples of BANDED_MR give the whole head's results bit for bit when the whole head's groups
   start at multiples of BANDED_MR too (windows with n_q <= n_kv; not causal with n_q = n_kv, whose
   first rows go one by one). */
typedef void (*banded_head_fn)(const banded_head *hd);

typedef struct banded_ops {
  /* s[j] = scale * (q . k_j) for j < n, where key row k_j = k + j * k_row holds d floats (scale:
     the sign, banded_score_sign). */
  void (*scores)(const float *q, const float *k, int64_t k_row, int64_t n, int64_t d, float scale,
                 float *s);
  /* The max of s[0..n), NaN if any s[j] is NaN (n >= 1). */
  float (*max)(const float *s, int64_t n);
  /* s[j] = exp((s[j] - max) * scale) in place (scale = |scale| > 0); returns the sum of the new
     s[j] (n <= BANDED_CHUNK). */
  float (*exp_sum)(float *s, int64_t n, float max, float scale);
  /* o[c] = sum_j w[j] * v_j[c] for c < d, where value row v_j = v + j * v_row; o overlaps no v_j
     (n <= BANDED_CHUNK). */
  void (*weighted_sum)(const float *w, const float *v, int64_t v_row, int64_t n, int64_t d,
                       float *o);
} banded_ops;

/* One head's rows through an ops table (the scalar kernel's structure). */
void banded_ops_head(const banded_head *hd, const banded_ops *ops);

void banded_head_scalar(const banded_head *hd);
#if defined(__x86_64__)
void banded_head_avx2(const banded_head *hd);
void banded_head_avx512(const banded_head *hd);
#endif
#if defined(__aarch64__)
void banded_head_neon(const banded_head *hd);
#endif

/* The (query, key) score pairs a vector kernel with these blocks computes for p: whole panel blocks
   of a group's union, whole row blocks padded past a row's last key. Exact, in O(1) of n
   (banded_pairs.c). */
double banded_pairs_computed(const txattn_problem *p, int w, int np, int row_kb);
/* The kernels' cost_pairs (txattn_kernel_desc) for the whole call: a vector kernel's computed
   pairs plus BANDED_ROW_COST_PAIRS a row; banded.scalar's visible pairs plus
   BANDED_SCALAR_ROW_COST_PAIRS a row. The vector count stops once it reaches `enough` (INFINITY:
   the whole count), so that a caller asking only "at least this much?" stops early. */
double banded_vector_cost_pairs(const txattn_problem *p, int w, int np, int row_kb, double enough);
double banded_scalar_cost_pairs(const txattn_problem *p, double enough);
/* What a vector kernel does per query row besides its score pairs (transposing keys into the ring,
   the softmax's bookkeeping, writing the row), counted in score pairs of the same time: fitted to
   banded.avx2's time against windows of 1 to 1025 keys (docs/measurements.md). */
#define BANDED_ROW_COST_PAIRS 23
/* The same for banded.scalar (the softmax's bookkeeping and the row's write), fitted the same way
   (docs/measurements.md). */
#define BANDED_SCALAR_ROW_COST_PAIRS 5

/* The widest visible range of any row, in keys. */
int64_t banded_max_range(const txattn_problem *p);
/* The scratch one head needs: see the layout below; panels = 0 leaves out the transposed keys,
   which only the vector kernels use. */
size_t banded_workspace_bytes(const txattn_problem *p, int panels);
/* A head descriptor of the call over this workspace, rows [0, n_q); banded_head_at points it at a
   (batch, query head). */
void banded_head_init(banded_head *hd, const txattn_kernel_call *call, void *workspace);
void banded_head_at(banded_head *hd, const txattn_tensors *t, int64_t b, int64_t h);
/* Runs the whole problem on one thread, one whole head at a time; panels as given to
   banded_workspace_bytes. */
txattn_status banded_run(const txattn_kernel_call *call, banded_head_fn head, int panels);

/* Scores carry only the scale's sign (exact); its magnitude multiplies s - max, which is <= 0, in
   the softmax, so no finite dot product overflows however large the scale (docs/error_bound.md,
   "Finite inputs"). banded_exp2_scale is that magnitude in base 2, |scale| log2(e), finite for every
   scale the library accepts (core/problem.c). */
static inline float banded_score_sign(const txattn_problem *p) {
  return p->scale < 0.0f ? -1.0f : 1.0f;
}
static inline float banded_exp2_scale(const txattn_problem *p) {
  return (float)(fabs((double)p->scale) * 1.4426950408889634);
}

/* tensors->lse if the call writes it, else NULL (txattn_lse_out). */
static inline float *banded_lse_tensor(const txattn_problem *p, const txattn_tensors *t) {
  return txattn_lse_out(p, t);
}

/* lse of row i from the row's max score (sign(scale) q.k units, as the kernels keep it) and the sum
   of its weights exp((s - max) |scale|): |scale| max + log(sum), in double once per row. A row of
   no key gets -inf (banded_lse_empty); a NaN max gives NaN, as the row's o. */
static inline void banded_lse_put(const banded_head *hd, int64_t i, float max, double sum) {
  if (hd->lse) hd->lse[i * hd->lse_row] = (float)(hd->lse_scale * (double)max + log(sum));
}
/* The row's softmax denominator: the sum of its weights and, with a sink logit t, exp(t) in the
   weights' units, exp(t - lse_scale max). A NaN max stays NaN through the sum. */
static inline double banded_denominator(const banded_head *hd, float max, double sum) {
  if (hd->sink == -INFINITY) return sum;
  return sum + exp(hd->sink - hd->lse_scale * (double)max);
}
/* The modified score of key j (a position) for row i from s = sign(scale) q.k (exact), scalar:
   fl(|scale| s) = fl(scale q.k), then c tanh(x / c) (softcap), then + m (j - pos(i)) in one fused
   multiply-add (ALiBi; j - pos is exact below 2^24), as the tiled kernels compute it. */
static inline float banded_modify_one(const banded_head *hd, float s, int64_t j, int64_t i) {
  float x = s * hd->abs_scale;
  if (hd->softcap > 0.0f) x = hd->softcap * tanhf(x * hd->inv_softcap);
  if (hd->alibi) x = fmaf(hd->slope, (float)(j - i - hd->pos_shift), x);
  return x;
}
static inline void banded_lse_empty(const banded_head *hd, int64_t i) {
  if (hd->lse) hd->lse[i * hd->lse_row] = -INFINITY;
}

/* Workspace layout, each part on its own cache lines, room for BANDED_MR rows of each:
   double acc[MR][d_v] | float part[MR][d_v] | float scores[MR][banded_score_stride] |
   float q_rows[MR][banded_q_stride] (16-bit q only: the rows widened to fp32) |
   float o_rows[MR][banded_o_stride] (16-bit o only: the rows in fp32 before they are narrowed) |
   the tail: the vector kernels' transposed keys, float panels[banded_panel_keys * d_qk]
   (banded_algo.h); banded.scalar's 16-bit key and value rows widened to fp32, BANDED_CHUNK rows
   of each (banded_rows.c). With every tensor f32 the q and o rows take no room. */
static inline size_t banded_round64(size_t bytes) {
  return (bytes + 63) & ~(size_t)63;
}
static inline int64_t banded_round16(int64_t n) {
  return (n + 15) / 16 * 16;
}
static inline size_t banded_elem_size(txattn_dtype t) {
  return t == TXATTN_DTYPE_F32 ? sizeof(float) : sizeof(uint16_t);
}
/* Floats at the start of each score row for the sink keys' scores (0 without sink keys): whole
   vectors, so the row's other scores stay aligned. */
static inline int64_t banded_sink_stride(const txattn_problem *p) {
  return banded_round16(txattn_sink_keys_of(p));
}
/* Floats per row of scores: a row's keys, or a group's union rounded out to whole vectors. */
static inline int64_t banded_score_stride(const txattn_problem *p) {
  return banded_round16(banded_max_range(p) + BANDED_MR + BANDED_PAD) + banded_sink_stride(p);
}
/* Floats per widened q row and per fp32 o row (0: the tensor is f32 and used in place). */
static inline int64_t banded_q_stride(const txattn_problem *p) {
  return p->q_type == TXATTN_DTYPE_F32 ? 0 : banded_round16(p->d_qk);
}
static inline int64_t banded_o_stride(const txattn_problem *p) {
  return p->o_type == TXATTN_DTYPE_F32 ? 0 : banded_round16(p->d_v);
}
/* Keys (times d_qk floats) of transposed K the vector kernels keep: a group's union rounded out to
   whole panels of up to BANDED_MAX_W keys, plus one panel. */
static inline int64_t banded_panel_keys(const txattn_problem *p) {
  return (banded_max_range(p) + BANDED_MR + 3 * BANDED_MAX_W - 1) / BANDED_MAX_W * BANDED_MAX_W;
}
static inline double *banded_ws_acc(const banded_head *hd) {
  return (double *)hd->workspace;
}
static inline float *banded_ws_part(const banded_head *hd) {
  return (float *)((char *)hd->workspace +
                   banded_round64((size_t)BANDED_MR * (size_t)hd->p->d_v * sizeof(double)));
}
static inline float *banded_ws_scores(const banded_head *hd) {
  return (float *)((char *)banded_ws_part(hd) +
                   banded_round64((size_t)BANDED_MR * (size_t)hd->p->d_v * sizeof(float)));
}
static inline float *banded_ws_q_rows(const banded_head *hd) {
  return (float *)((char *)banded_ws_scores(hd) +
                   banded_round64((size_t)BANDED_MR * (size_t)banded_score_stride(hd->p) *
                                  sizeof(float)));
}
static inline float *banded_ws_o_rows(const banded_head *hd) {
  return banded_ws_q_rows(hd) + BANDED_MR * banded_q_stride(hd->p);
}
static inline float *banded_ws_tail(const banded_head *hd) {
  return banded_ws_o_rows(hd) + BANDED_MR * banded_o_stride(hd->p);
}
static inline float *banded_ws_panels(const banded_head *hd) {
  return banded_ws_tail(hd);
}

#endif
