/* SPDX-License-Identifier: MIT */
/* test_half.c's row conversions over vec_avx512.h (half_ops.h). */
#include "vec_avx512.h"

#include "half_ops.h"
