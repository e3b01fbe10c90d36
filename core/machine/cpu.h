/* SPDX-License-Identifier: MIT */
/* Internal: which kernel ISAs this CPU and OS can run (what the CPU says about itself is in
 * cpu_id.h). */
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

/* bit (1u << isa) for each ISA the CPU and OS enable, before the TXATTN_MAX_ISA cap. */
unsigned txattn__isa_hw_mask(void);

#endif
