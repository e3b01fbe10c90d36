/* SPDX-License-Identifier: MIT */
/* Register-block shapes of each ISA, in one place: tiled_<isa>.c selects its ISA's shapes for the
 * algorithm (tiled_algo.h), and the descriptors (tiled_plugin.c, tiled_omp_plugin.c; compiled
 * without ISA flags) derive the tunables' multiple_of constraints from them.
 *
 *   W    floats per vector (the vector layer's VEC_W; tiled_<isa>.c checks that they agree)
 *   MR   query rows per register block (block_q is a multiple of it)
 *   NRS  vectors of keys per score tile: a K panel holds NRS * W keys (block_k is a multiple)
 *   NRV  vectors of d_v per P V tile
 *   DNK  the direct path (tiled_direct_algo.h: TILED_DIRECT_ROWS rows): K rows per score tile
 *   DNT  the direct path: vectors of d_v per P V tile
 */
#ifndef TILED_BLOCKS_H
#define TILED_BLOCKS_H

/* 4 rows x 4 keys (and 4 x 4 columns in P V): plain C, which GCC's -O3 SLP vectoriser maps onto one
   4-lane register per row of baseline SIMD (SSE2 on x86-64, ASIMD on arm64), and which stays
   correct scalar code anywhere else (faster than the same block with the vectorisers off:
   docs/measurements.md). */
#define TILED_SCALAR_W   1
#define TILED_SCALAR_MR  4
#define TILED_SCALAR_NRS 4
#define TILED_SCALAR_NRV 4
#define TILED_SCALAR_DNK 2
#define TILED_SCALAR_DNT 4

/* 16 ymm: the score tile is MR rows x NRS vectors of keys (12 accumulators, 2 key vectors, 1
   broadcast); P V is MR rows x NRV vectors of d_v. Zen 2 and Haswell issue 2 FMAs per cycle with
   latency 4-5, so 12 independent accumulators keep both pipes busy, and each k step loads 2 vectors
   plus 6 broadcasts for 12 FMAs: below the 2 loads per cycle the core sustains. The direct path's
   tiles, 4 rows x 3 K rows (with 3 K vectors and a query vector) and 4 rows x 3 vectors of d_v
   (with 3 V vectors and a broadcast), fill the 16 registers too: 12 accumulators are more chains
   than the 2 FMA pipes x 5 cycles of latency need. */
#define TILED_AVX2_W   8
#define TILED_AVX2_MR  6
#define TILED_AVX2_NRS 2
#define TILED_AVX2_NRV 2
#define TILED_AVX2_DNK 3
#define TILED_AVX2_DNT 3

/* 32 zmm: 6 rows x 4 vectors = 24 accumulators + 4 key vectors + 1 broadcast. Each k step loads 4
   vectors and 6 broadcasts for 24 FMAs (two FMA ports on server cores), so loads never bound it.
   The direct path's tiles (4 x 4 and 4 x 6, 16 and 24 accumulators) use the 32 registers too. */
#define TILED_AVX512_W   16
#define TILED_AVX512_MR  6
#define TILED_AVX512_NRS 4
#define TILED_AVX512_NRV 4
#define TILED_AVX512_DNK 4
#define TILED_AVX512_DNT 6

/* 32 q registers: 6 rows x 3 vectors = 18 accumulators + 3 key vectors + 6 query values (GCC turns
   the broadcasts into scalar loads feeding by-element FMLAs, one register each). 6 x 4 would need
   34 and spills two accumulators. The direct path's tiles as AVX-512's. */
#define TILED_NEON_W   4
#define TILED_NEON_MR  6
#define TILED_NEON_NRS 3
#define TILED_NEON_NRV 3
#define TILED_NEON_DNK 4
#define TILED_NEON_DNT 6

#endif /* TILED_BLOCKS_H */
