/* SPDX-License-Identifier: MIT */
/* Executes a banded_omp plan (banded_omp_plan.h): the only place that starts OpenMP threads, and
 * only from inside the kernel's run(). Every thread's scratch is a slice of the host's workspace:
 * nothing is allocated here. The plugin's team watch (team_watch.h) sizes each call's team. */
#include <omp.h>

#include "banded_omp_plan.h"
#include "team_watch.h"

/* The test build (BOMP_TEST_TEAM) always starts the plan's whole team, so that the batteries run
   the parallel path even when ctest's jobs crowd the cores. */
#ifdef BOMP_TEST_TEAM
#define BOMP_WATCH 0
#else
#define BOMP_WATCH 1
#endif

static team_watch bomp_watch;

static int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/* Task k: chunk-major, so the tasks run in the order of their rows' cost when rev puts the widest
   rows (causal: the last ones) first and the cheap ones fill the end; heads interleaved. */
static void run_task(const bomp_plan *pl, const txattn_kernel_call *call, banded_head *hd,
                     int64_t k) {
  const txattn_problem *p = pl->p;
  const int64_t c = k / pl->heads, head = k % pl->heads;
  const int64_t chunk = pl->rev ? pl->chunks - 1 - c : c;
  banded_head_at(hd, call->tensors, head / p->heads_q, head % p->heads_q);
  hd->row0 = chunk * pl->chunk_rows;
  hd->row1 = min64(hd->row0 + pl->chunk_rows, p->n_q);
  pl->kernel->head(hd);
}

txattn_status bomp_run(const bomp_plan *pl, const txattn_kernel_call *call) {
  char *ws = call->workspace;
  if (pl->threads == 1) return banded_run(call, pl->kernel->head, pl->kernel->panels);
  const int64_t tasks = pl->heads * pl->chunks;
  const int64_t start = team_watch_now();
  const int want = BOMP_WATCH ? team_watch_size(&bomp_watch, pl->threads, start) : pl->threads;
  team_clock clock0 = {0, 0, 0};
  int team = 1;
#pragma omp parallel num_threads(want)
  {
    const int tid = omp_get_thread_num();
    team_clock clock = {0, 0, tid == 0};
    banded_head hd;
    banded_head_init(&hd, call, ws + (size_t)tid * pl->scratch_bytes);
#pragma omp for schedule(dynamic) nowait
    for (int64_t k = 0; k < tasks; k++) {
      const int64_t t = team_clock_start(&clock);
      run_task(pl, call, &hd, k);
      team_clock_stop(&clock, t);
    }
    if (tid == 0) {
      clock0 = clock;
      team = omp_get_num_threads();
    }
  }
  if (BOMP_WATCH) team_watch_report(&bomp_watch, team, start, team_watch_now(), tasks, &clock0);
  return TXATTN_OK;
}
