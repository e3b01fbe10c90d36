/* SPDX-License-Identifier: MIT */
#include "exact_kernel.h"

#include "oracle.h"

int test_exact_applicable(const txattn_problem *p, const char **why) {
  (void)p;
  (void)why;
  return 1;
}

int test_exact_applicable_d16(const txattn_problem *p, const char **why) {
  if (p->d_qk == 16) return 1;
  *why = "picky.scalar only takes d_qk = 16";
  return 0;
}

size_t test_exact_workspace(const txattn_problem *p, int n_threads, const int64_t *tunables) {
  (void)p;
  (void)n_threads;
  (void)tunables;
  return 0;
}

txattn_status test_exact_run(const txattn_kernel_call *call) {
  return oracle_attention(call->problem, call->tensors) == 0 ? TXATTN_OK : TXATTN_E_NOMEM;
}
