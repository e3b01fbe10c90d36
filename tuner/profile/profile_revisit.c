/* SPDX-License-Identifier: MIT */
/* txtune profile: close calls timed again later (see profile_revisit.h). */
#include "profile_revisit.h"

#include <stdlib.h>
#include <string.h>

#include "timing.h"

int prof_close_call(const prof_cand *c, size_t n, size_t *who) {
  size_t lead = n;
  for (size_t i = 0; i < n; i++)
    if (c[i].n_runs > 0 && (lead == n || c[i].time_s < c[lead].time_s)) lead = i;
  if (lead == n) return 0;
  who[0] = lead;
  int k = 1;
  /* the closest others first */
  for (int slot = 1; slot < PROF_MAX_CONTENDERS; slot++) {
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
      int taken = 0;
      for (int j = 0; j < k; j++) taken |= who[j] == i;
      if (taken || c[i].n_runs == 0) continue;
      double close = prof_pair(prof_policy.close, &c[i], &c[lead]);
      int now = c[i].time_s <= (1 + close) * c[lead].time_s;
      int expected = c[i].history && c[lead].history && c[lead].expect_s > 0 &&
                     c[i].expect_s <= (1 + close) * c[lead].expect_s;
      if (!now && !expected) continue;
      if (best == n || c[i].time_s < c[best].time_s) best = i;
    }
    if (best == n) break;
    who[k++] = best;
  }
  return k;
}

int prof_revisits_keep(prof_revisits *rv, size_t ci, size_t ri, int64_t n, int64_t r,
                       const txattn_problem *p, const prof_cand *c, size_t nc) {
  size_t who[PROF_MAX_CONTENDERS];
  int k = rv->visits > 0 ? prof_close_call(c, nc, who) : 0;
  if (k < 2 || c[who[0]].time_s > prof_policy.revisit_max_call_s) return 0;
  if (rv->n == rv->cap) {
    size_t cap = rv->cap ? 2 * rv->cap : 32;
    prof_open_point *pts = realloc(rv->pts, cap * sizeof *pts);
    if (!pts) return 0;
    rv->pts = pts;
    rv->cap = cap;
  }
  prof_cand *copy = malloc(nc * sizeof *copy);
  if (!copy) return 0;
  memcpy(copy, c, nc * sizeof *copy);
  prof_open_point *pt = &rv->pts[rv->n++];
  *pt = (prof_open_point){
      .ci = ci, .ri = ri, .n = n, .r = r, .p = *p, .c = copy, .nc = nc, .n_who = k};
  for (int j = 0; j < k; j++) {
    pt->who[j] = who[j];
    pt->visit_s[j][0] = c[who[j]].time_s;
    pt->visit_no[j][0] = 0;
    pt->n_visits[j] = 1;
  }
  return 1;
}

/* A visit's predicted seconds: each contender's first call, runs and the checked call after them,
   and two warm-up periods. */
static double visit_cost(const prof_open_point *pt, const prof_settings *s) {
  double cost = 2 * prof_policy.warm_up_s;
  for (int j = 0; j < pt->n_who; j++) {
    double t = pt->c[pt->who[j]].time_s;
    cost += 2 * t + prof_policy.visit_runs * prof_run_len(s, t);
  }
  return cost;
}

double prof_revisits_cost(const prof_revisits *rv, const prof_settings *s) {
  double cost = 0;
  for (size_t i = 0; i < rv->n; i++)
    if (rv->pts[i].visits < rv->visits) cost += visit_cost(&rv->pts[i], s);
  return cost;
}

/* visit_runs runs of each live contender, interleaved as at the point and checked by chk; the
   plans stay the point's. */
