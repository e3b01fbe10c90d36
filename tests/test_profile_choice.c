/* SPDX-License-Identifier: MIT */
/* txtune profile's choice of a point's winner (tuner/profile/profile_measure.c, prof_choose): the
   fastest, or among the candidates within the noise of it the preferred one. The rule is what makes
   two profiles in a row agree, so each part of it is pinned here on made-up timings. Which kernels
   are a point's candidates (prof_candidates), on the build tree's plugins. And what the timing
   (prof_time) does with a candidate it pruned close to the leader, on a test kernel whose calls
   take as long as its tunable says. */
#include <stddef.h>
#include <string.h>

#include <criterion/criterion.h>

#include "profile.h"
#include "scratch.h"
#include "test_context.h"
#include "test_plugin_names.h"

static char scratch[SCRATCH_PATH_MAX];

static void cleanup(void) {
  scratch_remove(scratch);
  test_check_leaks();
}

TestSuite(profile_choice, .init = test_env_clean, .fini = cleanup);

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
  /* on one thread (neither runs on several); spreads far below tie_min: the floor makes z (2%
     slower) a tie */
  prof_cand c[] = {timed("a_omp", 0, 1, 1.00, 0.001), timed("z", 0, 0, 1.02, 0.001)};
  cr_expect_eq(prof_choose(c, 2), 1);
  /* just past the floor it is not */
  c[1].time_s = 1.0 + prof_policy.tie_min + 0.002;
  cr_expect_eq(prof_choose(c, 2), 0);
}

/* Where one of the two runs on several threads, starting none is no preference: within the tie the
   faster wins (a single-thread kernel ties with a threaded one only while the other CPU gives the
   threads little, a spell the next profile does not meet). */
Test(profile_choice, beside_a_kernel_on_several_threads_the_faster_takes_the_tie) {
  prof_cand c[] = {timed("a_omp", 0, 1, 1.00, 0.001), timed("z", 0, 0, 1.02, 0.001)};
  c[0].threaded = 1;
  cr_expect_eq(prof_choose(c, 2), 0, "the single-thread kernel took the tie from a threaded one");
  c[1].time_s = 0.99;
  cr_expect_eq(prof_choose(c, 2), 1);
}

/* The fastest (a variant) has a spread of `spread`: the default tunables `within` slower are a tie;
   with any spread, the tie stops at `limit`. */
static void expect_tie_up_to(double spread, double within, double limit, int threaded) {
  prof_cand c[] = {timed("tiled", 1, threaded, 1.00, spread),
                   timed("tiled", 0, threaded, 1.0 + within, 0.001)};
  c[0].threaded = c[1].threaded = threaded;
  cr_expect_eq(prof_choose(c, 2), 1, "%.1f%% slower with a %.1f%% spread is a tie", 100 * within,
               100 * spread);
  c[0].spread = 0.5;
  c[1].time_s = 1.0 + limit + 0.005;
  cr_expect_eq(prof_choose(c, 2), 0, "no tie past %.0f%%", 100 * limit);
}

Test(profile_choice, a_wide_spread_widens_the_tie_up_to_its_limit) {
  expect_tie_up_to(0.05, 0.045, prof_policy.tie_max.single, 0);
}

Test(profile_choice, the_default_tunables_are_preferred_to_a_variant) {
  prof_cand c[] = {timed("tiled", 1, 0, 1.00, 0.001), timed("tiled", 0, 0, 1.02, 0.001)};
  cr_expect_eq(prof_choose(c, 2), 1);
}

