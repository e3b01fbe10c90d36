/* The direct path (tiled_omp_direct_algo.h) over the tiled avx2 vector layer: AVX2 + FMA, built with -mavx2 -mfma. */
#include "vec_avx2.h"

#include "tiled_omp_direct_algo.h"
