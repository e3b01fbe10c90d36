/* SPDX-License-Identifier: MIT */
/* Internal: the dispatch table a context loaded at creation, and its state for
 * txattn_context_table_state. Immutable after txattn_context_create. */
#ifndef TXATTN_CORE_TABLE_CONTEXT_H
#define TXATTN_CORE_TABLE_CONTEXT_H

#include "loader.h"
#include "txattn/table.h"

typedef struct txattn__ctx_table {
  txattn_table_status status;
  char *path;          /* the file looked for; "" when none is configured */
  char *state;         /* txattn_context_table_state */
  txattn_table *table; /* bound to the context; only when txattn__table_followed */
  /* per kernel of the context: 1 if the table did not measure it (its plugin is new to the table,
     or another version or build of it); n_unmeasured of them. NULL unless PARTIAL. */
  unsigned char *unmeasured;
  size_t n_unmeasured;
} txattn__ctx_table;

/* Whether the context follows its table: LOADED, or PARTIAL (for the kernels it measured). */
static inline int txattn__table_followed(const txattn__ctx_table *ct) {
  return ct != NULL && ct->table != NULL &&
         (ct->status == TXATTN_TABLE_LOADED || ct->status == TXATTN_TABLE_PARTIAL);
}

/* Finds, reads, checks against the machine m and binds to the kernels of reg the table (option:
   txattn_options.table_path); *out gets the state even on failure (free it). A missing,
   malformed or stale table is a state, not a failure: only running out of memory fails. */
txattn_status txattn__context_table_load(const char *option, const txattn__registry *reg,
                                         const txattn_machine_info *m, txattn__ctx_table **out);
void txattn__context_table_free(txattn__ctx_table *ct);

#endif
