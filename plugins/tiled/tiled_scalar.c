/* SPDX-License-Identifier: MIT */
/* tiled.scalar: the tiled algorithm (tiled_algo.h) over the scalar vector layer -- portable C (one
 * float per vector), for any CPU. */
#include "vec_scalar.h"

#define TILED_BLOCKS SCALAR /* the TILED_SCALAR_* register blocks of tiled_blocks.h */
#include "tiled_algo.h"
