/* SPDX-License-Identifier: MIT */
/* A threaded kernel's watch over its OpenMP team: when a call's team made it slower than one thread
 * alone would have been, the next calls start a smaller team for a while.
 *
 * Why: a parallel region ends when its last thread arrives. When another process holds the core a
 * team thread runs on (a build, a second program's threads: more runnable threads than cores), the
 * scheduler can park that thread for a whole time slice while the others wait at the region's end,
 * and a call then takes many times what one thread alone would have (docs/measurements.md).
 *
 * How: the thread that starts the region (thread 0) times its own tasks (team_clock); its time per
 * task times the number of tasks estimates what the call would have taken on one thread. A call
 * whose region lasted more than TEAM_WATCH_LATE times that estimate, and longer by a time slice,
 * was late; if the team's calls since the last cap have also been slower than their estimates on
 * the whole, the team is halved for TEAM_WATCH_BASE_NS << level, then the full team is tried
 * again. A late call within TEAM_WATCH_FORGET periods of the last cap's end doubles the period
 * (up to TEAM_WATCH_MAX_LEVEL doublings, about 1 s), so lasting contention costs about one late
 * call a second, however often the full team happens to be on time in between; a stray late call
 * on a quiet machine costs nothing (the team's record is far ahead) or one base period.
 *
 * Both tests are needed. The first reacts at once: with one core taken by another process, every
 * call loses a time slice. The second keeps a team that is often held up but faster on the whole
 * (with every core shared, a team that loses a time slice on some calls can still beat one thread
 * on average, and judging each call alone would cap it: docs/measurements.md). A thread 0 held up
 * inside its own tasks inflates the estimate as much as the region: that is no sign of a late
 * team, and one thread alone would not have escaped it.
 *
 * The kernels keep the same tasks whatever the team's size (a team of one runs them all, each
 * with the same arithmetic), so a call's results do not depend on the watch.
 *
 * One watch per plugin (the condition belongs to the machine, not to a plan); plans stay read-only
 * and a watch is updated with relaxed atomics: two threads reporting at once can lose a level or
 * a call's share of the record, which only delays the reaction. */
#ifndef TXATTN_PLUGIN_TEAM_WATCH_H
#define TXATTN_PLUGIN_TEAM_WATCH_H

#include <stdatomic.h>
#include <stdint.h>

/* A late call: its region lasted more than this many times the one-thread estimate, and lost at
   least TEAM_WATCH_MIN_LOSS_NS against it: a time slice lost, not a hiccup. A quiet machine's
   hiccups (a woken vCPU, a host interrupt) cost well under 1 ms and would otherwise cap the team
   and skew a profile's times; a team held up by a competing process loses milliseconds a call
   (docs/measurements.md). */
#define TEAM_WATCH_LATE        1.5
#define TEAM_WATCH_MIN_LOSS_NS 1000000
/* A late call caps the team only if the team's calls since the last cap, this one included, took
   longer than their one-thread estimates; the record of those calls is halved whenever its wall
   time passes this, so that a long quiet stretch does not hide a competing process for long. */
#define TEAM_WATCH_HORIZON_NS 100000000
/* The first smaller-team period, and the most doublings of it (4 ms << 8: about 1 s). */
#define TEAM_WATCH_BASE_NS   4000000
#define TEAM_WATCH_MAX_LEVEL 8
/* A late call this many periods after the last cap's end starts again from the base period. */
#define TEAM_WATCH_FORGET 4

typedef struct team_watch {
  _Atomic int64_t wall_ns;  /* the team's calls since the last cap: their wall time */
  _Atomic int64_t alone_ns; /* and their one-thread estimates (both fade, TEAM_WATCH_HORIZON_NS) */
  _Atomic int64_t until_ns; /* the cap holds until then (monotonic clock); 0: never capped */
  atomic_int cap;           /* largest team while the cap holds */
  atomic_int level;         /* the cap's period is TEAM_WATCH_BASE_NS << level */
} team_watch;

/* What thread 0 measured of its own tasks during one call. */
typedef struct team_clock {
  int64_t busy_ns; /* time inside its tasks */
  int64_t tasks;   /* tasks it ran */
  int on;          /* this thread keeps the clock (thread 0) */
} team_clock;

/* The monotonic clock, in nanoseconds. */
int64_t team_watch_now(void);

/* The team to start for a call that may use `threads` threads, at time now. */
int team_watch_size(team_watch *w, int threads, int64_t now);

/* Thread 0's report of a call that ran on a team of `team` threads from start_ns to end_ns, `tasks`
   tasks in all, of which it ran and timed those in c. A late call of a team slower than one thread
   on the whole caps the team at half its size.
   Nothing is judged for a team of one or when thread 0 ran no task. Returns 1 if the call was
   late. */
int team_watch_report(team_watch *w, int team, int64_t start_ns, int64_t end_ns, int64_t tasks,
                      const team_clock *c);

static inline int64_t team_clock_start(const team_clock *c) {
  return c->on ? team_watch_now() : 0;
}

static inline void team_clock_stop(team_clock *c, int64_t start_ns) {
  if (!c->on) return;
  c->busy_ns += team_watch_now() - start_ns;
  c->tasks++;
}

#endif /* TXATTN_PLUGIN_TEAM_WATCH_H */
