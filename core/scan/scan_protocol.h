/* SPDX-License-Identifier: MIT */
/* Internal: what the plugin scanner (txattn-scan, scanner_main.c) and the library that spawns it
 * (scan_spawn.c) say to each other. The scanner writes lines to file descriptor
 * TXATTN_SCAN_VERDICT_FD, each ending in '\n':
 *   "txattn-scan 1"     first, before it opens the plugin: the scanner itself started
 *   "at WHERE"          before each step that runs the plugin's code ("run() of x.avx2 on ...")
 *   "ok N"              last: N kernel runs matched the reference, nothing wrote outside its buffers
 *   "bad REASON"        last: the plugin is faulty (a wrong result, a write past a buffer)
 *   "declined REASON"   last: not loadable or not a plugin; the loader refuses it with its own reason
 * Anything else (a signal, an exit without a last line, no answer in time) is a fault of the plugin
 * at the last WHERE.
 *
 * A check request (txattn-scan ISA_MASK FILE check KERNEL THREADS COMPARE FIELD=VALUE...
 * [tunable.NAME=VALUE...], the fields below; scan_trial.c) ends in one of, instead of ok:
 *   "ran SECONDS ERROR BOUND"          the call returned OK within the bound (ERROR -1: not compared)
 *   "inexact SECONDS ERROR BOUND WHY"  it returned OK off the reference (ERROR nan: not finite)
 *   "failed STATUS WHY"                it returned STATUS (a txattn_status)
 *   "outside AFTER BEFORE"             it wrote up to AFTER bytes past o's end, BEFORE before it
 *   "bad WHY", "declined WHY"          as above (declined: no such kernel, or it cannot run P) */
#ifndef TXATTN_CORE_SCAN_SCAN_PROTOCOL_H
#define TXATTN_CORE_SCAN_SCAN_PROTOCOL_H

#define TXATTN_SCAN_READY      "txattn-scan 1"
#define TXATTN_SCAN_VERDICT_FD 3

/* The problem fields of a check request, NAME=VALUE each (integers in decimal, floats as %a); the
   others stay zero. */
/* clang-format off */
#define TXATTN_SCAN_PROBLEM_FIELDS(I, F)                                                           \
  I(batch) I(heads_q) I(heads_kv) I(n_q) I(n_kv) I(d_qk) I(d_v) I(mask) I(window_left)             \
  I(window_right) F(scale) I(q_type) I(k_type) I(v_type) I(o_type) I(lse) I(ragged) F(softcap)     \
  I(alibi) I(sinks) I(sink_keys) I(mask_tensor) I(mask_type)
/* clang-format on */

#endif
