/* SPDX-License-Identifier: MIT */
/* txtune profile's close calls timed again later (tuner/profile/profile_revisit.c): how a visited
   point is settled. A visit comes seconds after the point, at another speed of the host; the
   contenders' times must stay comparable with those of the candidates that were timed only at the
   point. The visits' times are made up here (no plans: the settling is what is pinned). */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "profile_revisit.h"

/* The settled point's candidates, copied by the record callback. */
static prof_cand settled[8];
static size_t n_settled;

static void keep_settled(void *arg, prof_open_point *pt) {
  (void)arg;
  n_settled = pt->nc;
  memcpy(settled, pt->c, pt->nc * sizeof *pt->c);
}

/* A point of nc candidates timed at t[] (seconds a call), of which the first `who` are contenders;
   contender j was timed at visits 1..timed[j] (all `visits` if timed is NULL), at visit_s[j][k]
   (index 0 is the point's time). */
static void settle(const double *t, size_t nc, int who, int visits,
                   const double visit_s[][PROF_MAX_RUNS], const int *timed) {
  prof_revisits rv = {.visits = visits};
  rv.pts = calloc(1, sizeof *rv.pts);
  cr_assert_not_null(rv.pts);
  rv.n = rv.cap = 1;
  prof_open_point *pt = &rv.pts[0];
  pt->c = calloc(nc, sizeof *pt->c);
  cr_assert_not_null(pt->c);
  pt->nc = nc;
  for (size_t i = 0; i < nc; i++) {
    pt->c[i].time_s = t[i];
    pt->c[i].spread = 0.01;
    pt->c[i].n_runs = 5;
  }
  pt->n_who = who;
  pt->visits = visits;
  for (int j = 0; j < who; j++) {
    int last = timed ? timed[j] : visits;
    pt->who[j] = (size_t)j;
    pt->n_visits[j] = last + 1;
    pt->visit_s[j][0] = t[j];
    for (int k = 1; k <= last; k++) {
      pt->visit_s[j][k] = visit_s[j][k];
      pt->visit_no[j][k] = k;
    }
  }
  n_settled = 0;
  prof_revisits_settle(&rv, 1, keep_settled, NULL);
  cr_assert_eq(n_settled, nc);
  cr_expect_eq(rv.n, 0, "a settled point is not open any more");
  prof_revisits_free(&rv);
}

Test(profile_revisit, visits_at_another_speed_keep_the_contenders_at_the_points_level) {
  /* two contenders 2% apart at the point, a third candidate 25% slower timed there only; the
     visits find the host 40% slower, then faster, then slower, the contenders still 2% apart */
  const double t[] = {10e-6, 10.2e-6, 12.5e-6};
  const double v[2][PROF_MAX_RUNS] = {{0, 14e-6, 6e-6, 14e-6}, {0, 14.28e-6, 6.12e-6, 14.28e-6}};
  settle(t, 3, 2, 3, v, NULL);
  cr_expect_float_eq(settled[0].time_s, 10e-6, 1e-9, "the leader stays at %g s, not at the visits'",
                     settled[0].time_s);
  cr_expect_float_eq(settled[1].time_s / settled[0].time_s, 1.02, 1e-6,
                     "the contenders' ratio is what every visit measured");
  cr_expect(settled[2].time_s > settled[1].time_s, "the one timed at the point only is still last");
  cr_expect_float_eq(settled[0].spread, 0, 1e-9, "no spread left once the shared speed is out");
  cr_expect_eq(settled[0].rough, 0);
}

Test(profile_revisit, the_visits_can_overrule_the_point_and_their_disagreement_is_the_spread) {
  /* the second contender is 2% slower at the point and at the last visit, 8% faster at the first
     two (at twice the time a call): it is the faster, and the spreads show the 10% swing */
  const double t[] = {10e-6, 10.2e-6};
  const double v[2][PROF_MAX_RUNS] = {{0, 20e-6, 20e-6, 20e-6}, {0, 18.4e-6, 18.4e-6, 20.4e-6}};
  settle(t, 2, 2, 3, v, NULL);
  cr_expect(settled[1].time_s < settled[0].time_s, "faster at two of four: %g s against %g s",
            settled[1].time_s, settled[0].time_s);
  cr_expect(settled[0].spread > 0.03 && settled[1].spread > 0.03, "spreads %g and %g",
            settled[0].spread, settled[1].spread);
}

Test(profile_revisit, a_visit_with_one_contender_says_nothing_of_the_speed) {
  /* the second contender was not timed at visits 2 and 3: they give no factor, so the first keeps
     what visit 1 and the point say, not the 2x faster host of visits 2 and 3 */
  const double t[] = {10e-6, 11e-6};
  const double v[2][PROF_MAX_RUNS] = {{0, 20e-6, 5e-6, 5e-6}, {0, 22e-6}};
  const int timed[] = {3, 1};
  settle(t, 2, 2, 3, v, timed);
  cr_expect_float_eq(settled[0].time_s, 10e-6, 1e-9, "%g s: visits 2 and 3 left out",
                     settled[0].time_s);
  cr_expect_float_eq(settled[1].time_s, 11e-6, 1e-9);
}
