/* SPDX-License-Identifier: MIT */
/* The tiled_omp plan: which mode, how many threads, how the workspace is laid out (see
 * tiled_omp_plan.h). No OpenMP here: workspace_size() calls it from the host's planning thread. */
#include "tiled_omp_plan.h"

/* Below this much work per thread, a team costs more than it saves: waking a libgomp team and its
   closing barrier take microseconds (tens of them for the first region of a process), the time of
   about this many flops on one core (docs/measurements.md). The test build (TOMP_TEST_TEAM, see
   CMakeLists.txt) starts a team for any work, so that the small shapes of the batteries run the
   parallel paths too. */
#ifdef TOMP_TEST_TEAM
#define TOMP_MIN_FLOPS_PER_THREAD 0.0
#else
#define TOMP_MIN_FLOPS_PER_THREAD 2e6
#endif

/* Query-block tasks are split by keys too when they would keep the threads busy less than this
   fraction of the time (counting tasks as equal: 5 heads of decode on 2 threads, 5 / 6), or when
   there are fewer than TOMP_MIN_TASKS_PER_THREAD per thread (decode with one kv head): then a
   thread slowed by another process would hold up the others. The key split's extra cost is the
   merge, a few d_v-long rows per query block. */
#define TOMP_MIN_BALANCE          0.9
#define TOMP_MIN_TASKS_PER_THREAD 2

/* QBLOCKS packs enough heads per phase for this many query-block tasks per thread. */
#define TOMP_PHASE_TASKS_PER_THREAD 8

static int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
static int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
static size_t align64(size_t n) {
  return (n + 63) / 64 * 64;
}

/* a * b, or SIZE_MAX when it overflows */
static size_t mul_sat(size_t a, size_t b) {
  return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}
static size_t add_sat(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* Threads worth starting for the work the call does: the pairs it computes (padding included) and
   its per-row work (tiled_cost_pairs), not the dense bound, which overstates a narrow window's
   work by n / r and started a team where it cost more than it saved. */
static int threads_for_work(const tomp_plan *pl, int n_threads) {
  const txattn_problem *p = pl->g.p;
  const double flops = 2.0 * (double)(p->d_qk + p->d_v) * tiled_cost_pairs(&pl->g, pl->ops);
  if (flops < 2.0 * TOMP_MIN_FLOPS_PER_THREAD) return 1;
  if (flops >= (double)n_threads * TOMP_MIN_FLOPS_PER_THREAD) return n_threads;
  return (int)(flops / TOMP_MIN_FLOPS_PER_THREAD);
}

/* The fraction of the time n equal tasks keep t threads busy. */
static double balance(int64_t n, int64_t t) {
  return (double)n / (double)(t * ceil_div(n, t));
}

/* Key ranges per query block (at most the key blocks they span, and 4 per thread): the fewest that
   make enough tasks that balance well; else the split that finishes first (counting a query
   block's work as 1), if it beats no split; else 1. */
static int64_t split_chunks(const tomp_plan *pl, int64_t t) {
  const int64_t u = pl->units, cmax = min64(pl->kb1 - pl->kb0, 4 * t);
  if (u >= TOMP_MIN_TASKS_PER_THREAD * t && balance(u, t) >= TOMP_MIN_BALANCE) return 1;
  int64_t best = 1;
  double best_time = (double)ceil_div(u, t);
  for (int64_t c = 2; c <= cmax; c++) {
    if (u * c >= TOMP_MIN_TASKS_PER_THREAD * t && balance(u * c, t) >= TOMP_MIN_BALANCE) return c;
    const double time = (double)ceil_div(u * c, t) / (double)c;
    if (time < best_time) {
      best = c;
      best_time = time;
    }
  }
  return best;
}

static void choose_mode(tomp_plan *pl, int n_threads) {
  const int64_t t = threads_for_work(pl, n_threads);
  pl->mode = TOMP_SERIAL;
  pl->threads = 1;
  pl->chunks = 1;
  if (t < 2) return;
  pl->chunks = split_chunks(pl, t);
  if (pl->chunks > 1) {
    pl->mode = TOMP_KSPLIT;
    pl->threads = (int)min64(t, pl->units * pl->chunks);
  } else if (pl->units >= 2) {
    pl->mode = TOMP_QBLOCKS;
    pl->threads = (int)min64(t, pl->units);
  }
}

static void lay_out(tomp_plan *pl) {
  const tiled_geom *g = &pl->g;
  pl->stream = pl->mode == TOMP_KSPLIT || g->n_qblocks == 1;
  pl->phase_heads = 0;
  pl->head_buffers = 0;
  if (!pl->stream) {
    const int64_t want = ceil_div(TOMP_PHASE_TASKS_PER_THREAD * pl->threads, g->n_qblocks);
    pl->phase_heads = pl->mode == TOMP_SERIAL ? 1 : min64(pl->heads, want);
    /* two phases' buffers, so packing the next phase overlaps the end of this one */
    pl->head_buffers = min64(pl->heads, pl->mode == TOMP_SERIAL ? 1 : 2 * pl->phase_heads);
  }
  pl->head_bytes = tiled_packed_head_bytes(g);
  pl->scratch_bytes = tiled_scratch_bytes(g, pl->ops, pl->stream);
  pl->part_bytes = 0;
  if (pl->mode == TOMP_KSPLIT)
    pl->part_bytes = 2 * align64((size_t)g->br * sizeof(float)) +
                     align64((size_t)g->br * (size_t)g->dv * sizeof(float));
  pl->off_scratch = mul_sat((size_t)pl->head_buffers, pl->head_bytes);
  pl->off_descs = add_sat(pl->off_scratch, mul_sat((size_t)pl->threads, pl->scratch_bytes));
  pl->off_parts = pl->off_descs;
  if (pl->mode == TOMP_KSPLIT) {
    const size_t n_parts = (size_t)(pl->units * pl->chunks);
    pl->off_parts = add_sat(pl->off_descs, align64(mul_sat(n_parts, sizeof(tiled_partial))));
    pl->total = add_sat(pl->off_parts, mul_sat(n_parts, pl->part_bytes));
  } else {
    pl->total = pl->off_parts;
  }
  pl->off_vis = pl->total;
  pl->total = add_sat(pl->total, tiled_mask_summary_bytes(g));
}

int tomp_plan_init(tomp_plan *pl, const tiled_ops *ops, const txattn_problem *p,
                   const txattn_tensors *t, int n_threads, int64_t br, int64_t bc) {
  if (!tiled_geom_init(&pl->g, p, t, ops, br, bc)) return 0;
  pl->ops = ops;
  pl->heads = p->batch * p->heads_kv;
  pl->units = pl->heads * pl->g.n_qblocks;
  tiled_key_span(&pl->g, &pl->kb0, &pl->kb1);
  choose_mode(pl, n_threads);
  lay_out(pl);
  return pl->total != SIZE_MAX;
}
