/* SPDX-License-Identifier: MIT */
/* The threaded plugins' team watch (plugins/common/team_watch.h) on made-up timings: which calls
 * are late, how long the team stays smaller, the back-off and its end. Times in nanoseconds. */
#include <criterion/criterion.h>

#include "team_watch.h"

#define MS   1000000
#define BASE ((int64_t)TEAM_WATCH_BASE_NS)

/* A call on a team of `team` from `start`, lasting `wall`, whose thread 0 ran `mine` of the
   `tasks` tasks in `busy`. */
static int call(team_watch *w, int team, int64_t start, int64_t wall, int64_t tasks, int64_t mine,
                int64_t busy) {
  const team_clock c = {busy, mine, 1};
  return team_watch_report(w, team, start, start + wall, tasks, &c);
}

/* A call of 10 ms whose one-thread estimate is 2 ms; returns its end. */
static int64_t late_call(team_watch *w, int team, int64_t start) {
  cr_assert_eq(call(w, team, start, 10 * MS, 2, 2, 2 * MS), 1);
  return start + 10 * MS;
}

Test(team_watch, a_team_on_time_keeps_its_size) {
  team_watch w = {0};
  cr_assert_eq(team_watch_size(&w, 2, 0), 2);
  int64_t now = 0;
  for (int i = 0; i < 30; i++, now += 2 * MS) /* 1 ms a call where one thread takes 2 */
    cr_assert_eq(call(&w, 2, now, 1 * MS, 4, 2, 1 * MS), 0);
  cr_assert_eq(team_watch_size(&w, 2, now), 2);
}

Test(team_watch, a_late_call_halves_the_team_for_the_base_period) {
  team_watch w = {0};
  const int64_t end = late_call(&w, 2, 0);
  cr_assert_eq(team_watch_size(&w, 2, end), 1);
  cr_assert_eq(team_watch_size(&w, 2, end + BASE - 1), 1);
  cr_assert_eq(team_watch_size(&w, 2, end + BASE), 2, "then the full team again");
  cr_assert_eq(team_watch_size(&w, 1, end), 1, "a one-thread call is left alone");
}

Test(team_watch, the_estimate_is_thread_0s_time_per_task) {
  /* thread 0 ran 1 of 8 tasks in 2 ms: alone 16 ms, late beyond 24 ms */
  team_watch w = {0};
  cr_assert_eq(call(&w, 2, 0, 24 * MS, 8, 1, 2 * MS), 0, "1.5 times alone: not late");
  team_watch v = {0};
  cr_assert_eq(call(&v, 2, 0, 24 * MS + 1, 8, 1, 2 * MS), 1);
  /* a thread 0 that was itself held up inside its task is no sign of a late team */
  team_watch q = {0};
  cr_assert_eq(call(&q, 2, 0, 12 * MS, 2, 1, 11 * MS), 0);
  /* nor is a thread 0 that ran every task: the wait for the others is what counts */
  team_watch r = {0};
  cr_assert_eq(call(&r, 2, 0, 5 * MS, 2, 2, 4 * MS), 0);
  cr_assert_eq(call(&r, 2, 0, 7 * MS, 2, 2, 4 * MS), 1);
}

Test(team_watch, a_team_faster_on_the_whole_keeps_its_size_through_late_calls) {
  team_watch w = {0};
  int64_t now = 0;
  for (int i = 0; i < 50; i++, now += MS) /* 0.3 ms a call where one thread takes 0.8 */
    cr_assert_eq(call(&w, 2, now, 300000, 2, 1, 400000), 0);
  /* calls that lose a 7.2 ms time slice each: the team's lead of 25 ms lasts three of them */
  for (int i = 0; i < 3; i++, now += 10 * MS)
    cr_assert_eq(call(&w, 2, now, 8 * MS, 2, 1, 400000), 0, "late call %d", i);
  cr_assert_eq(team_watch_size(&w, 2, now), 2);
  cr_assert_eq(call(&w, 2, now, 8 * MS, 2, 1, 400000), 1, "the fourth uses it up");
  cr_assert_eq(team_watch_size(&w, 2, now + 8 * MS), 1);
}

