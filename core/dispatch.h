/* SPDX-License-Identifier: MIT */
/* Internal: which kernel runs a problem, and which one next when the chosen one cannot plan it or
 * fails to run it. */
#ifndef TXATTN_CORE_DISPATCH_H
#define TXATTN_CORE_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "context.h"

/* The kernels that failed one problem, in the order they were tried, with their reasons: what the
   dispatcher skips when it takes its next candidate, and what a plan's reason and the final error
   list. Touched only when a kernel fails, so it costs planning nothing otherwise. */
#define TXATTN__MAX_FAILED 64
typedef struct txattn__failures {
  size_t n;
  const txattn__kernel *k[TXATTN__MAX_FAILED];
  txattn_status status[TXATTN__MAX_FAILED]; /* k[i]'s status */
  txattn_status first; /* the first status other than E_UNSUPPORTED; E_UNSUPPORTED if none */
  size_t n_kernels;    /* how many kernels the context has, for the final error */
  char list[640];      /* "a could not plan (TXATTN_E_PLUGIN: ...); b failed at run time (...)" */
} txattn__failures;

void txattn__failures_init(txattn__failures *f);
/* Whether s, from planning or running a kernel the dispatcher chose, is that kernel's failure and
   lets the dispatcher take its next candidate: E_PLUGIN, E_NOMEM, E_UNSUPPORTED, E_INTERNAL. */
int txattn__kernel_failure(txattn_status s);
/* Records that k failed with status s and message (stage: "could not plan", "failed at run time")
   and logs it when TXATTN_VERBOSE is set. Each reason is cut to a bounded length and the list as
   a whole too, with "...". 0 when the record is full: the caller stops trying. */
int txattn__failures_add(txattn__failures *f, const txattn_context *ctx, const txattn__kernel *k,
                         txattn_status s, const char *stage, const char *message);
/* Fails when no kernel is left: the status is f->first (so E_UNSUPPORTED only when every kernel
   declined), the message "fn: no kernel could <verb> this problem: <f's list> (n other kernels
   cannot run here or decline it)". */
txattn_status txattn__failures_fail(const txattn__failures *f, const char *fn, const char *verb);

/* The dispatcher's walk through its candidates for one problem. */
typedef struct txattn__dispatcher {
  const txattn_context *ctx;
  const txattn_problem *r;
  const txattn__failures *skip; /* kernels not to choose again */
  int fixed;                    /* named by the caller or TXATTN_FORCE_KERNEL: no next candidate */
  const txattn__kernel *table_choice; /* the table's choice, if it chose */
  double *est; /* per kernel: its estimated time, or -1 if it is no candidate; NULL until needed */
  double est_local[32]; /* est when the context has no more kernels than this */
  /* per kernel: 1 if it is third-party and the context's table did not measure it the winner
     around the problem, so the estimate ranks it after every other candidate (its speed_hint is
     only its own word) */
  unsigned char *demoted;
  unsigned char demoted_local[32];
  char context[320]; /* why the estimate decides: the table had no entry, or its choice failed */
} txattn__dispatcher;

/* Chooses the kernel for the resolved problem r on ctx's threads and writes one line on why.
   explicit_name (the caller's argument, or NULL) wins over TXATTN_FORCE_KERNEL, which wins over the
   dispatch table (which also sets *tunables to the measured values in the kernel's declared order;
   else *tunables is NULL), which wins over the fallback estimate
     time = 2 * (d_qk + d_v) * work / (speed_hint * 1e9 * threads)
   where work is the kernel's own count of the score pairs it computes (cost_pairs, ABI 1.1,
   with its default tunables) when it has one, else the visible pairs for TXATTN_KERNEL_SPARSE
   kernels, else batch * heads_q * n_q * n_kv, and threads is the context's count for
   TXATTN_KERNEL_THREADED kernels, else 1; ties go to the smaller name. A third-party kernel
   (not shipped: txattn__plugin_shipped) that the loaded table did not measure the winner around
   r (in r's class, within the n and r of the points there it won: txattn__table_won_around) is
   ranked after every shipped or measured candidate, whatever its speed_hint, and the reason line
   says so. With a partly valid table (TXATTN_TABLE_PARTIAL) the kernels it did not measure are
   ranked by that estimate beside the table's choice, which one of them displaces only if it is not
   demoted and the estimate predicts it faster. A named kernel that is
   unknown fails with E_NOT_FOUND, one that cannot run here or cannot do r with E_UNSUPPORTED.
   Kernels in skip are not chosen (a table's choice among them hands over to the estimate); when
   skip leaves no candidate, *out is NULL and the status OK. End with txattn__dispatch_end. */
txattn_status txattn__dispatch_first(txattn__dispatcher *d, const txattn_context *ctx,
                                     const txattn_problem *r, const char *explicit_name,
                                     const txattn__failures *skip, const txattn__kernel **out,
                                     const int64_t **tunables, char *why, size_t size);
/* The next candidate after the kernels now in skip failed: the estimate's ranking without them
   (ranked once, at the first call that needs it). *out is NULL when none is left or the choice was
   fixed (d->fixed). */
txattn_status txattn__dispatch_next(txattn__dispatcher *d, const txattn__kernel **out,
                                    const int64_t **tunables, char *why, size_t size);
void txattn__dispatch_end(txattn__dispatcher *d);

#endif
