/* SPDX-License-Identifier: MIT */
/* The team watch's rule (team_watch.h). No OpenMP here: the kernels call it from thread 0. */
#include <time.h>

#include "team_watch.h"

int64_t team_watch_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int team_watch_size(team_watch *w, int threads, int64_t now) {
  if (threads < 2) return threads;
  const int cap = atomic_load_explicit(&w->cap, memory_order_relaxed);
  if (cap <= 0 || cap >= threads) return threads;
  if (now >= atomic_load_explicit(&w->until_ns, memory_order_relaxed)) return threads;
  return cap;
}

static int64_t period_ns(int level) {
  return (int64_t)TEAM_WATCH_BASE_NS << level;
}

/* Adds a call to the team's record since the last cap and returns whether the team has been
   slower than one thread on the whole: the record's wall time above its one-thread estimates. Past
   TEAM_WATCH_HORIZON_NS of wall time the record is halved, so that old calls fade. */
static int slower_on_the_whole(team_watch *w, int64_t wall, int64_t alone) {
  const int64_t ws = atomic_fetch_add_explicit(&w->wall_ns, wall, memory_order_relaxed) + wall;
  const int64_t as = atomic_fetch_add_explicit(&w->alone_ns, alone, memory_order_relaxed) + alone;
  if (ws > TEAM_WATCH_HORIZON_NS) {
    atomic_store_explicit(&w->wall_ns, ws / 2, memory_order_relaxed);
    atomic_store_explicit(&w->alone_ns, as / 2, memory_order_relaxed);
  }
  return ws > as;
}

int team_watch_report(team_watch *w, int team, int64_t start_ns, int64_t end_ns, int64_t tasks,
                      const team_clock *c) {
  if (team < 2 || c->tasks <= 0 || tasks <= 0) return 0;
  const int64_t alone = (int64_t)((double)c->busy_ns * (double)tasks / (double)c->tasks);
  const int64_t wall = end_ns - start_ns;
  const int slower = slower_on_the_whole(w, wall, alone);
  if ((double)wall <= TEAM_WATCH_LATE * (double)alone || wall - alone < TEAM_WATCH_MIN_LOSS_NS ||
      !slower)
    return 0;
  /* Late: a smaller team for a period, twice the last one if that ended only recently. */
  int level = atomic_load_explicit(&w->level, memory_order_relaxed);
  const int64_t last_end = atomic_load_explicit(&w->until_ns, memory_order_relaxed);
  if (last_end > 0 && end_ns - last_end <= TEAM_WATCH_FORGET * period_ns(level))
    level = level < TEAM_WATCH_MAX_LEVEL ? level + 1 : level;
  else
    level = 0;
  atomic_store_explicit(&w->level, level, memory_order_relaxed);
  atomic_store_explicit(&w->until_ns, end_ns + period_ns(level), memory_order_relaxed);
  atomic_store_explicit(&w->cap, team / 2, memory_order_relaxed);
  atomic_store_explicit(&w->wall_ns, 0, memory_order_relaxed);
  atomic_store_explicit(&w->alone_ns, 0, memory_order_relaxed);
  return 1;
}
