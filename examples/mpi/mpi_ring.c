/* SPDX-License-Identifier: MIT */
/* Ring attention for prefill over MPI ranks (issue 20, "Distributed").
 *
 * n queries attend to the n keys of the same sequence. The positions are split into chunks, chunk
 * c = [c n / C, (c + 1) n / C), and each rank holds the queries and the K/V of its chunks, laid
 * out in its local tensors one after the other in position order ([heads][rows][d]). In P steps
 * every rank's K/V passes once around the ring: at step t rank r holds rank (r - t) mod P's,
 * computes the attention of its queries over it with libtxattn (dispatched as usual, with each
 * row's log-sum-exp, txattn_problem.lse), merges the partials into its running (O, lse) with
 * txattn_merge, and passes the K/V on to rank r + 1. The transfer of the next K/V starts before
 * the attention (MPI_Isend / MPI_Irecv into the other of two buffers) and is waited for after it;
 * as Open MPI moves a large message only inside MPI calls, each step's attention is cut into a few
 * calls by query rows with an MPI_Testall between them (--pieces). Rank 0 gathers the rows and
 * checks them against txattn_reference, and the program times the attention, the wait for the
 * transfers and the merges.
 *
 *   mpiexec -np 2 mpi_ring --n 16384 --heads 8 --d 128 --causal
 *
 * Layouts. contiguous: C = P chunks, rank r holds chunk r. zigzag: C = 2P chunks, rank r holds
 * chunks r and 2P - 1 - r. Causal: a query chunk skips a later key chunk, sees an earlier one
 * whole (unmasked) and its own chunk through the causal mask, which is the full problem's because
 * the call is square over the same positions (bottom-right aligned: query i sees key j <= i). That
 * holds for any set of chunks taken in position order too, so at step 0 (a rank's own K/V) one
 * causal call covers all its chunks. Contiguous, rank r computes r + 1/2 chunks' worth (the last
 * rank is the slowest); zigzag, every rank does about 2 chunks' worth per step, in one call: at
 * step 0 the causal one, then both its query chunks against an earlier rank's first key chunk
 * (its second is later than both), or its second query chunk against both of a later rank's. The
 * default is zigzag for --causal and contiguous without a mask (balanced already).
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

enum { LAYOUT_CONTIGUOUS, LAYOUT_ZIGZAG };
static const char *const layout_names[] = {"contiguous", "zigzag", NULL};

typedef struct options {
  int64_t n, d, heads, heads_kv, threads, reps, check_rows, causal, layout, pieces;
} options;

static const char usage[] =
    "Usage: mpiexec -np P mpi_ring [options]\n"
    "Prefill attention with queries and K/V split by position across P ranks; each rank's K/V\n"
    "passes around the ring and each rank merges its partials (txattn_merge).\n"
    "  --n N           queries and keys (at least P; chunks differ by one where the chunks do not\n"
    "                  divide N) [4096]\n"
    "  --causal        causal mask (default none)\n"
    "  --layout L      zigzag: 2P chunks, rank r holding chunks r and 2P-1-r, so that every rank\n"
    "                  does the same causal work; contiguous: P chunks, rank r holding chunk r\n"
    "                  [zigzag with --causal, else contiguous]\n"
    "  --d N           head size of q, k and v [128]\n"
    "  --heads N       query heads [8]\n"
    "  --heads-kv N    key/value heads, dividing --heads [--heads]\n"
    "  --threads N     libtxattn threads per rank (0: every CPU the rank may use) [1]\n"
    "  --pieces N      while a transfer is in flight, each call is cut into up to N calls by "
    "query\n"
    "                  rows with an MPI_Testall between them, so that MPI moves the data "
    "meanwhile\n"
    "                  (1: one call) [4]\n"
    "  --reps N        timed passes after the checked one; medians printed [5]\n"
    "  --check-rows N  query rows per head that rank 0 checks against txattn_reference, spread\n"
    "                  over n from the first to the last (0: no check) [64]\n";

static int parse_options(int argc, char **argv, options *o, int P, int quiet) {
  static const ex_option opts[] = {
      {"--n", offsetof(options, n), 1, INT32_MAX, 0, NULL},
      {"--causal", offsetof(options, causal), 0, 1, 1, NULL},
      {"--layout", offsetof(options, layout), 0, 1, 0, layout_names},
      {"--d", offsetof(options, d), 1, 1 << 16, 0, NULL},
      {"--heads", offsetof(options, heads), 1, 1 << 16, 0, NULL},
      {"--heads-kv", offsetof(options, heads_kv), 1, 1 << 16, 0, NULL},
      {"--threads", offsetof(options, threads), 0, 4096, 0, NULL},
      {"--pieces", offsetof(options, pieces), 1, 1024, 0, NULL},
      {"--reps", offsetof(options, reps), 0, 100000, 0, NULL},
      {"--check-rows", offsetof(options, check_rows), 0, INT32_MAX, 0, NULL},
  };
  *o = (options){.n = 4096,
                 .d = 128,
                 .heads = 8,
                 .threads = 1,
                 .reps = 5,
                 .check_rows = 64,
                 .layout = -1,
                 .pieces = 4};
  const int rc =
      ex_parse_options(argc, argv, opts, sizeof opts / sizeof opts[0], o, "mpi_ring", usage, quiet);
  if (rc != 0) return rc;
  if (o->heads_kv == 0) o->heads_kv = o->heads;
  if (o->layout < 0) o->layout = o->causal ? LAYOUT_ZIGZAG : LAYOUT_CONTIGUOUS;
  if (o->heads % o->heads_kv != 0 || o->n < P) {
    if (!quiet && o->n < P)
      fprintf(stderr, "mpi_ring: --n %lld is less than the %d ranks\n", (long long)o->n, P);
    else if (!quiet)
      fprintf(stderr, "mpi_ring: --heads-kv must divide --heads\n");
    return 2;
  }
  return 0;
}

enum { MAX_CHUNKS_PER_RANK = 2, MAX_CALLS = 4 };

typedef struct ring_state {
  MPI_Comm comm;
  int rank, size, prev, next;
  options opt;
  int n_chunks, per_rank; /* chunks in all (P or 2P) and per rank (1 or 2) */
  int64_t *start;         /* chunk c: positions (queries and keys) [start[c], start[c + 1]) */
  int64_t *local;         /* chunk c's first row in its rank's local tensors */
  int64_t *rank_len;      /* rank r's rows: its chunks' lengths summed */
  int64_t *rank_off;      /* the rows of the ranks before r (where rank 0 gathers r's rows) */
  int64_t len;            /* this rank's rows */
  txattn_context *ctx;
  float *q;                  /* this rank's queries, [heads][len][d] */
  float *kv_own, *kv_buf[2]; /* a rank's K/V of l rows: K [heads_kv][l][d], then V the same */
  float *o, *lse; /* the running result over the keys so far, [heads][len][d], [heads][len] */
  float *o_step, *lse_step; /* a partial to merge, laid out as o and lse */
  float *lse_next;          /* the merge's lse out ([heads][rows merged]) */
  MPI_Datatype o_row_type;  /* d floats */
} ring_state;

