/* SPDX-License-Identifier: MIT */
/* Status names and the per-thread last-error message. */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"
#include "log.h"

/* One list, so that names and numbers never drift apart (libuv's habit). */
#define TXATTN_STATUS_LIST(X)                                                                      \
  X(TXATTN_OK)                                                                                     \
  X(TXATTN_E_INVALID)                                                                              \
  X(TXATTN_E_UNSUPPORTED)                                                                          \
  X(TXATTN_E_NOT_FOUND)                                                                            \
  X(TXATTN_E_NOMEM)                                                                                \
  X(TXATTN_E_PLUGIN)                                                                               \
  X(TXATTN_E_TABLE)                                                                                \
  X(TXATTN_E_IO)                                                                                   \
  X(TXATTN_E_INTERNAL)

const char *txattn_status_name(txattn_status s) {
  switch (s) {
#define TXATTN_STATUS_CASE(name)                                                                   \
  case name:                                                                                       \
    return #name;
    TXATTN_STATUS_LIST(TXATTN_STATUS_CASE)
#undef TXATTN_STATUS_CASE
  }
  return "TXATTN_E_UNKNOWN";
}

static _Thread_local char last_error[1024];

const char *txattn_last_error(void) {
  return last_error;
}

txattn_status txattn__fail(txattn_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  txattn__log("%s: %s", txattn_status_name(s), last_error);
  return s;
}

txattn_status txattn__ok(void) {
  last_error[0] = '\0';
  return TXATTN_OK;
}

const char *txattn__fmt_time(double s, char *buf, size_t size) {
  if (s < 1e-3)
    snprintf(buf, size, "%.3g us", s * 1e6);
  else if (s < 1.0)
    snprintf(buf, size, "%.3g ms", s * 1e3);
  else
    snprintf(buf, size, "%.3g s", s);
  return buf;
}

int txattn__why_not(char *why, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, size, fmt, ap);
  va_end(ap);
  return 0;
}
