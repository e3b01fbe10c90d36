/* SPDX-License-Identifier: MIT */
#include "table_case.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

txattn_context *tc_context(const char *plugin_path, const char *table_path, int threads) {
  txattn_options o = {.plugin_path = plugin_path, .table_path = table_path, .n_threads = threads};
  txattn_context *ctx = NULL;
  txattn_status s = txattn_context_create(&o, &ctx);
  cr_assert_eq(s, TXATTN_OK, "txattn_context_create(table %s): %s: %s", table_path,
               txattn_status_name(s), txattn_last_error());
  return ctx;
}

static int kernel_index(const txattn_context *ctx, const char *kernel, size_t *index) {
  for (size_t i = 0; i < txattn_kernel_count(ctx); i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, i, &k) == TXATTN_OK && strcmp(k.name, kernel) == 0) {
      *index = i;
      return 1;
    }
  }
  return 0;
}

size_t tc_tunables(const txattn_context *ctx, const char *kernel, int variant, const char **names,
                   int64_t *values) {
  size_t ki, n;
  if (!kernel_index(ctx, kernel, &ki)) return 0;
  n = txattn_kernel_tunable_count(ctx, ki);
  for (size_t i = 0; i < n; i++) {
    txattn_tunable_info t = TXATTN_TUNABLE_INFO_INIT;
    TC_ASSERT_OK(txattn_kernel_tunable_get(ctx, ki, i, &t));
    int64_t v = (t.min + t.multiple_of - 1) / t.multiple_of * t.multiple_of;
    for (int k = 0; k < variant && v + t.multiple_of <= t.max; k++) v += t.multiple_of;
    names[i] = t.name;
    values[i] = v;
  }
  return n;
}

void tc_add_point(const txattn_context *ctx, txattn_table *t, size_t cls, int64_t n, int64_t r,
                  const tc_cand *c, size_t k) {
  txattn_table_candidate cands[16] = {0};
  const char *names[16][8];
  int64_t values[16][8];
  cr_assert(k <= 16);
  for (size_t i = 0; i < k; i++) {
    size_t nt = tc_tunables(ctx, c[i].kernel, c[i].variant, names[i], values[i]);
    cands[i] =
        (txattn_table_candidate){c[i].kernel, nt, names[i], values[i], c[i].time_s, 1e-7, -1};
  }
  TC_ASSERT_OK(txattn_table_add_point(t, cls, n, r, cands, k));
}

const int64_t tc_causal_ns[4] = {64, 256, 1024, 4096};
const int64_t tc_window_ns[3] = {256, 1024, 4096}, tc_window_rs[3] = {16, 64, 256};

size_t tc_add_causal(const txattn_context *ctx, txattn_table *t) {
  txattn_table_class c = {.mask = TXATTN_MASK_CAUSAL,
                          .window = TXATTN_TABLE_WINDOW_NONE,
                          .d_qk = TC_D,
                          .d_v = TC_D,
                          .group = 1,
                          .threads = txattn_context_threads(ctx),
                          .decode = 0,
                          .batch = 1,
                          .heads_q = 1};
  size_t ci;
  TC_ASSERT_OK(txattn_table_add_class(t, &c, &ci));
  for (int i = 0; i < 4; i++) {
    double n = (double)tc_causal_ns[i];
    tc_cand cands[] = {{"naive.scalar", 1e-9 * n * n, 0},
                       {"masked.scalar", 2e-4 + 2.5e-10 * n * n, 1},
                       {"tiled.scalar", 3e-4 + 4e-10 * n * n, 1}};
    tc_add_point(ctx, t, ci, tc_causal_ns[i], 0, cands, 3);
  }
  return ci;
}

txattn_table_class tc_q8_0_decode_class(int paged) {
  return (txattn_table_class){.mask = TXATTN_MASK_CAUSAL,
                              .d_qk = 32,
                              .d_v = 32,
                              .group = 4,
                              .threads = 1,
                              .decode = 1,
                              .batch = 1,
                              .heads_q = 8,
                              .k_type = TXATTN_DTYPE_Q8_0,
                              .v_type = TXATTN_DTYPE_Q8_0,
                              .page_size = paged ? 16 : 0};
}

size_t tc_add_window(const txattn_context *ctx, txattn_table *t) {
  txattn_table_class c = {.mask = TXATTN_MASK_WINDOW,
                          .window = TXATTN_TABLE_WINDOW_SYM,
                          .d_qk = TC_D,
                          .d_v = TC_D,
                          .group = 1,
                          .threads = txattn_context_threads(ctx),
                          .decode = 0,
                          .batch = 1,
                          .heads_q = 1};
  size_t ci;
  TC_ASSERT_OK(txattn_table_add_class(t, &c, &ci));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      double nr = (double)tc_window_ns[i] * (double)tc_window_rs[j];
      tc_cand cands[] = {{"banded.scalar", 3e-9 * nr, 0}, {"tiled.scalar", 2e-5 + 1e-9 * nr, 0}};
      tc_add_point(ctx, t, ci, tc_window_ns[i], tc_window_rs[j], cands, 2);
    }
  return ci;
}