typedef struct pass_times {
  double total, attention, wait, merge;
} pass_times;

/* One attention call of a step: this rank's query chunks [q0, q1) (indices into its chunk list)
   against the held K/V's key chunks [k0, k1), unmasked or (same positions, square) causal. */
typedef struct ring_call {
  int q0, q1, k0, k1, causal;
} ring_call;

static int64_t chunk_len(const ring_state *s, int c) {
  return s->start[c + 1] - s->start[c];
}

/* Rank r's i-th chunk (contiguous: i is 0); a rank's chunks are in position order. */
static int chunk_of(const ring_state *s, int r, int i) {
  return i == 0 ? r : 2 * s->size - 1 - r;
}
/* The rank holding chunk c. */
static int chunk_rank(const ring_state *s, int c) {
  return c < s->size ? c : 2 * s->size - 1 - c;
}

/* The first local row of rank r's i-th chunk (i == per_rank: its row count). */
static int64_t row_of(const ring_state *s, int r, int i) {
  return i < s->per_rank ? s->local[chunk_of(s, r, i)] : s->rank_len[r];
}

/* Floats of the K (or V) half of rank r's K/V. */
static size_t half_floats(const ring_state *s, int r) {
  return (size_t)(s->opt.heads_kv * s->rank_len[r] * s->opt.d);
}

static int failed(const ring_state *s, txattn_status st, const char *what) {
  return ex_failed("mpi_ring", s->rank, st, what);
}
static int all_ok(const ring_state *s, int ok) {
  return ex_all_ok(s->comm, ok);
}

enum { PAIR_SKIP, PAIR_FULL, PAIR_DIAGONAL };

/* How query chunk qc sees key chunk kc. */
static int pair_kind(const ring_state *s, int qc, int kc) {
  if (chunk_len(s, qc) == 0 || chunk_len(s, kc) == 0) return PAIR_SKIP;
  if (!s->opt.causal || kc < qc) return PAIR_FULL;
  return kc == qc ? PAIR_DIAGONAL : PAIR_SKIP;
}

/* Calls covering rank r's queries against rank src's keys with as few calls as the pairs allow:
   one when every pair is unmasked, or at step 0 (src == r) when causal: the same positions in the
   same order, so the square causal call over all of them is the full problem's mask. Else the
   fewer of: per key chunk, a call for each run of query chunks seeing it whole and one per
   diagonal pair; or the same per query chunk. Returns the number of calls. */
