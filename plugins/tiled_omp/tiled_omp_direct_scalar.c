/* The direct path (tiled_omp_direct_algo.h) over the tiled scalar vector layer: portable C (one float per vector), for any CPU. */
#include "vec_scalar.h"

#include "tiled_omp_direct_algo.h"
