/* SPDX-License-Identifier: MIT */
/* test_half.c's row conversions over vec_scalar.h (half_ops.h). */
#include "vec_scalar.h"

#include "half_ops.h"
