/* SPDX-License-Identifier: MIT */
/* An application of libtxattn, as a program that trusts a dispatch table would be: txattn_attention
 * through the table TABLE with the plugins on PLUGIN_PATH, one thread, on shapes inside the table's
 * classes and outside them, CALLS calls per shape, each on new inputs with the output poisoned
 * (NaN) before it, each compared with txattn_reference within txattn_error_bound. A kernel the
 * table crowned that is exact only on its first calls fails here.
 *   exact_app PLUGIN_PATH TABLE
 * Exit status 0 if every call was exact; 1 (saying the shape, the call and the kernel) if not. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "txattn/table.h"
#include "txattn/txattn.h"

#define CALLS 8

static uint64_t state = 0x6170705f65786163;

static float uniform(void) { /* in [-1, 1) */
  state = state * 6364136223846793005u + 1442695040888963407u;
  return (float)((double)(state >> 11) * 0x1p-52 - 1.0);
}

static void fill(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = uniform();
}

/* CALLS calls of p; returns 0 if each was exact. */
static int run_shape(txattn_context *ctx, const char *name, const txattn_problem *given) {
  txattn_problem p = TXATTN_PROBLEM_INIT;
  txattn_plan *plan = NULL;
  if (txattn_problem_resolve(given, &p) != TXATTN_OK ||
      txattn_plan_create(ctx, &p, NULL, &plan) != TXATTN_OK) {
    fprintf(stderr, "exact_app: %s: %s\n", name, txattn_last_error());
    return 1;
  }
  printf("%s: %s (%s)\n", name, txattn_plan_kernel(plan), txattn_plan_why(plan));
  size_t nq = (size_t)(p.batch * p.heads_q * p.n_q), nkv = (size_t)(p.batch * p.heads_kv * p.n_kv);
  float *q = malloc(nq * (size_t)p.d_qk * sizeof *q), *k = malloc(nkv * (size_t)p.d_qk * sizeof *k);
  float *v = malloc(nkv * (size_t)p.d_v * sizeof *v), *o = malloc(nq * (size_t)p.d_v * sizeof *o);
  float *ref = malloc(nq * (size_t)p.d_v * sizeof *ref);
  int bad = !q || !k || !v || !o || !ref;
  for (int call = 0; call < CALLS && !bad; call++) {
    fill(q, nq * (size_t)p.d_qk);
    fill(k, nkv * (size_t)p.d_qk);
    fill(v, nkv * (size_t)p.d_v);
    for (size_t i = 0; i < nq * (size_t)p.d_v; i++) o[i] = NAN;
    txattn_tensors t = {.q = q, .k = k, .v = v, .o = o}, tr = {.q = q, .k = k, .v = v, .o = ref};
    double bound = 0, err = 0;
    txattn_status s = txattn_attention(ctx, &p, &t);
    if (s == TXATTN_OK) s = txattn_reference(&p, &tr);
    if (s == TXATTN_OK) s = txattn_error_bound(&p, &t, &bound);
    if (s != TXATTN_OK) {
      fprintf(stderr, "exact_app: %s, call %d: %s: %s\n", name, call + 1, txattn_status_name(s),
              txattn_last_error());
      bad = 1;
      break;
    }
    for (size_t i = 0; i < nq * (size_t)p.d_v && !isnan(err); i++) {
      double d = fabs((double)o[i] - (double)ref[i]);
      if (!(d <= err)) err = d; /* a NaN too, which ends the loop */
    }
    if (!(err <= bound)) {
      fprintf(stderr, "exact_app: %s, call %d: %s is not exact: error %g above the bound %g\n",
              name, call + 1, txattn_plan_kernel(plan), err, bound);
      bad = 1;
    }
  }
  free(q);
  free(k);
  free(v);
  free(o);
  free(ref);
  txattn_plan_free(plan);
  return bad;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: exact_app PLUGIN_PATH TABLE\n");
    return 2;
  }
  txattn_options o = {.plugin_path = argv[1], .table_path = argv[2], .n_threads = 1};
  txattn_context *ctx = NULL;
  if (txattn_context_create(&o, &ctx) != TXATTN_OK) {
    fprintf(stderr, "exact_app: %s\n", txattn_last_error());
    return 1;
  }
  if (txattn_context_table_status(ctx) != TXATTN_TABLE_LOADED) {
    fprintf(stderr, "exact_app: the table is not followed: %s\n", txattn_context_table_state(ctx));
    txattn_context_free(ctx);
    return 1;
  }
  static const struct {
    const char *name;
    txattn_problem p;
  } shapes[] = {
      {"in the table: none d16 n=100", {.n_q = 100, .d_qk = 16}},
      {"in the table: causal d16 n=200", {.n_q = 200, .d_qk = 16, .mask = TXATTN_MASK_CAUSAL}},
      {"in the table: causal decode d16 n_kv=300",
       {.n_q = 1, .n_kv = 300, .d_qk = 16, .mask = TXATTN_MASK_CAUSAL}},
      {"outside the table: none d32 n=64", {.n_q = 64, .d_qk = 32}},
      {"outside the table: none d16 n=2000", {.n_q = 2000, .d_qk = 16}},
      {"outside the table: none d16 n_q=50 n_kv=70", {.n_q = 50, .n_kv = 70, .d_qk = 16}},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    bad |= run_shape(ctx, shapes[i].name, &shapes[i].p);
  txattn_context_free(ctx);
  return bad;
}