static int plan_step(const ring_state *s, int r, int src, ring_call *calls) {
  const int m = s->per_rank;
  int kind[MAX_CHUNKS_PER_RANK][MAX_CHUNKS_PER_RANK], all_full = 1;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++) {
      kind[i][j] = pair_kind(s, chunk_of(s, r, i), chunk_of(s, src, j));
      all_full &= kind[i][j] == PAIR_FULL;
    }
  if (all_full || (s->opt.causal && src == r)) {
    calls[0] = (ring_call){0, m, 0, m, !all_full};
    return 1;
  }
  ring_call by[2][MAX_CALLS];
  int n_by[2] = {0, 0};
  for (int dir = 0; dir < 2; dir++) /* dir 0: per key chunk j; 1: per query chunk i */
    for (int outer = 0; outer < m; outer++)
      for (int inner = 0; inner < m;) {
        const int k = dir == 0 ? kind[inner][outer] : kind[outer][inner];
        int end = inner + 1;
        if (k == PAIR_SKIP) {
          inner = end;
          continue;
        }
        if (k == PAIR_FULL)
          while (end < m && (dir == 0 ? kind[end][outer] : kind[outer][end]) == PAIR_FULL) end++;
        by[dir][n_by[dir]++] = dir == 0 ? (ring_call){inner, end, outer, outer + 1, k != PAIR_FULL}
                                        : (ring_call){outer, outer + 1, inner, end, k != PAIR_FULL};
        inner = end;
      }
  const int best = n_by[1] < n_by[0];
  memcpy(calls, by[best], (size_t)n_by[best] * sizeof *calls);
  return n_by[best];
}

/* The problem of query rows [a, b) of call c (rows counted from the call's first), against rank
   src's K/V: all the call's keys, or, causal, its keys up to b (the square call's rows a..b-1 see
   keys 0..b-1 through the bottom-right aligned mask). */
static txattn_problem call_problem(const ring_state *s, int src, const ring_call *c, int64_t a,
                                   int64_t b) {
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.heads_q = s->opt.heads;
  p.heads_kv = s->opt.heads_kv;
  p.n_q = b - a;
  p.n_kv = c->causal ? b : row_of(s, src, c->k1) - row_of(s, src, c->k0);
  p.d_qk = s->opt.d;
  p.mask = c->causal ? TXATTN_MASK_CAUSAL : TXATTN_MASK_NONE;
  p.lse = 1;
  return p;
}

/* The layouts of this rank's o (and q) and lse rows, and of a rank's K or V of l rows. */
static txattn_layout rows_layout(int64_t heads, int64_t l, int64_t d) {
  return (txattn_layout){.batch = heads * l * d, .head = l * d, .row = d};
}

/* (o, lse) rows [r0, r0 + n) := the merge of themselves and (o_step, lse_step)'s: o in place, lse
   through lse_next. */
static int merge_rows(ring_state *s, int64_t r0, int64_t n) {
  const int64_t heads = s->opt.heads, d = s->opt.d, L = s->len;
  txattn_problem p = TXATTN_PROBLEM_INIT; /* the shape of o and lse */
  p.heads_q = heads;
  p.n_q = n;
  p.d_qk = d;
  const txattn_layout o_layout = rows_layout(heads, L, d), lse_layout = rows_layout(heads, L, 1);
  txattn_tensors parts[2] = {TXATTN_TENSORS_INIT, TXATTN_TENSORS_INIT};
  parts[0].o = s->o + r0 * d;
  parts[0].lse = s->lse + r0;
  parts[1].o = s->o_step + r0 * d;
  parts[1].lse = s->lse_step + r0;
  for (int k = 0; k < 2; k++) parts[k].o_layout = o_layout, parts[k].lse_layout = lse_layout;
  txattn_tensors out = TXATTN_TENSORS_INIT;
  out.o = parts[0].o;
  out.o_layout = o_layout;
  out.lse = s->lse_next;
  if (failed(s, txattn_merge(&p, parts, 2, &out), "txattn_merge")) return 0;
  for (int64_t h = 0; h < heads; h++)
    memcpy(s->lse + h * L + r0, s->lse_next + h * n, (size_t)n * sizeof(float));
  return 1;
}

/* Call c against rank src's K/V `kv`. A query chunk's first partial is written into (o, lse) as
   it is; later ones go to (o_step, lse_step) and are merged. req: the step's transfers, tested
   between the pieces the call is cut into; NULL: none in flight, one call. */
