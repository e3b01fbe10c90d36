/* SPDX-License-Identifier: MIT */
/* plugins/tiled/tiled_avx512bf16.c over emulated AVX-512 and AVX512_BF16 intrinsics
 * (avx512_emulation.h, whose vdpbf16ps rounds as the instruction does), compiled with the AVX2
 * flags: tiled.avx512bf16's own code, run on a CPU without either. */
#include "avx512_emulation.h"

#include "tiled_avx512bf16.c"
