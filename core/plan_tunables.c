/* SPDX-License-Identifier: MIT */
/* Reading a plan's tunables: what `txtune topo` shows and what the tuner starts its search from. */
#include <string.h>

#include "error.h"
#include "plan.h"
#include "struct_size.h"

size_t txattn_plan_tunable_count(const txattn_plan *plan) {
  if (plan == NULL) {
    txattn__fail(TXATTN_E_INVALID, "txattn_plan_tunable_count: plan is NULL");
    return 0;
  }
  return plan->tunables ? plan->kernel->desc->n_tunables : 0;
}

static txattn_status check_index(const char *fn, const txattn_plan *plan, size_t i) {
  TXATTN_RETURN_IF(plan == NULL, TXATTN_E_INVALID, "%s: plan is NULL", fn);
  size_t n = plan->tunables ? plan->kernel->desc->n_tunables : 0;
  TXATTN_RETURN_IF(i >= n, TXATTN_E_INVALID,
                   "%s: index %zu is out of range (kernel %s has %zu tunables)", fn, i,
                   plan->kernel->desc->name, n);
  return TXATTN_OK;
}

txattn_status txattn_plan_tunable_get(const txattn_plan *plan, size_t i, const char **name,
                                      int64_t *value) {
  TXATTN_FORWARD_IF_ERROR(check_index("txattn_plan_tunable_get", plan, i));
  if (name) *name = plan->kernel->desc->tunables[i].name;
  if (value) *value = plan->tunables[i];
  return txattn__ok();
}

txattn_status txattn_plan_tunable_info(const txattn_plan *plan, size_t i,
                                       txattn_tunable_info *out) {
  TXATTN_FORWARD_IF_ERROR(check_index("txattn_plan_tunable_info", plan, i));
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_plan_tunable_info: out is NULL");
  const txattn_tunable *t = &plan->kernel->desc->tunables[i];
  txattn_tunable_info info;
  memset(&info, 0, sizeof info); /* padding too: callers may compare */
  info.struct_size = sizeof info;
  info.name = t->name;
  info.summary = t->summary;
  info.value = plan->tunables[i];
  info.min = t->min;
  info.max = t->max;
  info.multiple_of = t->multiple_of;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_tunable_info, out, &info));
  return txattn__ok();
}