static int run_call(ring_state *s, int src, const float *kv, const ring_call *c, int *have,
                    MPI_Request *req, pass_times *tm) {
  const int64_t heads = s->opt.heads, d = s->opt.d, L = s->len, Ls = s->rank_len[src];
  const int64_t q0 = row_of(s, s->rank, c->q0), nq = row_of(s, s->rank, c->q1) - q0;
  const int64_t k0 = row_of(s, src, c->k0);
  int fresh = 1, ok = 1;
  for (int i = c->q0; i < c->q1; i++) fresh &= !have[i];
  float *o = fresh ? s->o : s->o_step, *lse = fresh ? s->lse : s->lse_step;
  int64_t pieces = req ? s->opt.pieces : 1;
  if (pieces > nq / 16) pieces = nq / 16 > 1 ? nq / 16 : 1; /* no call under 16 rows */
  for (int64_t k = 0; ok && k < pieces; k++) {
    const int64_t a = nq * k / pieces, b = nq * (k + 1) / pieces;
    const txattn_problem p = call_problem(s, src, c, a, b);
    txattn_tensors t = TXATTN_TENSORS_INIT;
    t.q = s->q + (q0 + a) * d;
    t.q_layout = rows_layout(heads, L, d);
    t.k = kv + k0 * d;
    t.v = kv + half_floats(s, src) + k0 * d;
    t.k_layout = t.v_layout = rows_layout(s->opt.heads_kv, Ls, d);
    t.o = o + (q0 + a) * d;
    t.o_layout = t.q_layout;
    t.lse = lse + q0 + a;
    t.lse_layout = rows_layout(heads, L, 1);
    const double t0 = MPI_Wtime();
    ok = !failed(s, txattn_attention(s->ctx, &p, &t), "txattn_attention");
    const double t1 = MPI_Wtime();
    tm->attention += t1 - t0;
    if (req) {
      int done = 0;
      MPI_Testall(2, req, &done, MPI_STATUSES_IGNORE);
      tm->wait += MPI_Wtime() - t1;
    }
  }
  if (ok && !fresh) {
    /* a query chunk without a partial yet (not so in the layouts here: step 0 covers every
       chunk) merges as one that saw no key */
    for (int i = c->q0; i < c->q1; i++) {
      if (have[i]) continue;
      const int64_t r0 = row_of(s, s->rank, i), n = row_of(s, s->rank, i + 1) - r0;
      for (int64_t h = 0; h < heads; h++) {
        memset(s->o + (h * L + r0) * d, 0, (size_t)(n * d) * sizeof(float));
        for (int64_t j = 0; j < n; j++) s->lse[h * L + r0 + j] = -INFINITY;
      }
    }
    const double t0 = MPI_Wtime();
    ok = merge_rows(s, q0, nq);
    tm->merge += MPI_Wtime() - t0;
  }
  for (int i = c->q0; i < c->q1; i++) have[i] = 1;
  return ok;
}

/* One pass around the ring, leaving this rank's rows in (o, lse). At step t the K/V held is rank
   src = (rank - t) mod P's, in kv_own at step 0 and then in the buffer the previous step received
   into; the next (the previous rank's src - 1) arrives in the other buffer, whose own send was
   waited for a step earlier. A rank whose call failed keeps passing the K/V on, so that no rank
   waits forever; the caller learns it from the return value. */
static int ring_pass(ring_state *s, pass_times *tm) {
  const int P = s->size;
  const float *held = s->kv_own;
  int have[MAX_CHUNKS_PER_RANK] = {0}, ok = 1;
  *tm = (pass_times){0};
  const double t_start = MPI_Wtime();
  for (int t = 0; t < P; t++) {
    const int src = (s->rank - t + P) % P;
    float *incoming = s->kv_buf[t % 2];
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (t + 1 < P) {
      const int nsrc = (src - 1 + P) % P;
      MPI_Irecv(incoming, (int)(2 * half_floats(s, nsrc)), MPI_FLOAT, s->prev, t, s->comm, &req[0]);
      MPI_Isend(held, (int)(2 * half_floats(s, src)), MPI_FLOAT, s->next, t, s->comm, &req[1]);
    }
    ring_call calls[MAX_CALLS];
    const int n_calls = plan_step(s, s->rank, src, calls);
    for (int k = 0; ok && k < n_calls; k++)
      ok = run_call(s, src, held, &calls[k], have, t + 1 < P ? req : NULL, tm);
    const double t2 = MPI_Wtime();
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    tm->wait += MPI_Wtime() - t2;
    held = incoming;
  }
  tm->total = MPI_Wtime() - t_start;
  return ok;
}

/* The most partials a query chunk merges in a pass (P in both layouts: one call per step). */
static int max_partials(const ring_state *s) {
  int most = 0;
  for (int r = 0; r < s->size; r++) {
    int count[MAX_CHUNKS_PER_RANK] = {0};
    for (int t = 0; t < s->size; t++) {
      ring_call calls[MAX_CALLS];
      const int n_calls = plan_step(s, r, (r - t + s->size) % s->size, calls);
      for (int k = 0; k < n_calls; k++)
        for (int i = calls[k].q0; i < calls[k].q1; i++) count[i]++;
    }
    for (int i = 0; i < s->per_rank; i++) most = count[i] > most ? count[i] : most;
  }
  return most;
}

