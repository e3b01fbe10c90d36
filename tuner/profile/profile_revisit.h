/* SPDX-License-Identifier: MIT */
/* txtune profile: close calls timed again later (profile_revisit.c).
 *
 * The runs of one point are taken within a few tens of milliseconds, but on a shared machine the
 * speed of a kernel drifts over seconds, above all that of a threaded one ("Threaded drift",
 * docs/measurements.md). Back-to-back runs then agree with each other and not with the next
 * profile. So a point whose leaders are close is kept open: its
 * contenders are timed again after each later n (a visit: visit_runs runs each, interleaved as at
 * the point; profile_policy.h has the knobs), and its time is the median of the visits' medians, its spread theirs: the noise the
 * table then records is the one a second profile would meet.
 *
 * A visit is seconds after the point, at another speed of the host, so what the contenders of a
 * visit share (their median factor against their own runs at the point) is taken out of it: the
 * contenders keep the level of the point, where the other candidates were timed with them: taken
 * as measured, the visits moved the contenders alone ("Visits keep the point's level",
 * docs/measurements.md).
 */
#ifndef TXTUNE_PROFILE_REVISIT_H
#define TXTUNE_PROFILE_REVISIT_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

#define PROF_MAX_CONTENDERS 3

/* A point kept open: its candidates (and their plans) until it is settled. */
typedef struct prof_open_point {
  size_t ci, ri; /* the caller's class and r index */
  int64_t n, r;
  txattn_problem p;
  prof_cand *c;
  size_t nc;
  size_t who[PROF_MAX_CONTENDERS];                    /* the contenders' indices in c */
  double visit_s[PROF_MAX_CONTENDERS][PROF_MAX_RUNS]; /* each one's median per visit */
  int visit_no[PROF_MAX_CONTENDERS][PROF_MAX_RUNS];   /* and which visit (0: the point's runs) */
  int n_visits[PROF_MAX_CONTENDERS], n_who, visits;
} prof_open_point;

typedef struct prof_revisits {
  prof_open_point *pts;
  size_t n, cap;
  int visits; /* visits after the point's own runs */
} prof_revisits;

/* Contenders of a measured point: the leader and up to PROF_MAX_CONTENDERS - 1 others within
   prof_policy.close of it, as measured here or as the plan expected from the smaller n
   (expect_s): a candidate that a stall made look far slower at this point only is timed again too
   ("A candidate a stall put far behind", docs/measurements.md). close.single reaches past the ties
   (tie_max), so that the tie rule decides on revisited times. Returns their count (1: no close
   call) and writes their indices to who. */
int prof_close_call(const prof_cand *c, size_t n, size_t *who);

/* Keeps the point open if it is a close call whose leader's call is revisit_max_call_s at most:
   takes c (a copy of the
   array; the plans now belong to rv) and returns 1; returns 0 and leaves c alone otherwise. */
int prof_revisits_keep(prof_revisits *rv, size_t ci, size_t ri, int64_t n, int64_t r,
                       const txattn_problem *p, const prof_cand *c, size_t nc);

/* Predicted seconds of one visit of every open point. */
double prof_revisits_cost(const prof_revisits *rv, const prof_settings *s);

/* What a visit of an open point runs on: open(arg, pt, &t, &chk) fills t (tensors made for n_kv =
   buf_n in the point's element types) and chk, the check of its timed calls (prof_run_check), and
   returns 0, or returns -1; close(arg, &chk) after the visit. A contender chk refuses is out of the
   point: open's refusal sets its n_runs to 0 in pt, and the point records no time of it. */
typedef struct prof_visit_fns {
  int (*open)(void *arg, prof_open_point *pt, txattn_tensors *t, prof_run_check *chk);
  void (*close)(void *arg, prof_run_check *chk);
  void *arg;
} prof_visit_fns;

/* One visit of every open point whose problem fits tensors made for n_kv = buf_n (at most
   `allowance` predicted seconds, none past `deadline`). Returns the seconds spent. */
double prof_revisits_visit(prof_revisits *rv, const prof_visit_fns *fns, int64_t buf_n,
                           const prof_settings *s, double deadline, double allowance);

/* Settles the points that had all their visits (every one if `all`): contenders' time_s and
   spread from their visits at the point's level (see above), then record(arg, point) and the
   plans are freed. */
void prof_revisits_settle(prof_revisits *rv, int all,
                          void (*record)(void *arg, prof_open_point *pt), void *arg);

void prof_revisits_free(prof_revisits *rv);

#endif
