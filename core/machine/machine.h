/* SPDX-License-Identifier: MIT */
/* Internal: the machine a context describes to its caller (txattn_context_machine) and to the
 * kernels (txattn_machine, for cache-derived tunable defaults). */
#ifndef TXATTN_CORE_MACHINE_H
#define TXATTN_CORE_MACHINE_H

#include "txattn/plugin.h"

/* Fills info and m: the hardware as probed once per process, then the cache override, which is
   caches when it is not NULL ("" for none), else $TXATTN_CACHES. TXATTN_E_INVALID, naming the bad
   item, when the override is malformed. */
txattn_status txattn__machine_init(const char *caches, txattn_machine_info *info,
                                   txattn_machine *m);

/* CPUs this process may run on (its affinity mask), at least 1. */
int txattn__online_cpus(void);

#endif
