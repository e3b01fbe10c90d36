/* SPDX-License-Identifier: MIT */
/* Internal: what a dispatch table is tied to, compared with what a context loaded (its registry and machine) (table_fingerprint.c). */
#ifndef TXATTN_CORE_TABLE_FINGERPRINT_H
#define TXATTN_CORE_TABLE_FINGERPRINT_H

#include <stddef.h>

#include "loader.h"
#include "table_types.h"

/* The number of header fields that differ between t and a context's machine m and plugins reg (library version, machine fingerprint,
   plugins and their builds); why (may be NULL) gets each, with the table's value and the context's. */
int txattn__table_differences(const txattn_table *t, const txattn__registry *reg,
                              const txattn_machine_info *m, char *why, size_t size);
/* The same for the library version and the machine alone: any of them makes the whole table stale. */
int txattn__table_header_differences(const txattn_table *t, const txattn_machine_info *m, char *why,
                                     size_t size);
/* The same for the plugins alone: a plugin t lists with another version or build, one t lists that
   reg has not loaded and one reg loaded that t does not list, each changed or new one with its
   kernels (which t did not measure). */
int txattn__table_plugin_differences(const txattn_table *t, const txattn__registry *reg, char *why,
                                     size_t size);
/* t's record of the plugin of that name, NULL if it lists none. */
const txattn__tplugin *txattn__table_plugin(const txattn_table *t, const char *name);
/* 1 if t lists plugin p with p's version and build: t measured p's kernels as they are. */
int txattn__table_plugin_measured(const txattn_table *t, const txattn__plugin *p);

#endif
