#include "case_run.h"

#include <stdio.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "case_check.h"
#include "test_context.h"

static void execute_and_check(struct attn_case *c, const txattn_plan *plan, const char *who,
                              const char *desc) {
  char msg[512];
  double err;
  txattn_tensors t = case_tensors(c);
  uint64_t inputs = case_input_hash(c);
  case_clear_output(c);
  txattn_status s = txattn_plan_execute(plan, &t);
  cr_assert_eq(s, TXATTN_OK, "%s on %s: execute: %s: %s", who, desc, txattn_status_name(s),
               txattn_last_error());
  cr_assert_eq(case_input_hash(c), inputs, "%s on %s: wrote to its inputs", who, desc);
  cr_assert(case_check_output(c, &err, msg, sizeof msg), "%s on %s: %s", who, desc, msg);
}

int case_run_kernel(txattn_context *ctx, struct attn_case *c, const char *kernel,
                    const char *desc) {
  txattn_plan *plan = NULL;
  const char *who = kernel ? kernel : "the dispatcher";
  txattn_status s = txattn_plan_create(ctx, &c->problem, kernel, &plan);
  if (s == TXATTN_E_UNSUPPORTED && kernel && !test_kernel_takes_every_problem(kernel)) {
    cr_assert_neq(txattn_last_error()[0], '\0', "%s declines %s without a reason", kernel, desc);
    cr_log_info("%s declines %s: %s", kernel, desc, txattn_last_error());
    return 0;
  }
  cr_assert_eq(s, TXATTN_OK, "%s on %s: plan_create: %s: %s", who, desc, txattn_status_name(s),
               txattn_last_error());
  cr_assert(plan != NULL, "%s on %s: plan_create gave OK and no plan", who, desc);
  const char *chosen = txattn_plan_kernel(plan);
  cr_assert(chosen != NULL, "%s on %s: txattn_plan_kernel is NULL", who, desc);
  if (kernel) cr_assert_str_eq(chosen, kernel, "forced %s, the plan runs %s", kernel, chosen);
  char label[160];
  snprintf(label, sizeof label, "%s%s%s", who, kernel ? "" : " picking ", kernel ? "" : chosen);
  execute_and_check(c, plan, label, desc);
  txattn_plan_free(plan);
  return 1;
}

int case_run_every_kernel(txattn_context *ctx, struct attn_case *c, const char *desc) {
  struct kernel_list kernels;
  int ran = 0;
  test_kernel_list(ctx, &kernels);
  for (size_t i = 0; i < kernels.n; i++) {
    const txattn_kernel_info *k = &kernels.k[i];
    if (k->usable)
      ran += case_run_kernel(ctx, c, k->name, desc);
    else
      cr_log_info("%s is not usable here: %s", k->name, k->why_unusable ? k->why_unusable : "?");
  }
  case_run_kernel(ctx, c, NULL, desc);
  return ran;
}

void case_run_attention(txattn_context *ctx, struct attn_case *c, const char *desc) {
  char msg[512];
  double err;
  txattn_tensors t = case_tensors(c);
  uint64_t inputs = case_input_hash(c);
  case_clear_output(c);
  txattn_status s = txattn_attention(ctx, &c->problem, &t);
  cr_assert_eq(s, TXATTN_OK, "txattn_attention on %s: %s: %s", desc, txattn_status_name(s),
               txattn_last_error());
  cr_assert_eq(case_input_hash(c), inputs, "txattn_attention on %s: wrote to its inputs", desc);
  cr_assert(case_check_output(c, &err, msg, sizeof msg), "txattn_attention on %s: %s", desc, msg);
}
