/* Internal: which kernel ISAs this CPU and OS can run, what the CPU says about itself
 * (cpu_id.c), and how many CPUs this process may use. */
#ifndef TXATTN_CORE_CPU_H
#define TXATTN_CORE_CPU_H

#include <stdint.h>

#include "txattn/plugin.h"

typedef struct txattn__isa_state {
  int usable[TXATTN_ISA_COUNT_];
  char why[TXATTN_ISA_COUNT_][128]; /* "" when usable */
  char cap_note[160];               /* set when TXATTN_MAX_ISA holds a value we do not know */
} txattn__isa_state;

/* The hardware is probed once per process; the TXATTN_MAX_ISA cap is applied at every call, so a
   program (or test) that changes the variable sees it in the next context it creates. */
void txattn__isa_state_get(txattn__isa_state *st);
/* "scalar", "avx2", "avx512", "neon"; "unknown" for a value outside the enum. */
const char *txattn__isa_name(txattn_isa isa);

/* bit (1u << isa) for each ISA the CPU and OS enable, before the TXATTN_MAX_ISA cap. */
unsigned txattn__isa_hw_mask(void);

/* CPUs this process may run on (its affinity mask), at least 1. */
int txattn__online_cpus(void);

/* What the CPU says about itself (cpu_id.c): "" and 0 where it says nothing. */
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
