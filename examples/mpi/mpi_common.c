/* SPDX-License-Identifier: MIT */
/* Shared by mpi_attention.c and mpi_ring.c (mpi_common.h). */
#include "mpi_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ex_parse_options(int argc, char **argv, const ex_option *opts, size_t n_opts, void *out,
                     const char *prog, const char *usage, int quiet) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      if (!quiet) fputs(usage, stdout);
      return 1;
    }
    size_t k = 0;
    while (k < n_opts && strcmp(a, opts[k].name)) k++;
    if (k == n_opts) {
      if (!quiet) fprintf(stderr, "%s: unknown option '%s'\n%s", prog, a, usage);
      return 2;
    }
    int64_t *field = (int64_t *)((char *)out + opts[k].offset);
    if (opts[k].flag) {
      *field = 1;
      continue;
    }
    const char *val = i + 1 < argc ? argv[++i] : NULL;
    if (opts[k].choices) {
      int64_t c = 0;
      while (val && opts[k].choices[c] && strcmp(val, opts[k].choices[c])) c++;
      if (!val || !opts[k].choices[c]) {
        if (!quiet) {
          fprintf(stderr, "%s: %s expects one of:", prog, a);
          for (c = 0; opts[k].choices[c]; c++) fprintf(stderr, " %s", opts[k].choices[c]);
          fputc('\n', stderr);
        }
        return 2;
      }
      *field = c;
      continue;
    }
    char *end = NULL;
    long long v = val ? strtoll(val, &end, 10) : 0;
    if (!val || end == val || *end != '\0' || v < opts[k].min || v > opts[k].max) {
      if (!quiet)
        fprintf(stderr, "%s: %s expects an integer from %lld to %lld\n", prog, a,
                (long long)opts[k].min, (long long)opts[k].max);
      return 2;
    }
    *field = v;
  }
  return 0;
}

int ex_failed(const char *prog, int rank, txattn_status st, const char *what) {
  if (st == TXATTN_OK) return 0;
  fprintf(stderr, "%s: rank %d: %s: %s: %s\n", prog, rank, what, txattn_status_name(st),
          txattn_last_error());
  return 1;
}

int ex_all_ok(MPI_Comm comm, int ok) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  return all;
}

/* Element idx of tensor `which`: a hash (splitmix64) of its global index. */
static float value_at(uint64_t which, uint64_t idx) {
  uint64_t z = (which << 56) ^ idx;
  z += 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  z ^= z >> 31;
  return (float)(z >> 40) / (float)(1u << 23) - 1.0f;
}

void ex_fill_rows(float *x, int which, int64_t heads, int64_t row0, int64_t n, int64_t n_total,
                  int64_t d) {
  for (int64_t h = 0; h < heads; h++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t c = 0; c < d; c++)
        x[(h * n + j) * d + c] =
            value_at((uint64_t)which, (uint64_t)((h * n_total + row0 + j) * d + c));
}

/* A combine of two partials adds at most 8 roundings of vmax (exp, two products, a sum, a
   division; docs/error_bound.md, "Merging") and, through the weights, the roundings of the lse it
   reads (u |lse| each): over P - 1 combines at most P (8 + 2 lse_max) u vmax, u = 2^-24. */
double ex_merge_slack(int P, double lse_max, double vmax) {
  return P * (8.0 + 2.0 * lse_max) * ldexp(1.0, -24) * vmax;
}
/* Each combine rounds log(s) and m + log(s). */
double ex_merge_slack_lse(int P, double lse_max) {
  return P * (2.0 + 2.0 * lse_max) * ldexp(1.0, -24);
}

double ex_lse_allowed(double abs, double rel, int P, double lse_max) {
  return abs + rel * lse_max + ex_merge_slack_lse(P, lse_max);
}

/* Largest finite |V| over the V rows 0..n_kv of every head (t's layout, or contiguous). */
static double max_abs_v(const txattn_problem *r, const txattn_tensors *t) {
  const txattn_layout l = t->v_layout;
  const int64_t row = l.row ? l.row : r->d_v, head = l.head ? l.head : r->n_kv * r->d_v;
  double m = 0;
  for (int64_t h = 0; h < r->heads_kv; h++)
    for (int64_t j = 0; j < r->n_kv; j++) {
      const double x = ex_max_abs(t->v + h * head + j * row, (size_t)r->d_v);
      m = x > m ? x : m;
    }
  return m;
}

int ex_check_rows(const char *prog, const txattn_problem *p, const txattn_tensors *t,
                  const float *o, const float *lse, ex_row_of row_of, const void *arg, int merges,
                  ex_row_check *out) {
  txattn_problem r = TXATTN_PROBLEM_INIT;
  double lse_abs = 0, lse_rel = 0;
  if (ex_failed(prog, 0, txattn_problem_resolve(p, &r), "txattn_problem_resolve") ||
      ex_failed(prog, 0, txattn_reference(p, t), "txattn_reference") ||
      ex_failed(prog, 0, txattn_error_bound(p, t, &out->bound), "txattn_error_bound") ||
      ex_failed(prog, 0, txattn_lse_error_bound(p, t, &lse_abs, &lse_rel),
                "txattn_lse_error_bound"))
    return 0;
  const int64_t d = r.d_v;
  double lse_max = 0;
  out->err = out->err_lse = 0;
  for (int64_t h = 0; h < r.heads_q; h++)
    for (int64_t i = 0; i < r.n_q; i++) {
      const size_t row = row_of(arg, h, i), ref = (size_t)(h * r.n_q + i);
      for (int64_t c = 0; c < d; c++)
        out->err = ex_diff(out->err, o[row * d + c], t->o[ref * d + c]);
      out->err_lse = ex_diff(out->err_lse, lse[row], t->lse[ref]);
      if (isfinite(t->lse[ref]) && fabs((double)t->lse[ref]) > lse_max)
        lse_max = fabs((double)t->lse[ref]);
    }
  out->allowed = out->bound + ex_merge_slack(merges, lse_max, max_abs_v(&r, t));
  out->allowed_lse = ex_lse_allowed(lse_abs, lse_rel, merges, lse_max);
  return 1;
}

int ex_row_check_ok(const ex_row_check *c) {
  return c->err <= c->allowed && c->err_lse <= c->allowed_lse;
}

double ex_max_abs(const float *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(x[i]) && fabs((double)x[i]) > m) m = fabs((double)x[i]);
  return m;
}

double ex_diff(double m, float a, float b) {
  if (isnan(m) || a == b) return m;
  double e = fabs((double)a - (double)b);
  return e <= m ? m : e;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
double ex_median(double *x, int n) {
  qsort(x, (size_t)n, sizeof *x, cmp_double);
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}
