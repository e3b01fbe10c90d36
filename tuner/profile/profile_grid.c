/* SPDX-License-Identifier: MIT */
#include "profile_grid.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context_cli.h"
#include "kernels.h"

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

/* A library context of `threads` threads (0: every CPU) that follows no table; 0, or the exit code
   after printing why not. */
static int open_context(const char *plugin_path, int threads, txattn_context **ctx) {
  txattn_options o = {.plugin_path = plugin_path, .table_path = "", .n_threads = threads};
  txattn_status s = txattn_context_create(&o, ctx);
  if (s == TXATTN_OK) return 0;
  tx_print_lib_error("profile", "cannot create the library context", s);
  return TX_EXIT_FAIL;
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
  if (open_context(plugin_path, 0, &all) != 0) return TX_EXIT_FAIL;
  g->threads[0] = 1;
  g->threads[1] = txattn_context_threads(all);
  g->n_ctx = g->threads[1] > 1 ? 2 : 1;
  txattn_context_free(all);
  return 0;
}

static prof_grid_class *add_class(prof_grid *g, size_t ctx, txattn_mask mask, int64_t d,
                                  int64_t group, int decode) {
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
                                /* a head (group) per thread: the threaded kernels split each
                                   head's query blocks and keys, so they have work enough */
                                .heads_q = group * t};
  return c;
}

/* The classes of each thread count, in the grid's order: a class is measured wherever a feature
   can change which kernel wins, and adding one is one entry here (docs/profiling.md lists them). */
enum { EVERY_D, FIRST_D, LAST_D, FIXED_D }; /* at each --d, the first, the last, PROF_PAGED_D */
enum { QUICK_ALL, QUICK_MOST, NO_QUICK };   /* --quick: at every thread count, the most, none */
/* the types: f32, each --dtype, all bf16 (no --dtype), k and v q8_0 */
enum { F32, EACH_DTYPE, BF16_DEFAULT, KV_Q8_0 };
static const struct class_kind {
  txattn_mask mask;
  int d_at;
  int64_t group;
  int decode, ragged, softcap, doc_mask, paged, quick, types, first_threads;
  int64_t n_max;
} kinds[] = {
    {TXATTN_MASK_NONE, EVERY_D, 1, .decode = 0},
    {TXATTN_MASK_CAUSAL, EVERY_D, 1, .decode = 0},
    {TXATTN_MASK_WINDOW, EVERY_D, 1, .decode = 0},
    {TXATTN_MASK_CAUSAL, FIRST_D, 1, .decode = 1},
    {TXATTN_MASK_CAUSAL, FIRST_D, 1, .decode = 1, .ragged = 1, .quick = QUICK_MOST},
    {TXATTN_MASK_CAUSAL, FIRST_D, GQA_GROUP, .decode = 0},
    {TXATTN_MASK_CAUSAL, FIRST_D, 1, .softcap = 1, .quick = QUICK_MOST},  /* PROF_SOFTCAP */
    {TXATTN_MASK_CAUSAL, FIRST_D, 1, .doc_mask = 1, .quick = QUICK_MOST}, /* PROF_DOC_PARTS */
    {TXATTN_MASK_CAUSAL, LAST_D, GQA_GROUP, .decode = 1, .quick = QUICK_MOST, .types = EACH_DTYPE},
    {TXATTN_MASK_CAUSAL, FIXED_D, GQA_GROUP, .decode = 1, .paged = 1, .quick = QUICK_MOST,
     .types = KV_Q8_0}, /* PROF_PAGE_SIZE, PROF_PAGED_HEADS, PROF_PAGED_D */
    {TXATTN_MASK_CAUSAL, LAST_D, 1, .quick = NO_QUICK, .types = EACH_DTYPE,
     .n_max = GRID_TYPED_PREFILL_N_MAX},
    {TXATTN_MASK_CAUSAL, LAST_D, 1, .quick = NO_QUICK, .types = BF16_DEFAULT, .first_threads = 1,
     .n_max = GRID_TYPED_PREFILL_N_MAX},
};

