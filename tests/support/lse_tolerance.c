/* SPDX-License-Identifier: MIT */
#include "lse_tolerance.h"

#include <math.h>

#include <criterion/criterion.h>

lse_tolerance lse_tolerance_of(const txattn_problem *p, const txattn_tensors *t) {
  lse_tolerance tol;
  txattn_status st = txattn_lse_error_bound(p, t, &tol.abs, &tol.rel);
  cr_assert_eq(st, TXATTN_OK, "txattn_lse_error_bound failed: %s: %s", txattn_status_name(st),
               txattn_last_error());
  return tol;
}

double lse_tolerance_at(lse_tolerance tol, double lse_ref) {
  return tol.abs + tol.rel * fabs(lse_ref);
}
