/* SPDX-License-Identifier: MIT */
/* The kernel functions every test plugin shares: exact attention by the test oracle, so that
 * whatever the loader lets through computes the right answer, and a wrong answer always points at
 * the host. */
#ifndef TXATTN_TEST_EXACT_KERNEL_H
#define TXATTN_TEST_EXACT_KERNEL_H

#include "txattn/plugin.h"

int test_exact_applicable(const txattn_problem *p, const char **why);
/* Applicable only when d_qk == 16: lets the tests see that the dispatcher respects applicable(). */
int test_exact_applicable_d16(const txattn_problem *p, const char **why);
size_t test_exact_workspace(const txattn_problem *p, int n_threads, const int64_t *tunables);
txattn_status test_exact_run(const txattn_kernel_call *call);

#endif
