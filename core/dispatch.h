/* Internal: which kernel runs a problem. */
#ifndef TXATTN_CORE_DISPATCH_H
#define TXATTN_CORE_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "context.h"

/* Chooses the kernel for the resolved problem r on ctx's threads and writes one line on why.
   explicit_name (the caller's argument, or NULL) wins over TXATTN_FORCE_KERNEL, which wins over the
   dispatch table (which also sets *tunables to the measured values in the kernel's declared order;
   else *tunables is NULL), which wins over the fallback estimate
     time = 2 * (d_qk + d_v) * work / (speed_hint * 1e9 * threads)
   where work is the kernel's own count of the score pairs it computes (cost_pairs, ABI 1.1,
   with its default tunables) when it has one, else the visible pairs for TXATTN_KERNEL_SPARSE
   kernels, else batch * heads_q * n_q * n_kv, and threads is the context's count for TXATTN_KERNEL_THREADED kernels, else 1; ties go to
   the smaller name. A named kernel that is unknown fails with E_NOT_FOUND, one that cannot run here
   or cannot do r with E_UNSUPPORTED. */
txattn_status txattn__dispatch(const txattn_context *ctx, const txattn_problem *r,
                               const char *explicit_name, const txattn__kernel **out,
                               const int64_t **tunables, char *why, size_t size);

#endif
