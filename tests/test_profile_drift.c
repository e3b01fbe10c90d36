/* txtune profile's removal of the drift that candidates timed together share
   (tuner/profile_drift.c, prof_remove_drift), on made-up runs. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include <criterion/criterion.h>

#include "profile.h"

/* A candidate with runs v[0..n) taken in rounds 0..n-1. */
static prof_cand runs_of(const double *v, int n) {
  prof_cand c;
  memset(&c, 0, sizeof c);
  for (int k = 0; k < n; k++) {
    c.runs[k] = v[k];
    c.round[k] = k;
  }
  c.n_runs = n;
  return c;
}

static double median_adj(const prof_cand *c) {
  double v[PROF_MAX_RUNS];
  int n = c->n_runs;
  memcpy(v, c->adj, (size_t)n * sizeof v[0]);
  for (int i = 1; i < n; i++) /* insertion sort: a handful of values */
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      double x = v[j];
      v[j] = v[j - 1];
      v[j - 1] = x;
    }
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The machine slows down by 1.9x for rounds 2 and 3 (a neighbour on the host): measured as they
   are, a's median is 1.9 and b's 1.71, and either could look the faster with one round fewer;
   taken out, each keeps its level and b stays 0.9 of a in every round. */
Test(profile_drift, a_shared_slowdown_leaves_the_ratio_and_the_levels) {
  const double drift[5] = {1, 1, 1.9, 1.9, 1.9};
  double a[5], b[5];
  for (int k = 0; k < 5; k++) {
    a[k] = 1.0 * drift[k];
    b[k] = 0.9 * drift[k];
  }
  prof_cand c[2] = {runs_of(a, 5), runs_of(b, 5)};
  prof_remove_drift(c, 2);
  for (int k = 0; k < 5; k++) {
    cr_expect_float_eq(c[1].adj[k] / c[0].adj[k], 0.9, 1e-12, "round %d", k);
    cr_expect_float_eq(c[0].runs[k], a[k], 0, "the runs as measured stay");
  }
  cr_expect_float_eq(c[0].adj[0], c[0].adj[4], 1e-12, "no spread left in a");
  double level = median_adj(&c[0]);
  cr_expect(level >= 1.0 - 1e-12 && level <= 1.9 + 1e-12, "a's level %g is one it measured", level);
}

/* One candidate's stall in one round is its own, not the round's: the median of three ratios
   keeps the others as they were and leaves the stall in the stalled run. */
Test(profile_drift, one_candidates_stall_is_not_taken_for_drift) {
  double a[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2}, s[4] = {3, 3, 9, 3};
  prof_cand c[3] = {runs_of(a, 4), runs_of(b, 4), runs_of(s, 4)};
  prof_remove_drift(c, 3);
  for (int k = 0; k < 4; k++) {
    cr_expect_float_eq(c[0].adj[k], 1, 1e-12, "a round %d", k);
    cr_expect_float_eq(c[1].adj[k], 2, 1e-12, "b round %d", k);
  }
  cr_expect_float_eq(c[2].adj[2], 9, 1e-12, "the stall stays where it happened");
}

/* A candidate pruned after one run keeps it as measured, whatever the round's factor, which the
   candidates with two runs or more set; a round with fewer than two of them is left alone. */
Test(profile_drift, a_single_run_stays_as_measured) {
  double a[3] = {2, 1, 1}, b[3] = {4, 2, 2}, once[1] = {3};
  prof_cand c[3] = {runs_of(a, 3), runs_of(b, 3), runs_of(once, 1)};
  prof_remove_drift(c, 3);
  cr_expect_float_eq(c[2].adj[0], 3, 1e-12, "one run: as measured, got %g", c[2].adj[0]);
  cr_expect_float_eq(c[0].adj[0], 1, 1e-12, "round 0 ran twice as slow for a and b");

  double x[3] = {1, 5, 1};
  prof_cand alone[1] = {runs_of(x, 3)};
  prof_remove_drift(alone, 1);
  cr_expect_float_eq(alone[0].adj[1], 5, 1e-12, "nothing to compare it with: as measured");
}

/* A run outside any round (round -1) is not corrected, and does not set a factor. */
Test(profile_drift, a_run_outside_the_rounds_stays_as_measured) {
  double a[3] = {1, 2, 1}, b[3] = {2, 4, 2};
  prof_cand c[2] = {runs_of(a, 3), runs_of(b, 3)};
  c[1].round[1] = -1;
  prof_remove_drift(c, 2);
  cr_expect_float_eq(c[1].adj[1], 4, 1e-12);
  cr_expect_float_eq(c[0].adj[1], 2, 1e-12, "round 1 has one candidate now: factor 1");
}