static int classes(prof_grid *g, prof_mode mode, int defaults) {
  const size_t n_kinds = sizeof kinds / sizeof kinds[0];
  static const tx_dtypes fixed[] = {
      [BF16_DEFAULT] = {{TXATTN_DTYPE_BF16, TXATTN_DTYPE_BF16, TXATTN_DTYPE_BF16,
                         TXATTN_DTYPE_BF16}},
      [KV_Q8_0] = {{TXATTN_DTYPE_F32, TXATTN_DTYPE_Q8_0, TXATTN_DTYPE_Q8_0, TXATTN_DTYPE_F32}}};
  g->cls = calloc(g->n_ctx * n_kinds * (g->n_d + g->n_types) + 1, sizeof *g->cls);
  if (!g->cls) return TX_EXIT_FAIL;
  for (size_t t = 0; t < g->n_ctx; t++)
    for (const struct class_kind *x = kinds; x < kinds + n_kinds; x++) {
      int quick = mode == PROF_QUICK;
      if ((quick && x->quick == NO_QUICK) ||
          (quick && x->quick == QUICK_MOST && t != g->n_ctx - 1) || (x->first_threads && t != 0) ||
          (x->types == BF16_DEFAULT && !defaults))
        continue;
      size_t n_d = x->d_at == EVERY_D ? g->n_d : 1,
             n_types = x->types == EACH_DTYPE ? g->n_types : 1;
      for (size_t i = 0; i < n_d; i++)
        for (size_t k = 0; k < n_types; k++) {
          const tx_dtypes *ty = x->types == EACH_DTYPE ? &g->types[k]
                                : x->types             ? &fixed[x->types]
                                                       : NULL;
          int64_t d = x->d_at == FIXED_D  ? PROF_PAGED_D
                      : x->d_at == LAST_D ? g->d[g->n_d - 1]
                                          : g->d[i];
          prof_grid_class *c = add_class(g, t, x->mask, d, x->group, x->decode);
          c->cls.softcap = x->softcap;
          c->cls.mask_tensor = x->doc_mask ? TXATTN_MASK_TENSOR_BOOL : TXATTN_MASK_TENSOR_NONE;
          c->n_max = x->n_max;
          if (x->paged) {
            c->cls.page_size = PROF_PAGE_SIZE;
            c->cls.heads_q = PROF_PAGED_HEADS;
          }
          if (ty) {
            c->cls.q_type = ty->t[0];
            c->cls.k_type = ty->t[1];
            c->cls.v_type = ty->t[2];
            c->cls.o_type = ty->t[3];
          }
          if (x->ragged) { /* its shortest sequence has n / 32 keys from GRID_RAGGED_N_MIN on */
            c->cls.ragged = 1;
            c->cls.batch = PROF_RAGGED_SPREAD;
            c->n_min = g->n[g->n_n - 1] < GRID_RAGGED_N_MIN ? g->n[g->n_n - 1] : GRID_RAGGED_N_MIN;
          }
        }
    }
  return 0;
}

/* --dtype: the combinations of the 16-bit classes; "f32" among them adds none. */
static int type_list(prof_grid *g, const tx_cmd_spec *spec, const tx_strlist *dtypes) {
  if (dtypes->n == 0) {
    g->types[0] =
        (tx_dtypes){{TXATTN_DTYPE_F32, TXATTN_DTYPE_F16, TXATTN_DTYPE_F16, TXATTN_DTYPE_F32}};
    g->n_types = 1;
    return 0;
  }
  for (size_t i = 0; i < dtypes->n; i++) {
    tx_dtypes d;
    if (!tx_dtypes_parse(dtypes->items[i], &d))
      return tx_args_usage_error(spec, "--dtype expects %s, got '%s'", TX_DTYPE_HELP,
                                 dtypes->items[i]);
    size_t k = 0;
    while (k < g->n_types && memcmp(&g->types[k], &d, sizeof d) != 0) k++;
    if (tx_dtypes_all_f32(&d) || k < g->n_types) continue;
    if (g->n_types == GRID_MAX_TYPES)
      return tx_args_usage_error(spec, "--dtype: at most %d combinations", GRID_MAX_TYPES);
    g->types[g->n_types++] = d;
  }
  return 0;
}

/* Whether every usable kernel of ctx declines the element types of p. */
static int no_kernel_takes(const txattn_context *ctx, const txattn_problem *p) {
  char why[96];
  for (size_t k = 0; k < txattn_kernel_count(ctx); k++) {
    txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, k, &info) == TXATTN_OK && info.usable &&
        !tx_kernel_declines_types(ctx, info.name, p, why, sizeof why))
      return 0;
  }
  return 1;
}

/* A 16-bit class is measured only where some usable kernel takes its types: the estimate's plan
   for its smallest point says whether one does. The others leave the grid, with why. */
