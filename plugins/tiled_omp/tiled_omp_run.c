/* SPDX-License-Identifier: MIT */
/* Executes a tiled_omp plan (tiled_omp_plan.h): the only place that starts OpenMP threads, and only
 * from inside the kernel's run(). Every thread's scratch, every packed head and every partial is a
 * slice of the host's workspace: nothing is allocated here. The plugin's team watch (team_watch.h)
 * sizes each call's team: the tasks stay the same whatever its size. */
#include <omp.h>

#include "team_watch.h"
#include "tiled_omp_plan.h"

/* The test build (TOMP_TEST_TEAM) always starts the plan's whole team, so that the batteries run
   the parallel paths even when ctest's jobs crowd the cores. */
#ifdef TOMP_TEST_TEAM
#define TOMP_WATCH 0
#else
#define TOMP_WATCH 1
#endif

static team_watch tomp_watch;

/* One thread's state in a region: its scratch and (thread 0) the clock of its tasks. */
typedef struct tomp_worker {
  tiled_scratch w;
  team_clock clock;
} tomp_worker;

/* What thread 0 leaves for the watch. */
typedef struct tomp_team {
  int size;
  team_clock clock;
} tomp_team;

static int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/* Thread tid's scratch (the direct path's when g.direct). */
static void scratch_init(const tomp_plan *pl, char *ws, int tid, tiled_scratch *w) {
  void *mem = ws + pl->off_scratch + (size_t)tid * pl->scratch_bytes;
  tiled_scratch_carve(&pl->g, pl->ops, pl->stream, mem, w);
}

/* The calling thread's worker state in a region. */
static void worker_init(const tomp_plan *pl, char *ws, tomp_worker *wk) {
  const int tid = omp_get_thread_num();
  scratch_init(pl, ws, tid, &wk->w);
  wk->clock = (team_clock){0, 0, tid == 0};
}

/* Thread 0 leaves its clock and the team's size at the end of a region. */
static void worker_done(const tomp_worker *wk, tomp_team *team) {
  if (!wk->clock.on) return;
  team->size = omp_get_num_threads();
  team->clock = wk->clock;
}

/* Query blocks [qb0, qb1) of head hd against every key they see, into the output; kv is the packed
   head or NULL. */
static void run_rows(const tomp_plan *pl, const float *kv, int64_t hd, int64_t qb0, int64_t qb1,
                     const tiled_scratch *w) {
  const tiled_geom *g = &pl->g;
  const int64_t b = hd / g->p->heads_kv, kvh = hd % g->p->heads_kv;
  if (g->direct) /* one query block of all the rows */
    pl->ops->run_direct(g, b, kvh, 0, g->rows, 0, g->p->n_kv, NULL, w);
  else
    pl->ops->run_qblocks(g, kv, b, kvh, qb0, qb1, w);
}

static float *head_buffer(const tomp_plan *pl, char *ws, int64_t slot) {
  return (float *)(ws + (size_t)slot * pl->head_bytes);
}

/* The single-thread kernel's loop: each head packed once, then all its query blocks. */
static void run_serial(const tomp_plan *pl, char *ws) {
  const tiled_geom *g = &pl->g;
  const int64_t hkv = g->p->heads_kv;
  float *kv = pl->stream ? NULL : head_buffer(pl, ws, 0);
  tiled_scratch w;
  scratch_init(pl, ws, 0, &w);
  for (int64_t hd = 0; hd < pl->heads; hd++) {
    if (kv) pl->ops->pack_kv(g, hd / hkv, hd % hkv, pl->kb0, pl->kb1, kv);
    run_rows(pl, kv, hd, 0, g->n_qblocks, &w);
  }
}

/* One query block per head: every task streams its own head, nothing is shared. */
static void run_streamed_heads(const tomp_plan *pl, char *ws, tomp_team *team) {
#pragma omp parallel num_threads(team->size)
  {
    tomp_worker wk;
    worker_init(pl, ws, &wk);
#pragma omp for schedule(dynamic) nowait
    for (int64_t hd = 0; hd < pl->heads; hd++) {
      const int64_t t = team_clock_start(&wk.clock);
      run_rows(pl, NULL, hd, 0, pl->g.n_qblocks, &wk.w);
      team_clock_stop(&wk.clock, t);
    }
    worker_done(&wk, team);
  }
}

/* Visible keys of the query block's first and last positions: a rough cost of the block. */
static int64_t qblock_width(const tiled_geom *g, int64_t qb) {
  const int64_t t0 = qb * g->br, t1 = min64(t0 + g->br, g->rows);
  int64_t lo, hi, lo2, hi2;
  txattn_visible_range(g->p, t0 / g->group, &lo, &hi);
  txattn_visible_range(g->p, (t1 - 1) / g->group, &lo2, &hi2);
  return hi2 - lo;
}

/* The packed head of phase-local head j: two phases' sets of buffers alternate. */
static float *phase_head(const tomp_plan *pl, char *ws, int64_t phase, int64_t j) {
  return head_buffer(pl, ws, (phase & 1) * pl->phase_heads + j);
}

