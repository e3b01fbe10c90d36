/* SPDX-License-Identifier: MIT */
/* tiled.avx512bf16: tiled.avx512 (tiled_algo.h over vec_avx512.h) with the Q K^T tile on
 * AVX512_BF16's vdpbf16ps, for bf16 q and k (the descriptor declares no other q and k types).
 * Built with the avx512 flags plus -mavx512bf16. K is packed as bf16 pairs (element 2p in the low
 * half of a 32-bit lane, 2p + 1 in the high half, 0 past d_qk), panels [pairs][KW]; Q as pairs
 * [pairs][MR] per row group. The softmax, P V (fp32, V packed as in tiled.avx512) and the direct
 * path of decode are tiled.avx512's (the last one shared, not compiled again).
 *
 * What vdpbf16ps rounds (measured bit for bit on Zen 4, as the SDM's pseudocode says): per lane,
 * acc = fma(a[2j+1], b[2j+1], acc), then acc = fma(a[2j], b[2j], acc), each step one fused
 * multiply-add rounded to nearest even (the bf16 product is exact inside it), with subnormal
 * inputs (bf16 and the accumulator) read as zero and a result tiny after rounding (below 2^-126)
 * flushed to zero, whatever MXCSR says. So a score is d_qk fused multiply-adds in fp32, as in
 * tiled.avx512 (only the order within a pair differs), and within the same bound; a flushed
 * partial sum moves a score by under 2^-126, far below it. Reading a subnormal bf16 as zero is
 * not within it (a subnormal q times a k near 2^127 is a product near 1), so a key block with a
 * subnormal k, or a row group with a subnormal q, computes its scores with fp32 FMAs on the pairs
 * widened, in tiled.avx512's order (docs/error_bound.md, "16-bit tensors"). */
#include <immintrin.h>
#include <stdint.h>

#include "kernel_isa.h"
#include "tiled_blocks.h"
#include "tiled_internal.h"
#include "vec_avx512.h"

#undef VEC_ISA
#undef VEC_ISA_ENUM
#define VEC_ISA      avx512bf16
#define VEC_ISA_ENUM KERNEL_ISA_AVX512BF16

/* The hooks of tiled_algo.h for bf16 q and k in pairs (defined below). */
#define TILED_QK_PAIRS 1
static void tlp_pack_k(const tiled_geom *g, int64_t b, int64_t kvh, int64_t k0, int64_t nk,
                       float *dst);
static void tlp_load_q(float *qgroup, int64_t lane, const void *q, int64_t dqk, float qsign);
static void tlp_scores(const tiled_geom *g, const float *qgroup, const float *kblk, int64_t pn,
                       float *srow, int64_t sld);

/* tiled_algo.h's fp32 Q K^T micro-kernel and bf16 K packing are not called here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#define TILED_BLOCKS     AVX512 /* the TILED_AVX512_* register blocks of tiled_blocks.h */
#define TILED_RUN_DIRECT tiled_run_direct_avx512
#include "tiled_algo.h"

typedef uint32_t tlp_u32 __attribute__((may_alias));

/* Pairs of d_qk elements, the last one half empty when d_qk is odd. */
static inline int64_t tlp_pairs(int64_t dqk) {
  return (dqk + 1) / 2;
}

/* Where the packed K block's and the row group's "has a subnormal" flags live: the 32-bit word
   right after their pairs, inside the room fp32 gives them (bc * d_qk and MR * d_qk floats), which
   exists for d_qk >= 2. At d_qk = 1 there is none and every score takes the fp32 path. */
static inline int tlp_has_flags(int64_t dqk) {
  return dqk >= 2;
}

static inline uint32_t tlp_pair(const uint16_t *row, int64_t p, int64_t dqk) {
  uint32_t lo = row[2 * p], hi = 2 * p + 1 < dqk ? row[2 * p + 1] : 0;
  return lo | hi << 16;
}

/* Nonzero if a bf16 half of a word is subnormal (exponent 0, fraction not 0). */
static inline uint32_t tlp_subnormal(uint32_t x) {
  uint32_t lo = (x & 0x7f80u) == 0 && (x & 0x7fu) != 0;
  uint32_t hi = (x & 0x7f800000u) == 0 && (x & 0x7f0000u) != 0;
  return lo | hi;
}
static inline uint32_t tlp_subnormal_v(__m512i x) {
  const __m512i zero = _mm512_setzero_si512();
  __mmask32 e = _mm512_cmpeq_epi16_mask(_mm512_and_si512(x, _mm512_set1_epi16(0x7f80)), zero);
  __mmask32 f = _mm512_cmpneq_epi16_mask(_mm512_and_si512(x, _mm512_set1_epi16(0x7f)), zero);
  return (e & f) != 0;
}

