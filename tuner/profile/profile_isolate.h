/* SPDX-License-Identifier: MIT */
/* txtune profile: the exactness checks in a child process, so that a kernel which crashes or hangs
   on its check shape is excluded, with what happened as the reason, instead of taking the profile
   down: a third-party plugin's bug costs that kernel, not the table.

   The child is txtune itself, started again as `txtune __check-server` (from /proc/self/exe), with
   the profile's plugin path; it answers one check a line (prof_check_fault in its own process, with its
   own inputs and reference). When it dies or does not answer within the timeout (PROF_CHECK_TIMEOUT_S
   at most, a share of the budget: prof_check_timeout), the candidate being checked is excluded,
   with what happened, and the next check starts a new child. Where no child can
   be started (no /proc/self/exe, an emulator that cannot run it directly), the checks run in the
   profile's own process, as prof_check_fault does without isolation.

   The same child also makes the first call of each third-party candidate (not shipped with
   libtxattn: prof_kernel_shipped) at each timed point before the profile times it in its own
   process (prof_isolated_run): a kernel that passes its check but crashes or hangs only at a
   larger n is named for that and left out, instead of ending or stalling the profile. The
   shipped kernels are timed directly: a call in the child costs a point one more call and its
   inputs (docs/measurements.md has the figures). */
#ifndef TXTUNE_PROFILE_ISOLATE_H
#define TXTUNE_PROFILE_ISOLATE_H

#include <stddef.h>

#include "profile.h"

typedef struct prof_isolation prof_isolation;

/* plugin_path as the profile's contexts were opened with (NULL: the library's default). Starts no
   process yet. */
prof_isolation *prof_isolation_new(const char *plugin_path);
/* Stops the child, if one runs. NULL is fine. */
void prof_isolation_free(prof_isolation *iso);

/* cand's check on `small` (class cls) in the child, for a context of `threads` threads, waiting
   timeout_s for the answer (and for a child to start): 1 exact, 0 not (*fault says how: inexact,
   crashed with the signal or exit status, hung, or printed on its stdout; *why in words), -1 it
   cannot run there; -2 when no child can be started (the caller checks in its own process). */
int prof_isolated_check(prof_isolation *iso, double timeout_s, int threads, size_t cls,
                        const txattn_problem *small, const prof_cand *cand, double *err,
                        prof_fault *fault, char *why, size_t why_size);

/* cand's first call at a timed point p (class cls) in the child, before the profile times it in
   its own process: for kernels that are not shipped with libtxattn, which may crash or hang only
   at sizes the check shapes do not reach. Nothing is compared (the profile checks its own call's
   rows). Waits timeout_s: 1 it ran, 0 it crashed, hung or printed (*fault, *why: "crashed at a
   timed point (n = N): signal S", "hung (no answer within T s) at a timed point (n = N)"), -1 the
   call failed or cannot run there (left to the profile's own call), -2 no child can be started. */
int prof_isolated_run(prof_isolation *iso, double timeout_s, int threads, size_t cls,
                      const txattn_problem *p, const prof_cand *cand, prof_fault *fault, char *why,
                      size_t why_size);

/* 1 if k comes with libtxattn: a shipped plugin (naive, masked, banded, banded_omp, tiled,
   tiled_omp) whose file lies in the library's own plugin directory, as the library counts it for
   its estimate (docs/dispatch_table.md); else third-party. */
int prof_kernel_shipped(const txattn_kernel_info *k);

/* The child: `txtune __check-server [--plugin-path DIRS]`, requests on stdin, answers on file
   descriptor 3; its stdout is what its kernels print, which the profile watches. */
int tx_cmd_check_server(int argc, char **argv);

#endif
