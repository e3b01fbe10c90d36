/* SPDX-License-Identifier: MIT */
/* The banded_omp plan: how many threads, how many rows per task, the workspace (see
 * banded_omp_plan.h). No OpenMP here: workspace_size() calls it from the host's planning thread. */
#include "banded_omp_plan.h"

/* BOMP_MIN_FLOPS_PER_THREAD: below this much work per thread (the flops the kernel computes,
   2 (d_qk + d_v) cost_pairs), a team costs more than it saves: the threshold is where a team on
   2 threads won in every process, warm or asleep (docs/measurements.md).
   BOMP_MIN_CHUNK_ROWS: a chunk's start costs about the time of 1 to 3 of its rows (its first group
   packs the window's key panels again and finds K and V cold); 256 rows keep that near 1%.
   BOMP_MIN_SHORT_CHUNK_ROWS: chunks that long leave few tasks on short heads, and the threads idle
   in turn; so where 256-row chunks balance badly, chunks go down to 64 rows, and only there, since
   shorter chunks cost time elsewhere (docs/measurements.md).
   The test build (BOMP_TEST_TEAM, see CMakeLists.txt) starts a team for any work and cuts heads
   into the shortest chunks, so that the batteries' small shapes run the parallel path and its
   chunk boundaries. */
#ifdef BOMP_TEST_TEAM
#define BOMP_MIN_FLOPS_PER_THREAD 0.0
#define BOMP_MIN_CHUNK_ROWS       BANDED_MR
#define BOMP_MIN_SHORT_CHUNK_ROWS BANDED_MR
#else
#define BOMP_MIN_FLOPS_PER_THREAD 5e5
#define BOMP_MIN_CHUNK_ROWS       256
#define BOMP_MIN_SHORT_CHUNK_ROWS 64
#endif

/* Tasks per thread the chunks aim at: with dynamic scheduling a thread that loses its core for a
   while leaves its remaining tasks to the others, and the last tasks' unevenness is a quarter of
   a thread's share at most. */
#define BOMP_TASKS_PER_THREAD 4
/* Where the tasks (counted equal) would keep the threads busy less than this fraction of the time,
   chunks get shorter (BOMP_MIN_SHORT_CHUNK_ROWS). */
#define BOMP_MIN_BALANCE 0.9

static int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
static int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
static int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* Threads worth starting for the work the call does: the pairs the kernel computes and its
   per-row work (its cost_pairs), not the dense bound, which overstates a narrow window's work by
   n / r. The count stops once it has enough for n_threads threads. */
static int threads_for_work(const bomp_plan *pl, int n_threads) {
  const txattn_problem *p = pl->p;
  if (n_threads < 2) return 1;
  const double flops_per_pair = 2.0 * (double)(p->d_qk + p->d_v);
  const double enough = (double)n_threads * BOMP_MIN_FLOPS_PER_THREAD / flops_per_pair;
  const double flops = flops_per_pair * pl->kernel->cost_pairs(p, enough);
  if (flops < 2.0 * BOMP_MIN_FLOPS_PER_THREAD) return 1;
  if (flops >= (double)n_threads * BOMP_MIN_FLOPS_PER_THREAD) return n_threads;
  return (int)(flops / BOMP_MIN_FLOPS_PER_THREAD);
}

/* The fraction of the time n equal tasks keep t threads busy. */
static double balance(int64_t n, int64_t t) {
  return (double)n / (double)(t * ceil_div(n, t));
}

/* Chunks per head: enough for BOMP_TASKS_PER_THREAD tasks per thread, none shorter than
   BOMP_MIN_CHUNK_ROWS rows (a head shorter than that is one task); if those balance badly, the
   fewest chunks of at least BOMP_MIN_SHORT_CHUNK_ROWS rows that balance well. */
static void choose_chunks(bomp_plan *pl, int64_t t) {
  const int64_t n_q = pl->p->n_q;
  const int64_t want = ceil_div(BOMP_TASKS_PER_THREAD * t, pl->heads);
  int64_t chunks = min64(want, max64(1, n_q / BOMP_MIN_CHUNK_ROWS));
  const int64_t most = max64(1, n_q / BOMP_MIN_SHORT_CHUNK_ROWS);
  while (chunks < most && balance(pl->heads * chunks, t) < BOMP_MIN_BALANCE) chunks++;
  pl->chunk_rows = ceil_div(ceil_div(n_q, chunks), BANDED_MR) * BANDED_MR;
  pl->chunks = ceil_div(n_q, pl->chunk_rows);
}

int bomp_plan_init(bomp_plan *pl, const bomp_kernel *k, const txattn_problem *p, int n_threads) {
  pl->p = p;
  pl->kernel = k;
  pl->heads = p->batch * p->heads_q;
  pl->threads = 1;
  pl->chunk_rows = p->n_q;
  pl->chunks = 1;
  const int t = threads_for_work(pl, n_threads);
  if (t >= 2 && p->n_q > 0) {
    choose_chunks(pl, t);
    pl->threads = (int)min64(t, pl->heads * pl->chunks);
  }
  int64_t lo0, hi0, lo1, hi1;
  txattn_visible_range(p, 0, &lo0, &hi0);
  txattn_visible_range(p, p->n_q - 1, &lo1, &hi1);
  pl->rev = hi1 - lo1 > hi0 - lo0;
  pl->scratch_bytes = banded_round64(banded_workspace_bytes(p, k->panels));
  if (pl->scratch_bytes > SIZE_MAX / (size_t)pl->threads) return 0;
  pl->total = pl->scratch_bytes * (size_t)pl->threads;
  return 1;
}
