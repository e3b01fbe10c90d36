/* Internal: problem validation and the visible-pair count. */
#ifndef TXATTN_CORE_PROBLEM_H
#define TXATTN_CORE_PROBLEM_H

#include "txattn/txattn.h"

/* Validates p and writes it with every default filled in (out may be p). On failure the message
   names the field and *out is untouched. Window fields of a NONE or CAUSAL problem are ignored
   (resolved to 0), so that equal problems resolve equal. */
txattn_status txattn__problem_resolve(const txattn_problem *p, txattn_problem *out);
/* Visible (query row, key) pairs over the whole resolved problem, in O(1). */
double txattn__visible_pairs(const txattn_problem *r);

#endif
