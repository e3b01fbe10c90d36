/* SPDX-License-Identifier: MIT */
/* txtune check's planning pass: every usable kernel (and the dispatcher) asked for a plan on large
   shapes the exactness battery cannot afford to run (n 4096..65536, d up to 256, GQA, decode).
   Planning is what fails when a kernel's cache-derived defaults break its own declaration on a
   machine with other caches; it takes microseconds, so every shape is cheap. */
#ifndef TXTUNE_CHECK_PLANS_H
#define TXTUNE_CHECK_PLANS_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "kernels.h"
#include "problem_cli.h"
#include "text_table.h"

typedef struct tx_plan_stat { /* one kernel (or the dispatcher) over the planning shapes */
  int64_t planned, declined, failed;
  size_t first_shape; /* of the first failure */
  char first[400];    /* "TXATTN_E_PLUGIN: <message>" */
} tx_plan_stat;

typedef struct tx_plan_pass {
  int quick;
  tx_dtypes types;           /* the element types every shape is planned in */
  const unsigned char *skip; /* kernels left out (they decline the types), NULL: none */
  size_t n_shapes;           /* planned (the --quick subset, or all) */
  tx_plan_stat *stats;       /* one per selected kernel (unusable ones stay zero) */
  tx_plan_stat dispatcher;
} tx_plan_pass;

/* Plans each usable kernel of sel (but those skip[k] marks, if skip is not NULL; it must outlive
   out), and the dispatcher (kernel NULL), on every shape (with quick, the quick ones) in the
   element types `types`. A kernel passes a shape when it plans or declines it
   (TXATTN_E_UNSUPPORTED); the dispatcher must plan. With verbose, one line per failure on stdout.
   Returns 0, or -1 when out of memory. */
int tx_plan_pass_run(txattn_context *ctx, const tx_kernel_sel *sel, size_t n_sel,
                     const tx_dtypes *types, const unsigned char *skip, int quick, int verbose,
                     tx_plan_pass *out);
void tx_plan_pass_free(tx_plan_pass *pp);
/* Whether kernel k (or, k == SIZE_MAX, the dispatcher) failed a shape. */
int tx_plan_pass_failed(const tx_plan_pass *pp, size_t k);
/* The planning table and its failures (text). */
void tx_plan_pass_print(const tx_plan_pass *pp, const tx_kernel_sel *sel, size_t n_sel);
/* The pass's fields of kernel k's JSON object (inside it), and the pass as the top-level
   "planning" object. */
void tx_plan_pass_json_kernel(tx_json *j, const tx_plan_pass *pp, size_t k);
void tx_plan_pass_json(tx_json *j, const tx_plan_pass *pp);

#endif