Test(profile_choice, a_threaded_pair_ties_up_to_the_threaded_limit) {
  expect_tie_up_to(0.12, 0.11, prof_policy.tie_max.threaded, 1);
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

/* Among one kernel's tile variants (the race follows that one to the next n): the same rule. */
Test(profile_choice, among_one_kernels_variants_the_same_rule) {
  prof_cand c[] = {timed("banded", 0, 0, 0.50, 0.001), timed("tiled", 1, 0, 1.00, 0.001),
                   timed("tiled", 0, 0, 1.01, 0.001), timed("tiled", 2, 0, 0.99, 0.001)};
  c[0].kernel = 0;
  c[1].kernel = c[2].kernel = c[3].kernel = 1;
  cr_expect_eq(prof_choose_kernel(c, 4, 1), 2, "the default tunables, within the noise");
  c[3].time_s = 0.95;
  cr_expect_eq(prof_choose_kernel(c, 4, 1), 3, "a variant faster by more than the noise");
  cr_expect_eq(prof_choose_kernel(c, 4, 0), 0);
  cr_expect_eq(prof_choose_kernel(c, 4, 7), 4, "no candidate of that kernel");
  c[0].n_runs = 0;
  cr_expect_eq(prof_choose_kernel(c, 4, 0), 4, "nor one that was not timed");
}

/* The cost of a run, which the profile's plan counts on: the timed calls that make it last 1.25 x
   min_run_s (one call if longer), and its warm-up's one untimed call while a call takes 50 ms at
   most (so that no run starts in the caches another candidate left). */
Test(profile_choice, a_run_costs_its_timed_calls_and_one_warm_up_call) {
  prof_settings s = {.mode = PROF_DEFAULT, .min_run_s = 0.002, .rounds = 5, .prune_ratio = 1.15};
  cr_expect_float_eq(prof_run_len(&s, 0.001), 0.003 + 0.001, 1e-12); /* 3 calls + warm-up */
  cr_expect_float_eq(prof_run_len(&s, 0.01), 0.01 + 0.01, 1e-12);    /* 1 call + warm-up */
  cr_expect_float_eq(prof_run_len(&s, 0.05), 0.05 + 0.05, 1e-12);
  cr_expect_float_eq(prof_run_len(&s, 0.2), 0.2, 1e-12); /* too long for a warm-up */
}

/* ---- the candidates of a point ---- */

/* Whether the candidates list kernel. */
static int lists(const prof_cand *c, size_t n, const char *kernel) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(c[i].name, kernel) == 0) return 1;
  return 0;
}

/* On one thread a threaded kernel that names its twin (one_thread_same_as) is left to it, unless
   the settings time every kernel (validate); on two threads both are candidates. */
Test(profile_choice, on_one_thread_a_kernels_twin_stands_in_for_it) {
  txattn_problem p = {.heads_q = 2, .n_q = 256, .d_qk = 64, .mask = TXATTN_MASK_CAUSAL};
  prof_settings s = {.mode = PROF_DEFAULT,
                     .min_run_s = 0.002,
                     .rounds = 5,
                     .prune_ratio = 1.15,
                     .variants = 0,
                     .one_loop_once = 1};
  prof_cand c[64];
  int checked = 0;
  for (int threads = 1; threads <= 2; threads++) {
    txattn_context *ctx = test_context(threads);
    for (int once = 0; once <= 1; once++) {
      s.one_loop_once = once;
      size_t n = prof_candidates(ctx, &p, &s, c, 64);
      for (size_t k = 0; k < txattn_kernel_count(ctx); k++) {
        txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
        cr_assert_eq(txattn_kernel_get(ctx, k, &info), TXATTN_OK);
        if (!info.usable || info.one_thread_same_as == NULL || !test_kernel_takes_types(&info, &p))
          continue;
        int left = threads == 1 && once;
        cr_expect(lists(c, n, info.one_thread_same_as), "%s is not a candidate",
                  info.one_thread_same_as);
        cr_expect_eq(lists(c, n, info.name), !left, "%s on %d thread(s), one_loop_once %d: %s",
                     info.name, threads, once, left ? "timed beside its twin" : "left out");
        cr_expect_eq(prof_twin_stands_in(ctx, &p, &info), threads == 1);
        checked++;
      }
      prof_candidates_free(c, n);
    }
    txattn_context_free(ctx);
  }
  cr_expect_geq(checked, 8, "only %d kernels name a twin", checked);
}

/* ---- timing ---- */

/* The candidate of the spin kernel whose calls take us microseconds. */
static const prof_cand *spinning(const prof_cand *c, size_t n, int64_t us) {
  for (size_t i = 0; i < n; i++)
    if (c[i].tun_values[0] == us) return &c[i];
  return NULL;
}

/* Calls of 100 us (the leader), 115 us and 400 us, pruned at 1.05 x the leader: after two rounds
   the two slower ones are out of the race (a call lasts at least its spin). The 115 us one, within
   the confirmation ratio of the leader, is then timed against it run for run and counts as timed
   in full (three paired runs, a spread); the 400 us one stays rough; the leader keeps its five
   runs. Without the room to confirm (confirm_share 0; it is no near tie), the 115 us one stays as
   pruned. What is asserted is what the timing did, not how long anything took: a timing whose runs
   other processes slowed so much that the premise fails (the leader pruned, the 115 us one not
   pruned, pruned beyond the ratio, the 400 us one not pruned because the leader's first runs were
   slowed, or a near tie, which is confirmed whatever the room) is done again, up to 10 times in
   all; the test fails if no timing ever meets the premise. */
