/* SPDX-License-Identifier: MIT */
/* Internal: how the library reports failures (see txattn_last_error in txattn/txattn.h).
 *
 * Convention: every public function that returns a status ends with `return txattn__ok();` on
 * success, which empties this thread's message, and with `return txattn__fail(status, "...")` (or
 * by forwarding an internal failure, whose message is already set) on failure. So
 * txattn_last_error() always describes the most recent failing or succeeding status-returning call
 * of this thread. Functions that return no status (getters) leave the message alone unless they are
 * given a NULL argument.
 */
#ifndef TXATTN_CORE_ERROR_H
#define TXATTN_CORE_ERROR_H

#include "txattn/txattn.h"

/* Formats the message for this thread and returns s, so that error paths stay one line long. */
/* A duration for messages: "812 us", "3.1 ms", "2.05 s". Returns buf. */
const char *txattn__fmt_time(double seconds, char *buf, size_t size);

txattn_status txattn__fail(txattn_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Formats why a check said no into why (size bytes) and returns 0, so that a predicate's "no" paths
   stay one line long: return txattn__why_not(why, size, "...", ...). */
int txattn__why_not(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Empties this thread's message and returns TXATTN_OK. */
txattn_status txattn__ok(void);

#define TXATTN_RETURN_IF(cond, status, ...)                                                        \
  do {                                                                                             \
    if (cond) return txattn__fail((status), __VA_ARGS__);                                          \
  } while (0)

#define TXATTN_FORWARD_IF_ERROR(expr)                                                              \
  do {                                                                                             \
    txattn_status txattn__s = (expr);                                                              \
    if (txattn__s != TXATTN_OK) return txattn__s;                                                  \
  } while (0)

#endif
