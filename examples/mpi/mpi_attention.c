/* SPDX-License-Identifier: MIT */
/* Attention over a KV cache sharded across MPI ranks (issue 20, "Distributed").
 *
 * Every rank holds the same queries and one contiguous slice of the keys and values: of P ranks,
 * rank r holds keys [r n_kv / P, (r + 1) n_kv / P). Each rank computes the attention of every query
 * over its slice with libtxattn (dispatched as usual) and the log-sum-exp of each row
 * (txattn_problem.lse), and one MPI_Allreduce with a user-defined operation over rows
 * (lse, o[d]) merges the partials, as the online softmax does, into the attention over all the keys
 * on every rank. Rank 0 then checks the result against txattn_reference over the whole K and V, and
 * against txattn_merge of the gathered partials, and the program times the attention and the merge.
 *
 *   mpiexec -np 2 mpi_attention --n-kv 65536 --heads 32 --heads-kv 8 --d 128
 *
 * Nothing here assumes one machine: across machines only mpiexec's hostfile changes. The values are
 * a hash of each element's global index, so each rank makes its own slice and rank 0 the whole.
 * Exits 0 when every check passes, 1 when one fails or a call fails, 2 on bad options.
 */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <txattn/txattn.h>

#include "mpi_common.h"

typedef struct options {
  int64_t n_q, n_kv, d, heads, heads_kv, threads, reps, check_rows;
} options;

static const char usage[] =
    "Usage: mpiexec -np P mpi_attention [options]\n"
    "Attention over K and V sharded by key position across the P ranks; the partials (with their\n"
    "log-sum-exp) merged by one MPI_Allreduce and checked on rank 0. Mask none.\n"
    "  --n-q N         queries, the same on every rank [1: decode]\n"
    "  --n-kv N        keys in all, split evenly over the ranks [4096]\n"
    "  --d N           head size of q, k and v [128]\n"
    "  --heads N       query heads [8]\n"
    "  --heads-kv N    key/value heads, dividing --heads [--heads]\n"
    "  --threads N     libtxattn threads per rank (0: every CPU the rank may use) [1]\n"
    "  --reps N        timed repetitions after the checked run; medians printed [5]\n"
    "  --check-rows N  query rows per head that rank 0 checks against txattn_reference, spread\n"
    "                  over n_q (0: no reference check) [64]\n";

/* 0: run; 1: --help; 2: bad options. Every rank parses the same argv, so all agree; only rank 0
   speaks. */
static int parse_options(int argc, char **argv, options *o, int quiet) {
  static const ex_option opts[] = {
      {"--n-q", offsetof(options, n_q), 1, INT32_MAX, 0, NULL},
      {"--n-kv", offsetof(options, n_kv), 1, INT32_MAX, 0, NULL},
      {"--d", offsetof(options, d), 1, 1 << 16, 0, NULL},
      {"--heads", offsetof(options, heads), 1, 1 << 16, 0, NULL},
      {"--heads-kv", offsetof(options, heads_kv), 1, 1 << 16, 0, NULL},
      {"--threads", offsetof(options, threads), 0, 4096, 0, NULL},
      {"--reps", offsetof(options, reps), 0, 100000, 0, NULL},
      {"--check-rows", offsetof(options, check_rows), 0, INT32_MAX, 0, NULL},
  };
  *o = (options){
      .n_q = 1, .n_kv = 4096, .d = 128, .heads = 8, .threads = 1, .reps = 5, .check_rows = 64};
  const int rc = ex_parse_options(argc, argv, opts, sizeof opts / sizeof opts[0], o,
                                  "mpi_attention", usage, quiet);
  if (rc != 0) return rc;
  if (o->heads_kv == 0) o->heads_kv = o->heads;
  if (o->heads % o->heads_kv != 0) {
    if (!quiet) fprintf(stderr, "mpi_attention: --heads-kv must divide --heads\n");
    return 2;
  }
  return 0;
}

/* The online-softmax combine of two partial rows (lse, o[d_v]) over disjoint key sets, into inout:
 *   m = max(lse_a, lse_b), w = exp(lse - m), o = (w_a o_a + w_b o_b) / (w_a + w_b),
 *   lse = m + log(w_a + w_b); two rows of lse -inf give lse -inf, o = 0.
 * It is exactly commutative (every step is symmetric in a and b), so MPI may order the operands as
 * it likes. It is associative only up to fp32 rounding: another grouping of the same partials rounds
 * differently, each combine adding a few roundings of max|o| (exp, two products, a sum, a division)
 * and, through the weights, the rounding of an lse of u |lse|; merge_slack bounds the sum over the
 * P - 1 combines of any order, so every order is within the same bound of the exact merge. The row
 * length comes from the datatype, so the operation carries no state. */
