/* SPDX-License-Identifier: MIT */
/* tiled.avx2: the tiled algorithm (tiled_algo.h) over the avx2 vector layer -- AVX2 + FMA, built
 * with -mavx2 -mfma. */
#include "vec_avx2.h"

#define TILED_BLOCKS AVX2 /* the TILED_AVX2_* register blocks of tiled_blocks.h */
#include "tiled_algo.h"
