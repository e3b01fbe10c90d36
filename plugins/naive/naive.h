/* SPDX-License-Identifier: MIT */
/* Internal to the naive plugin: the kernel entry points its descriptor points at. */
#ifndef TXATTN_NAIVE_H
#define TXATTN_NAIVE_H

#include "txattn/plugin.h"

size_t naive_workspace_size(const txattn_problem *p, int n_threads, const int64_t *tunables);
txattn_status naive_run(const txattn_kernel_call *call);

#endif
