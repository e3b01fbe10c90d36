/* SPDX-License-Identifier: MIT */
/* Writes a dispatch table for this machine and the plugins in PLUGIN_DIR that makes the
 * dispatcher pick spin.scalar with spin_us = SPIN_US in the class "none d16/16 g1 t1" (points at
 * n = 8 and 32): a table whose picks are provably slow, for `txtune validate --fail-above`.
 *   spin_table PLUGIN_DIR OUT SPIN_US */
#include <stdio.h>
#include <stdlib.h>

#include "txattn/table.h"

static int fail(const char *what, txattn_status s) {
  fprintf(stderr, "spin_table: %s: %s: %s\n", what, txattn_status_name(s), txattn_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: spin_table PLUGIN_DIR OUT SPIN_US\n");
    return 2;
  }
  txattn_options o = {.plugin_path = argv[1], .table_path = "", .n_threads = 1};
  txattn_context *ctx = NULL;
  txattn_table *t = NULL;
  txattn_status s = txattn_context_create(&o, &ctx);
  if (s != TXATTN_OK) return fail("context", s);
  if ((s = txattn_table_create(ctx, &t)) != TXATTN_OK) return fail("table", s);
  txattn_table_class c = {.mask = TXATTN_MASK_NONE,
                          .d_qk = 16,
                          .d_v = 16,
                          .group = 1,
                          .threads = 1,
                          .batch = 1,
                          .heads_q = 1};
  size_t ci;
  const char *names[] = {"spin_us"};
  const int64_t values[] = {strtoll(argv[3], NULL, 10)};
  txattn_table_candidate cand = {"spin.scalar", 1, names, values, values[0] * 1e-6, 0.0, -1.0};
  if ((s = txattn_table_add_class(t, &c, &ci)) != TXATTN_OK) return fail("class", s);
  for (int64_t n = 8; n <= 32; n *= 4)
    if ((s = txattn_table_add_point(t, ci, n, 0, &cand, 1)) != TXATTN_OK) return fail("point", s);
  if ((s = txattn_table_write(t, argv[2])) != TXATTN_OK) return fail("write", s);
  txattn_table_free(t);
  txattn_context_free(ctx);
  return 0;
}
