/* Register-block shapes of each ISA, in one place: the vector layers (vec_<isa>.h) build their
 * micro-kernels from them, and the descriptors (tiled_plugin.c, compiled without ISA flags) derive
 * the tunables' multiple_of constraints from them.
 *
 *   W    floats per vector
 *   MR   query rows per register block (block_q is a multiple of it)
 *   NRS  vectors of keys per score tile: a packed K panel holds NRS * W keys (block_k is a multiple)
 *   NRV  vectors of d_v per P V tile
 *
 * Why each shape: see the vector layer that uses it. */
#ifndef TILED_BLOCKS_H
#define TILED_BLOCKS_H

#define TILED_SCALAR_W   1
#define TILED_SCALAR_MR  4
#define TILED_SCALAR_NRS 4
#define TILED_SCALAR_NRV 4

#define TILED_AVX2_W   8
#define TILED_AVX2_MR  6
#define TILED_AVX2_NRS 2
#define TILED_AVX2_NRV 2

#define TILED_AVX512_W   16
#define TILED_AVX512_MR  6
#define TILED_AVX512_NRS 4
#define TILED_AVX512_NRV 4

#define TILED_NEON_W   4
#define TILED_NEON_MR  6
#define TILED_NEON_NRS 3
#define TILED_NEON_NRV 3

#endif /* TILED_BLOCKS_H */
