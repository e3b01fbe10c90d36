/* SPDX-License-Identifier: MIT */
/* tiled.neon: the tiled algorithm (tiled_algo.h) over the neon vector layer -- arm64 Advanced SIMD.
 */
#include "vec_neon.h"

#define TILED_BLOCKS NEON /* the TILED_NEON_* register blocks of tiled_blocks.h */
#include "tiled_algo.h"
