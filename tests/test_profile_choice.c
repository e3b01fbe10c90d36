/* txtune profile's choice of a point's winner (tuner/profile_measure.c, prof_choose): the fastest,
   or among the candidates within the noise of it the preferred one. The rule is what makes two
   profiles in a row agree, so each part of it is pinned here on made-up timings. */
#include <stddef.h>
#include <string.h>

#include <criterion/criterion.h>

#include "profile.h"

/* A candidate timed in full: its median and the spread of its runs. */
static prof_cand timed(const char *name, int slot, int parallel, double time_s, double spread) {
  prof_cand c;
  memset(&c, 0, sizeof c);
  c.name = name;
  c.slot = slot;
  c.parallel = parallel;
  c.time_s = time_s;
  c.spread = spread;
  c.n_runs = 5;
  return c;
}

/* A rough one: one run (or pruned), its fastest run as its time, no spread. */
static prof_cand rough(const char *name, int slot, int parallel, double time_s) {
  prof_cand c = timed(name, slot, parallel, time_s, -1);
  c.rough = 1;
  c.n_runs = 1;
  return c;
}

Test(profile_choice, the_fastest_wins_when_nothing_is_within_the_noise) {
  prof_cand c[] = {timed("a", 0, 0, 1.10, 0.001), timed("b", 0, 0, 1.00, 0.001),
                   timed("c", 0, 0, 1.07, 0.001)};
  cr_expect_eq(prof_choose(c, 3), 1);
}

Test(profile_choice, alike_in_every_preference_the_faster_wins) {
  /* within the tie floor, but neither is preferred: not the name ("a" < "b"), the time decides */
  prof_cand c[] = {timed("b", 0, 0, 1.00, 0.001), timed("a", 0, 0, 1.02, 0.001)};
  cr_expect_eq(prof_choose(c, 2), 0);
}

Test(profile_choice, a_kernel_that_starts_no_threads_is_preferred_within_the_tie_floor) {
  /* spreads far below PROF_TIE_MIN: the floor makes z (2% slower) a tie */
  prof_cand c[] = {timed("a_omp", 0, 1, 1.00, 0.001), timed("z", 0, 0, 1.02, 0.001)};
  cr_expect_eq(prof_choose(c, 2), 1);
  /* just past the floor it is not */
  c[1].time_s = 1.0 + PROF_TIE_MIN + 0.002;
  cr_expect_eq(prof_choose(c, 2), 0);
}

Test(profile_choice, a_wide_spread_widens_the_tie_up_to_its_limit) {
  prof_cand c[] = {timed("tiled", 1, 0, 1.00, 0.05), timed("tiled", 0, 0, 1.045, 0.001)};
  cr_expect_eq(prof_choose(c, 2), 1, "4.5%% slower with a 5%% spread is a tie");
  c[0].spread = 0.5; /* no wider than PROF_TIE_MAX between single-thread kernels */
  c[1].time_s = 1.0 + PROF_TIE_MAX + 0.005;
  cr_expect_eq(prof_choose(c, 2), 0);
}

Test(profile_choice, the_default_tunables_are_preferred_to_a_variant) {
  prof_cand c[] = {timed("tiled", 1, 0, 1.00, 0.001), timed("tiled", 0, 0, 1.02, 0.001)};
  cr_expect_eq(prof_choose(c, 2), 1);
}

Test(profile_choice, a_threaded_pair_ties_up_to_the_threaded_limit) {
  prof_cand c[] = {timed("omp", 1, 1, 1.00, 0.12), timed("omp", 0, 1, 1.11, 0.01)};
  c[0].threaded = c[1].threaded = 1;
  cr_expect_eq(prof_choose(c, 2), 1, "11%% with a 12%% spread on several threads is a tie");
  c[0].spread = 0.5;
  c[1].time_s = 1.0 + PROF_TIE_MAX_THREADED + 0.01;
  cr_expect_eq(prof_choose(c, 2), 0);
}

/* A rough time is one run, or the fastest run of a candidate that was out of the race: it does not
   take a tie from a candidate timed in full, whatever the other preferences say. */
Test(profile_choice, a_rough_time_never_wins_a_tie) {
  prof_cand c[] = {timed("tiled", 1, 0, 1.00, 0.001), rough("tiled", 0, 0, 1.013)};
  cr_expect_eq(prof_choose(c, 2), 0, "the default tunables' single run does not take the tie");
  /* the same holds when the rough one is the fastest by less than the noise */
  prof_cand d[] = {rough("a", 0, 0, 0.99), timed("b", 1, 1, 1.00, 0.001)};
  cr_expect_eq(prof_choose(d, 2), 1);
  /* but a rough one faster by more than the noise wins: it is the fastest */
  d[0].time_s = 0.90;
  cr_expect_eq(prof_choose(d, 2), 0);
}

Test(profile_choice, a_single_run_is_not_timed_in_full) {
  /* not pruned, but planned with one run (a candidate out of the race): no median, no spread */
  prof_cand one = timed("tiled", 0, 0, 1.01, -1);
  one.n_runs = 1;
  prof_cand c[] = {timed("tiled", 1, 0, 1.00, 0.001), one};
  cr_expect_eq(prof_choose(c, 2), 0);
}