static void combine_rows(void *in, void *inout, int *len, MPI_Datatype *type) {
  int bytes = 0;
  MPI_Type_size(*type, &bytes);
  const size_t width = (size_t)bytes / sizeof(float), dv = width - 1;
  const float *a = in;
  float *b = inout;
  for (int r = 0; r < *len; r++, a += width, b += width) {
    const float m = fmaxf(a[0], b[0]);
    if (m == -INFINITY) { /* no key in either: o stays 0 */
      b[0] = -INFINITY;
      for (size_t c = 0; c < dv; c++) b[1 + c] = 0.0f;
      continue;
    }
    const float wa = expf(a[0] - m), wb = expf(b[0] - m), s = wa + wb;
    for (size_t c = 0; c < dv; c++) b[1 + c] = (wa * a[1 + c] + wb * b[1 + c]) / s;
    b[0] = m + logf(s);
  }
}

typedef struct rank_state {
  MPI_Comm comm;
  int rank, size;
  options opt;
  int64_t key0, n_loc; /* this rank's keys [key0, key0 + n_loc) */
  size_t rows;         /* heads * n_q output rows */
  txattn_context *ctx;
  float *q, *k, *v, *o_part, *lse_part; /* the partial over this rank's keys */
  float *packed;                        /* rows of (lse, o[d]): the Allreduce buffer */
  MPI_Datatype row_type, o_row_type;    /* d + 1 floats; d floats */
  MPI_Op combine;
} rank_state;

static int failed(const rank_state *s, txattn_status st, const char *what) {
  return ex_failed("mpi_attention", s->rank, st, what);
}
static int all_ok(const rank_state *s, int ok) {
  return ex_all_ok(s->comm, ok);
}

/* This rank's problem: every query, its own keys, with lse. */
static txattn_problem shard_problem(const rank_state *s) {
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.heads_q = s->opt.heads;
  p.heads_kv = s->opt.heads_kv;
  p.n_q = s->opt.n_q;
  p.n_kv = s->n_loc;
  p.d_qk = s->opt.d;
  p.mask = TXATTN_MASK_NONE;
  p.lse = 1;
  return p;
}

/* The partial attention of every query over this rank's keys: o_part and lse_part. A rank without
   keys has the partial of an empty key set: o = 0, lse = -inf, which the merge ignores. */
static int run_partial(rank_state *s) {
  if (s->n_loc == 0) {
    memset(s->o_part, 0, s->rows * (size_t)s->opt.d * sizeof(float));
    for (size_t r = 0; r < s->rows; r++) s->lse_part[r] = -INFINITY;
    return 1;
  }
  const txattn_problem p = shard_problem(s);
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = s->q;
  t.k = s->k;
  t.v = s->v;
  t.o = s->o_part;
  t.lse = s->lse_part;
  return !failed(s, txattn_attention(s->ctx, &p, &t), "txattn_attention");
}

/* Packs the partial into rows (lse, o[d]) and merges them over all ranks in place. */
static void merge_allreduce(rank_state *s) {
  const size_t d = (size_t)s->opt.d;
  for (size_t r = 0; r < s->rows; r++) {
    s->packed[r * (d + 1)] = s->lse_part[r];
    memcpy(s->packed + r * (d + 1) + 1, s->o_part + r * d, d * sizeof(float));
  }
  MPI_Allreduce(MPI_IN_PLACE, s->packed, (int)s->rows, s->row_type, s->combine, s->comm);
}

/* Row i of head h of the checked rows: row i * stride of head h of the n_q rows. */
typedef struct strided_rows {
  int64_t n_q, stride;
} strided_rows;
static size_t strided_row(const void *arg, int64_t h, int64_t i) {
  const strided_rows *a = arg;
  return (size_t)(h * a->n_q + i * a->stride);
}

/* Rank 0: the merged result against txattn_reference over all keys, on check_rows query rows of
   each head spread evenly over n_q (mask none: rows are independent, so a strided q_layout picks
   them). */
