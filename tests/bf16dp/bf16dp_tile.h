/* SPDX-License-Identifier: MIT */
/* tiled.avx512bf16's Q K^T tile and vdpbf16ps itself, exported for tests/test_bf16dp.c by
 * bf16dp_tile.c, which is compiled twice: on the real instructions (the avx512 flags plus
 * -mavx512bf16; call only where the CPU has AVX512_BF16) and on the emulated ones
 * (tests/emulation/avx512_emulation.h, AVX2 flags). */
#ifndef TXATTN_TEST_BF16DP_TILE_H
#define TXATTN_TEST_BF16DP_TILE_H

#include <stdint.h>

/* The tile's rows and keys: TILED_AVX512_MR and TILED_AVX512_NRS * TILED_AVX512_W. */
#define BF16DP_MR 6
#define BF16DP_KW 64

/* One lane of vdpbf16ps: acc + a.hi * b.hi + a.lo * b.lo as the instruction computes it (a and b
   each a pair of bf16, the even element in the low half). */
float bf16dp_lane_hw(float acc, uint32_t a, uint32_t b);
float bf16dp_lane_emu(float acc, uint32_t a, uint32_t b);

/* s[r * BF16DP_KW + j] = the score of query row r against key j as tiled.avx512bf16 computes it:
   q rows [BF16DP_MR][d] and k rows [BF16DP_KW][d] of bf16, packed by the kernel's own packing
   (queries negated when qsign < 0) and multiplied by its tile. */
void bf16dp_tile_hw(const uint16_t *q, const uint16_t *k, int64_t d, float qsign, float *s);
void bf16dp_tile_emu(const uint16_t *q, const uint16_t *k, int64_t d, float qsign, float *s);

#endif
