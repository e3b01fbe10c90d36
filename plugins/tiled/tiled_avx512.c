/* SPDX-License-Identifier: MIT */
/* tiled.avx512: the tiled algorithm (tiled_algo.h) over the avx512 vector layer -- AVX-512 F
 * (DQ/BW/VL for the descriptor's ISA check), built with -mavx512f -mavx512dq -mavx512bw -mavx512vl
 * -mfma. */
#include "vec_avx512.h"

#define TILED_BLOCKS AVX512 /* the TILED_AVX512_* register blocks of tiled_blocks.h */
#include "tiled_algo.h"

void tiled_run_direct_avx512(const tiled_geom *g, int64_t b, int64_t kvh, int64_t t0, int64_t t1,
                             int64_t k0, int64_t k1, const tiled_partial *out,
                             const tiled_scratch *s) {
  td_run(g, b, kvh, t0, t1, k0, k1, out, s);
}
