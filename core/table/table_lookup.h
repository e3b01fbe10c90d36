/* SPDX-License-Identifier: MIT */
/* Internal: the dispatcher's table lookup (table_lookup.c). */
#ifndef TXATTN_CORE_TABLE_LOOKUP_H
#define TXATTN_CORE_TABLE_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

#include "txattn/table.h"

struct txattn__kernel; /* loader.h */

struct txattn__ctx_table; /* table_context.h */
struct txattn__registry;  /* loader.h */

/* 1 when the context's table ct (its state: followed or not) chooses for the resolved problem r
   on `threads` threads: *k gets the kernel, *tunables its values
   in declared order (NULL if it declares none), and why a line starting "table: ". 0 otherwise,
   and why says why there is no entry. */
int txattn__table_choose(const struct txattn__ctx_table *ct, int threads, const txattn_problem *r,
                         const struct txattn__kernel **k, const int64_t **tunables, char *why,
                         size_t size);

/* Clears demoted[i] (one per kernel of reg) for each kernel that the table ct measured as the
   winner around the resolved problem r: r lies in the table's class for it (as the lookup finds
   it) within the n (and r) spanned by the points of that class the kernel won. Elsewhere the table
   is no evidence for the kernel's own claim: where it lost, the measurements speak against it. */
void txattn__table_won_around(const struct txattn__ctx_table *ct,
                              const struct txattn__registry *reg, int threads,
                              const txattn_problem *r, unsigned char *demoted);

#endif
