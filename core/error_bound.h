/* SPDX-License-Identifier: MIT */
/* The error bounds (error_bound.c), inside the library. */
#ifndef TXATTN_CORE_ERROR_BOUND_H
#define TXATTN_CORE_ERROR_BOUND_H

#include "txattn/txattn.h"

/* txattn_error_bound into *bound and txattn_lse_error_bound into lse_abs_rel[0] (abs) and [1]
   (rel) from one pass over the visible pairs, bit for bit the values of the two public calls;
   either may be NULL (a NULL bound also spares the pass over V). Validates and fails as they do,
   naming who, and leaves the outputs untouched on error. Hidden: txattn_* callers outside the
   library call the public two, each its own pass. */
txattn_status txattn__error_bounds(const char *who, const txattn_problem *p,
                                   const txattn_tensors *t, double *bound, double *lse_abs_rel);

#endif
