/* SPDX-License-Identifier: MIT */
/* test_half.c's row conversions over vec_neon.h (half_ops.h). */
#include "vec_neon.h"

#include "half_ops.h"
