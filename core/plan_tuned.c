/* SPDX-License-Identifier: MIT */
/* Plans with tunables the caller chooses (what the tuner measures), and the declarations of a
 * kernel's tunables, which say what may be chosen. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "error.h"
#include "plan.h"
#include "plugin_check.h"
#include "struct_size.h"

txattn_status txattn_plan_create_tuned(txattn_context *ctx, const txattn_problem *p,
                                       const char *kernel, const char *const *names,
                                       const int64_t *values, size_t n, txattn_plan **out) {
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_plan_create_tuned: out is NULL");
  *out = NULL;
  TXATTN_RETURN_IF(kernel == NULL, TXATTN_E_INVALID,
                   "txattn_plan_create_tuned: kernel is NULL (tunables belong to a named kernel)");
  TXATTN_RETURN_IF(n > 0 && (names == NULL || values == NULL), TXATTN_E_INVALID,
                   "txattn_plan_create_tuned: n = %zu but %s is NULL", n,
                   names == NULL ? "names" : "values");
  txattn__tunable_override ov = {names, values, n};
  return txattn__plan_new(ctx, p, kernel, &ov, out);
}

static const txattn_kernel_desc *kernel_at(const txattn_context *ctx, size_t kernel,
                                           const char *fn) {
  if (ctx == NULL) {
    txattn__fail(TXATTN_E_INVALID, "%s: ctx is NULL", fn);
    return NULL;
  }
  if (kernel >= ctx->reg.n_kernels) {
    txattn__fail(TXATTN_E_INVALID, "%s: kernel index %zu is out of range (the context has %zu)", fn,
                 kernel, ctx->reg.n_kernels);
    return NULL;
  }
  return ctx->reg.kernels[kernel].desc;
}

size_t txattn_kernel_tunable_count(const txattn_context *ctx, size_t kernel) {
  const txattn_kernel_desc *d = kernel_at(ctx, kernel, "txattn_kernel_tunable_count");
  return d ? d->n_tunables : 0;
}

txattn_status txattn_kernel_tunable_get(const txattn_context *ctx, size_t kernel, size_t i,
                                        txattn_tunable_info *out) {
  const txattn_kernel_desc *d = kernel_at(ctx, kernel, "txattn_kernel_tunable_get");
  if (d == NULL) return TXATTN_E_INVALID;
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_kernel_tunable_get: out is NULL");
  TXATTN_RETURN_IF(i >= d->n_tunables, TXATTN_E_INVALID,
                   "txattn_kernel_tunable_get: index %zu is out of range (kernel %s has %zu "
                   "tunables)",
                   i, d->name, d->n_tunables);
  const txattn_tunable *t = &d->tunables[i];
  txattn_tunable_info info;
  memset(&info, 0, sizeof info); /* padding too: callers may compare */
  info.struct_size = sizeof info;
  info.name = t->name;
  info.summary = t->summary;
  info.value = 0;
  info.min = t->min;
  info.max = t->max;
  info.multiple_of = t->multiple_of;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_tunable_info, out, &info));
  return txattn__ok();
}
