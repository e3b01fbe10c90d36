/* tiled.neon: the tiled algorithm (tiled_algo.h) over the neon vector layer -- arm64 Advanced SIMD.
 */
#include "vec_neon.h"

#include "tiled_algo.h"
