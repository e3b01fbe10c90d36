/* SPDX-License-Identifier: MIT */
/* Internal: the only way the library prints. Silent unless TXATTN_VERBOSE is set to a non-empty
 * value other than "0" (read once per process). */
#ifndef TXATTN_CORE_LOG_H
#define TXATTN_CORE_LOG_H

int txattn__verbose(void);
/* Prints "txattn: <message>\n" to stderr when verbose. */
void txattn__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