/* 8 x 8 32-bit words: dst[i * ld + r] = word i of src[r] + 2 e (bf16 elements, any alignment). */
static inline void tlp_transpose8(const uint16_t *const *src, int64_t e, tlp_u32 *dst, int64_t ld) {
#define TLP_LD(r) _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(src[r] + e)))
  __m256 t0 = _mm256_unpacklo_ps(TLP_LD(0), TLP_LD(1)),
         t1 = _mm256_unpackhi_ps(TLP_LD(0), TLP_LD(1));
  __m256 t2 = _mm256_unpacklo_ps(TLP_LD(2), TLP_LD(3)),
         t3 = _mm256_unpackhi_ps(TLP_LD(2), TLP_LD(3));
  __m256 t4 = _mm256_unpacklo_ps(TLP_LD(4), TLP_LD(5)),
         t5 = _mm256_unpackhi_ps(TLP_LD(4), TLP_LD(5));
  __m256 t6 = _mm256_unpacklo_ps(TLP_LD(6), TLP_LD(7)),
         t7 = _mm256_unpackhi_ps(TLP_LD(6), TLP_LD(7));
#undef TLP_LD
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
#define TLP_ST(i, x) _mm256_storeu_si256((__m256i *)(dst + (i)*ld), _mm256_castps_si256(x))
  TLP_ST(0, _mm256_permute2f128_ps(s0, s4, 0x20));
  TLP_ST(1, _mm256_permute2f128_ps(s1, s5, 0x20));
  TLP_ST(2, _mm256_permute2f128_ps(s2, s6, 0x20));
  TLP_ST(3, _mm256_permute2f128_ps(s3, s7, 0x20));
  TLP_ST(4, _mm256_permute2f128_ps(s0, s4, 0x31));
  TLP_ST(5, _mm256_permute2f128_ps(s1, s5, 0x31));
  TLP_ST(6, _mm256_permute2f128_ps(s2, s6, 0x31));
  TLP_ST(7, _mm256_permute2f128_ps(s3, s7, 0x31));
#undef TLP_ST
}

/* K of keys [k0, k0 + nk) as panels of KW keys, each [pairs][KW] 32-bit words, zero beyond nk;
   the block's flag says whether some k is subnormal. */
static void tlp_pack_k(const tiled_geom *g, int64_t b, int64_t kvh, int64_t k0, int64_t nk,
                       float *dstf) {
  const txattn_tensors *t = g->t;
  const int64_t dqk = g->dqk, np = tlp_pairs(dqk), full = dqk / 2;
  const int64_t npanels = (nk + TILED_KW - 1) / TILED_KW;
  tlp_u32 *dst = (tlp_u32 *)dstf;
  uint32_t sub = 0;
  for (int64_t pn = 0; pn < npanels; pn++) {
    tlp_u32 *panel = dst + pn * TILED_KW * np;
    for (int64_t jj = 0; jj < TILED_KW; jj += VEC_W) {
      const int64_t j = pn * TILED_KW + jj;
      const uint16_t *rows[VEC_W];
      for (int r = 0; r < VEC_W; r++) {
        rows[r] = j + r < nk
                      ? tl_kv_row(g, t->k_data, TXATTN_DTYPE_BF16, &t->k_layout, b, kvh, k0 + j + r)
                      : NULL;
        tl_prefetch_row(g, t->k_data, TXATTN_DTYPE_BF16, &t->k_layout, b, kvh,
                        k0 + j + r + TILED_PREFETCH_ROWS, dqk);
      }
      int64_t p = 0;
      if (j + VEC_W <= nk) {
        for (; p + VEC_W <= full; p += VEC_W) {
          tlp_u32 *d = panel + p * TILED_KW + jj;
          tlp_transpose8(rows, 2 * p, d, TILED_KW);
          tlp_transpose8(rows, 2 * p + 16, d + 8 * TILED_KW, TILED_KW);
          tlp_transpose8(rows + 8, 2 * p, d + 8, TILED_KW);
          tlp_transpose8(rows + 8, 2 * p + 16, d + 8 * TILED_KW + 8, TILED_KW);
          for (int i = 0; i < VEC_W; i++)
            sub |= tlp_subnormal_v(_mm512_load_si512((const void *)(d + i * TILED_KW)));
        }
      }
      for (; p < np; p++)
        for (int r = 0; r < VEC_W; r++) {
          uint32_t w = rows[r] ? tlp_pair(rows[r], p, dqk) : 0;
          sub |= tlp_subnormal(w);
          panel[p * TILED_KW + jj + r] = w;
        }
    }
  }
  if (tlp_has_flags(dqk)) dst[g->bc * np] = sub;
}

/* Row `lane` of a row group's queries as pairs, negated (sign bits flipped, exact) if qsign < 0;
   lane 0 resets the group's flag, every lane ORs into it. */
