/* The direct path (tiled_omp_direct_algo.h) over the tiled neon vector layer: arm64 Advanced SIMD. */
#include "vec_neon.h"

#include "tiled_omp_direct_algo.h"
