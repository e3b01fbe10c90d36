/* SPDX-License-Identifier: MIT */
/* What mpi_attention.c and mpi_ring.c share: option parsing, the inputs (a hash of each element's
 * global index, so a rank makes its own part and rank 0 the whole), the merge's rounding slack,
 * the check of merged rows against txattn_reference and the medians of the timings. Only the
 * public API of libtxattn. */
#ifndef EXAMPLES_MPI_COMMON_H
#define EXAMPLES_MPI_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>
#include <txattn/txattn.h>

/* An integer option stored at `offset` (an int64_t) of the options struct; a flag takes no value
   and stores 1; with choices (NULL-terminated) the value is one of those words, stored as its
   index. */
typedef struct ex_option {
  const char *name;
  size_t offset;
  int64_t min, max;
  int flag;
  const char *const *choices;
} ex_option;

/* 0: run; 1: --help (usage printed); 2: bad options (the reason and usage printed). Every rank
   parses the same argv, so all agree; quiet ranks print nothing. */
int ex_parse_options(int argc, char **argv, const ex_option *opts, size_t n_opts, void *out,
                     const char *prog, const char *usage, int quiet);

/* 0 when st is TXATTN_OK; else 1, having printed "prog: rank R: what: status: message". */
int ex_failed(const char *prog, int rank, txattn_status st, const char *what);
/* 1 when ok on every rank of comm (a collective: every rank calls it at the same point) */
int ex_all_ok(MPI_Comm comm, int ok);

enum { EX_TENSOR_Q = 1, EX_TENSOR_K = 2, EX_TENSOR_V = 3 };

/* Rows [row0, row0 + n) of each of `heads` heads of a [heads][n_total][d] tensor `which`, into x
   contiguous as [heads][n][d]: values in [-1, 1) on a grid of 2^-23. */
void ex_fill_rows(float *x, int which, int64_t heads, int64_t row0, int64_t n, int64_t n_total,
                  int64_t d);

/* What merging P partials (P - 1 combines of two, in any order) may add to max|O - O_ref|, for
   outputs of magnitude at most vmax and log-sum-exps of magnitude at most lse_max; and to the
   merged lse. */
double ex_merge_slack(int P, double lse_max, double vmax);
double ex_merge_slack_lse(int P, double lse_max);
/* What a merged lse of rows with |lse_ref| <= lse_max may be off by: the whole problem's
   txattn_lse_error_bound (abs, rel) at lse_max, which also bounds each part's error (a part's keys
   are among the whole's), plus ex_merge_slack_lse(P, lse_max). */
double ex_lse_allowed(double abs, double rel, int P, double lse_max);

/* A check of merged rows against txattn_reference (ex_check_rows). */
typedef struct ex_row_check {
  double err, err_lse;         /* max|O - O_ref| and max|lse - lse_ref| (NaN if a value is NaN) */
  double bound;                /* txattn_error_bound of the problem */
  double allowed, allowed_lse; /* what err and err_lse may be: the bounds + the merges' slack */
} ex_row_check;

/* Where the result holds reference row (h, i) (query head h, row i of p): its o at that row times
   d_v, its lse at that row. */
typedef size_t (*ex_row_of)(const void *arg, int64_t h, int64_t i);

/* Computes txattn_reference(p, t) into t->o and t->lse (p->lse set, batch 1), its
   txattn_error_bound and txattn_lse_error_bound, and compares every row of the reference with the
   merged result's row row_of(arg, h, i) of o and lse (merged from up to `merges` partials), into
   *out: err is allowed the O bound plus ex_merge_slack over max|V| (the V rows of t up to n_kv,
   every key counted), err_lse ex_lse_allowed. Returns 1 when the calls succeeded (then
   ex_row_check_ok says whether the rows passed), else 0, having printed which call failed. */
int ex_check_rows(const char *prog, const txattn_problem *p, const txattn_tensors *t,
                  const float *o, const float *lse, ex_row_of row_of, const void *arg, int merges,
                  ex_row_check *out);
/* err and err_lse within what they are allowed (a NaN fails). */
int ex_row_check_ok(const ex_row_check *c);

/* Largest finite |x[i]|. */
double ex_max_abs(const float *x, size_t n);
/* max(m, |a - b|); NaN when one is NaN, so a NaN fails every check; equal infinities differ by 0. */
double ex_diff(double m, float a, float b);
/* The median of x[0..n), n >= 1 (sorts x). */
double ex_median(double *x, int n);

#endif
