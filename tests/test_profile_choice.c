/* SPDX-License-Identifier: MIT */
/* txtune profile's choice of a point's winner (tuner/profile/profile_measure.c, prof_choose): the
   fastest, or among the candidates within the noise of it the preferred one. The rule is what makes
   two profiles in a row agree, so each part of it is pinned here on made-up timings. Which kernels
   are a point's candidates (prof_candidates), on the build tree's plugins. And what the timing
   (prof_time, on tx_time) does with a clear loser and with each timed call's check, on a test
   kernel whose calls take as long as its tunable says. */
#include <stddef.h>
#include <string.h>

#include <criterion/criterion.h>

#include "profile.h"
#include "timing.h"
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

/* One timed once (it lost by PROF_DROP_RATIO after its first run): no spread. */
static prof_cand once(const char *name, int slot, int parallel, double time_s) {
  prof_cand c = timed(name, slot, parallel, time_s, -1);
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
  c[1].time_s = 1.0 + PROF_TIE_MIN + 0.002;
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
  expect_tie_up_to(0.05, 0.045, PROF_TIE_MAX, 0);
}

Test(profile_choice, the_default_tunables_are_preferred_to_a_variant) {
  prof_cand c[] = {timed("tiled", 1, 0, 1.00, 0.001), timed("tiled", 0, 0, 1.02, 0.001)};
  cr_expect_eq(prof_choose(c, 2), 1);
}

Test(profile_choice, a_threaded_pair_ties_up_to_the_threaded_limit) {
  expect_tie_up_to(0.12, 0.11, PROF_TIE_MAX_THREADED, 1);
}

/* A time of one run has no spread: it does not take a tie from a candidate timed more than once,
   whatever the other preferences say. */
Test(profile_choice, a_single_run_never_wins_a_tie) {
  prof_cand c[] = {timed("tiled", 1, 0, 1.00, 0.001), once("tiled", 0, 0, 1.013)};
  cr_expect_eq(prof_choose(c, 2), 0, "the default tunables' single run does not take the tie");
  /* the same holds when the single run is the fastest by less than the noise */
  prof_cand d[] = {once("a", 0, 0, 0.99), timed("b", 1, 1, 1.00, 0.001)};
  cr_expect_eq(prof_choose(d, 2), 1);
  /* but one faster by more than the noise wins: it is the fastest */
  d[0].time_s = 0.90;
  cr_expect_eq(prof_choose(d, 2), 0);
  /* and none that was not timed */
  d[0].n_runs = d[1].n_runs = 0;
  cr_expect_eq(prof_choose(d, 2), 2);
}

/* ---- the candidates of a point ---- */

/* Whether the candidates list kernel. */
static int lists(const prof_cand *c, size_t n, const char *kernel) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(c[i].name, kernel) == 0) return 1;
  return 0;
}

/* On one thread a threaded kernel that names its twin (one_thread_same_as) is left to it, unless
   every kernel is timed (validate: twins 0); on two threads both are candidates. */
