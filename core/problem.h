/* SPDX-License-Identifier: MIT */
/* Internal: problem validation and the visible-pair count. */
#ifndef TXATTN_CORE_PROBLEM_H
#define TXATTN_CORE_PROBLEM_H

#include <stdint.h>

#include "txattn/txattn.h"

/* The size limits (problem.c, check_sizes, states the rule). */
#define TXATTN__MAX_ROWS         INT64_C(2147483647) /* batch, n_q, n_kv: 2^31 - 1 */
#define TXATTN__MAX_HEADS        INT64_C(65536)      /* heads_q */
#define TXATTN__MAX_HEAD_SIZE    INT64_C(1048576)    /* d_qk, d_v */
#define TXATTN__MAX_TENSOR_BYTES (INT64_C(1) << 56) /* a tensor's span, and each stride, in bytes */

/* Validates p and writes it with every default filled in (out may be p). On failure the message
   names the field and *out is untouched. Window fields of a NONE or CAUSAL problem are ignored
   (resolved to 0), so that equal problems resolve equal. */
txattn_status txattn__problem_resolve(const txattn_problem *p, txattn_problem *out);
/* Visible (query row, key) pairs over the whole resolved problem, in O(1). */
double txattn__visible_pairs(const txattn_problem *r);

#endif
