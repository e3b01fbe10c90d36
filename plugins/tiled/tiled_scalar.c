/* tiled.scalar: the tiled algorithm (tiled_algo.h) over the scalar vector layer -- portable C (one
 * float per vector), for any CPU. */
#include "vec_scalar.h"

#include "tiled_algo.h"