Test(profile_choice, on_one_thread_a_kernels_twin_stands_in_for_it) {
  txattn_problem p = {.heads_q = 2, .n_q = 256, .d_qk = 64, .mask = TXATTN_MASK_CAUSAL};
  prof_cand c[64];
  int checked = 0;
  for (int threads = 1; threads <= 2; threads++) {
    txattn_context *ctx = test_context(threads);
    for (int once = 0; once <= 1; once++) {
      size_t n = prof_candidates(ctx, &p, 0, once, c, 64, NULL);
      for (size_t k = 0; k < txattn_kernel_count(ctx); k++) {
        txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
        cr_assert_eq(txattn_kernel_get(ctx, k, &info), TXATTN_OK);
        if (!info.usable || info.one_thread_same_as == NULL || !test_kernel_takes_types(&info, &p))
          continue;
        int left = threads == 1 && once;
        cr_expect(lists(c, n, info.one_thread_same_as), "%s is not a candidate",
                  info.one_thread_same_as);
        cr_expect_eq(lists(c, n, info.name), !left, "%s on %d thread(s), twins %d: %s", info.name,
                     threads, once, left ? "timed beside its twin" : "left out");
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

/* Calls of 100 us (the leader) and 400 us: from its second run on, the 400 us one, slower than
   PROF_DROP_RATIO x the leader, stops while the leader gets all five. What is
   asserted is what the timing did, not how long anything took: a timing whose runs other
   processes slowed so much that the 400 us one never came out 1.5x slower at a round's end is
   done again, up to 10 times; the test fails if no timing ever stops it. */
Test(profile_choice, a_clear_loser_stops_before_the_last_round) {
  scratch_dir(scratch, sizeof scratch, 0755);
  scratch_copy_plugin(scratch, TEST_SPIN_FILE, NULL, 0644);
  txattn_context *ctx = test_context_at(scratch, 1);
  txattn_problem p = {.n_q = 4, .d_qk = 4};
  float q[16] = {0}, k[16] = {0}, v[16] = {0}, o[16];
  const txattn_tensors t = {.q = q, .k = k, .v = v, .o = o};
  const char *names[] = {TEST_SPIN_TUNABLE};
  const int64_t us[] = {100, 400};
  int checked = 0;
  for (int attempt = 0; attempt < 10 && !checked; attempt++) {
    prof_cand c[2];
    size_t n = 0, untimed = 0;
    for (int i = 0; i < 2; i++)
      n = prof_candidate_add(ctx, &p, TEST_SPIN_KERNEL, names, &us[i], 1, c, n, 2);
    cr_assert_eq(n, 2, "%s", txattn_last_error());
    cr_assert_eq(prof_time(c, &n, &t, 0.001, 5, 0, NULL, &untimed), TXATTN_OK, "%s",
                 txattn_last_error());
    cr_assert_eq(n, 2);
    cr_expect_eq(untimed, 0);
    const prof_cand *lead = spinning(c, n, 100), *far = spinning(c, n, 400);
    cr_assert(lead && far);
    if (far->fastest_s < PROF_DROP_RATIO * lead->time_s || far->n_runs == 5) {
      prof_candidates_free(c, n);
      continue;
    }
    cr_expect(lead->n_runs == 5 && lead->spread >= 0, "the leader: %d runs", lead->n_runs);
    cr_expect(far->n_runs >= 2 && far->n_runs < 5, "the 400 us candidate: %d runs", far->n_runs);
    cr_expect_eq(prof_choose(c, n), (size_t)(lead - c));
    checked = 1;
    prof_candidates_free(c, n);
  }
  cr_expect(checked, "the 400 us candidate was never stopped before its fifth run");
  txattn_context_free(ctx);
}

/* ---- the check of every timed call (prof_run_check on tx_time's hooks) ---- */

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

/* One spin candidate (calls of 100 us) timed with two runs of one call: its first run, its second
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
  /* a run is one call (1 us at least): no doubling */
  prof_run_check chk = {turn_hook, exact_hook, floor_s, "(a test floor)", refused_hook, s};
  size_t untimed = 0;
  s->fault = PROF_FAULT_NONE;
  cr_assert_eq(prof_time(c, &n, &t, 1e-6, 2, 0, &chk, &untimed), TXATTN_OK, "%s",
               txattn_last_error());
  if (n == 1) cr_expect_eq(c[0].n_runs, 2);
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
  cr_expect_eq(s.checks, 3, "%d checks: the two runs and the call after them", s.checks);
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

/* ---- tx_time's last check ---- */

typedef struct spin_entry {
  double us;
  int calls, since_turn, last_check_calls, checks;
} spin_entry;

static txattn_status spin_call(void *arg) {
  spin_entry *e = arg;
  double t0 = tx_clock();
  while (tx_clock() - t0 < e->us * 1e-6) {
  }
  e->calls++;
  e->since_turn++;
  return TXATTN_OK;
}

static void spin_before(void *arg, size_t i) {
  ((spin_entry *)arg)[i].since_turn = 0;
}

static int spin_after(void *arg, size_t i, int first, double per_call) {
  spin_entry *e = &((spin_entry *)arg)[i];
  (void)first;
  (void)per_call;
  e->last_check_calls = e->since_turn;
  e->checks++;
  return 0;
}

/* Every entry with a run, the one stopped early for losing too, ends with one checked call of its
   own after its inputs were turned: a kernel cannot be exact only on the calls it could predict.
   Premise (retried up to 10 times on a loaded machine): the 400 us entry stopped early. */
Test(profile_choice, an_entry_stopped_early_still_gets_the_last_checked_call) {
  int checked = 0;
  for (int attempt = 0; attempt < 10 && !checked; attempt++) {
    spin_entry e[2] = {{.us = 100}, {.us = 400}};
    void *args[2] = {&e[0], &e[1]};
    unsigned char refused[2] = {0};
    tx_timing_check ck = {spin_before, spin_after, e, refused};
    tx_timing tm[2];
    txattn_status st[2];
    tx_timing_opts o = {.min_run_s = 1e-3, .runs = 5, .drop_ratio = 1.5, .check = &ck};
    /* the check's arg is the entries: tx_time calls spin_call with args[i] = &e[i] */
    tx_time(spin_call, args, 2, &o, tm, st, NULL);
    cr_assert(st[0] == TXATTN_OK && st[1] == TXATTN_OK);
    if (tm[1].runs == 5) continue;
    for (int i = 0; i < 2; i++)
      cr_expect_eq(e[i].last_check_calls, 1, "entry %d: its last check followed %d calls, not 1", i,
                   e[i].last_check_calls);
    checked = 1;
  }
  cr_expect(checked, "the 400 us entry was never stopped early");
}