Test(profile_choice, a_pruned_candidate_close_to_the_leader_is_timed_again_against_it) {
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_copy_plugin(scratch, TEST_SPIN_FILE, NULL, 0644);
  txattn_context *ctx = test_context_at(scratch, 1);
  txattn_problem p = {.n_q = 4, .d_qk = 4};
  float q[16] = {0}, k[16] = {0}, v[16] = {0}, o[16];
  const txattn_tensors t = {.q = q, .k = k, .v = v, .o = o};
  const char *names[] = {TEST_SPIN_TUNABLE};
  const int64_t us[] = {100, 115, 400};
  prof_cand c[3];
  size_t n = 0;
  for (int i = 0; i < 3; i++)
    n = prof_candidate_add(ctx, &p, TEST_SPIN_KERNEL, names, &us[i], 1, c, n, 3);
  cr_assert_eq(n, 3, "%s", txattn_last_error());
  prof_settings s = {.mode = PROF_DEFAULT, .min_run_s = 0.001, .rounds = 5, .prune_ratio = 1.05};
  int checked[2] = {0, 0};
  for (int attempt = 0; attempt < 10 && !(checked[0] && checked[1]); attempt++) {
    const int room = attempt % 2 == 0;
    s.confirm_share = room ? 10 : 0; /* three candidates make a cheap point */
    cr_assert_eq(prof_time(c, &n, &t, &s), TXATTN_OK, "%s", txattn_last_error());
    cr_assert_eq(n, 3);
    const prof_cand *lead = spinning(c, n, 100), *near = spinning(c, n, 115),
                    *far = spinning(c, n, 400);
    cr_assert(lead && near && far);
    const int pruned = near->n_runs < 5, confirmed = !near->rough && near->n_runs == 3;
    /* a call of it lasts 115 us at least, so it was a near tie only if the leader came out slow */
    const int could_tie = (1 + prof_policy.tie_max.single) * lead->time_s >= 115e-6;
    if (lead->rough || !pruned || !far->rough ||
        (!confirmed && near->time_s > prof_policy.confirm_ratio.single * lead->time_s) ||
        (!room && could_tie))
      continue;
    cr_expect(lead->n_runs == 5 && lead->spread >= 0, "the leader: %d runs", lead->n_runs);
    cr_expect(far->spread < 0, "the 400 us candidate, pruned, has a spread");
    if (room)
      cr_expect(confirmed && near->spread >= 0, "the 115 us candidate: %d runs%s, spread %g",
                near->n_runs, near->rough ? ", rough" : "", near->spread);
    else
      cr_expect(near->rough && near->n_runs < 5,
                "the 115 us candidate: %d runs%s, without the room to confirm", near->n_runs,
                near->rough ? ", rough" : "");
    checked[room] = 1;
  }
  cr_expect(checked[0] && checked[1], "the timing never pruned the 115 us candidate close enough");
  prof_candidates_free(c, n);
  txattn_context_free(ctx);
}

/* ---- the check of every timed call (prof_run_check) ---- */

/* What the check's hooks saw: turns of the inputs, checks of the output (each right after a turn),
   the check from which on the output is called inexact (0: never), and the refusal. */
typedef struct seen {
  int turns, checks, checks_after_turn, inexact_from;
  prof_fault fault;
  char why[512];
} seen;

static void turn_hook(void *arg, const txattn_tensors *t) {
  (void)t;
  ((seen *)arg)->turns++;
}

static int exact_hook(void *arg, const txattn_tensors *t, double *err, char *why, size_t size) {
  seen *s = arg;
  (void)t;
  s->checks_after_turn += s->turns == s->checks + 1;
  *err = 1e-9 * ++s->checks; /* so that the largest error is the last one's */
  snprintf(why, size, "test check %d", s->checks);
  return s->inexact_from == 0 || s->checks < s->inexact_from;
}

static void refused_hook(void *arg, prof_cand *c, prof_fault fault, double err, const char *why) {
  seen *s = arg;
  (void)c;
  (void)err;
  s->fault = fault;
  snprintf(s->why, sizeof s->why, "%s", why);
}

