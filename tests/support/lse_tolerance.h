/* SPDX-License-Identifier: MIT */
/* How far a kernel's log-sum-exp may be from txattn_reference's: the library's own bound,
 * txattn_lse_error_bound (docs/error_bound.md, "The bound on lse"), for every test that judges lse.
 */
#ifndef TXATTN_TEST_LSE_TOLERANCE_H
#define TXATTN_TEST_LSE_TOLERANCE_H

#include "txattn/txattn.h"

/* A row whose reference lse is lse_ref may be off by abs + rel |lse_ref|. */
typedef struct lse_tolerance {
  double abs, rel;
} lse_tolerance;

/* txattn_lse_error_bound of problem p on inputs t (asserts that it succeeds). */
lse_tolerance lse_tolerance_of(const txattn_problem *p, const txattn_tensors *t);
/* abs + rel |lse_ref|. */
double lse_tolerance_at(lse_tolerance tol, double lse_ref);

#endif
