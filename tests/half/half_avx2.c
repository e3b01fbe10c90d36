/* SPDX-License-Identifier: MIT */
/* test_half.c's row conversions over vec_avx2.h (half_ops.h). */
#include "vec_avx2.h"

#include "half_ops.h"
