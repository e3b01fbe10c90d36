/* SPDX-License-Identifier: MIT */
/* Judging outputs against the contract: the tolerance, rows with no visible key, NaN rows, and the
 * output buffer's gaps. Each check returns 1 if all is well, else 0 with the first problem in msg.
 */
#ifndef TXATTN_TEST_CASE_CHECK_H
#define TXATTN_TEST_CASE_CHECK_H

#include <stddef.h>

#include "attn_case.h"

/* o_ref (from case_run_reference) against the contract's rules for empty and poisoned rows, and
   against the test oracle within the tolerance. */
int case_check_reference(const struct attn_case *c, char *msg, size_t size);
/* The strided output o against o_ref. *max_err gets the largest error over the finite rows. */
int case_check_output(const struct attn_case *c, double *max_err, char *msg, size_t size);

/* The strided lse (after a serving call) against lse_ref: exactly -inf for a row that sees no
   key, within txattn_lse_error_bound of c's inputs elsewhere (abs + rel |lse_ref|; rows whose
   reference reads a NaN are not judged), and the gaps of lse's buffer untouched. */
int case_check_lse(struct attn_case *c, char *msg, size_t size);

#endif
