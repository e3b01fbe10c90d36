/* SPDX-License-Identifier: MIT */
/* plugins/tiled/tiled_avx512.c over emulated AVX-512 intrinsics (avx512_emulation.h), compiled with
 * the AVX2 flags: the AVX-512 kernel's own code, run on a CPU without AVX-512. */
#include "avx512_emulation.h"

#include "tiled_avx512.c"
