/* SPDX-License-Identifier: MIT */
/* Internal: the builders of a dispatch table in memory (its records are in table_types.h), the
 * rules they enforce and the names of its fields' values.
 *
 * Every way into the model (the public builder, the parser) goes through txattn__tm_* below, so a
 * table read from a file is validated by exactly the rules that built it. Those functions report
 * failures into a caller's buffer rather than txattn_last_error, so the parser can prefix the JSON
 * path of the offending field. */
#ifndef TXATTN_CORE_TABLE_MODEL_H
#define TXATTN_CORE_TABLE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "table_types.h"

/* Builders. Each returns TXATTN_OK, or a status with the reason in why (no txattn__fail). */
txattn_table *txattn__tm_new(void);
void txattn__tm_free(txattn_table *t);
txattn_status txattn__tm_set_header(txattn_table *t, const char *library_version,
                                    const char *created, const txattn_machine_info *m, char *why,
                                    size_t size);
txattn_status txattn__tm_add_plugin(txattn_table *t, const char *name, const char *version,
                                    const char *build, char *why, size_t size);
txattn_status txattn__tm_add_class(txattn_table *t, const txattn_table_class *c, size_t *index,
                                   char *why, size_t size);
/* Copies the candidates and sorts them fastest first (equal times by kernel name); chosen >= 0
   names the winner (cands[chosen] goes first: a tie when it is not the fastest, then it may be at
   most TXATTN__TIE_MAX_RATIO x the fastest), -1 the fastest. With reindex, derives the class's
   regions and index again (else the caller calls txattn__tm_reindex once at the end). */
#define TXATTN__TIE_MAX_RATIO 1.25
/* Candidates per point a table may hold (docs/dispatch_table.md): txtune profile records at most
   128; a point with more is refused before any of them is read. */
#define TXATTN__TABLE_MAX_CANDIDATES 256
txattn_status txattn__tm_add_point(txattn_table *t, size_t cls, int64_t n, int64_t r,
                                   const txattn_table_candidate *cands, size_t n_cands, long chosen,
                                   int reindex, char *why, size_t size);
txattn_status txattn__tm_add_exclusion(txattn_table *t, const txattn_table_exclusion *e, char *why,
                                       size_t size);

/* Checks shared with the parser. */
int txattn__tm_class_ok(const txattn_table_class *c, char *why, size_t size);
int txattn__tm_name_ok(const char *s, int need_dot); /* [a-z0-9_.-]{1,63} */
/* "block_q=64 block_k=256", "" if none. */
void txattn__tm_tunables_text(const txattn__tunables *tun, char *buf, size_t size);
/* "none", "causal", "window-sym", "window-left": txattn_mask_name with the window's shape. */
const char *txattn__tm_mask_name(const txattn_table_class *c);
/* txattn_table_class_describe of a class the model holds (every field there). */
int txattn__tm_class_text(const txattn_table_class *c, char *buf, size_t size);
/* The class's element types as txtune's --dtype spells them: "" when all are f32, "bf16" when all
   four are one type, "kv=f16" when k and v are one type and q and o f32, else
   "q,k,v,o=f32,f16,f16,bf16". */
void txattn__tm_types_text(const txattn_table_class *c, char *buf, size_t size);

#endif
