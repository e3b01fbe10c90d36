/* SPDX-License-Identifier: MIT */
/* An attention problem on the command line: the options that describe one (shared by every
   subcommand that takes a shape) and the one-line text that names one in tables and reports; and
   the serving options of txtune bench and check: --kv-lens L1,L2,... (a ragged batch, one sequence
   per length) and --lse (the call also writes the log-sum-exp of each row); bench also takes
   --merge P (the keys split into P parts, each a call with lse, merged by txattn_merge).
   --page-size P puts K and V in pages of P keys in a shuffled pool read through a block table, and
   --packed stores q, o and lse without padding (q_offsets). */
#ifndef TXTUNE_PROBLEM_CLI_H
#define TXTUNE_PROBLEM_CLI_H

#include <stddef.h>
#include <stdint.h>
#include "args.h"
#include "txattn/txattn.h"
/* The score modifiers' options, part of the problem options and taken alone by `txtune check`:
   --softcap C (NaN if not given), --alibi (the standard slopes, max_bias 8), --sinks (seeded
   random sink logits: tx_buffers_fill), --sink-keys K (TX_UNSET if not given), and the mask
   tensors --doc-lens and --bias. */
typedef struct tx_modifier_args {
  double softcap;
  int alibi, sinks;
  int64_t sink_keys;
  /* the two mask tensors txtune makes (tx_mask_tensor_make): --doc-lens L1,L2,... and
     --bias relative; NULL if not given */
  const char *doc_lens, *bias;
} tx_modifier_args;
#define TX_MODIFIER_N_OPTS 6
void tx_modifier_args_init(tx_modifier_args *a);
/* Writes the TX_MODIFIER_N_OPTS options that fill a into opts. */
void tx_modifier_opts(tx_modifier_args *a, tx_opt *opts);
/* Sets p's modifier fields from a (and struct_size, so that the library reads them); a mask
   tensor asked for (after tx_modifier_parse) sets mask_tensor, and mask_type to p's q_type. */
void tx_modifier_apply(const tx_modifier_args *a, txattn_problem *p);
/* Checks --doc-lens and --bias and keeps the document lengths for tx_mask_tensor_make: 0, or a
   usage error's code. */
int tx_modifier_parse(const tx_cmd_spec *spec, const tx_modifier_args *a);
/* The sum of --doc-lens' lengths, 0 without it. */
int64_t tx_doc_lens_sum(void);
/* The lengths --doc-lens gave (*n of them, 0 without it). */
const int64_t *tx_doc_lens(size_t *n);

typedef struct tx_problem_args {
  int64_t n, n_kv, d, dv, batch, heads, heads_kv, left, right, window; /* TX_UNSET if not given */
  int mask;                                                            /* -1 if not given */
  double scale;                                                        /* NaN if not given */
  const char *dtype; /* --dtype (tx_dtypes_parse); NULL: every tensor f32 */
  tx_modifier_args mods;
} tx_problem_args;

#define TX_UNSET          INT64_MIN
#define TX_PROBLEM_N_OPTS (13 + TX_MODIFIER_N_OPTS)

void tx_problem_args_init(tx_problem_args *a);
/* Writes the TX_PROBLEM_N_OPTS options that fill a into opts. */
void tx_problem_opts(tx_problem_args *a, tx_opt *opts);
/* Checks the combination (e.g. --left needs a window) and resolves the problem. Returns 0, or
   prints a usage error and returns TX_EXIT_USAGE. */
int tx_problem_from_args(const tx_cmd_spec *spec, const tx_problem_args *a, txattn_problem *out);

/* The mask txattn_mask_name spells s: returns 1 with *out, else 0. */
int tx_mask_parse(const char *s, txattn_mask *out);

/* The element types of q, k, v and o, in that order. */
typedef struct tx_dtypes {
  txattn_dtype t[4];
} tx_dtypes;
/* What --dtype takes: "T" (all four), "Q,K,V,O", "q,k,v,o=Q,K,V,O" (the same), or "kv=T" (k and v;
   q and o f32), each type as txattn_dtype_name spells it (f32, f16, bf16). Returns 1 with *out,
   else 0. */
int tx_dtypes_parse(const char *s, tx_dtypes *out);
/* The other way, the shortest of those: "f32", "bf16", "kv=f16", "q,k,v,o=f32,f16,f16,bf16" (as
   the dispatch table's class names end). Returns what snprintf does. */
