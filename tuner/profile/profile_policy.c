/* SPDX-License-Identifier: MIT */
/* txtune profile's knobs and the rule that picks a point's winner (profile_policy.h). */
#include "profile_policy.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "profile.h"

/* Knobs of equal value decide different things and move independently: first_prune_ratio,
   optional_max_ratio and scale_max (3); min_runs and visit_runs (2); revisit_share,
   close.threaded and end_reserve_min_s (0.5); optional_share and optional_max_call_s (0.25). */
const prof_knobs prof_policy = {
    .run_margin = 1.25, /* a first call is slower than the ones after it */
    .warm_up_s = 0.006,
    .warm_up_max_call_s = 0.05,
    .first_prune_ratio = 3.0,
    .stall_ratio = 2.0,
    .confirm_ratio = {.single = 1.4, .threaded = 1.5},
    .confirm_pairs = 3,
    .tie_min = 0.03,
    .tie_max = {.single = 0.06, .threaded = 0.15},
    .close = {.single = 0.10, .threaded = 0.5},
    .revisit_max_call_s = 0.005,
    .revisit_share = 0.5,
    .visit_runs = 2,
    .min_runs = 2,
    .max_target_s = 1.0,
    .plan_fill = 0.92,
    .end_reserve = 0.01,
    .end_reserve_min_s = 0.5,
    .optional_share = 0.25,
    .optional_max_call_s = 0.25,
    .optional_max_ratio = 3.0,
    .recheck_growth = 4,
    .scale_min_point_s = 0.1,
    .scale_decay = 0.8,
    .scale_min = 1.0,
    .scale_max = 3.0,
    .check_n = 193, /* a multiple of no block */
    .check_rows = 8,
    .check_row_work = 8.0 * 4096 * 256, /* 8 rows at n = 4096, d = 128: milliseconds of fp64 */
    .check_timeout_s = 60.0,
    .check_timeout_share = 0.1, /* a hang costs a tenth of the budget, once (cmd_profile.c) */
    .check_timeout_min_s = 1.0,
    .floor_slack = 4.0, /* a peak measured on a busy machine, a kernel's prefetch: far within 4 */
    /* by prof_mode: {s: mode, min_run_s, rounds, prune_ratio, variants, one_loop_once,
       confirm_share}, {cutoff: short_ratio, long_ratio, long_call_s}, visits, budget_s */
    .modes = {{{PROF_QUICK, 1e-3, 3, 1.15, 0, 1, 0.25}, {3.0, 1.1, 0.02}, 3, 30},
              {{PROF_DEFAULT, 2e-3, 5, 1.15, 1, 1, 0.5}, {3.0, 1.1, 0.02}, 4, 180},
              {{PROF_PATIENT, 5e-3, 7, 1.15, 2, 1, 1.0}, {3.0, 1.25, 0.02}, 6, 1800}},
};

double prof_pair(prof_pair_knob k, const prof_cand *a, const prof_cand *b) {
  return a->threaded || b->threaded ? k.threaded : k.single;
}

int prof_in_full(const prof_cand *c) {
  return !c->rough && c->spread >= 0;
}

/* Whether a is preferred to b among candidates within the noise of the fastest (prof_choose). */
static int preferred(const prof_cand *a, const prof_cand *b) {
  if (prof_in_full(a) != prof_in_full(b)) return prof_in_full(a);
  if (a->parallel != b->parallel && !a->threaded && !b->threaded) return a->parallel < b->parallel;
  if ((a->slot == 0) != (b->slot == 0)) return a->slot == 0;
  if (a->time_s != b->time_s) return a->time_s < b->time_s;
  int c = strcmp(a->name, b->name);
  return c != 0 ? c < 0 : a->slot < b->slot;
}

size_t prof_choose_kernel(const prof_cand *c, size_t n, size_t kernel) {
  size_t fast = n, w;
  for (size_t i = 0; i < n; i++)
    if ((kernel == SIZE_MAX || c[i].kernel == kernel) && c[i].n_runs > 0 &&
        (fast == n || c[i].time_s < c[fast].time_s))
      fast = i;
  if (fast == n) return n;
  w = fast;
  for (size_t i = 0; i < n; i++) {
    if ((kernel != SIZE_MAX && c[i].kernel != kernel) || c[i].n_runs == 0) continue;
    double sa = prof_in_full(&c[fast]) ? c[fast].spread : -1;
    double sb = prof_in_full(&c[i]) ? c[i].spread : -1;
    double most = prof_pair(prof_policy.tie_max, &c[i], &c[fast]);
    double tol = fmin(most, fmax(prof_policy.tie_min, fmax(sa, sb)));
    if (c[i].time_s <= (1 + tol) * c[fast].time_s && preferred(&c[i], &c[w])) w = i;
  }
  return w;
}

size_t prof_choose(const prof_cand *c, size_t n) {
  return prof_choose_kernel(c, n, SIZE_MAX);
}
