/* SPDX-License-Identifier: MIT */
/* Internal: plans with tunables the caller chooses (plan_tuned.c). */
#ifndef TXATTN_CORE_PLAN_TUNED_H
#define TXATTN_CORE_PLAN_TUNED_H

#include <stdint.h>

#include "plan.h"

/* Checks ov against d's declared tunables (E_INVALID naming the bad one) and writes its values
   into values (d's declared order). */
txattn_status txattn__tunables_override(const txattn_kernel_desc *d, int64_t *values,
                                        const txattn__tunable_override *ov);

#endif