static void drop_untaken(prof_grid *g) {
  size_t kept = 0;
  for (size_t i = 0; i < g->n_cls; i++) {
    prof_grid_class *c = &g->cls[i];
    const txattn_table_class *k = &c->cls;
    int typed = k->q_type || k->k_type || k->v_type || k->o_type;
    txattn_plan *plan = NULL;
    txattn_problem p = prof_grid_problem(c, g->n[0], 0);
    txattn_status s = typed ? txattn_plan_create(g->ctx[c->ctx], &p, NULL, &plan) : TXATTN_OK;
    txattn_plan_free(plan);
    if (s != TXATTN_OK && g->n_skipped < sizeof g->skipped / sizeof g->skipped[0]) {
      tx_dtypes d = tx_dtypes_of(&p);
      txattn_table_class_describe(k, g->skipped[g->n_skipped].cls, sizeof g->skipped[0].cls);
      if (no_kernel_takes(g->ctx[c->ctx], &p))
        snprintf(g->skipped[g->n_skipped].why, sizeof g->skipped[0].why,
                 "no usable kernel takes q %s, k %s, v %s, o %s", txattn_dtype_name(d.t[0]),
                 txattn_dtype_name(d.t[1]), txattn_dtype_name(d.t[2]), txattn_dtype_name(d.t[3]));
      else
        snprintf(g->skipped[g->n_skipped].why, sizeof g->skipped[0].why, "%s: %.120s",
                 txattn_status_name(s), txattn_last_error());
      for (char *q = g->skipped[g->n_skipped].why; *q; q++) /* it goes into the header's JSON */
        if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20) *q = '\'';
      g->n_skipped++;
      continue;
    }
    g->cls[kept] = *c;
    g->cls[kept].id = kept;
    kept++;
  }
  g->n_cls = kept;
}

int prof_grid_build(prof_grid *g, const tx_cmd_spec *spec, const tx_strlist *threads,
                    const tx_strlist *d, const tx_strlist *dtypes, int64_t n_max, prof_mode mode,
                    const char *plugin_path) {
  memset(g, 0, sizeof *g);
  int rc = type_list(g, spec, dtypes);
  if (!rc) rc = thread_counts(g, spec, threads, plugin_path);
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
  if ((rc = classes(g, mode, dtypes->n == 0)) != 0) return rc;
  for (size_t i = 0; i < g->n_ctx && rc == 0; i++)
    rc = open_context(plugin_path, g->threads[i], &g->ctx[i]);
  if (rc == 0) drop_untaken(g);
  return rc;
}

int prof_grid_has_point(const prof_grid *g, const prof_grid_class *c, size_t ni, size_t ri) {
  int64_t n = g->n[ni];
  return (c->n_max == 0 || n <= c->n_max) && n >= c->n_min &&
         (!c->only_points || (c->points[ri] >> ni & 1u));
}

/* Adds v to the sorted set vals (of n at most cap); 0 if it is full. */
static int add_value(int64_t *vals, size_t *n, size_t cap, int64_t v) {
  size_t i = 0;
  while (i < *n && vals[i] < v) i++;
  if (i < *n && vals[i] == v) return 1;
  if (*n == cap) return 0;
  memmove(vals + i + 1, vals + i, (*n - i) * sizeof *vals);
  vals[i] = v;
  (*n)++;
  return 1;
}

static size_t index_of(const int64_t *vals, size_t n, int64_t v) {
  size_t i = 0;
  while (i < n && vals[i] != v) i++;
  return i;
}

/* The n, r and thread values of t's points and classes; 0, or the exit code after saying which
   does not fit the grid. */
static int table_values(prof_grid *g, const txattn_table *t, size_t n_cls) {
  int64_t threads[GRID_MAX_CTX];
  for (size_t ci = 0; ci < n_cls; ci++) {
    txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
    size_t np = 0;
    if (txattn_table_class_get(t, ci, &c, &np, NULL) != TXATTN_OK) continue;
    if (!add_value(threads, &g->n_ctx, GRID_MAX_CTX, c.threads)) {
      fprintf(stderr, "txtune profile: the table has more than %d thread counts\n", GRID_MAX_CTX);
      return TX_EXIT_FAIL;
    }
    for (size_t i = 0; i < np; i++) {
      txattn_table_point p = TXATTN_TABLE_POINT_INIT;
      if (txattn_table_point_get(t, ci, i, &p) != TXATTN_OK) continue;
      if (!add_value(g->n, &g->n_n, GRID_MAX_N, p.n) ||
          (p.r > 0 && !add_value(g->r, &g->n_r, GRID_MAX_R, p.r))) {
        fprintf(stderr, "txtune profile: the table has more than %d values of n or %d of r\n",
                GRID_MAX_N, GRID_MAX_R);
        return TX_EXIT_FAIL;
      }
    }
  }
  for (size_t i = 0; i < g->n_ctx; i++) g->threads[i] = (int)threads[i];
  return 0;
}