/* One spin candidate (calls of 100 us) timed with one run of one call: its first call, its run
   and the call after it are checked, three checks in all. Returns how many candidates are left
   (and, if one, its max_error in *max_error). */
static size_t time_one_checked(seen *s, double floor_s, double *max_error) {
  if (scratch[0] == '\0') {
    scratch_dir(scratch, sizeof scratch, 0755);
    scratch_copy_plugin(scratch, TEST_SPIN_FILE, NULL, 0644);
  }
  txattn_context *ctx = test_context_at(scratch, 1);
  txattn_problem p = {.n_q = 4, .d_qk = 4};
  float q[16] = {0}, k[16] = {0}, v[16] = {0}, o[16];
  const txattn_tensors t = {.q = q, .k = k, .v = v, .o = o};
  const char *names[] = {TEST_SPIN_TUNABLE};
  const int64_t us[] = {100};
  prof_cand c[1];
  size_t n = prof_candidate_add(ctx, &p, TEST_SPIN_KERNEL, names, us, 1, c, 0, 1);
  cr_assert_eq(n, 1, "%s", txattn_last_error());
  /* a run is one call (1.25 us at least): no doubling, and no candidate to confirm */
  prof_settings set = {.mode = PROF_DEFAULT, .min_run_s = 1e-6, .rounds = 1, .prune_ratio = 1.15};
  prof_run_check chk = {turn_hook, exact_hook, floor_s, "(a test floor)", refused_hook, s};
  s->fault = PROF_FAULT_NONE;
  cr_assert_eq(prof_time_checked(c, &n, &t, &set, 0, &chk), TXATTN_OK, "%s", txattn_last_error());
  if (n == 1) cr_expect_eq(c[0].n_runs, 1);
  if (n == 1 && max_error) *max_error = c[0].max_error;
  prof_candidates_free(c, n);
  txattn_context_free(ctx);
  return n;
}

/* Every timed call is checked right after the inputs were turned: the first call, the run, and
   one more call after the last run; the candidate's max_error is the largest error seen. */
Test(profile_choice, every_timed_call_and_one_after_them_are_checked_on_turned_inputs) {
  seen s = {0};
  double max_error = 0;
  cr_assert_eq(time_one_checked(&s, 0, &max_error), 1, "refused: %s", s.why);
  cr_expect_eq(s.checks, 3, "%d checks: the first call, the run and the call after it", s.checks);
  cr_expect_float_eq(max_error, 3e-9, 1e-15, "max_error %g, not the last check's", max_error);
  cr_expect_eq(s.turns, s.checks);
  cr_expect_eq(s.checks_after_turn, s.checks, "a check did not follow a turn of the inputs");
}

/* A kernel exact on its first call and not on a later one is refused, whichever later call it is:
   the last one too, which follows every timed run. */
Test(profile_choice, a_kernel_inexact_after_its_first_call_is_refused) {
  for (int from = 2; from <= 3; from++) {
    seen s = {.inexact_from = from};
    cr_expect_eq(time_one_checked(&s, 0, NULL), 0, "inexact from check %d on, it was kept", from);
    cr_expect_eq(s.fault, PROF_FAULT_LATER, "inexact from check %d: fault %d", from, s.fault);
    cr_expect(strstr(s.why, "on a later call than its first") && strstr(s.why, "test check"), "%s",
              s.why);
  }
  seen first = {.inexact_from = 1};
  cr_expect_eq(time_one_checked(&first, 0, NULL), 0);
  cr_expect_eq(first.fault, PROF_FAULT_INEXACT, "fault %d", first.fault);
}

/* A run faster per call than the floor (what the machine's roofs allow) is refused with the floor's
   reason; a floor below the call's time (a call spins 100 us) refuses nothing. */
Test(profile_choice, a_call_faster_than_the_machine_is_refused) {
  seen s = {0};
  cr_expect_eq(time_one_checked(&s, 10.0, NULL), 0, "a floor of 10 s per call refused nothing");
  cr_expect_eq(s.fault, PROF_FAULT_TOO_FAST, "fault %d", s.fault);
  cr_expect(strstr(s.why, "impossibly fast at a timed point: ") == s.why, "%s", s.why);
  cr_expect(strstr(s.why, "under the 10 s (a test floor)") != NULL, "%s", s.why);
  seen low = {0};
  cr_expect_eq(time_one_checked(&low, 1e-6, NULL), 1, "refused: %s", low.why);
}