/* The positions rank 0 checks: m spread from 0 to n - 1 (the last alone when m is 1). */
static int64_t checked_row(int64_t i, int64_t m, int64_t n) {
  return m == 1 ? n - 1 : i * (n - 1) / (m - 1);
}

/* Where rank 0 gathered position g of head h: rank r's rows ([heads][rank_len[r]][d]) follow
   those of the ranks before it, and g is row local[c] + g - start[c] of its chunk c's rank. */
static int64_t gathered_row(const ring_state *s, int c, int64_t g, int64_t h) {
  const int r = chunk_rank(s, c);
  return s->opt.heads * s->rank_off[r] + h * s->rank_len[r] + s->local[c] + g - s->start[c];
}

/* Position g (of chunk c) of every head, for ex_check_rows (one query row a head). */
typedef struct gathered_at {
  const ring_state *s;
  int c;
  int64_t g;
} gathered_at;
static size_t gathered_at_row(const void *arg, int64_t h, int64_t i) {
  const gathered_at *a = arg;
  (void)i; /* 0: one row */
  return (size_t)gathered_row(a->s, a->c, a->g, h);
}

/* Rank 0: the gathered rows against txattn_reference, one call per checked position g over the
   keys it sees (all n, or 0..g when causal), so each row is judged by its own txattn_error_bound.
   The merges add the roundings of mpi_attention's Allreduce over as many partials as a row
   merges; an lse is judged by the position's txattn_lse_error_bound plus the merges' roundings
   (ex_lse_allowed). */
static int check_rows(const ring_state *s, const float *o_all, const float *lse_all) {
  const options *op = &s->opt;
  const int64_t n = op->n, d = op->d, m = op->check_rows < n ? op->check_rows : n;
  const size_t kv_elems = (size_t)(op->heads_kv * n * d);
  float *k_all = malloc(kv_elems * sizeof(float)), *v_all = malloc(kv_elems * sizeof(float));
  float *q = malloc((size_t)(op->heads * d) * sizeof(float));
  float *o_ref = malloc((size_t)(op->heads * d) * sizeof(float));
  float *lse_ref = malloc((size_t)op->heads * sizeof(float));
  int ok = 0;
  if (!k_all || !v_all || !q || !o_ref || !lse_ref) {
    fprintf(stderr, "mpi_ring: rank 0: out of memory for the reference check\n");
    goto out;
  }
  ex_fill_rows(k_all, EX_TENSOR_K, op->heads_kv, 0, n, n, d);
  ex_fill_rows(v_all, EX_TENSOR_V, op->heads_kv, 0, n, n, d);

  const int merges = max_partials(s);
  double err = 0, err_lse = 0, worst = 0, worst_lse = 0, worst_allowed = 0, worst_allowed_lse = 0;
  int c = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < m; i++) {
    const int64_t g = checked_row(i, m, n), n_kv = op->causal ? g + 1 : n;
    while (g >= s->start[c + 1]) c++;
    ex_fill_rows(q, EX_TENSOR_Q, op->heads, g, 1, n, d);
    txattn_problem p = TXATTN_PROBLEM_INIT;
    p.heads_q = op->heads;
    p.heads_kv = op->heads_kv;
    p.n_q = 1;
    p.n_kv = n_kv;
    p.d_qk = d;
    p.lse = 1;
    const txattn_layout kv_layout = {.batch = op->heads_kv * n * d, .head = n * d, .row = d};
    txattn_tensors t = TXATTN_TENSORS_INIT;
    t.q = q;
    t.k = k_all;
    t.k_layout = kv_layout;
    t.v = v_all;
    t.v_layout = kv_layout;
    t.o = o_ref;
    t.lse = lse_ref;
    const gathered_at at = {s, c, g};
    ex_row_check k;
    if (!ex_check_rows("mpi_ring", &p, &t, o_all, lse_all, gathered_at_row, &at, merges, &k))
      goto out;
    const double e = k.err, e_lse = k.err_lse, allowed = k.allowed, allowed_lse = k.allowed_lse;
    if (!ex_row_check_ok(&k) && bad++ < 5) /* NaN fails too */
      printf("check: position %lld (chunk %d): max|O - O_ref| = %.3g (allowed %.3g), "
             "max|lse - lse_ref| = %.3g (allowed %.3g) ... FAILED\n",
             (long long)g, c, e, allowed, e_lse, allowed_lse);
    err = e > err || isnan(e) ? e : err;
    err_lse = e_lse > err_lse || isnan(e_lse) ? e_lse : err_lse;
    if (!(e / allowed <= worst)) worst = e / allowed, worst_allowed = allowed;
    if (!(e_lse / allowed_lse <= worst_lse))
      worst_lse = e_lse / allowed_lse, worst_allowed_lse = allowed_lse;
  }
  ok = bad == 0;
  printf("check: %lld position%s per head against txattn_reference over the keys each sees:\n"
         "  max|O - O_ref| = %.3g (worst row: %.0f%% of its %.3g, txattn_error_bound + the "
         "merges' roundings)\n  max|lse - lse_ref| = %.3g (worst row: %.0f%% of its %.3g) ... %s\n",
         (long long)m, m == 1 ? "" : "s", err, 100 * worst, worst_allowed, err_lse, 100 * worst_lse,
         worst_allowed_lse, ok ? "ok" : "FAILED");
