/* banded.neon: the banded vector kernel (banded_algo.h) over the tiled plugin's NEON vector layer
 * (arm64 Advanced SIMD, 4 floats per vector, 32 registers). Two groups of 4 keys per score block
 * (8 accumulator chains: one group would leave the FMA pipes waiting on their latency), and 16
 * vectors = 64 output columns in the weighted sum, with room left for the loaded values. */
#include "../tiled/vec_neon.h"
#include "../tiled/tiled_vexp2.h"

static inline void vf_storeu(float *p, vf x) {
  vst1q_f32(p, x);
}

/* Lane j = the sum of a[j]'s lanes: pairwise adds of pairs, twice. */
static inline vf vf_sum_lanes(const vf *a) {
  return vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]));
}

#define BANDED_NP      4
#define BANDED_WSUM_MR 4
#define BANDED_WSUM_CB 4
#define BANDED_ROW_KB  8
#define BANDED_ROW_CB  16
#define BANDED_HEAD_FN banded_head_neon
#include "banded_algo.h"
