/* SPDX-License-Identifier: MIT */
/* txtune bench sweeps: the problems of `--n A..B --mask none,causal,window`, and what the sweep
   shows beyond its tables: how each kernel's time grows with n, and which kernel wins where. */
#include "bench_sweep.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "text_table.h"

static int parse_count(const char *s, const char *end, int64_t *out) {
  if (s == end || *s == '-' || *s == '+') return 0;
  char *stop;
  errno = 0;
  long long v = strtoll(s, &stop, 10);
  if (stop != end || errno == ERANGE || v < 1) return 0;
  *out = (int64_t)v;
  return 1;
}

static int add_n(tx_sweep_axes *axes, int64_t n) {
  for (size_t i = 0; i < axes->n_n; i++)
    if (axes->n[i] == n) return 1;
  if (axes->n_n == TX_SWEEP_MAX_N) return 0;
  axes->n[axes->n_n++] = n;
  return 1;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* One --n item: N, or A..B for A, 2A, 4A ... while <= B. */
static int parse_n_item(const tx_cmd_spec *spec, const char *item, tx_sweep_axes *axes) {
  const char *dots = strstr(item, ".."), *end = item + strlen(item);
  int64_t a, b;
  if (!dots) {
    if (!parse_count(item, end, &a))
      return tx_args_usage_error(spec, "--n expects an integer >= 1 or a range A..B, got '%s'",
                                 item);
    b = a;
  } else if (!parse_count(item, dots, &a) || !parse_count(dots + 2, end, &b) || a > b) {
    return tx_args_usage_error(spec, "--n: a range is A..B with integers 1 <= A <= B, got '%s'",
                               item);
  }
  for (int64_t n = a; n <= b; n *= 2) {
    if (!add_n(axes, n))
      return tx_args_usage_error(spec, "--n: more than %d values", TX_SWEEP_MAX_N);
    if (n > INT64_MAX / 2) break;
  }
  return 0;
}

int tx_sweep_parse_n(const tx_cmd_spec *spec, const tx_strlist *items, tx_sweep_axes *axes) {
  axes->n_n = 0;
  for (size_t i = 0; i < items->n; i++) {
    int rc = parse_n_item(spec, items->items[i], axes);
    if (rc) return rc;
  }
  qsort(axes->n, axes->n_n, sizeof axes->n[0], cmp_i64);
  return 0;
}

int tx_sweep_parse_mask(const tx_cmd_spec *spec, const tx_strlist *items, tx_sweep_axes *axes) {
  axes->n_mask = 0;
  for (size_t i = 0; i < items->n; i++) {
    txattn_mask kind;
    if (!tx_mask_parse(items->items[i], &kind)) {
      static const char *const kinds[] = {"none", "causal", "window"};
      char near[96];
      tx_did_you_mean(items->items[i], kinds, 3, "", near, sizeof near);
      return tx_args_usage_error(spec, "--mask expects none, causal or window, got '%s'%s",
                                 items->items[i], near);
    }
    int seen = 0;
    for (size_t k = 0; k < axes->n_mask; k++) seen |= axes->mask[k] == (int)kind;
    if (seen) continue;
    if (axes->n_mask == TX_SWEEP_MAX_MASKS)
      return tx_args_usage_error(spec, "--mask: more than %d kinds", TX_SWEEP_MAX_MASKS);
    axes->mask[axes->n_mask++] = (int)kind;
  }
  if (axes->n_mask == 0) axes->mask[axes->n_mask++] = -1; /* as problem_cli: none, or a window */
  return 0;
}

static int has_window(const tx_sweep_axes *axes) {
  for (size_t k = 0; k < axes->n_mask; k++)
    if (axes->mask[k] == TXATTN_MASK_WINDOW) return 1;
  return 0;
}

int tx_sweep_problems(const tx_cmd_spec *spec, const tx_problem_args *a, const tx_sweep_axes *axes,
                      txattn_problem **out, size_t *n_out) {
  /* no --n: one problem, of the n --q-lens implies (tx_serving_apply_args) or problem_cli's
     message */
  size_t n_n = axes->n_n ? axes->n_n : 1;
  txattn_problem *p = calloc(n_n * axes->n_mask, sizeof *p);
  if (!p) return tx_args_usage_error(spec, "out of memory");
  size_t k = 0;
  for (size_t m = 0; m < axes->n_mask; m++)
    for (size_t i = 0; i < n_n; i++) {
      tx_problem_args one = *a;
      one.n = axes->n_n ? axes->n[i] : a->n;
      one.mask = axes->mask[m];
      /* the window options belong to the window points; without any, problem_cli says why */
      if (one.mask >= 0 && one.mask != TXATTN_MASK_WINDOW && has_window(axes))
        one.left = one.right = one.window = TX_UNSET;
      int rc = tx_problem_from_args(spec, &one, &p[k++]);
      if (rc) {
        free(p);
        return rc;
      }
    }
  *out = p;
  *n_out = k;
  return 0;
}

int tx_sweep_same_class(const txattn_problem *a, const txattn_problem *b) {
  int a_square = a->n_kv == a->n_q, b_square = b->n_kv == b->n_q;
  int window = a->mask == TXATTN_MASK_WINDOW;
  return a->batch == b->batch && a->heads_q == b->heads_q && a->heads_kv == b->heads_kv &&
         a->d_qk == b->d_qk && a->d_v == b->d_v && a->mask == b->mask && a->scale == b->scale &&
         (!window || (a->window_left == b->window_left && a->window_right == b->window_right)) &&
         a_square == b_square && (a_square || a->n_kv == b->n_kv) && a->q_type == b->q_type &&
         a->k_type == b->k_type && a->v_type == b->v_type && a->o_type == b->o_type;
}

void tx_sweep_class_label(const txattn_problem *p, char *buf, size_t size) {
  char full[192];
  tx_problem_format(p, full, sizeof full);
  size_t len = 0;
  buf[0] = '\0';
  for (char *tok = strtok(full, " "); tok; tok = strtok(NULL, " ")) {
    if (strncmp(tok, "n=", 2) == 0 || strncmp(tok, "n_q=", 4) == 0) continue;
    if (tx_appendf(buf, size, &len, "%s%s", len ? " " : "", tok)) return;
  }
}

/* "1024..4096, 16384": the n of the group's points where kernel k is the fastest. */
static void fastest_at(const tx_bench_point *const *g, size_t n_g, size_t k, char *buf,
                       size_t size) {
  size_t len = 0;
  snprintf(buf, size, "-");
  for (size_t i = 0; i < n_g; i++) {
    if (g[i]->fastest != (long)k) continue;
    size_t j = i;
    while (j + 1 < n_g && g[j + 1]->fastest == (long)k) j++;
    int full = i == j ? tx_appendf(buf, size, &len, "%s%" PRId64, len ? ", " : "", g[i]->p.n_q)
                      : tx_appendf(buf, size, &len, "%s%" PRId64 "..%" PRId64, len ? ", " : "",
                                   g[i]->p.n_q, g[j]->p.n_q);
    if (full) return;
    i = j;
  }
}

static void summary_row(const tx_bench_setup *s, const tx_bench_point *const *g, size_t n_g,
                        size_t k, const char *label, tx_table *t) {
  double n[TX_SWEEP_MAX_N], tm[TX_SWEEP_MAX_N];
  size_t m = 0, first = SIZE_MAX, last = 0;
  for (size_t i = 0; i < n_g && m < TX_SWEEP_MAX_N; i++) {
    if (g[i]->res[k].state != TX_BENCH_OK) continue;
    n[m] = (double)g[i]->p.n_q;
    tm[m++] = g[i]->res[k].tm.median_s;
    if (first == SIZE_MAX) first = i;
    last = i;
  }
  if (m == 0) return;
  char slope[32] = "-", times[96], t0[32], t1[32], where[256];
  double k_fit = tx_loglog_slope(n, tm, m);
  if (!isnan(k_fit)) snprintf(slope, sizeof slope, "%.2f", k_fit);
  snprintf(times, sizeof times, "%s at %" PRId64 " .. %s at %" PRId64,
           tx_fmt_time(g[first]->res[k].tm.median_s, t0, sizeof t0), g[first]->p.n_q,
           tx_fmt_time(g[last]->res[k].tm.median_s, t1, sizeof t1), g[last]->p.n_q);
  fastest_at(g, n_g, k, where, sizeof where);
  const char *cells[] = {label, tx_bench_label(s, k), slope, times, where};
  tx_table_add(t, cells);
}

void tx_sweep_print_summary(const tx_bench_setup *s, const tx_bench_point *pts, size_t n_pts,
                            FILE *f) {
  const tx_bench_point **g = calloc(n_pts ? n_pts : 1, sizeof *g);
  char *done = calloc(n_pts ? n_pts : 1, 1);
  if (!g || !done) {
    fprintf(f, "\nsweep summary: out of memory\n");
    free(g);
    free(done);
    return;
  }
  tx_table t;
  tx_table_init(&t, "PROBLEM|KERNEL|>SLOPE|MEDIAN TIME|FASTEST AT n");
  for (size_t i = 0; i < n_pts; i++) {
    if (done[i]) continue;
    size_t n_g = 0;
    for (size_t j = i; j < n_pts; j++)
      if (!done[j] && tx_sweep_same_class(&pts[i].p, &pts[j].p)) {
        g[n_g++] = &pts[j];
        done[j] = 1;
      }
    char label[192];
    tx_sweep_class_label(&pts[i].p, label, sizeof label);
    size_t rows = t.n_rows;
    for (size_t k = 0; k < s->n_sel; k++)
      summary_row(s, g, n_g, k, t.n_rows == rows ? label : "", &t);
  }
  fprintf(f,
          "\nslope: least-squares fit of log time against log n (dense ~2, a fixed window ~1)\n\n");
  tx_table_print(&t, f, "");
  tx_table_free(&t);
  free(g);
  free(done);
}
