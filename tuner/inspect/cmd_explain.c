/* SPDX-License-Identifier: MIT */
/* txtune explain: which kernel the dispatcher picks for one shape and why (a region of the dispatch
   table, an interpolation between measured points, or the built-in estimate and why the table had
   no entry), with the runner-up and margin and the measurements the choice rests on. It asks the
   library itself (txattn_plan_create), so the answer is the dispatcher's, not a re-enactment. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd_explain.h"
#include "context_cli.h"
#include "problem_cli.h"
#include "text_table.h"
#include "txattn/table.h"

typedef struct explain_run {
  tx_problem_args prob;
  tx_context_args ctx_args;
  tx_serving_args serving_args;
  tx_serving serving; /* --kv-lens and --lse, resolved */
  const char *table;
  tx_opt prob_opts[TX_PROBLEM_N_OPTS], serving_opts[TX_SERVING_N_OPTS], table_opts[1],
      ctx_opts[TX_CONTEXT_N_OPTS];
  tx_opt_group groups[4];
  tx_cmd_spec spec;
  txattn_problem p;
  txattn_context *ctx;
} explain_run;

static const char about[] =
    "Shows which kernel libtxattn runs for one shape on this machine and why: the region of the\n"
    "dispatch table it falls in, the measured points it is interpolated between, or the built-in\n"
    "estimate and why the table has no entry for it; with the runner-up, the margin and the\n"
    "measurements around the shape. TXATTN_FORCE_KERNEL, if set, wins as it does in programs.\n"
    "The estimate ranks a third-party kernel (one that did not come with libtxattn) after the\n"
    "shipped ones unless the table measured it the winner around the shape (in its class,\n"
    "within the n of the points it won), whatever speed it claims; the reason names it.\n"
    "With --kv-lens (as txtune bench and check take it) the shape is a ragged batch, one sequence\n"
    "per length: it follows the table's ragged class of its capacity n_kv (the longest length\n"
    "unless --n-kv says more), else the dense class, as if every sequence were padded to n_kv.";

static int parse(explain_run *r, int argc, char **argv) {
  tx_problem_args_init(&r->prob);
  tx_problem_opts(&r->prob, r->prob_opts);
  tx_serving_args_init(&r->serving_args);
  tx_serving_opts(&r->serving_args, r->serving_opts);
  r->serving_opts[0].help = "a ragged batch, a sequence per length (0 allowed): sets --batch, and "
                            "--n-kv to the longest unless given";
  r->serving_opts[1].help = "the call also writes the log-sum-exp (only kernels that can)";
  r->table_opts[0] = tx_opt_string("table", &r->table, "FILE",
                                   "the dispatch table [$TXATTN_TABLE, else the default]");
  tx_context_args_init(&r->ctx_args);
  tx_context_opts(&r->ctx_args, r->ctx_opts);
  r->groups[0] = (tx_opt_group){"Problem", r->prob_opts, TX_PROBLEM_N_OPTS};
  r->groups[1] = (tx_opt_group){"Serving calls", r->serving_opts, TX_SERVING_N_OPTS};
  r->groups[2] = (tx_opt_group){"Table", r->table_opts, 1};
  r->groups[3] = (tx_opt_group){"Library", r->ctx_opts, TX_CONTEXT_N_OPTS};
  r->spec = (tx_cmd_spec){"explain",
                          "--n N --d D [--mask none|causal|window --left L --right R] "
                          "[--kv-lens L1,L2,...] [options]",
                          about, r->groups, 4};
  int rc = tx_args_parse_cmd(&r->spec, argc, argv);
  if (rc >= 0) return rc;
  if ((rc = tx_serving_from_args(&r->spec, &r->serving_args, &r->serving)) != 0 ||
      (rc = tx_serving_apply_args(&r->spec, &r->serving, &r->prob)) != 0 ||
      (rc = tx_problem_from_args(&r->spec, &r->prob, &r->p)) != 0)
    return rc;
  tx_serving_apply(&r->serving, &r->p);
  return -1;
}

/* lo/hi: the measured values nearest below and above x among the class's points (field r or n);
   0 when x is outside them. */
static int around(const txattn_table *t, size_t ci, size_t n_points, int use_r, int64_t x,
                  int64_t *lo, int64_t *hi) {
  *lo = INT64_MIN;
  *hi = INT64_MAX;
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(t, ci, i, &p) != TXATTN_OK) continue;
    int64_t v = use_r ? p.r : p.n;
    if (v <= x && v > *lo) *lo = v;
    if (v >= x && v < *hi) *hi = v;
  }
  return *lo != INT64_MIN && *hi != INT64_MAX;
}