static void tlp_load_q(float *qgroup, int64_t lane, const void *q, int64_t dqk, float qsign) {
  const uint16_t *x = q;
  const int64_t np = tlp_pairs(dqk);
  tlp_u32 *d = (tlp_u32 *)qgroup;
  uint32_t sub = 0;
  for (int64_t p = 0; p < np; p++) {
    uint32_t w = tlp_pair(x, p, dqk);
    if (qsign < 0.0f) w ^= 2 * p + 1 < dqk ? 0x80008000u : 0x8000u;
    sub |= tlp_subnormal(w);
    d[p * TILED_MR + lane] = w;
  }
  if (!tlp_has_flags(dqk)) return;
  /* The padding rows of tl_load_rows write fp32 zeros into lanes >= 1 only (lane 0 of a group is
     always a real row), so the flag in lane 0 of the word after the pairs survives them. */
  if (lane == 0) d[np * TILED_MR] = 0;
  d[np * TILED_MR] |= sub;
}

/* The fp32 path: pairs widened exactly (a bf16 is the high half of its fp32), multiplied and added
   element by element in order, as tiled.avx512's tl_scores_panel does. */
static void tlp_scores_fma(const tlp_u32 *qg, const tlp_u32 *panel, int64_t dqk, float *srow,
                           int64_t sld) {
  const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
  const int64_t np = tlp_pairs(dqk);
  vf acc[TILED_MR][TILED_NRS];
#pragma GCC unroll 8
  for (int r = 0; r < TILED_MR; r++)
#pragma GCC unroll 4
    for (int n = 0; n < TILED_NRS; n++) acc[r][n] = vf_zero();
  for (int64_t p = 0; p < np; p++) {
    vf ke[TILED_NRS], ko[TILED_NRS];
#pragma GCC unroll 4
    for (int n = 0; n < TILED_NRS; n++) {
      __m512i w = _mm512_load_si512((const void *)(panel + p * TILED_KW + n * VEC_W));
      ke[n] = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
      ko[n] = _mm512_castsi512_ps(_mm512_and_si512(w, hi));
    }
    const int odd = 2 * p + 1 < dqk;
#pragma GCC unroll 8
    for (int r = 0; r < TILED_MR; r++) {
      uint32_t w = qg[p * TILED_MR + r];
      vf qe = vf_set1(txh_bf16_to_f32((uint16_t)w)), qo = vf_set1(txh_bf16_to_f32(w >> 16));
#pragma GCC unroll 4
      for (int n = 0; n < TILED_NRS; n++) {
        acc[r][n] = vf_fma(qe, ke[n], acc[r][n]);
        if (odd) acc[r][n] = vf_fma(qo, ko[n], acc[r][n]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < TILED_MR; r++)
#pragma GCC unroll 4
    for (int n = 0; n < TILED_NRS; n++) vf_store(srow + r * sld + n * VEC_W, acc[r][n]);
}

/* S[r][0 .. KW) of the MR rows of a group against K panel pn of the block, on vdpbf16ps. */
static void tlp_scores(const tiled_geom *g, const float *qgroup, const float *kblk, int64_t pn,
                       float *srow, int64_t sld) {
  const int64_t dqk = g->dqk, np = tlp_pairs(dqk);
  const tlp_u32 *qg = (const tlp_u32 *)qgroup, *kb = (const tlp_u32 *)kblk;
  const tlp_u32 *panel = kb + pn * TILED_KW * np;
  if (!tlp_has_flags(dqk) || kb[g->bc * np] || qg[np * TILED_MR]) {
    tlp_scores_fma(qg, panel, dqk, srow, sld);
    return;
  }
  vf acc[TILED_MR][TILED_NRS];
#pragma GCC unroll 8
  for (int r = 0; r < TILED_MR; r++)
#pragma GCC unroll 4
    for (int n = 0; n < TILED_NRS; n++) acc[r][n] = vf_zero();
  for (int64_t p = 0; p < np; p++) {
    __m512bh kv[TILED_NRS];
#pragma GCC unroll 4
    for (int n = 0; n < TILED_NRS; n++)
      kv[n] = (__m512bh)_mm512_load_si512((const void *)(panel + p * TILED_KW + n * VEC_W));
#pragma GCC unroll 8
    for (int r = 0; r < TILED_MR; r++) {
      __m512bh qb = (__m512bh)_mm512_set1_epi32((int)qg[p * TILED_MR + r]);
#pragma GCC unroll 4
      for (int n = 0; n < TILED_NRS; n++) acc[r][n] = _mm512_dpbf16_ps(acc[r][n], qb, kv[n]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < TILED_MR; r++)
#pragma GCC unroll 4
    for (int n = 0; n < TILED_NRS; n++) vf_store(srow + r * sld + n * VEC_W, acc[r][n]);
}
