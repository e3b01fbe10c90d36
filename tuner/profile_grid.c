#include "profile_grid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context_cli.h"

#define GQA_GROUP 4

static const int64_t quick_r[] = {17, 129}, full_r[] = {17, 129, 1025};
static const int64_t zero_r[] = {0};

/* Parses a list of integers in [min, max]; returns 0 or a usage error. */
static int int_list(const tx_cmd_spec *spec, const char *opt, const tx_strlist *l, int64_t min,
                    int64_t max, int64_t *out, size_t cap, size_t *n) {
  *n = 0;
  for (size_t i = 0; i < l->n; i++) {
    char *end;
    errno = 0;
    long long v = strtoll(l->items[i], &end, 10);
    if (errno || *end || end == l->items[i] || v < min || v > max)
      return tx_args_usage_error(spec, "--%s expects integers in %lld..%lld, got '%s'", opt,
                                 (long long)min, (long long)max, l->items[i]);
    if (*n == cap) return tx_args_usage_error(spec, "--%s: at most %zu values", opt, cap);
    out[(*n)++] = v;
  }
  return 0;
}

static int open_contexts(prof_grid *g, const char *plugin_path) {
  for (size_t i = 0; i < g->n_ctx; i++) {
    txattn_options o = {.plugin_path = plugin_path, .table_path = "", .n_threads = g->threads[i]};
    txattn_status s = txattn_context_create(&o, &g->ctx[i]);
    if (s != TXATTN_OK) {
      tx_print_lib_error("profile", "cannot create the library context", s);
      return TX_EXIT_FAIL;
    }
  }
  return 0;
}

static int thread_counts(prof_grid *g, const tx_cmd_spec *spec, const tx_strlist *threads,
                         const char *plugin_path) {
  int64_t t[GRID_MAX_CTX];
  if (threads->n) {
    int rc = int_list(spec, "threads", threads, 1, 4096, t, GRID_MAX_CTX, &g->n_ctx);
    for (size_t i = 0; i < g->n_ctx; i++) g->threads[i] = (int)t[i];
    return rc;
  }
  txattn_context *all = NULL;
  txattn_options o = {.plugin_path = plugin_path, .table_path = ""};
  txattn_status s = txattn_context_create(&o, &all);
  if (s != TXATTN_OK) {
    tx_print_lib_error("profile", "cannot create the library context", s);
    return TX_EXIT_FAIL;
  }
  g->threads[0] = 1;
  g->threads[1] = txattn_context_threads(all);
  g->n_ctx = g->threads[1] > 1 ? 2 : 1;
  txattn_context_free(all);
  return 0;
}

static void add_class(prof_grid *g, size_t ctx, txattn_mask mask, int64_t d, int64_t group,
                      int decode) {
  prof_grid_class *c = &g->cls[g->n_cls];
  memset(c, 0, sizeof *c);
  c->id = g->n_cls++;
  c->ctx = ctx;
  int t = g->threads[ctx];
  c->cls = (txattn_table_class){.mask = mask,
                                .window = mask == TXATTN_MASK_WINDOW ? TXATTN_TABLE_WINDOW_SYM
                                                                     : TXATTN_TABLE_WINDOW_NONE,
                                .d_qk = d,
                                .d_v = d,
                                .group = group,
                                .threads = t,
                                .decode = decode,
                                .batch = 1,
                                .heads_q = group * (t > 2 ? t : 2)};
}

static int classes(prof_grid *g) {
  g->cls = calloc(g->n_ctx * (g->n_d * 3 + 2), sizeof *g->cls);
  if (!g->cls) return TX_EXIT_FAIL;
  for (size_t t = 0; t < g->n_ctx; t++) {
    for (size_t i = 0; i < g->n_d; i++) {
      add_class(g, t, TXATTN_MASK_NONE, g->d[i], 1, 0);
      add_class(g, t, TXATTN_MASK_CAUSAL, g->d[i], 1, 0);
      add_class(g, t, TXATTN_MASK_WINDOW, g->d[i], 1, 0);
    }
    add_class(g, t, TXATTN_MASK_CAUSAL, g->d[0], 1, 1);         /* decode */
    add_class(g, t, TXATTN_MASK_CAUSAL, g->d[0], GQA_GROUP, 0); /* GQA */
  }
  return 0;
}

int prof_grid_build(prof_grid *g, const tx_cmd_spec *spec, const tx_strlist *threads,
                    const tx_strlist *d, int64_t n_max, prof_mode mode, const char *plugin_path) {
  memset(g, 0, sizeof *g);
  int rc = thread_counts(g, spec, threads, plugin_path);
  if (rc) return rc;
  if (d->n) {
    if ((rc = int_list(spec, "d", d, 1, 1024, g->d, GRID_MAX_D, &g->n_d)) != 0) return rc;
  } else {
    g->d[0] = 64;
    g->d[1] = 128;
    g->n_d = 2;
  }
  int step = mode == PROF_QUICK ? 4 : 2;
  for (int64_t n = 64; n <= n_max && g->n_n < GRID_MAX_N; n *= step) g->n[g->n_n++] = n;
  if (g->n[g->n_n - 1] != n_max && g->n_n < GRID_MAX_N) g->n[g->n_n++] = n_max;
  const int64_t *r = mode == PROF_QUICK ? quick_r : full_r;
  g->n_r = mode == PROF_QUICK ? 2 : 3;
  memcpy(g->r, r, g->n_r * sizeof *r);
  if ((rc = classes(g)) != 0) return rc;
  return open_contexts(g, plugin_path);
}

void prof_grid_free(prof_grid *g) {
  for (size_t i = 0; i < g->n_ctx; i++) txattn_context_free(g->ctx[i]);
  free(g->cls);
  memset(g, 0, sizeof *g);
}

size_t prof_grid_rs(const prof_grid *g, const prof_grid_class *c, const int64_t **rs) {
  if (c->cls.mask != TXATTN_MASK_WINDOW) {
    *rs = zero_r;
    return 1;
  }
  *rs = g->r;
  return g->n_r;
}

txattn_problem prof_grid_problem(const prof_grid_class *c, int64_t n, int64_t r) {
  txattn_problem p = {.batch = c->cls.batch,
                      .heads_q = c->cls.heads_q,
                      .heads_kv = c->cls.heads_q / c->cls.group,
                      .n_q = c->cls.decode ? 1 : n,
                      .n_kv = n,
                      .d_qk = c->cls.d_qk,
                      .d_v = c->cls.d_v,
                      .mask = c->cls.mask};
  if (p.mask == TXATTN_MASK_WINDOW) p.window_left = p.window_right = r;
  return p;
}

int prof_grid_dropped(const prof_grid_class *c, size_t ri, size_t kernel) {
  return kernel < 64 && (c->dropped[ri] >> kernel & 1u);
}

size_t prof_grid_points(const prof_grid *g) {
  size_t n = 0;
  for (size_t i = 0; i < g->n_cls; i++) {
    const int64_t *rs;
    n += prof_grid_rs(g, &g->cls[i], &rs) * g->n_n;
  }
  return n;
}
