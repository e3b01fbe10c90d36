/* SPDX-License-Identifier: MIT */
/* Running a kernel on a case the way a user would (plan, execute) and judging the result. */
#ifndef TXATTN_TEST_CASE_RUN_H
#define TXATTN_TEST_CASE_RUN_H

#include "attn_case.h"
#include "txattn/txattn.h"

/* Plans `kernel` (NULL: the dispatcher's choice) for c, executes it on c's strided tensors and
   checks the output against c->o_ref (run case_run_reference first). Asserts on every failure,
   naming the kernel and desc. Returns 1 if the kernel ran, 0 if it declined the problem with
   E_UNSUPPORTED and a reason, which only kernels other than those of
   test_kernel_takes_every_problem may do, or, any kernel, because it does not take one of the
   case's 16-bit types (the host's reason, "it does not take f16 k", naming a type of c). */
int case_run_kernel(txattn_context *ctx, struct attn_case *c, const char *kernel, const char *desc);

/* What case_run_every_kernel_tally saw, by kernel name ("a.b, c.d"). */
struct case_tally {
  int ran;                  /* kernels that ran and agreed (the dispatcher not counted) */
  int naive_ran;            /* naive.scalar among them */
  char ran_names[1024];     /* those kernels */
  char declined_types[768]; /* kernels that do not take the case's types */
  char declined_shape[768]; /* kernels that took the types but declined the problem */
  char unusable[768];       /* kernels not usable on this machine */
};
/* case_run_kernel for every kernel of ctx that is usable here (the others are logged), then for the
   dispatcher's choice. Returns how many kernels ran. */
int case_run_every_kernel(txattn_context *ctx, struct attn_case *c, const char *desc);
/* The same, filling *tally, and logging (cr_log_info) one line on which kernels ran and which
   declined the case's types. */
int case_run_every_kernel_tally(txattn_context *ctx, struct attn_case *c, const char *desc,
                                struct case_tally *tally);
/* The same through txattn_attention. */
void case_run_attention(txattn_context *ctx, struct attn_case *c, const char *desc);

#endif
