/* tiled.avx2: the tiled algorithm (tiled_algo.h) over the avx2 vector layer -- AVX2 + FMA, built
 * with -mavx2 -mfma. */
#include "vec_avx2.h"

#include "tiled_algo.h"