static int64_t phase_size(const tomp_plan *pl, int64_t phase) {
  return min64(pl->phase_heads, pl->heads - phase * pl->phase_heads);
}

/* Task k of a phase's packing: one key block of one head. */
static void pack_task(const tomp_plan *pl, char *ws, int64_t phase, int64_t k, tomp_worker *wk) {
  const int64_t t = team_clock_start(&wk->clock);
  const int64_t nkb = pl->kb1 - pl->kb0, j = k / nkb, kb = pl->kb0 + k % nkb;
  const int64_t hd = phase * pl->phase_heads + j, hkv = pl->g.p->heads_kv;
  pl->ops->pack_kv(&pl->g, hd / hkv, hd % hkv, kb, kb + 1, phase_head(pl, ws, phase, j));
  team_clock_stop(&wk->clock, t);
}

/* Task k of a phase's compute: query blocks in decreasing rough cost (rev: from the last one), so
   that the cheap ones fill the end; the heads of the phase are interleaved. */
static void qblock_task(const tomp_plan *pl, char *ws, int64_t phase, int64_t k, int rev,
                        tomp_worker *wk) {
  const int64_t t = team_clock_start(&wk->clock);
  const int64_t np = phase_size(pl, phase), j = k % np, qi = k / np;
  const int64_t qb = rev ? pl->g.n_qblocks - 1 - qi : qi;
  run_rows(pl, phase_head(pl, ws, phase, j), phase * pl->phase_heads + j, qb, qb + 1, &wk->w);
  team_clock_stop(&wk->clock, t);
}

/* Whole heads per thread, when the heads split evenly over the team and each thread has a buffer of
   its own: thread t packs and runs heads t, t + team, ..., so no thread reads what another packed
   and no barrier is needed. Why: on CPUs far apart (another core complex, where a VM's host may
   place its vCPUs) the shared scheme below, where a query block often runs on the thread that did
   not pack its head, pays a slow cache-line round trip for every block it reads
   (docs/measurements.md). The tasks are the same
   (each key block packed and each query block run as one), so are the results and the watch's
   estimate. */
static int whole_heads(const tomp_plan *pl, int team) {
  return pl->heads % team == 0 && pl->head_buffers >= team;
}

static void run_whole_heads(const tomp_plan *pl, char *ws, tomp_worker *wk) {
  const int tid = omp_get_thread_num(), team = omp_get_num_threads();
  const int64_t hkv = pl->g.p->heads_kv;
  float *kv = head_buffer(pl, ws, tid);
  for (int64_t hd = tid; hd < pl->heads; hd += team) {
    for (int64_t kb = pl->kb0; kb < pl->kb1; kb++) {
      const int64_t t = team_clock_start(&wk->clock);
      pl->ops->pack_kv(&pl->g, hd / hkv, hd % hkv, kb, kb + 1, kv);
      team_clock_stop(&wk->clock, t);
    }
    for (int64_t qb = 0; qb < pl->g.n_qblocks; qb++) {
      const int64_t t = team_clock_start(&wk->clock);
      run_rows(pl, kv, hd, qb, qb + 1, &wk->w);
      team_clock_stop(&wk->clock, t);
    }
  }
}

/* Several query blocks per head: the phase's heads are packed by all threads, then shared. A
   thread done with this phase's query blocks goes on to pack the next phase into the other set of
   buffers (nowait); the barrier closing that packing is the only one per phase, and it also
   guarantees that nobody still reads the buffers the phase after will overwrite. */
static void run_packed_heads(const tomp_plan *pl, char *ws, tomp_team *team) {
  const tiled_geom *g = &pl->g;
  const int64_t phases = (pl->heads + pl->phase_heads - 1) / pl->phase_heads;
  const int64_t nkb = pl->kb1 - pl->kb0;
  const int rev = qblock_width(g, g->n_qblocks - 1) >= qblock_width(g, 0);
#pragma omp parallel num_threads(team->size)
  {
    tomp_worker wk;
    worker_init(pl, ws, &wk);
    if (whole_heads(pl, omp_get_num_threads())) { /* the same for every thread of the team */
      run_whole_heads(pl, ws, &wk);
      worker_done(&wk, team);
    } else {
#pragma omp for schedule(dynamic)
      for (int64_t k = 0; k < phase_size(pl, 0) * nkb; k++) pack_task(pl, ws, 0, k, &wk);
      for (int64_t f = 0; f < phases; f++) {
#pragma omp for schedule(dynamic) nowait
        for (int64_t k = 0; k < phase_size(pl, f) * g->n_qblocks; k++)
          qblock_task(pl, ws, f, k, rev, &wk);
        if (f + 1 < phases) {
#pragma omp for schedule(dynamic)
          for (int64_t k = 0; k < phase_size(pl, f + 1) * nkb; k++)
            pack_task(pl, ws, f + 1, k, &wk);
        }
      }
      worker_done(&wk, team);
    }
  }
}