out:
  free(k_all), free(v_all), free(q), free(o_ref), free(lse_ref);
  return ok;
}

/* Every rank: one pass, its rows gathered on rank 0 (rank after rank) and checked there. */
static int checked_pass(ring_state *s) {
  pass_times tm;
  if (!all_ok(s, ring_pass(s, &tm))) return 0;
  if (s->opt.check_rows == 0) {
    if (s->rank == 0) printf("check: no reference check (--check-rows 0)\n");
    return 1;
  }
  const int P = s->size;
  const size_t rows = (size_t)(s->opt.heads * s->opt.n);
  float *o_all = NULL, *lse_all = NULL;
  int *counts = NULL, *displs = NULL, ok = 1;
  if (s->rank == 0) {
    o_all = malloc(rows * (size_t)s->opt.d * sizeof(float));
    lse_all = malloc(rows * sizeof(float));
    counts = malloc((size_t)P * sizeof(int));
    displs = malloc((size_t)P * sizeof(int));
    ok = o_all && lse_all && counts && displs;
    if (!ok) fprintf(stderr, "mpi_ring: rank 0: out of memory for the gathered rows\n");
    for (int r = 0; ok && r < P; r++) {
      counts[r] = (int)(s->opt.heads * s->rank_len[r]);
      displs[r] = (int)(s->opt.heads * s->rank_off[r]);
    }
  }
  if (all_ok(s, ok)) {
    const int mine = (int)(s->opt.heads * s->len);
    MPI_Gatherv(s->o, mine, s->o_row_type, o_all, counts, displs, s->o_row_type, 0, s->comm);
    MPI_Gatherv(s->lse, mine, MPI_FLOAT, lse_all, counts, displs, MPI_FLOAT, 0, s->comm);
    ok = all_ok(s, s->rank != 0 || check_rows(s, o_all, lse_all));
  } else {
    ok = 0;
  }
  free(o_all), free(lse_all), free(counts), free(displs);
  return ok;
}

/* Timed passes, a barrier before each. Per pass, each part is the slowest rank's (the attention
   also the fastest rank's, which shows the imbalance); the medians are printed. */
static int timed_passes(ring_state *s) {
  const int reps = (int)s->opt.reps;
  if (reps == 0) return 1;
  enum { PARTS = 5 }; /* total, attention, wait, merge; the attention's negative (for the min) */
  double *t = calloc((size_t)reps * PARTS, sizeof *t),
         *tmax = calloc((size_t)reps * PARTS, sizeof *t);
  int ok = all_ok(s, t && tmax);
  for (int i = 0; ok && i < reps; i++) {
    pass_times tm;
    MPI_Barrier(s->comm);
    ok = all_ok(s, ring_pass(s, &tm));
    const double parts[PARTS] = {tm.total, tm.attention, tm.wait, tm.merge, -tm.attention};
    memcpy(t + (size_t)i * PARTS, parts, sizeof parts);
  }
  if (ok) {
    MPI_Reduce(t, tmax, reps * PARTS, MPI_DOUBLE, MPI_MAX, 0, s->comm);
    if (s->rank == 0) {
      double med[PARTS];
      for (int k = 0; k < PARTS; k++) {
        for (int i = 0; i < reps; i++) t[i] = tmax[(size_t)i * PARTS + k];
        med[k] = ex_median(t, reps);
      }
      printf("time (medians of %d pass%s, each part the slowest rank's): pass %.3f ms; attention "
             "%.3f ms (the fastest rank's %.3f ms), waiting for the ring's transfers %.3f ms, "
             "merges %.3f ms\n",
             reps, reps == 1 ? "" : "es", 1e3 * med[0], 1e3 * med[1], -1e3 * med[4], 1e3 * med[2],
             1e3 * med[3]);
    }
  }
  free(t), free(tmax);
  return ok;
}

/* Rank r's rows of tensor `which` ([heads][rank_len[r]][d], its chunks one after the other per
   head), through tmp (a chunk's [heads][len][d]). */
