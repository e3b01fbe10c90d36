/* SPDX-License-Identifier: MIT */
/* Internal: one run of the plugin scanner (txattn-scan) on one file, in a process of its own. */
#ifndef TXATTN_CORE_SCAN_SCAN_SPAWN_H
#define TXATTN_CORE_SCAN_SCAN_SPAWN_H

#include <stddef.h>

#include "txattn/txattn.h"

#define TXATTN__SCAN_MAX_ARGS 64 /* of a check request (txattn_kernel_trial) */

typedef enum txattn__scan_result {
  TXATTN__SCAN_OK = 0,      /* every kernel ran right on every shape it takes */
  TXATTN__SCAN_FAULTY,      /* crashed, exited, hung, printed, computed wrongly or wrote outside */
  TXATTN__SCAN_DECLINED,    /* not loadable or not a valid plugin: the loader refuses it itself */
  TXATTN__SCAN_UNAVAILABLE, /* the scanner could not be started: no verdict on the file */
} txattn__scan_result;

/* Spawns the scanner (posix_spawn, a clean environment, its stdout and stderr away from ours) on
   path, running kernels of the ISAs in isa_mask only, and waits at most timeout_s seconds (then
   SIGKILL). why gets the reason for every result but OK. Thread-safe. */
txattn__scan_result txattn__scan_spawn(const char *path, unsigned isa_mask, double timeout_s,
                                       char *why, size_t size);

/* txattn_kernel_trial on kernel, the arguments checked by the caller (context.c). */
txattn_status txattn__scan_trial(const txattn_kernel_info *kernel, const txattn_problem *p,
                                 const char *const *names, const int64_t *values, size_t n,
                                 int n_threads, txattn_trial *t);

#endif