static int check_reference(const rank_state *s, const float *o_all, const float *lse_all) {
  const options *op = &s->opt;
  const int64_t d = op->d, m = op->check_rows < op->n_q ? op->check_rows : op->n_q,
                stride = op->n_q / m;
  const size_t kv_elems = (size_t)(op->heads_kv * op->n_kv * d);
  float *k_all = malloc(kv_elems * sizeof(float)), *v_all = malloc(kv_elems * sizeof(float));
  float *o_ref = malloc((size_t)(op->heads * m * d) * sizeof(float));
  float *lse_ref = malloc((size_t)(op->heads * m) * sizeof(float));
  int ok = 0;
  if (!k_all || !v_all || !o_ref || !lse_ref) {
    fprintf(stderr, "mpi_attention: rank 0: out of memory for the reference check\n");
    goto out;
  }
  ex_fill_rows(k_all, EX_TENSOR_K, op->heads_kv, 0, op->n_kv, op->n_kv, d);
  ex_fill_rows(v_all, EX_TENSOR_V, op->heads_kv, 0, op->n_kv, op->n_kv, d);

  txattn_problem p = shard_problem(s);
  p.n_q = m;
  p.n_kv = op->n_kv;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = s->q;
  t.q_layout =
      (txattn_layout){.batch = op->heads * op->n_q * d, .head = op->n_q * d, .row = stride * d};
  t.k = k_all;
  t.v = v_all;
  t.o = o_ref;
  t.lse = lse_ref;
  const strided_rows rows = {op->n_q, stride};
  ex_row_check c;
  if (!ex_check_rows("mpi_attention", &p, &t, o_all, lse_all, strided_row, &rows, s->size, &c))
    goto out;
  ok = ex_row_check_ok(&c);
  printf("check: %lld query row%s per head against txattn_reference over all %lld keys:\n"
         "  max|O - O_ref| = %.3g (allowed %.3g: txattn_error_bound %.3g + the merge's roundings "
         "%.3g)\n  max|lse - lse_ref| = %.3g (allowed %.3g) ... %s\n",
         (long long)m, m == 1 ? "" : "s", (long long)op->n_kv, c.err, c.allowed, c.bound,
         c.allowed - c.bound, c.err_lse, c.allowed_lse, ok ? "ok" : "FAILED");
out:
  free(k_all), free(v_all), free(o_ref), free(lse_ref);
  return ok;
}

/* Rank 0: txattn_merge of the gathered partials against the Allreduce's result, every row. The
   two merge the same partials in different orders, each within merge_slack of the exact merge. */
static int check_merge(const rank_state *s, const float *parts_o, const float *parts_lse,
                       const float *o_all, const float *lse_all) {
  const size_t d = (size_t)s->opt.d, n = s->rows * d, P = (size_t)s->size;
  float *o = malloc(n * sizeof(float)), *lse = malloc(s->rows * sizeof(float));
  txattn_tensors *parts = calloc(P, sizeof *parts);
  int ok = 0;
  if (!o || !lse || !parts) {
    fprintf(stderr, "mpi_attention: rank 0: out of memory for the merge check\n");
    goto out;
  }
  for (size_t i = 0; i < P; i++) {
    parts[i].struct_size = sizeof parts[i];
    parts[i].o = (float *)parts_o + i * n;
    parts[i].lse = (float *)parts_lse + i * s->rows;
  }
  txattn_tensors out = TXATTN_TENSORS_INIT;
  out.o = o;
  out.lse = lse;
  txattn_problem p = shard_problem(s); /* the shape of o and lse: every query */
  p.n_kv = s->opt.n_kv;
  if (failed(s, txattn_merge(&p, parts, P, &out), "txattn_merge")) goto out;

  double err = 0, err_lse = 0, lse_max = 0;
  for (size_t i = 0; i < n; i++) err = ex_diff(err, o[i], o_all[i]);
  for (size_t r = 0; r < s->rows; r++) {
    err_lse = ex_diff(err_lse, lse[r], lse_all[r]);
    if (isfinite(lse_all[r]) && fabs((double)lse_all[r]) > lse_max)
      lse_max = fabs((double)lse_all[r]);
  }
  for (size_t i = 0; i < P * s->rows; i++)
    if (isfinite(parts_lse[i]) && fabs((double)parts_lse[i]) > lse_max)
      lse_max = fabs((double)parts_lse[i]);
  const double omax = ex_max_abs(parts_o, P * n);
  const double tol = 2 * ex_merge_slack(s->size, lse_max, omax),
               tol_lse = 2 * ex_merge_slack_lse(s->size, lse_max);
  ok = err <= tol && err_lse <= tol_lse;
  printf("merge: txattn_merge of the %zu gathered partials against the MPI_Allreduce:\n"
         "  max|O diff| = %.3g (allowed %.3g), max|lse diff| = %.3g (allowed %.3g) ... %s\n",
         P, err, tol, err_lse, tol_lse, ok ? "ok" : "FAILED");
out:
  free(o), free(lse), free(parts);
  return ok;
}

