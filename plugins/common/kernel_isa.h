/* SPDX-License-Identifier: MIT */
/* The ISA an AVX-512 kernel's descriptor declares. The test build that runs the AVX-512 kernels on
 * emulated intrinsics (tests/emulation, compiled with TXATTN_AVX512_EMULATED) needs only AVX2 and
 * FMA, so its descriptors say so and the loader lets them run on a CPU without AVX-512 (or without
 * AVX512_BF16); everywhere else it is TXATTN_ISA_AVX512 (TXATTN_ISA_AVX512BF16). */
#ifndef TXATTN_PLUGIN_KERNEL_ISA_H
#define TXATTN_PLUGIN_KERNEL_ISA_H

#include "txattn/plugin.h"

#ifdef TXATTN_AVX512_EMULATED
#define KERNEL_ISA_AVX512     TXATTN_ISA_AVX2
#define KERNEL_ISA_AVX512BF16 TXATTN_ISA_AVX2
#else
#define KERNEL_ISA_AVX512     TXATTN_ISA_AVX512
#define KERNEL_ISA_AVX512BF16 TXATTN_ISA_AVX512BF16
#endif

#endif
