/* SPDX-License-Identifier: MIT */
#include "check_plans.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem_cli.h"

#define NONE   TXATTN_MASK_NONE
#define CAUSAL TXATTN_MASK_CAUSAL
#define WINDOW TXATTN_MASK_WINDOW

typedef struct plan_shape {
  txattn_problem p;
  int quick; /* part of `txtune check --quick` */
} plan_shape;

/* n x d x {none, causal, a centred window of 300 keys}, then what the grid leaves out: d_v !=
   d_qk, GQA 32/8, decoding against a long KV cache and Mistral's one-sided window. The quick ones
   cover each n, each d and each kind once. */
#define GRID(n, d, qn, qc, qw)                                                                     \
  {{.n_q = n, .d_qk = d}, qn}, {{.n_q = n, .d_qk = d, .mask = CAUSAL}, qc}, {                      \
    {.n_q = n, .d_qk = d, .mask = WINDOW, .window_left = 150, .window_right = 150}, qw             \
  }
static const plan_shape shapes[] = {
    GRID(4096, 64, 1, 1, 1),
    GRID(4096, 128, 1, 1, 0),
    GRID(4096, 256, 1, 1, 0),
    GRID(16384, 64, 0, 0, 0),
    GRID(16384, 128, 0, 1, 1),
    GRID(16384, 256, 0, 0, 0),
    GRID(65536, 64, 0, 1, 0),
    GRID(65536, 128, 0, 0, 0),
    GRID(65536, 256, 0, 0, 1),
    {{.n_q = 4096, .d_qk = 128, .d_v = 64, .mask = CAUSAL}, 1},
    {{.n_q = 16384, .d_qk = 64, .d_v = 256}, 0},
    {{.heads_q = 32, .heads_kv = 8, .n_q = 4096, .d_qk = 128, .mask = CAUSAL}, 1},
    {{.heads_q = 32, .heads_kv = 8, .n_q = 16384, .d_qk = 128, .mask = CAUSAL}, 0},
    {{.heads_q = 32, .heads_kv = 8, .n_q = 65536, .d_qk = 64, .mask = CAUSAL}, 0},
    {{.heads_q = 32, .heads_kv = 8, .n_q = 1, .n_kv = 4096, .d_qk = 128, .mask = CAUSAL}, 0},
    {{.heads_q = 32, .heads_kv = 8, .n_q = 1, .n_kv = 65536, .d_qk = 128, .mask = CAUSAL}, 1},
    {{.n_q = 16384, .d_qk = 128, .mask = WINDOW, .window_left = 299, .window_right = 0}, 0},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static txattn_problem typed_shape(const tx_plan_pass *pp, size_t shape) {
  txattn_problem p = shapes[shape].p;
  tx_dtypes_apply(&pp->types, &p);
  return p;
}

/* "n=4096 d=64 causal" (and the pass's types, when not f32) */
static void tx_plan_shape_format(const tx_plan_pass *pp, size_t shape, char *buf, size_t size) {
  txattn_problem p = typed_shape(pp, shape);
  tx_problem_format(&p, buf, size);
}

static void fail(tx_plan_stat *st, size_t shape, txattn_status s) {
  if (st->failed++ == 0) {
    st->first_shape = shape;
    snprintf(st->first, sizeof st->first, "%s: %s", txattn_status_name(s), txattn_last_error());
  }
}

static void say(const tx_plan_pass *pp, int verbose, const char *who, size_t shape,
                const tx_plan_stat *st) {
  char label[160];
  if (!verbose) return;
  tx_plan_shape_format(pp, shape, label, sizeof label);
  printf("  %-20s  plan %-40s  FAIL: %s\n", who, label, st->first);
}

static int skipped(const tx_plan_pass *pp, const tx_kernel_sel *sel, size_t k) {
  return !sel[k].info.usable || (pp->skip && pp->skip[k]);
}

int tx_plan_pass_run(txattn_context *ctx, const tx_kernel_sel *sel, size_t n_sel,
                     const tx_dtypes *types, const unsigned char *skip, int quick, int verbose,
                     tx_plan_pass *out) {
  memset(out, 0, sizeof *out);
  out->quick = quick;
  out->types = *types;
  out->skip = skip;
  out->stats = calloc(n_sel ? n_sel : 1, sizeof *out->stats);
  if (!out->stats) return -1;
  for (size_t i = 0; i < N_SHAPES; i++) {
    if (quick && !shapes[i].quick) continue;
    out->n_shapes++;
    txattn_plan *plan = NULL;
    txattn_problem p = typed_shape(out, i);
    for (size_t k = 0; k < n_sel; k++) {
      if (skipped(out, sel, k)) continue;
      tx_plan_stat *st = &out->stats[k];
      txattn_status s = txattn_plan_create(ctx, &p, sel[k].info.name, &plan);
      txattn_plan_free(plan);
      plan = NULL;
      if (s == TXATTN_OK) {
        st->planned++;
      } else if (s == TXATTN_E_UNSUPPORTED) {
        st->declined++;
      } else {
        int64_t before = st->failed;
        fail(st, i, s);
        if (before == 0) say(out, verbose, sel[k].info.name, i, st);
      }
    }
    txattn_status s = txattn_plan_create(ctx, &p, NULL, &plan);
    txattn_plan_free(plan);
    if (s == TXATTN_OK) {
      out->dispatcher.planned++;
    } else {
      int64_t before = out->dispatcher.failed;
      fail(&out->dispatcher, i, s);
      if (before == 0) say(out, verbose, "(the dispatcher)", i, &out->dispatcher);
    }
  }
  return 0;
}

void tx_plan_pass_free(tx_plan_pass *pp) {
  free(pp->stats);
  pp->stats = NULL;
}

int tx_plan_pass_failed(const tx_plan_pass *pp, size_t k) {
  if (k == SIZE_MAX) return pp->dispatcher.failed > 0;
  return pp->stats && pp->stats[k].failed > 0;
}

static void row(const tx_plan_pass *pp, tx_table *t, const char *name, const tx_plan_stat *st,
                int dispatcher) {
  char planned[24], declined[24], failed[24], label[160];
  snprintf(planned, sizeof planned, "%lld", (long long)st->planned);
  snprintf(declined, sizeof declined, "%lld", (long long)st->declined);
  snprintf(failed, sizeof failed, "%lld", (long long)st->failed);
  const char *cells[] = {name, planned, dispatcher ? NULL : declined, failed,
                         st->failed ? "FAIL" : "PASS"};
  tx_table_add(t, cells);
  if (st->failed) {
    tx_plan_shape_format(pp, st->first_shape, label, sizeof label);
    tx_table_note(t, "%lld failed; first: %s: %s", (long long)st->failed, label, st->first);
  }
}

void tx_plan_pass_print(const tx_plan_pass *pp, const tx_kernel_sel *sel, size_t n_sel) {
  printf("\nplanning on %zu large shape%s (n 4096..65536, d up to 256, GQA 32/8, decode; plans "
         "only, nothing runs):\n",
         pp->n_shapes, pp->n_shapes == 1 ? "" : "s");
  tx_table t;
  tx_table_init(&t, "KERNEL|>PLANNED|>DECLINED|>FAILED|RESULT");
  for (size_t k = 0; k < n_sel; k++)
    if (!skipped(pp, sel, k)) row(pp, &t, sel[k].info.name, &pp->stats[k], 0);
  row(pp, &t, "(the dispatcher)", &pp->dispatcher, 1);
  tx_table_print(&t, stdout, "");
  tx_table_free(&t);
}

static void json_stat(const tx_plan_pass *pp, tx_json *j, const tx_plan_stat *st) {
  char label[160];
  tx_json_kv_int(j, "planned", st->planned);
  tx_json_kv_int(j, "declined", st->declined);
  tx_json_kv_int(j, "failed", st->failed);
  if (st->failed) tx_plan_shape_format(pp, st->first_shape, label, sizeof label);
  tx_json_kv_string(j, "first_failure_shape", st->failed ? label : NULL);
  tx_json_kv_string(j, "first_failure", st->failed ? st->first : NULL);
}

void tx_plan_pass_json_kernel(tx_json *j, const tx_plan_pass *pp, size_t k) {
  tx_json_key(j, "planning");
  tx_json_begin_object(j);
  json_stat(pp, j, &pp->stats[k]);
  tx_json_end_object(j);
}

void tx_plan_pass_json(tx_json *j, const tx_plan_pass *pp) {
  tx_json_key(j, "planning");
  tx_json_begin_object(j);
  tx_json_kv_int(j, "shapes", (int64_t)pp->n_shapes);
  tx_json_key(j, "dispatcher");
  tx_json_begin_object(j);
  json_stat(pp, j, &pp->dispatcher);
  tx_json_end_object(j);
  tx_json_end_object(j);
}