/* Every rank: the checked run. The merged rows reach every rank; rank 0 checks them. */
static int checked_run(rank_state *s) {
  if (!all_ok(s, run_partial(s))) return 0;
  merge_allreduce(s);

  const size_t d = (size_t)s->opt.d, n = s->rows * d;
  float *parts_o = NULL, *parts_lse = NULL, *o_all = NULL, *lse_all = NULL;
  int ok = 1;
  if (s->rank == 0) {
    parts_o = malloc((size_t)s->size * n * sizeof(float));
    parts_lse = malloc((size_t)s->size * s->rows * sizeof(float));
    o_all = malloc(n * sizeof(float));
    lse_all = malloc(s->rows * sizeof(float));
    ok = parts_o && parts_lse && o_all && lse_all;
    if (!ok) fprintf(stderr, "mpi_attention: rank 0: out of memory for the gathered partials\n");
  }
  if (!all_ok(s, ok)) goto out;
  MPI_Gather(s->o_part, (int)s->rows, s->o_row_type, parts_o, (int)s->rows, s->o_row_type, 0,
             s->comm);
  MPI_Gather(s->lse_part, (int)s->rows, MPI_FLOAT, parts_lse, (int)s->rows, MPI_FLOAT, 0, s->comm);
  if (s->rank == 0) {
    for (size_t r = 0; r < s->rows; r++) {
      lse_all[r] = s->packed[r * (d + 1)];
      memcpy(o_all + r * d, s->packed + r * (d + 1) + 1, d * sizeof(float));
    }
    ok = check_merge(s, parts_o, parts_lse, o_all, lse_all);
    if (s->opt.check_rows > 0)
      ok = check_reference(s, o_all, lse_all) && ok;
    else
      printf("check: no reference check (--check-rows 0)\n");
  }
  ok = all_ok(s, ok);
out:
  free(parts_o), free(parts_lse), free(o_all), free(lse_all);
  return ok;
}

/* The attention and the merge timed apart: a barrier starts each, and each repetition counts the
   slowest rank's time (the barrier before the merge keeps the attention's imbalance out of it). */
static int timed_runs(rank_state *s) {
  const int reps = (int)s->opt.reps;
  if (reps == 0) return 1;
  double *t = calloc((size_t)reps * 2, sizeof *t), *tmax = calloc((size_t)reps * 2, sizeof *t);
  int ok = all_ok(s, t && tmax);
  for (int i = 0; ok && i < reps; i++) {
    MPI_Barrier(s->comm);
    double t0 = MPI_Wtime();
    ok = run_partial(s);
    double t1 = MPI_Wtime();
    if (!all_ok(s, ok)) {
      ok = 0;
      break;
    }
    double t2 = MPI_Wtime();
    merge_allreduce(s);
    double t3 = MPI_Wtime();
    t[2 * i] = t1 - t0;
    t[2 * i + 1] = t3 - t2;
  }
  if (ok) {
    MPI_Reduce(t, tmax, 2 * reps, MPI_DOUBLE, MPI_MAX, 0, s->comm);
    if (s->rank == 0) {
      double *att = t, *mrg = t + reps, *sum = tmax; /* reused for the sorts */
      for (int i = 0; i < reps; i++) att[i] = tmax[2 * i], mrg[i] = tmax[2 * i + 1];
      for (int i = 0; i < reps; i++) sum[i] = att[i] + mrg[i];
      const double ta = ex_median(att, reps), tm = ex_median(mrg, reps), tt = ex_median(sum, reps);
      printf("time (medians of %d, slowest rank): attention %.3f ms, merge (pack + MPI_Allreduce) "
             "%.3f ms, both %.3f ms; the merge's share %.1f%%\n",
             reps, 1e3 * ta, 1e3 * tm, 1e3 * tt, 100 * tm / (ta + tm));
    }
  }
  free(t), free(tmax);
  return ok;
}

