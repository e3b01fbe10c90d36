/* SPDX-License-Identifier: MIT */
/* Internal: a dispatch table measured against the kernels a context loaded: whether its tunables fit
 * them (the header's stale check is table_fingerprint.h), and
 * resolving each candidate's kernel name and tunables once, when the context loads the table, so
 * that a lookup compares pointers instead of strings. */
#ifndef TXATTN_CORE_TABLE_BIND_H
#define TXATTN_CORE_TABLE_BIND_H

#include <stddef.h>

#include "loader.h"
#include "txattn/table.h"

/* 1 if every candidate naming a kernel reg has and the table measured (unmeasured[i] is 0 for
   reg's kernel i; unmeasured may be NULL: all were) gives exactly the tunables that kernel
   declares, each within its declared range; else 0 and why names the first that does not.
   Candidates of other kernels are not judged: the lookup skips them. */
int txattn__table_fits(const txattn_table *t, const txattn__registry *reg,
                       const unsigned char *unmeasured, char *why, size_t size);
/* Points every candidate at reg's kernel of its name (NULL if none, or if unmeasured, as above,
   says the table measured another build of it) with its tunables in the kernel's declared order.
   The table must fit reg. 0 if out of memory. */
int txattn__table_bind(txattn_table *t, const txattn__registry *reg,
                       const unsigned char *unmeasured);

#endif
