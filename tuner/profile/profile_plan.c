/* SPDX-License-Identifier: MIT */
/* txtune profile: the cost model and the plan before each point. The time of every point left is
   predicted from what each class learnt at its last points (profile_grid.c), corrected by how far
   past predictions were off (scale); the plan is the largest number of runs per planned (not
   optional) candidate with which the rest fits the budget. */
#include <math.h>

#include "profile_run.h"
#include "timing.h"

double prof_now_s(const profile_run *r) {
  return tx_clock() - r->start;
}

double prof_end_reserve(const profile_run *r) {
  return fmax(prof_policy.end_reserve_min_s, prof_policy.end_reserve * r->budget_s);
}

/* Runs for a planned candidate: target_s of runs, at least min_runs, at most the mode's. */
int prof_runs_for(const profile_run *r, double target_s, double t) {
  double k = ceil(target_s / prof_run_len(&r->s, t));
  int most = r->s.rounds;
  int least = prof_policy.min_runs;
  return k < least ? least : k > most ? most : (int)k;
}

static int runs_of(const profile_run *r, prof_effort effort, double target_s, double t) {
  return effort == PROF_FULL      ? prof_runs_for(r, target_s, t)
         : effort == PROF_CONFIRM ? prof_policy.min_runs
                                  : 1;
}

double prof_cand_cost(const profile_run *r, prof_effort effort, double t, double target_s) {
  int runs = runs_of(r, effort, target_s, t);
  return 2 * t + runs * prof_run_len(&r->s, t); /* its first and last calls, and its runs */
}

static prof_work series_work(const prof_grid_class *gc, int64_t n, int64_t rr) {
  txattn_problem p = prof_grid_problem(gc, n, rr);
  return prof_grid_work(&p);
}

/* Predicted seconds of the series' point at n: the candidates timed in full (FULL) with target_s of
   runs, CONFIRM ones with min_runs (at a later n than the coming one, they count as OPTIONAL: they
   will most likely have lost again), the point's overhead; OPTIONAL ones go to *optional. */
static double series_cost(const profile_run *r, const prof_grid_class *gc, size_t ri, size_t ni,
                          int64_t rr, int later, double target_s, double *optional) {
  const prof_series *c = &gc->series[ri];
  const int64_t n = r->g.n[ni];
  if (c->stopped || !prof_grid_has_point(&r->g, gc, ni, ri)) return 0;
  prof_work w = series_work(gc, n, rr);
  double cost = c->overhead_s;
  for (size_t i = 0; i < c->n_histories; i++) {
    const prof_history *t = &c->histories[i];
    prof_effort effort = prof_series_effort(c, t, &w, &r->cutoff);
    if (later && effort == PROF_CONFIRM) effort = PROF_OPTIONAL;
    double k = prof_cand_cost(r, effort, prof_series_predict(c, t, &w), target_s);
    if (effort == PROF_OPTIONAL)
      *optional += k;
    else
      cost += k;
  }
  return cost;
}

/* Predicted seconds (unscaled) of every point from `at` on, the n after it included; *first gets
   the cost of the point at `at`. */
static double rest_cost(const profile_run *r, prof_at at, double target_s, double *first) {
  double cost = 0, opt = 0;
  *first = 0;
  for (size_t ni = at.ni; ni < r->g.n_n; ni++)
    for (size_t ci = ni == at.ni ? at.ci : 0; ci < r->g.n_cls; ci++) {
      const int64_t *rs;
      size_t n_r = prof_grid_rs(&r->g, &r->g.cls[ci], &rs);
      for (size_t ri = ni == at.ni && ci == at.ci ? at.ri : 0; ri < n_r; ri++) {
        double k = series_cost(r, &r->g.cls[ci], ri, ni, rs[ri], ni > at.ni, target_s, &opt);
        if (ni == at.ni && ci == at.ci && ri == at.ri) *first = k;
        cost += k;
      }
    }
  return cost;
}

/* The plan before the point at `at`: the largest target (seconds of runs per planned candidate,
   the same for every point left, up to max_target_s: long calls vary little) with which every
   point left fits plan_fill of the budget (the rest absorbs mispredictions), and what optional
   candidates may use here: optional_share of the slack (what they use is gone from the slack at
   the next point). Returns the point's predicted (scaled) cost. */
double prof_plan(profile_run *r, prof_at at) {
  double room = prof_policy.plan_fill * r->budget_s - prof_now_s(r), first, rest;
  double lo = r->s.rounds * prof_policy.run_margin * r->s.min_run_s; /* short calls: all runs */
  double hi = prof_policy.max_target_s;
  if (r->scale * rest_cost(r, at, hi, &first) <= room) {
    lo = hi;
  } else {
    for (int i = 0; i < 30; i++) { /* bisection: the cost grows with the target */
      double mid = 0.5 * (lo + hi);
      if (r->scale * rest_cost(r, at, mid, &first) <= room)
        lo = mid;
      else
        hi = mid;
    }
  }
  r->target_s = lo;
  rest = rest_cost(r, at, lo, &first);
  double slack = room - r->scale * rest;
  r->slack = slack > 0 ? slack : 0;
  r->optional_left = prof_policy.optional_share * r->slack;
  r->prog.predicted_end = tx_clock() + r->scale * rest;
  return r->scale * first;
}

/* After a point: how far the model was off, measured over predicted seconds, older points
   weighing scale_decay less at each, within scale_min..scale_max. Only points predicted to take
   scale_min_point_s count: smaller ones are mostly overhead, which the model leaves as it was
   last time. */
void prof_learn_scale(profile_run *r, double predicted_s, double spent_s) {
  const prof_knobs *k = &prof_policy;
  if (predicted_s < k->scale_min_point_s) return;
  r->scale_predicted = k->scale_decay * r->scale_predicted + predicted_s / r->scale;
  r->scale_spent = k->scale_decay * r->scale_spent + spent_s;
  double s = r->scale_spent / r->scale_predicted;
  r->scale = s < k->scale_min ? k->scale_min : s > k->scale_max ? k->scale_max : s;
}