static void visit(prof_open_point *pt, const txattn_tensors *t, const prof_settings *s,
                  double deadline, const prof_run_check *chk) {
  prof_cand copy[PROF_MAX_CONTENDERS];
  size_t m = 0;
  for (int j = 0; j < pt->n_who; j++) {
    prof_cand *c = &pt->c[pt->who[j]];
    if (!c->plan || c->n_runs == 0) continue;
    copy[m] = *c;
    copy[m].keep = 1;
    copy[m].want = prof_policy.visit_runs;
    copy[m].optional = 0;
    copy[m].predict_s = c->time_s;
    copy[m].borrowed = 1;
    m++;
  }
  prof_time_checked(copy, &m, t, s, deadline, chk);
  for (int j = 0; j < pt->n_who; j++) {
    prof_cand *c = &pt->c[pt->who[j]];
    size_t i = 0;
    while (i < m && copy[i].plan != c->plan) i++;
    if (i == m) { /* it failed this time: its earlier times stand, it is not visited again */
      txattn_plan_free(c->plan);
      c->plan = NULL;
    } else if (copy[i].n_runs > 0 && pt->n_visits[j] < PROF_MAX_RUNS) {
      pt->visit_no[j][pt->n_visits[j]] = pt->visits + 1;
      pt->visit_s[j][pt->n_visits[j]++] = copy[i].time_s;
    }
  }
  pt->visits++;
}

double prof_revisits_visit(prof_revisits *rv, const prof_visit_fns *fns, int64_t buf_n,
                           const prof_settings *s, double deadline, double allowance) {
  double start = tx_clock();
  for (size_t i = 0; i < rv->n; i++) {
    prof_open_point *pt = &rv->pts[i];
    txattn_tensors t = TXATTN_TENSORS_INIT;
    if (pt->visits >= rv->visits || pt->p.n_kv > buf_n) continue;
    double cost = visit_cost(pt, s);
    /* no time for it now: perhaps after the next n, else it is settled with what it had */
    if (tx_clock() - start + cost > allowance || tx_clock() + cost > deadline) continue;
    prof_run_check chk;
    if (fns->open(fns->arg, pt, &t, &chk) != 0) continue;
    visit(pt, &t, s, deadline, &chk);
    fns->close(fns->arg, &chk);
  }
  return tx_clock() - start;
}

/* The contender's time and spread over its visits: the median of the visits' medians, and their
   range over it (tx_sorted_spread). */
static void settle_contender(prof_cand *c, double *v, int n) {
  if (n < 2) return;
  c->time_s = tx_sort_median(v, (size_t)n);
  c->spread = tx_sorted_spread(v, (size_t)n);
  c->rough = 0;
}

/* The factor of visit `no` against the point: the median, over the contenders timed in it, of
   their time there over their time at the point; 0 if fewer than two were (nothing shared). */
static double visit_factor(const prof_open_point *pt, int no) {
  double f[PROF_MAX_CONTENDERS];
  size_t m = 0;
  for (int j = 0; j < pt->n_who; j++)
    for (int k = 1; k < pt->n_visits[j]; k++)
      if (pt->visit_no[j][k] == no && pt->visit_s[j][0] > 0)
        f[m++] = pt->visit_s[j][k] / pt->visit_s[j][0];
  return m < 2 ? 0 : tx_sort_median(f, m);
}

/* Each contender's visits divided by their visit's factor (the point's own runs as they are; a
   visit with no factor left out), then settled. */
static void settle_point(prof_open_point *pt) {
  double factor[PROF_MAX_RUNS + 1] = {1};
  for (int no = 1; no <= pt->visits && no <= PROF_MAX_RUNS; no++) factor[no] = visit_factor(pt, no);
  for (int j = 0; j < pt->n_who; j++) {
    double v[PROF_MAX_RUNS];
    int n = 0;
    for (int k = 0; k < pt->n_visits[j]; k++) {
      int no = pt->visit_no[j][k];
      if (no <= PROF_MAX_RUNS && factor[no] > 0) v[n++] = pt->visit_s[j][k] / factor[no];
    }
    settle_contender(&pt->c[pt->who[j]], v, n);
  }
}

void prof_revisits_settle(prof_revisits *rv, int all,
                          void (*record)(void *arg, prof_open_point *pt), void *arg) {
  size_t kept = 0;
  for (size_t i = 0; i < rv->n; i++) {
    prof_open_point *pt = &rv->pts[i];
    if (!all && pt->visits < rv->visits) {
      rv->pts[kept++] = *pt;
      continue;
    }
    settle_point(pt);
    record(arg, pt);
    prof_candidates_free(pt->c, pt->nc);
    free(pt->c);
  }
  rv->n = kept;
}

void prof_revisits_free(prof_revisits *rv) {
  for (size_t i = 0; i < rv->n; i++) {
    prof_candidates_free(rv->pts[i].c, rv->pts[i].nc);
    free(rv->pts[i].c);
  }
  free(rv->pts);
  *rv = (prof_revisits){0};
}