static void fill_local(const ring_state *s, float *x, int which, int64_t heads, float *tmp) {
  const int64_t n = s->opt.n, d = s->opt.d, L = s->len;
  for (int i = 0; i < s->per_rank; i++) {
    const int c = chunk_of(s, s->rank, i);
    const int64_t l = chunk_len(s, c);
    ex_fill_rows(tmp, which, heads, s->start[c], l, n, d);
    for (int64_t h = 0; h < heads; h++)
      memcpy(x + (h * L + s->local[c]) * d, tmp + h * l * d, (size_t)(l * d) * sizeof(float));
  }
}

static int setup(ring_state *s) {
  const options *op = &s->opt;
  const int P = s->size;
  const int64_t d = op->d;
  s->prev = (s->rank - 1 + P) % P;
  s->next = (s->rank + 1) % P;
  s->per_rank = op->layout == LAYOUT_ZIGZAG ? 2 : 1;
  s->n_chunks = P * s->per_rank;
  const int C = s->n_chunks;
  s->start = malloc((size_t)(C + 1) * sizeof *s->start);
  s->local = malloc((size_t)C * sizeof *s->local);
  s->rank_len = malloc((size_t)P * sizeof *s->rank_len);
  s->rank_off = malloc((size_t)P * sizeof *s->rank_off);
  if (!s->start || !s->local || !s->rank_len || !s->rank_off) {
    fprintf(stderr, "mpi_ring: rank %d: out of memory\n", s->rank);
    return 0;
  }
  for (int c = 0; c <= C; c++) s->start[c] = op->n * c / C;
  int64_t max_len = 0, max_chunk = 0, off = 0;
  for (int r = 0; r < P; r++) {
    s->rank_off[r] = off;
    s->rank_len[r] = 0;
    for (int i = 0; i < s->per_rank; i++) {
      const int c = chunk_of(s, r, i);
      s->local[c] = s->rank_len[r];
      s->rank_len[r] += chunk_len(s, c);
      max_chunk = chunk_len(s, c) > max_chunk ? chunk_len(s, c) : max_chunk;
    }
    off += s->rank_len[r];
    max_len = s->rank_len[r] > max_len ? s->rank_len[r] : max_len;
  }
  s->len = s->rank_len[s->rank];
  if (2 * op->heads_kv * max_len * d > INT_MAX || op->heads * op->n > INT_MAX) {
    fprintf(stderr,
            "mpi_ring: a rank's K and V (%lld floats) or the rows (%lld) exceed MPI's count "
            "limit %d\n",
            (long long)(2 * op->heads_kv * max_len * d), (long long)(op->heads * op->n), INT_MAX);
    return 0;
  }
  const size_t q_elems = (size_t)(op->heads * s->len * d), rows = (size_t)(op->heads * s->len),
               kv_max = 2 * (size_t)(op->heads_kv * max_len * d);
  s->q = malloc(q_elems * sizeof(float));
  s->o = malloc(q_elems * sizeof(float));
  s->o_step = malloc(q_elems * sizeof(float));
  s->lse = malloc(rows * sizeof(float));
  s->lse_step = malloc(rows * sizeof(float));
  s->lse_next = malloc(rows * sizeof(float));
  s->kv_own = malloc(2 * half_floats(s, s->rank) * sizeof(float));
  float *tmp = malloc((size_t)(op->heads * max_chunk * d) * sizeof(float));
  /* the receive buffers: step t receives into kv_buf[t % 2], P - 1 transfers in all */
  s->kv_buf[0] = P > 1 ? malloc(kv_max * sizeof(float)) : NULL;
  s->kv_buf[1] = P > 2 ? malloc(kv_max * sizeof(float)) : NULL;
  if (!s->q || !s->o || !s->o_step || !s->lse || !s->lse_step || !s->lse_next || !s->kv_own ||
      !tmp || (P > 1 && !s->kv_buf[0]) || (P > 2 && !s->kv_buf[1])) {
    fprintf(stderr, "mpi_ring: rank %d: out of memory\n", s->rank);
    free(tmp);
    return 0;
  }
  fill_local(s, s->q, EX_TENSOR_Q, op->heads, tmp);
  fill_local(s, s->kv_own, EX_TENSOR_K, op->heads_kv, tmp);
  fill_local(s, s->kv_own + half_floats(s, s->rank), EX_TENSOR_V, op->heads_kv, tmp);
  free(tmp);

  txattn_options copt = TXATTN_OPTIONS_INIT;
  copt.n_threads = (int)op->threads;
  return !failed(s, txattn_context_create(&copt, &s->ctx), "txattn_context_create");
}

