/* SPDX-License-Identifier: MIT */
/* Internal: what the CPU says about itself (cpu_id.c). */
#ifndef TXATTN_CORE_CPU_ID_H
#define TXATTN_CORE_CPU_ID_H

#include <stdint.h>

/* "" and 0 where it says nothing. */
typedef struct txattn__cpu_ident {
  char vendor[16]; /* "AuthenticAMD", "GenuineIntel"; arm64: the MIDR implementer, "ARM" */
  char brand[64];  /* x86: cpuid 0x80000002..4, trimmed; arm64: "" */
  int family, model, stepping;
} txattn__cpu_ident;
void txattn__cpu_ident_get(txattn__cpu_ident *out);

/* One cache level as the CPU's own cache leaf describes it; all 0 when the leaf omits it. */
typedef struct txattn__cpu_cache {
  int64_t total;    /* bytes of one cache of this level */
  int cores;        /* cores sharing one cache, >= 1 */
  int64_t per_core; /* total / cores */
} txattn__cpu_cache;
typedef struct txattn__cpu_caches {
  const char *leaf; /* "leaf 4", "leaf 0x8000001D"; NULL when the CPU has no cache leaf */
  txattn__cpu_cache l1d, l2, l3;
} txattn__cpu_caches;
void txattn__cpu_caches_get(txattn__cpu_caches *out);

#endif