int tx_dtypes_format(const tx_dtypes *d, char *buf, size_t size);
#define TX_DTYPE_HELP                                                                              \
  "f32, f16 or bf16: T for all, Q,K,V,O, or kv=T; k and v also q8_0, e4m3, e5m2 or q4_0 "          \
  "(kv=q8_0) [f32]"
tx_dtypes tx_dtypes_of(const txattn_problem *p);
void tx_dtypes_apply(const tx_dtypes *d, txattn_problem *p);
int tx_dtypes_all_f32(const tx_dtypes *d);
/* "b=2 h=4/2 n=65 d=64 window(8,inf)": only what differs from the defaults (types too: "...
 * causal kv=f16"). Returns what snprintf does. */
int tx_problem_format(const txattn_problem *p, char *buf, size_t size);
#define TX_SERVING_N_OPTS    5
#define TX_SERVING_MAX_SEQ   4096 /* lengths --kv-lens takes */
#define TX_SERVING_MAX_MERGE 64   /* parts --merge takes (at least 2) */

typedef struct tx_serving_args {
  const char *kv_lens; /* --kv-lens as given; NULL: not ragged */
  const char *q_lens;  /* --q-lens as given; NULL: every sequence n_q rows */
  int lse;
  int64_t merge;     /* --merge P; 0: not given */
  int64_t page_size; /* --page-size P; 0: not paged */
  int packed;
} tx_serving_args;

/* What the options resolve to: n kv lengths (n 0: not ragged), their largest, and lse (asked for
   by --lse, lse_given, or implied by --merge, whose partials need it); merge: the parts, 0 for
   none. */
typedef struct tx_serving {
  int64_t kv_lens[TX_SERVING_MAX_SEQ];
  size_t n;
  int64_t max_kv;
  /* --q-lens: n_q_lens (0: none, else n) query rows per sequence, their largest max_q */
  int64_t q_lens[TX_SERVING_MAX_SEQ];
  size_t n_q_lens;
  int64_t max_q;
  int lse, lse_given;
  int64_t merge;
  int64_t page_size; /* 0: not paged */
  int packed;
} tx_serving;

void tx_serving_args_init(tx_serving_args *a);
/* Writes the TX_SERVING_N_OPTS options that fill a into opts. */
void tx_serving_opts(tx_serving_args *a, tx_opt *opts);
/* The --merge P option (txtune bench only), which fills a->merge. */
tx_opt tx_serving_merge_opt(tx_serving_args *a);
/* Parses --kv-lens strictly (each length as an integer option is parsed, 0 allowed). Returns 0
   with *out, or prints a usage error and returns TX_EXIT_USAGE. */
int tx_serving_from_args(const tx_cmd_spec *spec, const tx_serving_args *a, tx_serving *out);
/* With --kv-lens, the problem options it fixes: --batch must be the number of lengths and --n-kv
   (the capacity per sequence) at least the largest; unset, they become those. With --q-lens (as
   many as --kv-lens), --n (the rows per sequence) at least their largest; unset, it becomes that.
   Returns 0, or prints a usage error and returns TX_EXIT_USAGE. */
int tx_serving_apply_args(const tx_cmd_spec *spec, const tx_serving *s, tx_problem_args *pa);
/* With --merge, what it cannot take: --kv-lens (a part of every sequence's keys starts at a
   different key, which one call cannot offset), a mask other than none (a part of the keys of a
   masked problem is not a problem of its own), fewer keys than parts. Checked on every problem of
   the run. Returns 0, or prints a usage error and returns TX_EXIT_USAGE. */
int tx_serving_merge_check(const tx_cmd_spec *spec, const tx_serving *s,
                           const txattn_problem *probs, size_t n_probs);
/* Sets p->lse and p->ragged, with --page-size the pages (page_size, max_pages = ceil(n_kv / P),
   n_pages = batch * max_pages) and with --packed p->packed (and struct_size, so the library reads
   them). */
void tx_serving_apply(const tx_serving *s, txattn_problem *p);
/* " kv_lens=1024,2048,... lse merge=8" (what the problem line adds; "" when none), at most the
   first 16 lengths then "... (N)". Returns the length written. */
int tx_serving_format(const tx_serving *s, char *buf, size_t size);
#endif