int prof_grid_from_table(prof_grid *g, const txattn_table *t, const char *plugin_path) {
  memset(g, 0, sizeof *g);
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  if (txattn_table_header_get(t, &h) != TXATTN_OK) {
    tx_print_lib_error("profile", "cannot read the table", TXATTN_E_INVALID);
    return TX_EXIT_FAIL;
  }
  int rc = table_values(g, t, h.n_classes);
  if (rc) return rc;
  if (!(g->cls = calloc(h.n_classes + 1, sizeof *g->cls))) return TX_EXIT_FAIL;
  for (size_t ci = 0; ci < h.n_classes; ci++) {
    prof_grid_class *c = &g->cls[g->n_cls];
    size_t np = 0;
    memset(c, 0, sizeof *c);
    c->cls = (txattn_table_class)TXATTN_TABLE_CLASS_INIT;
    if (txattn_table_class_get(t, ci, &c->cls, &np, NULL) != TXATTN_OK || np == 0) continue;
    c->id = g->n_cls++;
    for (size_t k = 0; k < g->n_ctx; k++)
      if (g->threads[k] == c->cls.threads) c->ctx = k;
    c->only_points = 1;
    c->n_min = INT64_MAX;
    for (size_t i = 0; i < np; i++) {
      txattn_table_point p = TXATTN_TABLE_POINT_INIT;
      if (txattn_table_point_get(t, ci, i, &p) != TXATTN_OK) continue;
      size_t ni = index_of(g->n, g->n_n, p.n), ri = p.r > 0 ? index_of(g->r, g->n_r, p.r) : 0;
      c->points[ri] |= 1u << ni;
      c->n_min = p.n < c->n_min ? p.n : c->n_min;
      c->n_max = p.n > c->n_max ? p.n : c->n_max;
    }
  }
  for (size_t i = 0; i < g->n_ctx && rc == 0; i++)
    rc = open_context(plugin_path, g->threads[i], &g->ctx[i]);
  return rc;
}

void prof_ragged_lens(int64_t n, int64_t batch, int64_t *lens) {
  static const int64_t num[PROF_RAGGED_SPREAD] = {1, 1, 1, 1, 1, 1, 3, 5},
                       den[PROF_RAGGED_SPREAD] = {32, 16, 8, 4, 2, 1, 32, 8};
  for (int64_t b = 0; b < batch; b++) {
    int64_t len = n / den[b % PROF_RAGGED_SPREAD] * num[b % PROF_RAGGED_SPREAD];
    lens[b] = len < 1 ? 1 : len;
  }
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
                      .mask = c->cls.mask,
                      .q_type = c->cls.q_type,
                      .k_type = c->cls.k_type,
                      .v_type = c->cls.v_type,
                      .o_type = c->cls.o_type};
  if (p.mask == TXATTN_MASK_WINDOW) p.window_left = p.window_right = r;
  p.struct_size = sizeof p; /* the library reads the fields past 0.2's where it covers them */
  p.ragged = c->cls.ragged;
  p.softcap = c->cls.softcap ? PROF_SOFTCAP : 0.0f;
  p.mask_tensor = (txattn_mask_tensor)c->cls.mask_tensor;
  if (c->cls.page_size > 0) { /* every sequence's pages its own */
    p.page_size = c->cls.page_size;
    p.max_pages = (n + p.page_size - 1) / p.page_size;
    p.n_pages = p.batch * p.max_pages;
  }
  return p;
}

double prof_grid_pairs(const txattn_problem *p) {
  double pairs = txattn_problem_visible_pairs(p);
  if (p->ragged && p->batch <= 4096 && p->n_kv > 0) {
    int64_t lens[4096], sum = 0;
    prof_ragged_lens(p->n_kv, p->batch, lens);
    for (int64_t b = 0; b < p->batch; b++) sum += lens[b];
    pairs *= (double)sum / ((double)p->batch * (double)p->n_kv);
  }
  return pairs;
}

size_t prof_grid_points(const prof_grid *g) {
  size_t n = 0;
  for (size_t i = 0; i < g->n_cls; i++) {
    const int64_t *rs;
    size_t n_r = prof_grid_rs(g, &g->cls[i], &rs);
    for (size_t k = 0; k < g->n_n; k++)
      for (size_t ri = 0; ri < n_r; ri++) n += (size_t)prof_grid_has_point(g, &g->cls[i], k, ri);
  }
  return n;
}
