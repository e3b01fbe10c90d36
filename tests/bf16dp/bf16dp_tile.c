/* SPDX-License-Identifier: MIT */
/* See bf16dp_tile.h: tiled_avx512bf16.c's packing and tile (its static functions, so the file is
 * included), under the names BF16DP_SUFFIX gives. */
#include <stdlib.h>
#include <string.h>

#include "bf16dp_tile.h"

/* Only the static functions: no ops table (the plugin's), nothing only it reaches. */
#define TILED_NO_OPS_TABLE
#define BF16DP_CAT2(a, b) a##_##b
#define BF16DP_CAT(a, b)  BF16DP_CAT2(a, b)

#include "tiled_avx512bf16.c"

_Static_assert(BF16DP_MR == TILED_MR && BF16DP_KW == TILED_KW, "bf16dp_tile.h's tile sizes");

float BF16DP_CAT(bf16dp_lane, BF16DP_SUFFIX)(float acc, uint32_t a, uint32_t b) {
  _Alignas(64) float out[16];
  __m512bh x = (__m512bh)_mm512_set1_epi32((int)a), y = (__m512bh)_mm512_set1_epi32((int)b);
  _mm512_store_ps(out, _mm512_dpbf16_ps(_mm512_set1_ps(acc), x, y));
  return out[0];
}

void BF16DP_CAT(bf16dp_tile, BF16DP_SUFFIX)(const uint16_t *q, const uint16_t *k, int64_t d,
                                            float qsign, float *s) {
  txattn_problem p = {.n_q = 1, .n_kv = TILED_KW, .d_qk = d};
  txattn_tensors t = {.k_data = k,
                      .k_layout = {.batch = TILED_KW * d, .head = TILED_KW * d, .row = d}};
  tiled_geom g = {.p = &p, .t = &t, .dqk = d, .bc = TILED_KW};
  /* aligned_alloc takes whole multiples of the alignment */
  const size_t kbytes = ((size_t)(TILED_KW * d + 16) * sizeof(float) + 63) / 64 * 64;
  const size_t qbytes = ((size_t)(TILED_MR * d + 16) * sizeof(float) + 63) / 64 * 64;
  float *kblk = aligned_alloc(64, kbytes), *qg = aligned_alloc(64, qbytes);
  _Alignas(64) float tile[TILED_MR * TILED_KW];
  if (!kblk || !qg) abort();
  tlp_pack_k(&g, 0, 0, 0, TILED_KW, kblk);
  for (int r = 0; r < TILED_MR; r++) tlp_load_q(qg, r, q + r * d, d, qsign);
  tlp_scores(&g, qg, kblk, 0, tile, TILED_KW);
  memcpy(s, tile, sizeof tile);
  free(kblk);
  free(qg);
}