/* Query-key pairs rank r computes in a pass (a causal call of l rows: l (l + 1) / 2). */
static double rank_pairs(const ring_state *s, int r) {
  double pairs = 0;
  for (int t = 0; t < s->size; t++) {
    const int src = (r - t + s->size) % s->size;
    ring_call calls[MAX_CALLS];
    const int n_calls = plan_step(s, r, src, calls);
    for (int k = 0; k < n_calls; k++) {
      const double nq = (double)(row_of(s, r, calls[k].q1) - row_of(s, r, calls[k].q0)),
                   nk = (double)(row_of(s, src, calls[k].k1) - row_of(s, src, calls[k].k0));
      pairs += calls[k].causal ? nq * (nq + 1) / 2 : nq * nk;
    }
  }
  return pairs;
}

/* Rank 0 names the layout, the spread of the work over the ranks and the kernels the dispatcher
   picks for its calls of steps 0 and 1 (before they are cut into pieces). */
static void describe(const ring_state *s) {
  const options *op = &s->opt;
  const int P = s->size, threads = txattn_context_threads(s->ctx);
  const long long lo = op->n / s->n_chunks, hi = (op->n + s->n_chunks - 1) / s->n_chunks;
  char chunks[64];
  if (lo == hi)
    snprintf(chunks, sizeof chunks, "%d chunks of %lld", s->n_chunks, lo);
  else
    snprintf(chunks, sizeof chunks, "%d chunks of %lld and %lld", s->n_chunks, lo, hi);
  printf("mpi_ring: libtxattn %s, %d rank%s x %d thread%s: n %lld, heads %lld/%lld, d %lld, "
         "mask %s, fp32\n",
         txattn_version_string(), P, P == 1 ? "" : "s", threads, threads == 1 ? "" : "s",
         (long long)op->n, (long long)op->heads, (long long)op->heads_kv, (long long)op->d,
         op->causal ? "causal" : "none");
  double most = 0, least = INFINITY;
  for (int r = 0; r < P; r++) {
    const double w = rank_pairs(s, r);
    most = w > most ? w : most;
    least = w < least ? w : least;
  }
  printf("layout %s: %s (%s); query-key pairs per rank and head: %.4g to %.4g\n",
         layout_names[op->layout], chunks,
         op->layout == LAYOUT_ZIGZAG ? "rank r holds chunks r and 2P-1-r" : "rank r holds chunk r",
         least, most);
  for (int t = 0; t < (P < 2 ? P : 2); t++) {
    const int src = (P - t) % P;
    ring_call calls[MAX_CALLS];
    const int n_calls = plan_step(s, 0, src, calls);
    for (int k = 0; k < n_calls; k++) {
      const int64_t nq = row_of(s, 0, calls[k].q1) - row_of(s, 0, calls[k].q0);
      const txattn_problem p = call_problem(s, src, &calls[k], 0, nq);
      txattn_plan *plan = NULL;
      printf("rank 0, step %d: %lld queries x %lld keys, %s: ", t, (long long)p.n_q,
             (long long)p.n_kv, p.mask == TXATTN_MASK_CAUSAL ? "causal" : "unmasked");
      if (txattn_plan_create(s->ctx, &p, NULL, &plan) == TXATTN_OK)
        printf("%s (%s)\n", txattn_plan_kernel(plan), txattn_plan_why(plan));
      else
        printf("no kernel plans (%s)\n", txattn_last_error());
      txattn_plan_free(plan);
    }
  }
  fflush(stdout);
}

static void teardown(ring_state *s) {
  txattn_context_free(s->ctx);
  free(s->start), free(s->local), free(s->rank_len), free(s->rank_off);
  free(s->q), free(s->o), free(s->o_step), free(s->lse), free(s->lse_step), free(s->lse_next);
  free(s->kv_own), free(s->kv_buf[0]), free(s->kv_buf[1]);
}

int main(int argc, char **argv) {
  int provided = 0;
  /* Only the main thread calls MPI; libtxattn's threads (OpenMP in some kernels) never do. */
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ring_state s = {.comm = MPI_COMM_WORLD};
  MPI_Comm_rank(s.comm, &s.rank);
  MPI_Comm_size(s.comm, &s.size);
  int rc = parse_options(argc, argv, &s.opt, s.size, s.rank != 0);
  if (rc != 0) {
    MPI_Finalize();
    return rc == 1 ? 0 : 2;
  }
  MPI_Type_contiguous((int)s.opt.d, MPI_FLOAT, &s.o_row_type);
  MPI_Type_commit(&s.o_row_type);

  int ok = all_ok(&s, setup(&s));
  if (ok && s.rank == 0) describe(&s);
  ok = ok && checked_pass(&s);
  ok = ok && timed_passes(&s);
  if (s.rank == 0) printf("mpi_ring: %s\n", ok ? "all checks passed" : "FAILED");

  teardown(&s);
  MPI_Type_free(&s.o_row_type);
  MPI_Finalize();
  return ok ? 0 : 1;
}
