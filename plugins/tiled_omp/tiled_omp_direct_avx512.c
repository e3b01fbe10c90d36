/* The direct path (tiled_omp_direct_algo.h) over the tiled avx512 vector layer: AVX-512 F, built with -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma. */
#include "vec_avx512.h"

#include "tiled_omp_direct_algo.h"
