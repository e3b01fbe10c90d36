/* The serving options of txtune bench and check (issue 20): --kv-lens L1,L2,... (a ragged batch,
   one sequence per length) and --lse (the call also writes the log-sum-exp of each row). */
#ifndef TXTUNE_SERVING_CLI_H
#define TXTUNE_SERVING_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "problem_cli.h"
#include "txattn/txattn.h"

#define TX_SERVING_N_OPTS  2
#define TX_SERVING_MAX_SEQ 4096 /* lengths --kv-lens takes */

typedef struct tx_serving_args {
  const char *kv_lens; /* --kv-lens as given; NULL: not ragged */
  int lse;
} tx_serving_args;

/* What the options resolve to: n kv lengths (n 0: not ragged), their largest, and lse. */
typedef struct tx_serving {
  int64_t kv_lens[TX_SERVING_MAX_SEQ];
  size_t n;
  int64_t max_kv;
  int lse;
} tx_serving;

void tx_serving_args_init(tx_serving_args *a);
/* Writes the TX_SERVING_N_OPTS options that fill a into opts. */
void tx_serving_opts(tx_serving_args *a, tx_opt *opts);
/* Parses --kv-lens strictly (each length as an integer option is parsed, 0 allowed). Returns 0
   with *out, or prints a usage error and returns TX_EXIT_USAGE. */
int tx_serving_from_args(const tx_cmd_spec *spec, const tx_serving_args *a, tx_serving *out);
/* With --kv-lens, the problem options it fixes: --batch must be the number of lengths and --n-kv
   (the capacity per sequence) at least the largest; unset, they become those. Returns 0, or prints
   a usage error and returns TX_EXIT_USAGE. */
int tx_serving_apply_args(const tx_cmd_spec *spec, const tx_serving *s, tx_problem_args *pa);
/* Sets p->lse and p->ragged (and struct_size, so the library reads them). */
void tx_serving_apply(const tx_serving *s, txattn_problem *p);
/* " kv_lens=1024,2048,... lse" (what the problem line adds; "" when neither), at most the first
   16 lengths then "... (N)". Returns what snprintf does. */
int tx_serving_format(const tx_serving *s, char *buf, size_t size);

#endif
