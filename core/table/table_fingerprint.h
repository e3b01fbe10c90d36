/* Internal: what a dispatch table is tied to, compared with a context (table_fingerprint.c). */
#ifndef TXATTN_CORE_TABLE_FINGERPRINT_H
#define TXATTN_CORE_TABLE_FINGERPRINT_H

#include <stddef.h>

#include "txattn/table.h"

/* The number of header fields that differ between t and ctx (library version, machine fingerprint,
   plugins and their builds); why (may be NULL) gets each, with the table's value and ctx's. */
int txattn__table_differences(const txattn_table *t, const txattn_context *ctx, char *why,
                              size_t size);

#endif
