/* SPDX-License-Identifier: MIT */
/* Attention in double precision written from the words of txattn/txattn.h alone, so it shares no
 * code (not even txattn_visible_range or the 16-bit conversions: elements.h has its own) with the
 * library it checks. The test plugins run it as their kernel, and the tests use it to check
 * txattn_reference itself. */
#ifndef TXATTN_TEST_ORACLE_H
#define TXATTN_TEST_ORACLE_H

#include <stdint.h>

#include "txattn/txattn.h"

/* 1 if key j is visible to query row i. p must have every default filled in. */
int oracle_visible(const txattn_problem *p, int64_t i, int64_t j);
/* The number of keys query row i sees. */
int64_t oracle_visible_count(const txattn_problem *p, int64_t i);
/* Writes t->o; 0 on success, -1 if out of memory. p must have every default filled in, and every
   layout of t must be explicit. Tensors have p's element types: 16-bit inputs are widened exactly,
   and the output is rounded once from double to o's type, to nearest even. */
int oracle_attention(const txattn_problem *p, const txattn_tensors *t);
/* lse[(b * heads_q + h) * n_q + i] = log(sum over visible keys of exp(scale q.k)), in double (the
   serving calls' lse before its rounding to fp32): -inf for a row without keys, NaN where a
   visible score is NaN. 0 on success, -1 if out of memory. Not ragged. */
int oracle_lse(const txattn_problem *p, const txattn_tensors *t, double *lse);

#endif