static void print_point(const txattn_table *t, size_t ci, size_t i) {
  txattn_table_point p = TXATTN_TABLE_POINT_INIT;
  if (txattn_table_point_get(t, ci, i, &p) != TXATTN_OK) return;
  printf("  n=%lld", (long long)p.n);
  if (p.r) printf(" r=%lld", (long long)p.r);
  printf(":");
  double first = 0;
  for (size_t k = 0; k < p.n_candidates && k < 6; k++) {
    txattn_table_candidate c = TXATTN_TABLE_CANDIDATE_INIT;
    char tm[32];
    if (txattn_table_candidate_get(t, ci, i, k, &c) != TXATTN_OK) continue;
    if (k == 0) first = c.time_s;
    tx_fmt_time(c.time_s, tm, sizeof tm);
    printf("%s %s %s", k ? "," : "", c.kernel, tm);
    if (k) printf(" (%.2fx)", c.time_s / first);
  }
  if (p.n_candidates > 6) printf(", ... (%zu candidates)", p.n_candidates);
  printf("\n");
}

/* The measured points the table's answer rests on, when the loaded table has the shape's class. */
static void print_measured(const explain_run *r) {
  const txattn_table *t = txattn_context_table(r->ctx);
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  int64_t n, rr, n_lo, n_hi, r_lo = 0, r_hi = 0;
  size_t ci, n_points;
  char d[96];
  if (t == NULL) return;
  if (txattn_table_class_of(&r->p, txattn_context_threads(r->ctx), &c, &n, &rr) != TXATTN_OK) {
    printf("class: none: %s\n", txattn_last_error());
    return;
  }
  txattn_table_class_describe(&c, d, sizeof d);
  const char *padded = "";
  if (c.ragged && txattn_table_find_class(t, &c, &ci) != TXATTN_OK) {
    /* as the dispatcher does: a ragged problem without a ragged class follows the dense class */
    printf("class: %s, which the table does not have\n", d);
    c.ragged = 0;
    txattn_table_class_describe(&c, d, sizeof d);
    padded = ", as if padded";
  }
  if (txattn_table_find_class(t, &c, &ci) != TXATTN_OK) {
    printf("class: %s, which the table does not have\n", d);
    return;
  }
  txattn_table_class_get(t, ci, &c, &n_points, NULL);
  printf("class: %s%s, at n=%lld", d, padded, (long long)n);
  if (c.mask == TXATTN_MASK_WINDOW) printf(" r=%lld", (long long)rr);
  printf("\n");
  if (!around(t, ci, n_points, 0, n, &n_lo, &n_hi) ||
      (c.mask == TXATTN_MASK_WINDOW && !around(t, ci, n_points, 1, rr, &r_lo, &r_hi))) {
    printf("measured: nothing on both sides of this shape\n");
    return;
  }
  printf("measured around it (fastest first):\n");
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(t, ci, i, &p) != TXATTN_OK) continue;
    if ((p.n == n_lo || p.n == n_hi) && (p.r == r_lo || p.r == r_hi)) print_point(t, ci, i);
  }
}

static int run(explain_run *r) {
  txattn_plan *plan;
  char shape[256], serving[256], line[512];
  tx_problem_format(&r->p, shape, sizeof shape);
  tx_serving_format(&r->serving, serving, sizeof serving);
  int threads = txattn_context_threads(r->ctx);
  printf("problem: %s%s, %d thread%s\n", shape, serving, threads, threads == 1 ? "" : "s");
  printf("table: %s\n", txattn_context_table_state(r->ctx));
  txattn_status s = txattn_plan_create(r->ctx, &r->p, NULL, &plan);
  if (s != TXATTN_OK) {
    tx_print_lib_error("explain", "no kernel for this problem", s);
    return TX_EXIT_FAIL;
  }
  txattn_plan_describe(plan, line, sizeof line);
  printf("choice: %s\nwhy: %s\n", line, txattn_plan_why(plan));
  txattn_plan_free(plan);
  print_measured(r);
  return TX_EXIT_OK;
}

int tx_cmd_explain(int argc, char **argv) {
  explain_run r;
  memset(&r, 0, sizeof r);
  int rc = parse(&r, argc, argv);
  if (rc >= 0) return rc;
  txattn_options opts = {.plugin_path = r.ctx_args.plugin_path,
                         .table_path = r.table,
                         .n_threads = (int)r.ctx_args.threads};
  txattn_status s = txattn_context_create(&opts, &r.ctx);
  if (s != TXATTN_OK) {
    tx_print_lib_error("explain", "cannot create the library context", s);
    return TX_EXIT_FAIL;
  }
  rc = run(&r);
  txattn_context_free(r.ctx);
  return rc;
}
