/* SPDX-License-Identifier: MIT */
/* The serving options of txtune bench and check (issue 20): --kv-lens L1,L2,... (a ragged batch,
   one sequence per length) and --lse (the call also writes the log-sum-exp of each row); bench
   also takes --merge P (the keys split into P parts, each a call with lse, merged by
   txattn_merge). --page-size P puts K and V in pages of P keys in a shuffled pool read through a
   block table, and --packed stores q, o and lse without padding (q_offsets). */
#ifndef TXTUNE_SERVING_CLI_H
#define TXTUNE_SERVING_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "problem_cli.h"
#include "txattn/txattn.h"

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