Test(team_watch, a_long_good_record_fades) {
  team_watch w = {0};
  int64_t now = 0;
  for (int i = 0; i < 100000; i++, now += MS)
    cr_assert_eq(call(&w, 2, now, 300000, 2, 1, 400000), 0);
  /* 30 s of a team 2.7 times faster than one thread, then a process takes a core */
  int late = 0;
  while (late < 20 && !call(&w, 2, now, 8 * MS, 2, 1, 400000)) {
    late++;
    now += 10 * MS;
  }
  cr_assert_gt(late, 0, "the first late call is covered by the team's record");
  cr_assert_lt(late, 20, "but only the last %.0f ms of it count", TEAM_WATCH_HORIZON_NS / 1e6);
}

Test(team_watch, a_hiccup_is_no_late_team) {
  /* 4 times the estimate, but 0.6 ms lost: a woken core, an interrupt */
  team_watch w = {0};
  cr_assert_eq(call(&w, 2, 0, 800000, 2, 2, 200000), 0);
  cr_assert_eq(call(&w, 2, 0, TEAM_WATCH_MIN_LOSS_NS + 200000 - 1, 2, 2, 200000), 0);
  cr_assert_eq(team_watch_size(&w, 2, 1 * MS), 2);
  cr_assert_eq(call(&w, 2, 0, TEAM_WATCH_MIN_LOSS_NS + 200000, 2, 2, 200000), 1);
}

Test(team_watch, nothing_is_counted_without_a_team_or_thread_0s_tasks) {
  team_watch w = {0};
  cr_assert_eq(call(&w, 1, 0, 100 * MS, 4, 4, 1 * MS), 0, "a team of one");
  cr_assert_eq(call(&w, 2, 0, 100 * MS, 4, 0, 0), 0, "thread 0 ran no task");
  cr_assert_eq(team_watch_size(&w, 2, 100 * MS), 2);
}

Test(team_watch, late_calls_soon_after_a_cap_double_its_period_up_to_the_most) {
  team_watch w = {0};
  int64_t now = 0;
  for (int i = 0; i <= TEAM_WATCH_MAX_LEVEL + 2; i++) {
    cr_assert_eq(team_watch_size(&w, 2, now), 2, "call %d: the full team", i);
    now = late_call(&w, 2, now);
    const int level = i < TEAM_WATCH_MAX_LEVEL ? i : TEAM_WATCH_MAX_LEVEL;
    cr_assert_eq(team_watch_size(&w, 2, now + (BASE << level) - 1), 1, "level %d", level);
    cr_assert_eq(team_watch_size(&w, 2, now + (BASE << level)), 2);
    now += BASE << level;
  }
}

Test(team_watch, a_late_call_long_after_the_last_cap_starts_from_the_base_period) {
  team_watch w = {0};
  int64_t now = 0;
  for (int i = 0; i < 3; i++) /* three late calls in a row: the last period is 4x the base */
    now = late_call(&w, 2, now) + (BASE << i);
  /* the full team on time for more than TEAM_WATCH_FORGET periods of the last cap */
  now += TEAM_WATCH_FORGET * (BASE << 2);
  now = late_call(&w, 2, now);
  cr_assert_eq(team_watch_size(&w, 2, now + BASE - 1), 1);
  cr_assert_eq(team_watch_size(&w, 2, now + BASE), 2, "the base period again");
}

Test(team_watch, a_late_capped_team_is_halved_again) {
  team_watch w = {0};
  int64_t now = late_call(&w, 8, 0);
  cr_assert_eq(team_watch_size(&w, 8, now), 4);
  cr_assert_eq(team_watch_size(&w, 16, now), 4, "the cap holds for a call asking more");
  now = late_call(&w, 4, now);
  cr_assert_eq(team_watch_size(&w, 8, now), 2);
  cr_assert_eq(team_watch_size(&w, 2, now), 2, "a call asking no more than the cap keeps it");
}

Test(team_watch, the_clock_counts_thread_0s_tasks_only) {
  team_clock on = {0, 0, 1}, off = {0, 0, 0};
  const int64_t a = team_clock_start(&on), b = team_clock_start(&off);
  team_clock_stop(&on, a);
  team_clock_stop(&off, b);
  cr_assert_eq(on.tasks, 1);
  cr_assert_geq(on.busy_ns, 0);
  cr_assert_eq(off.tasks, 0);
  cr_assert_eq(off.busy_ns, 0);
  cr_assert_gt(team_watch_now(), 0);
}
