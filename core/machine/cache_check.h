/* SPDX-License-Identifier: MIT */
/* Internal: the plausibility check of the cache sizes hwloc reports (rules in cache_check.c). */
#ifndef TXATTN_CORE_CACHE_CHECK_H
#define TXATTN_CORE_CACHE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_id.h"
#include "topology.h"

#define TXATTN__KIB INT64_C(1024)
#define TXATTN__MIB (TXATTN__KIB * TXATTN__KIB)

/* The plausible range of one level's per-core size, and the size taken when nothing trustworthy
   is reported. */
typedef struct txattn__cache_rule {
  const char *name; /* "l1d", "l2", "l3" */
  int64_t lo, hi, typical;
} txattn__cache_rule;
extern const txattn__cache_rule txattn__cache_rules[3]; /* l1d, l2, l3 */

typedef struct txattn__cache_checked {
  int64_t bytes[3]; /* per core: l1d, l2, l3 */
  char source[64];  /* "hwloc", "hwloc+cpuid", "typical" ... */
  char notes[1024]; /* one line per value not taken from hwloc as reported, "" if none */
} txattn__cache_checked;

/* Checks what the topology reports against the plausible ranges, against each other and against
   the CPU's own cache leaf (cpu == NULL when the CPU has none or the topology is not this
   machine's). */
void txattn__caches_check(const txattn__topology *topo, const txattn__cpu_caches *cpu,
                          txattn__cache_checked *out);

/* Appends a line to a newline-separated list of notes (truncating, never overflowing). */
void txattn__note_add(char *notes, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "508 MiB", "1.25 MiB", "48 KiB", "1000 B" */
const char *txattn__bytes_text(int64_t bytes, char *buf, size_t size);

#endif
