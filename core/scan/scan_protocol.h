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
 * at the last WHERE. */
#ifndef TXATTN_CORE_SCAN_SCAN_PROTOCOL_H
#define TXATTN_CORE_SCAN_SCAN_PROTOCOL_H

#define TXATTN_SCAN_READY      "txattn-scan 1"
#define TXATTN_SCAN_VERDICT_FD 3

#endif