void tc_pick(txattn_context *ctx, const txattn_problem *p, char *kernel, size_t ksize, char *why,
             size_t wsize) {
  txattn_plan *plan = NULL;
  txattn_status s = txattn_plan_create(ctx, p, NULL, &plan);
  cr_assert_eq(s, TXATTN_OK, "txattn_plan_create: %s: %s", txattn_status_name(s),
               txattn_last_error());
  snprintf(kernel, ksize, "%s", txattn_plan_kernel(plan));
  snprintf(why, wsize, "%s", txattn_plan_why(plan));
  txattn_plan_free(plan);
}

/* The measured values of the class (field r or n) nearest below and above x. */
static int bracket(const txattn_table *t, size_t cls, int use_r, int64_t x, int64_t *lo,
                   int64_t *hi) {
  size_t np;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  TC_ASSERT_OK(txattn_table_class_get(t, cls, &c, &np, NULL));
  *lo = -1;
  *hi = -1;
  for (size_t i = 0; i < np; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    TC_ASSERT_OK(txattn_table_point_get(t, cls, i, &p));
    int64_t v = use_r ? p.r : p.n;
    if (v <= x && (*lo < 0 || v > *lo)) *lo = v;
    if (v >= x && (*hi < 0 || v < *hi)) *hi = v;
  }
  return *lo >= 0 && *hi >= 0;
}

/* The index of point (n, r) in class cls of t; -1 if it was not measured. */
static long point_at(const txattn_table *t, size_t cls, int64_t n, int64_t r) {
  size_t np;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  TC_ASSERT_OK(txattn_table_class_get(t, cls, &c, &np, NULL));
  for (size_t i = 0; i < np; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    TC_ASSERT_OK(txattn_table_point_get(t, cls, i, &p));
    if (p.n == n && p.r == r) return (long)i;
  }
  return -1;
}

/* The fastest time of kernel at point (n, r); 0 if it was not measured there. */
static double time_at(const txattn_table *t, size_t cls, int64_t n, int64_t r, const char *kernel) {
  long i = point_at(t, cls, n, r);
  txattn_table_point p = TXATTN_TABLE_POINT_INIT;
  double best = 0;
  if (i < 0) return 0;
  TC_ASSERT_OK(txattn_table_point_get(t, cls, (size_t)i, &p));
  for (size_t k = 0; k < p.n_candidates; k++) {
    txattn_table_candidate x = TXATTN_TABLE_CANDIDATE_INIT;
    TC_ASSERT_OK(txattn_table_candidate_get(t, cls, (size_t)i, k, &x));
    if (strcmp(x.kernel, kernel) == 0 && (best == 0 || x.time_s < best)) best = x.time_s;
  }
  return best;
}

/* Whether kernel is the winner (the first candidate) of point (n, r). */
static int winner_at(const txattn_table *t, size_t cls, int64_t n, int64_t r, const char *kernel) {
  long i = point_at(t, cls, n, r);
  txattn_table_candidate x = TXATTN_TABLE_CANDIDATE_INIT;
  if (i < 0) return 0;
  TC_ASSERT_OK(txattn_table_candidate_get(t, cls, (size_t)i, 0, &x));
  return strcmp(x.kernel, kernel) == 0;
}

static double weight(int64_t lo, int64_t hi, int64_t x) {
  return lo == hi ? 0 : log((double)x / (double)lo) / log((double)hi / (double)lo);
}

void tc_expected(const txattn_table *t, size_t cls, int64_t n, int64_t r, char *kernel,
                 size_t size) {
  static const char *const kernels[] = {"naive.scalar", "masked.scalar", "tiled.scalar",
                                        "banded.scalar"};
  int64_t n0, n1, r0 = 0, r1 = 0;
  kernel[0] = '\0';
  if (!bracket(t, cls, 0, n, &n0, &n1) || !bracket(t, cls, 1, r, &r0, &r1)) return;
  double wn = weight(n0, n1, n), wr = weight(r0, r1, r);
  /* the kernels that win a surrounding point first; the others only if none of those is there */
  for (int winners = 1; winners >= 0 && !kernel[0]; winners--) {
    double best = INFINITY;
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
      const int64_t ns[4] = {n0, n1, n0, n1}, rs[4] = {r0, r0, r1, r1};
      double lt = 0, w[4] = {(1 - wn) * (1 - wr), wn * (1 - wr), (1 - wn) * wr, wn * wr};
      int measured = 1, wins = 0;
      for (int c = 0; c < 4; c++) {
        double tc = time_at(t, cls, ns[c], rs[c], kernels[k]);
        measured &= tc > 0;
        wins |= winner_at(t, cls, ns[c], rs[c], kernels[k]);
        lt += tc > 0 ? w[c] * log(tc) : 0;
      }
      if (measured && wins == winners && lt < best) {
        best = lt;
        snprintf(kernel, size, "%s", kernels[k]);
      }
    }
  }
}

char *tc_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert(f != NULL, "fopen(%s): %s", path, strerror(errno));
  cr_assert(fseek(f, 0, SEEK_END) == 0);
  long n = ftell(f);
  cr_assert(n >= 0 && fseek(f, 0, SEEK_SET) == 0);
  char *data = malloc((size_t)n + 1);
  cr_assert(data != NULL);
  cr_assert(fread(data, 1, (size_t)n, f) == (size_t)n, "reading %s failed", path);
  fclose(f);
  data[n] = '\0';
  *len = (size_t)n;
  return data;
}

void tc_write_file(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  cr_assert(f != NULL, "fopen(%s): %s", path, strerror(errno));
  cr_assert(fwrite(data, 1, len, f) == len && fclose(f) == 0, "writing %s failed", path);
}