static int setup(rank_state *s) {
  const options *op = &s->opt;
  const int64_t d = op->d;
  s->key0 = op->n_kv * s->rank / s->size;
  s->n_loc = op->n_kv * (s->rank + 1) / s->size - s->key0;
  s->rows = (size_t)(op->heads * op->n_q);
  if (s->rows > INT_MAX) {
    fprintf(stderr, "mpi_attention: heads * n_q = %zu rows is above MPI's count limit %d\n",
            s->rows, INT_MAX);
    return 0;
  }
  const size_t q_elems = s->rows * (size_t)d, kv_elems = (size_t)(op->heads_kv * s->n_loc * d);
  s->q = malloc(q_elems * sizeof(float));
  s->k = malloc((kv_elems ? kv_elems : 1) * sizeof(float));
  s->v = malloc((kv_elems ? kv_elems : 1) * sizeof(float));
  s->o_part = malloc(q_elems * sizeof(float));
  s->lse_part = malloc(s->rows * sizeof(float));
  s->packed = malloc(s->rows * (size_t)(d + 1) * sizeof(float));
  if (!s->q || !s->k || !s->v || !s->o_part || !s->lse_part || !s->packed) {
    fprintf(stderr, "mpi_attention: rank %d: out of memory\n", s->rank);
    return 0;
  }
  ex_fill_rows(s->q, EX_TENSOR_Q, op->heads, 0, op->n_q, op->n_q, d);
  ex_fill_rows(s->k, EX_TENSOR_K, op->heads_kv, s->key0, s->n_loc, op->n_kv, d);
  ex_fill_rows(s->v, EX_TENSOR_V, op->heads_kv, s->key0, s->n_loc, op->n_kv, d);

  txattn_options copt = TXATTN_OPTIONS_INIT;
  copt.n_threads = (int)op->threads;
  return !failed(s, txattn_context_create(&copt, &s->ctx), "txattn_context_create");
}

/* Rank 0 names the kernel the dispatcher picks for its slice (the others' slices differ by a key at
   most, so they get the same but where a size boundary falls between). */
static void describe(const rank_state *s) {
  const options *op = &s->opt;
  printf("mpi_attention: libtxattn %s, %d rank%s x %d thread%s: n_q %lld, n_kv %lld (%lld keys on "
         "rank 0), heads %lld/%lld, d %lld, mask none, fp32\n",
         txattn_version_string(), s->size, s->size == 1 ? "" : "s", txattn_context_threads(s->ctx),
         txattn_context_threads(s->ctx) == 1 ? "" : "s", (long long)op->n_q, (long long)op->n_kv,
         (long long)s->n_loc, (long long)op->heads, (long long)op->heads_kv, (long long)op->d);
  txattn_plan *plan = NULL;
  const txattn_problem p = shard_problem(s);
  if (s->n_loc > 0 && txattn_plan_create(s->ctx, &p, NULL, &plan) == TXATTN_OK)
    printf("rank 0's kernel: %s (%s)\n", txattn_plan_kernel(plan), txattn_plan_why(plan));
  else if (s->n_loc > 0)
    printf("rank 0's kernel: none plans (%s: %s)\n", "txattn_plan_create", txattn_last_error());
  txattn_plan_free(plan);
  fflush(stdout);
}

int main(int argc, char **argv) {
  int provided = 0;
  /* Only the main thread calls MPI; libtxattn's threads (OpenMP in some kernels) never do. */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  rank_state s = {.comm = MPI_COMM_WORLD};
  MPI_Comm_rank(s.comm, &s.rank);
  MPI_Comm_size(s.comm, &s.size);
  int rc = parse_options(argc, argv, &s.opt, s.rank != 0);
  if (rc != 0) {
    MPI_Finalize();
    return rc == 1 ? 0 : 2;
  }
  MPI_Type_contiguous((int)s.opt.d + 1, MPI_FLOAT, &s.row_type);
  MPI_Type_commit(&s.row_type);
  MPI_Type_contiguous((int)s.opt.d, MPI_FLOAT, &s.o_row_type);
  MPI_Type_commit(&s.o_row_type);
  MPI_Op_create(combine_rows, 1 /* commutative */, &s.combine);

  int ok = all_ok(&s, setup(&s));
  if (ok && s.rank == 0) describe(&s);
  ok = ok && checked_run(&s);
  ok = ok && timed_runs(&s);
  if (s.rank == 0) printf("mpi_attention: %s\n", ok ? "all checks passed" : "FAILED");

  txattn_context_free(s.ctx);
  free(s.q), free(s.k), free(s.v), free(s.o_part), free(s.lse_part), free(s.packed);
  MPI_Op_free(&s.combine);
  MPI_Type_free(&s.row_type);
  MPI_Type_free(&s.o_row_type);
  MPI_Finalize();
  return ok ? 0 : 1;
}
