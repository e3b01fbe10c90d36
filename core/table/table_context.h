/* SPDX-License-Identifier: MIT */
/* Internal: the dispatch table a context loaded at creation and its state, and what a table is
 * checked against when it loads: the library version, the machine and the plugins with their
 * builds (its fingerprint), and the tunables its kernels declare (table_context.c). Immutable after
 * txattn_context_create. */
#ifndef TXATTN_CORE_TABLE_CONTEXT_H
#define TXATTN_CORE_TABLE_CONTEXT_H

#include "loader.h"
#include "table_model.h"

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

/* The number of differences between t's header and a context's machine m (library version and
   machine fingerprint; m may be NULL: none) and plugins reg (may be NULL: none); why (may be NULL)
   gets each, with the table's value and the context's. */
int txattn__table_differences(const txattn_table *t, const txattn__registry *reg,
                              const txattn_machine_info *m, char *why, size_t size);
/* 1 if every candidate naming a kernel reg has and the table measured (unmeasured[i] is 0 for
   reg's kernel i; unmeasured may be NULL: all were) gives exactly the tunables that kernel
   declares, each within its declared range; else 0 and why names the first that does not. */
int txattn__table_fits(const txattn_table *t, const txattn__registry *reg,
                       const unsigned char *unmeasured, char *why, size_t size);
/* t's record of the plugin of that name, NULL if it lists none. */
const txattn__tplugin *txattn__table_plugin(const txattn_table *t, const char *name);
/* 1 if t lists plugin p with p's version and build: t measured p's kernels as they are. */
int txattn__table_plugin_measured(const txattn_table *t, const txattn__plugin *p);

#endif
