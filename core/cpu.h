/* Internal: which kernel ISAs this CPU and OS can run, and the machine facts kernels size blocks
 * by. */
#ifndef TXATTN_CORE_CPU_H
#define TXATTN_CORE_CPU_H

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

/* CPUs this process may run on (its affinity mask), at least 1. */
int txattn__online_cpus(void);
/* Per-core cache sizes (plausibility-clamped) and the online CPU count. */
void txattn__machine_get(txattn_machine *m);

#endif
