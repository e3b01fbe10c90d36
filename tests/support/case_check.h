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

/* The bound on |lse - lse_ref| of a row whose reference lse is lse_ref, for logits up to L
   (case_logit_scale):
     max(TXATTN_EXACT_TOLERANCE, (3 + sqrt(d_qk)) 2^-24 L) + 2^-21 |lse_ref|.
   The first term is txattn.h's bound on O relative to max|V|, for the same reasons: the fp32
   scores are off by at most (3 + sqrt(d_qk)) 2^-24 L each, which moves log(sum exp) by as much,
   and the sum of the exponentials, whose relative error O's bound also covers (O divides by it),
   moves it by its relative error. The second covers the fp32 roundings of the result's terms (a
   running max in log2 units times ln 2, log2 of the sum, their sum): a few units of 2^-24 |lse|. */
double case_lse_tolerance(const struct attn_case *c, double logits, double lse_ref);
/* The strided lse (after a serving call) against lse_ref: exactly -inf for a row that sees no
   key, within case_lse_tolerance elsewhere (rows whose reference reads a NaN are not judged), and
   the gaps of lse's buffer untouched. */
int case_check_lse(struct attn_case *c, char *msg, size_t size);

#endif
