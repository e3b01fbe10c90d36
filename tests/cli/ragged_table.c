/* SPDX-License-Identifier: MIT */
/* Writes a dispatch table for this machine and the plugins in PLUGIN_DIR with the dense decode
 * class "causal d16/16 g1 t1 decode" (naive.scalar fastest) and, with RAGGED 1, its ragged class
 * "causal d16/16 g1 t1 decode ragged" (tiled.scalar fastest), both measured at n = 256, 1024 and
 * 4096: which of the two a ragged problem follows shows in the kernel picked, for `txtune explain
 * --kv-lens` (explain_ragged.cmake).
 *   ragged_table PLUGIN_DIR OUT RAGGED */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "txattn/table.h"

static int fail(const char *what, txattn_status s) {
  fprintf(stderr, "ragged_table: %s: %s: %s\n", what, txattn_status_name(s), txattn_last_error());
  return 1;
}

/* Candidate kernel with the smallest value of each of its tunables. */
static txattn_status candidate(const txattn_context *ctx, const char *kernel, double time_s,
                               const char **names, int64_t *values, txattn_table_candidate *c) {
  size_t ki = 0, n = txattn_kernel_count(ctx);
  txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
  while (ki < n && !(txattn_kernel_get(ctx, ki, &k) == TXATTN_OK && strcmp(k.name, kernel) == 0))
    ki++;
  if (ki == n) return TXATTN_E_NOT_FOUND;
  size_t nt = txattn_kernel_tunable_count(ctx, ki);
  if (nt > 8) return TXATTN_E_INTERNAL;
  for (size_t i = 0; i < nt; i++) {
    txattn_tunable_info t = TXATTN_TUNABLE_INFO_INIT;
    txattn_status s = txattn_kernel_tunable_get(ctx, ki, i, &t);
    if (s != TXATTN_OK) return s;
    names[i] = t.name;
    values[i] = (t.min + t.multiple_of - 1) / t.multiple_of * t.multiple_of;
  }
  *c = (txattn_table_candidate){kernel, nt, names, values, time_s, 0.0, -1.0};
  return TXATTN_OK;
}

/* A class with points at n = 256, 1024, 4096: first fastest (1 ns a key), then second (2 ns). */
static int add_class(const txattn_context *ctx, txattn_table *t, const txattn_table_class *c,
                     const char *first, const char *second) {
  size_t ci;
  txattn_status s = txattn_table_add_class(t, c, &ci);
  if (s != TXATTN_OK) return fail("class", s);
  for (int64_t n = 256; n <= 4096; n *= 4) {
    const char *names[2][8];
    int64_t values[2][8];
    txattn_table_candidate cands[2] = {0};
    if ((s = candidate(ctx, first, 1e-9 * (double)n, names[0], values[0], &cands[0])) !=
            TXATTN_OK ||
        (s = candidate(ctx, second, 2e-9 * (double)n, names[1], values[1], &cands[1])) != TXATTN_OK)
      return fail(first, s);
    if ((s = txattn_table_add_point(t, ci, n, 0, cands, 2)) != TXATTN_OK) return fail("point", s);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: ragged_table PLUGIN_DIR OUT RAGGED\n");
    return 2;
  }
  txattn_options o = {.plugin_path = argv[1], .table_path = "", .n_threads = 1};
  txattn_context *ctx = NULL;
  txattn_table *t = NULL;
  txattn_status s = txattn_context_create(&o, &ctx);
  if (s != TXATTN_OK) return fail("context", s);
  if ((s = txattn_table_create(ctx, &t)) != TXATTN_OK) return fail("table", s);
  txattn_table_class dense = {.mask = TXATTN_MASK_CAUSAL,
                              .d_qk = 16,
                              .d_v = 16,
                              .group = 1,
                              .threads = 1,
                              .decode = 1,
                              .batch = 1,
                              .heads_q = 1},
                     ragged = dense;
  ragged.ragged = 1;
  ragged.batch = 8;
  int rc = add_class(ctx, t, &dense, "naive.scalar", "tiled.scalar");
  if (!rc && strcmp(argv[3], "1") == 0)
    rc = add_class(ctx, t, &ragged, "tiled.scalar", "naive.scalar");
  if (!rc && (s = txattn_table_write(t, argv[2])) != TXATTN_OK) rc = fail("write", s);
  txattn_table_free(t);
  txattn_context_free(ctx);
  return rc;
}
