/* The banded_omp plan: how many threads, how many rows per task, the workspace (see
 * banded_omp_plan.h). No OpenMP here: workspace_size() calls it from the host's planning thread. */
#include "banded_omp_plan.h"

/* BOMP_MIN_FLOPS_PER_THREAD: below this much work per thread (the flops the kernel computes,
   2 (d_qk + d_v) cost_pairs), a team costs more than it saves. Measured on Zen 2 (2 cores),
   banded_omp.avx2 on 2 threads against banded.avx2, window 17 + 17, 2 heads, d = 64 and 128,
   n = 4 .. 512, 5 processes each: calls back to back (`txtune bench`, a warm team) break even at
   about 2e5 flops a call (1.3e5: 1.01-1.06x the time, 2.5e5: 0.87-0.91x), and from 1e6 on take at
   most 0.62x the time in every process; calls 5 ms apart (the team asleep) pay 3-5 us to wake it,
   and from 1e6 flops on the team still won in every process (0.64-0.82x), below that as often lost
   as won.
   BOMP_MIN_CHUNK_ROWS: a chunk's start costs about the time of 1 to 3 of its rows (its first group
   packs the window's key panels again and finds K and V cold): one head of n = 4096 on 2 threads
   in chunks of 16, 32, 128 and 512 rows took 479, 456, 437 and 424 us at d = 64, window 17 + 17,
   and 5046, 4830, 4547 and 4478 us at d = 128, window 129 + 129; 256 rows keep it near 1%.
   BOMP_MIN_SHORT_CHUNK_ROWS: chunks that long leave few tasks on short heads, and the threads idle
   in turn: 3 heads of n = 344 on 2 threads were 3 tasks, 2 of them on one thread (causal, d = 128:
   0.90 ms, against tiled_omp.avx2's 0.79); in chunks of 172 rows, 0.70 ms. So where 256-row chunks
   balance badly, chunks go down to 64 rows (2 heads of n = 512 in 128-row chunks instead of 256:
   4% slower, so only where it pays).
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
