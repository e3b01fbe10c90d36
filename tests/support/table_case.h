/* SPDX-License-Identifier: MIT */
/* Dispatch tables as the table tests build them: contexts with a table, candidates with tunables
 * the named kernel really declares, and two synthetic classes whose winners change with n (and r),
 * so lookups inside regions, between points and outside them all have something to find. The times
 * are made up on purpose: the tests check that the dispatcher follows the table, whatever it says. */
#ifndef TXATTN_TEST_TABLE_CASE_H
#define TXATTN_TEST_TABLE_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "scratch.h"
#include "txattn/table.h"

#define TC_ASSERT_OK(expr)                                                                         \
  do {                                                                                             \
    txattn_status tc_s_ = (expr);                                                                  \
    cr_assert_eq(tc_s_, TXATTN_OK, "%s: %s: %s", #expr, txattn_status_name(tc_s_),                 \
                 txattn_last_error());                                                             \
  } while (0)

/* A context over plugin_path (NULL: the build tree's plugins) following the table at table_path
   ("" for none); asserts that creation succeeds, whatever state the table is in. */
txattn_context *tc_context(const char *plugin_path, const char *table_path, int threads);

/* A candidate spec: kernel, time, and which valid tunable values it uses (0, 1, ...). */
typedef struct tc_cand {
  const char *kernel;
  double time_s;
  int variant;
} tc_cand;

/* Adds a point whose candidates carry valid tunables of their kernels in ctx (kernels ctx lacks get
   none). Asserts success. */
void tc_add_point(const txattn_context *ctx, txattn_table *t, size_t cls, int64_t n, int64_t r,
                  const tc_cand *c, size_t k);
/* The variant-th valid value of each tunable the kernel declares in ctx; returns how many. */
size_t tc_tunables(const txattn_context *ctx, const char *kernel, int variant, const char **names,
                   int64_t *values);

/* The causal class (d 16, 1 query head, ctx's threads) measured at n = 64, 256, 1024, 4096:
   naive.scalar wins up to 256, masked.scalar from 1024; tiled.scalar is always third. */
#define TC_D 16
extern const int64_t tc_causal_ns[4];
size_t tc_add_causal(const txattn_context *ctx, txattn_table *t);
/* The window-sym class (d 16, ctx's threads) at n = 256, 1024, 4096 and r = 16, 64, 256:
   banded.scalar wins for n * r below about 1e4, tiled.scalar above. */
extern const int64_t tc_window_ns[3], tc_window_rs[3];
size_t tc_add_window(const txattn_context *ctx, txattn_table *t);
/* The key of a paged q8_0 decode class: causal, d 32, group 4 (8 query heads), 1 thread, pages of
   16 keys; paged 0 gives the contiguous class of the same types. */
txattn_table_class tc_q8_0_decode_class(int paged);

/* The kernel a context picks for p (kernel NULL) and why; asserts that planning succeeds. */
void tc_pick(txattn_context *ctx, const txattn_problem *p, char *kernel, size_t ksize, char *why,
             size_t wsize);
/* What the dispatch table's rule picks at (n, r) in class cls of t: the smallest time interpolated
   in (log n, log r) from each kernel's fastest entry at the surrounding measured points, among the
   kernels that win one of those points if any of them was measured at all of them, else among the
   others. Written from the rule in docs/dispatch_table.md, not from the library's code. "" if
   none. */
void tc_expected(const txattn_table *t, size_t cls, int64_t n, int64_t r, char *kernel,
                 size_t size);

/* Whole file <-> memory, for corrupting tables. */
char *tc_read_file(const char *path, size_t *len);
void tc_write_file(const char *path, const char *data, size_t len);

#endif