/* The key blocks that rows [t0, t1) of a query block see: [*a, *e). */
static void unit_key_blocks(const tiled_geom *g, int64_t t0, int64_t t1, int64_t *a, int64_t *e) {
  int64_t first = -1, last = -1;
  for (int64_t i = t0 / g->group; i <= (t1 - 1) / g->group; i++) {
    int64_t lo, hi;
    txattn_visible_range(g->p, i, &lo, &hi);
    if (lo < hi) {
      if (first < 0) first = lo;
      last = hi;
    }
  }
  *a = first < 0 ? 0 : first / g->bc;
  *e = first < 0 ? 0 : (last + g->bc - 1) / g->bc;
  if (g->sink_keys > 0) { /* every row sees keys [0, K) too */
    *a = 0;
    const int64_t sink_blocks = (g->sink_keys + g->bc - 1) / g->bc;
    if (*e < sink_blocks) *e = sink_blocks;
  }
}

static tiled_partial *part_descs(const tomp_plan *pl, char *ws) {
  return (tiled_partial *)(ws + pl->off_descs);
}

/* Task k of the key split: chunk c of query block u's key blocks, into partial k. */
static void krange_task(const tomp_plan *pl, char *ws, int64_t k, tomp_worker *wk) {
  const int64_t t = team_clock_start(&wk->clock);
  const tiled_geom *g = &pl->g;
  const int64_t u = k / pl->chunks, c = k % pl->chunks, hd = u / g->n_qblocks;
  const int64_t hkv = g->p->heads_kv, t0 = (u % g->n_qblocks) * g->br;
  const int64_t t1 = min64(t0 + g->br, g->rows);
  int64_t a, e;
  unit_key_blocks(g, t0, t1, &a, &e);
  const int64_t k0 = (a + (e - a) * c / pl->chunks) * g->bc;
  const int64_t k1 = min64((a + (e - a) * (c + 1) / pl->chunks) * g->bc, g->p->n_kv);
  char *mem = ws + pl->off_parts + (size_t)k * pl->part_bytes;
  const size_t vec = ((size_t)g->br * sizeof(float) + 63) / 64 * 64;
  tiled_partial *part = &part_descs(pl, ws)[k];
  part->m = (float *)mem;
  part->l = (float *)(mem + vec);
  part->acc = (float *)(mem + 2 * vec);
  part->ld = g->dv;
  if (g->direct)
    pl->ops->run_direct(g, hd / hkv, hd % hkv, t0, t1, k0, k1, part, &wk->w);
  else
    pl->ops->run_krange(g, NULL, hd / hkv, hd % hkv, t0, t1, k0, k1, part, &wk->w);
  team_clock_stop(&wk->clock, t);
}

/* Few query blocks: each one's keys are cut into chunks run by different threads, then each
   query block's partials are merged into its output rows (the merge spreads NaN over a row). */
static void run_key_split(const tomp_plan *pl, char *ws, tomp_team *team) {
  const tiled_geom *g = &pl->g;
  const int64_t hkv = g->p->heads_kv;
#pragma omp parallel num_threads(team->size)
  {
    tomp_worker wk;
    worker_init(pl, ws, &wk);
#pragma omp for schedule(dynamic)
    for (int64_t k = 0; k < pl->units * pl->chunks; k++) krange_task(pl, ws, k, &wk);
#pragma omp for schedule(dynamic) nowait
    for (int64_t u = 0; u < pl->units; u++) {
      const int64_t t = team_clock_start(&wk.clock);
      const int64_t hd = u / g->n_qblocks, t0 = (u % g->n_qblocks) * g->br;
      /* the thread's scratch acc (free once the key ranges are done) holds a 16-bit o's row */
      tiled_merge_partials(g, hd / hkv, hd % hkv, t0, min64(t0 + g->br, g->rows),
                           part_descs(pl, ws) + u * pl->chunks, (int)pl->chunks, wk.w.acc);
      team_clock_stop(&wk.clock, t);
    }
    worker_done(&wk, team);
  }
}

/* The tasks of a parallel mode's region, for the watch's one-thread estimate. */
static int64_t region_tasks(const tomp_plan *pl) {
  if (pl->mode == TOMP_KSPLIT) return pl->units * (pl->chunks + 1);
  if (pl->stream) return pl->heads;
  return pl->heads * (pl->kb1 - pl->kb0 + pl->g.n_qblocks);
}

void tomp_run(const tomp_plan *pl, void *workspace) {
  char *ws = workspace;
  if (pl->mode == TOMP_SERIAL) {
    run_serial(pl, ws);
    return;
  }
  const int64_t start = team_watch_now();
  const int want = TOMP_WATCH ? team_watch_size(&tomp_watch, pl->threads, start) : pl->threads;
  tomp_team team = {want, {0, 0, 0}};
  if (pl->mode == TOMP_KSPLIT)
    run_key_split(pl, ws, &team);
  else if (pl->stream)
    run_streamed_heads(pl, ws, &team);
  else
    run_packed_heads(pl, ws, &team);
  if (TOMP_WATCH)
    team_watch_report(&tomp_watch, team.size, start, team_watch_now(), region_tasks(pl),
                      &team.clock);
}
