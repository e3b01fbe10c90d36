/* SPDX-License-Identifier: MIT */
/* txtune profile: the candidates of one point (kernel x tunables) and their interleaved timing. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "timing.h"
#include "txattn/plugin.h"

/* v rounded to a multiple of `mult` within [min, max]; 0 if no such value. */
static int64_t snap(int64_t v, const txattn_tunable_info *ti) {
  int64_t m = ti->multiple_of > 0 ? ti->multiple_of : 1;
  v = (v + m / 2) / m * m;
  int64_t lo = (ti->min + m - 1) / m * m, hi = ti->max / m * m;
  if (lo > hi) return 0;
  return v < lo ? lo : v > hi ? hi : v;
}

static int same_values(const prof_cand *a, const prof_cand *b) {
  if (a->kernel != b->kernel || a->n_tun != b->n_tun) return 0;
  for (size_t i = 0; i < a->n_tun; i++)
    if (a->tun_values[i] != b->tun_values[i]) return 0;
  return 1;
}

/* Whether c's tunables are those of a candidate of out[0..n). */
static int known(const prof_cand *c, const prof_cand *out, size_t n) {
  for (size_t j = 0; j < n; j++)
    if (same_values(&out[j], c)) return 1;
  return 0;
}

/* Appends c unless its tunables are those of a candidate of out[0..n) (then its plan is freed);
   returns the new count. */
static size_t append_new(const prof_cand *c, prof_cand *out, size_t n) {
  if (known(c, out, n)) {
    txattn_plan_free(c->plan);
    return n;
  }
  out[n] = *c;
  return n + 1;
}

/* c's tunables as its plan runs them; 0 if it has more than PROF_MAX_TUNABLES. */
static int take_tunables(prof_cand *c) {
  c->n_tun = txattn_plan_tunable_count(c->plan);
  if (c->n_tun > PROF_MAX_TUNABLES) return 0;
  for (size_t i = 0; i < c->n_tun; i++)
    txattn_plan_tunable_get(c->plan, i, &c->tun_names[i], &c->tun_values[i]);
  return 1;
}

/* Adds base's kernel with the tunables `values` if the kernel makes a plan with them and that
   candidate is new: as the plan runs them, fitted to the problem (plugin.h: fit_tunables), so that a
   tile the problem makes the same as another (a key block past the keys) is not timed twice. */
static size_t add_variant(txattn_context *ctx, const txattn_problem *p, const prof_cand *base,
                          const int64_t *values, int slot, prof_cand *out, size_t n, size_t cap) {
  if (n >= cap) return n;
  prof_cand c = *base;
  c.plan = NULL;
  c.slot = slot;
  for (size_t i = 0; i < c.n_tun; i++) c.tun_values[i] = values[i];
  if (known(&c, out, n) || txattn_plan_create_tuned(ctx, p, c.name, c.tun_names, c.tun_values,
                                                    c.n_tun, &c.plan) != TXATTN_OK)
    return n;
  /* the plan's names live as long as it does */
  for (size_t i = 0; i < c.n_tun; i++)
    txattn_plan_tunable_get(c.plan, i, &c.tun_names[i], &c.tun_values[i]);
  return append_new(&c, out, n);
}

/* Whether the default of tunable i is cut to what problem p has: the kernel's default for the same
   problem 4 times as long is larger. Raising it would only make a block larger than the problem
   (the tiled kernels at n 256 take block_k 256 where they take 512 from n 512 on): the same work
   with a larger stride, which profiles only split ties on (docs/measurements.md). */
static int default_cut_by_problem(txattn_context *ctx, const txattn_problem *p,
                                  const prof_cand *base, size_t i) {
  txattn_problem longer = *p;
  txattn_plan *plan = NULL;
  int64_t value = 0;
  longer.n_q = p->n_q * 4;
  longer.n_kv = (p->n_kv > 0 ? p->n_kv : p->n_q) * 4;
  if (txattn_plan_create(ctx, &longer, base->name, &plan) != TXATTN_OK) return 0;
  int cut = txattn_plan_tunable_count(plan) == base->n_tun &&
            txattn_plan_tunable_get(plan, i, NULL, &value) == TXATTN_OK &&
            value > base->tun_values[i];
  txattn_plan_free(plan);
  return cut;
}

/* The variants of a kernel's default tunables the settings ask for: one (the last tunable, the
   key block in tiled kernels, doubled; halved at its maximum, or in slot 2 where the problem cut
   its default) or, patient, the first tunable at 1/2, 1 and 2 times its default by the second at
   1/2, 1, 2 and 4 times its own. */
static size_t add_variants(txattn_context *ctx, const txattn_problem *p, const prof_cand *base,
                           const prof_settings *s, prof_cand *out, size_t n, size_t cap) {
  txattn_tunable_info ti[PROF_MAX_TUNABLES] = {0};
  for (size_t i = 0; i < base->n_tun; i++) {
    ti[i] = (txattn_tunable_info)TXATTN_TUNABLE_INFO_INIT;
    if (txattn_plan_tunable_info(base->plan, i, &ti[i]) != TXATTN_OK) return n;
  }
  int64_t v[PROF_MAX_TUNABLES];
  memcpy(v, base->tun_values, sizeof v);
  if (s->variants == 1 && base->n_tun > 0) {
    size_t last = base->n_tun - 1;
    int64_t up = snap(v[last] * 2, &ti[last]);
    int cut = up != v[last] && default_cut_by_problem(ctx, p, base, last);
    v[last] = up == v[last] || cut ? snap(v[last] / 2, &ti[last]) : up;
    /* a halved cut default is another tile than the doubled one at larger n: a slot of its own,
       so that the series (profile_grid.h) does not follow the two as one */
    return add_variant(ctx, p, base, v, cut ? 2 : 1, out, n, cap);
  }
  if (s->variants < 2 || base->n_tun == 0 || base->n_tun > 2) return n;
  static const int num[] = {1, 1, 2, 4}, den[] = {2, 1, 1, 1}; /* x 1/2, 1, 2, 4 */
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < (base->n_tun == 2 ? 4 : 1); b++) {
      v[0] = snap(base->tun_values[0] * num[a] / den[a], &ti[0]);
      if (base->n_tun == 2) v[1] = snap(base->tun_values[1] * num[b] / den[b], &ti[1]);
      n = add_variant(ctx, p, base, v, 1 + 4 * a + b, out, n, cap);
    }
  return n;
}

size_t prof_kernel_find(txattn_context *ctx, const char *name, txattn_kernel_info *info) {
  for (size_t k = 0; k < txattn_kernel_count(ctx); k++) {
    *info = (txattn_kernel_info)TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, k, info) == TXATTN_OK && strcmp(info->name, name) == 0) return k;
  }
  return SIZE_MAX;
}

/* c's kernel fields: kernel k of ctx, as info describes it. */
static void set_kernel(prof_cand *c, txattn_context *ctx, size_t k,
                       const txattn_kernel_info *info) {
  c->kernel = k;
  c->name = info->name;
  c->sparse = (info->flags & TXATTN_KERNEL_SPARSE) != 0;
  c->parallel = (info->flags & TXATTN_KERNEL_THREADED) != 0;
  c->threaded = c->parallel && txattn_context_threads(ctx) > 1;
}

size_t prof_candidate_add(txattn_context *ctx, const txattn_problem *p, const char *kernel,
                          const char *const *names, const int64_t *values, size_t n_tun,
                          prof_cand *out, size_t n, size_t cap) {
  if (n >= cap || n_tun > PROF_MAX_TUNABLES) return n;
  prof_cand c;
  memset(&c, 0, sizeof c);
  if (txattn_plan_create_tuned(ctx, p, kernel, names, values, n_tun, &c.plan) != TXATTN_OK)
    return n;
  txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
  size_t k = prof_kernel_find(ctx, kernel, &info);
  if (k != SIZE_MAX) set_kernel(&c, ctx, k, &info);
  if (c.name == NULL || !take_tunables(&c)) {
    txattn_plan_free(c.plan);
    return n;
  }
  return append_new(&c, out, n);
}

int prof_twin_stands_in(txattn_context *ctx, const txattn_problem *p,
                        const txattn_kernel_info *info) {
  if (info->one_thread_same_as == NULL || txattn_context_threads(ctx) != 1) return 0;
  txattn_plan *plan = NULL;
  int ok = txattn_plan_create(ctx, p, info->one_thread_same_as, &plan) == TXATTN_OK;
  txattn_plan_free(plan);
  return ok;
}

size_t prof_candidates(txattn_context *ctx, const txattn_problem *p, const prof_settings *s,
                       prof_cand *out, size_t cap) {
  return prof_candidates_failed(ctx, p, s, out, cap, NULL);
}

size_t prof_candidates_failed(txattn_context *ctx, const txattn_problem *p, const prof_settings *s,
                              prof_cand *out, size_t cap, prof_plan_failures *failed) {
  size_t n = 0;
  if (failed) failed->n = 0;
  for (size_t k = 0; k < txattn_kernel_count(ctx) && n < cap; k++) {
    txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, k, &info) != TXATTN_OK || !info.usable) continue;
    if (s->one_loop_once && prof_twin_stands_in(ctx, p, &info)) continue;
    prof_cand c;
    memset(&c, 0, sizeof c);
    set_kernel(&c, ctx, k, &info);
    txattn_status st = txattn_plan_create(ctx, p, info.name, &c.plan);
    if (st != TXATTN_OK) {
      if (st != TXATTN_E_UNSUPPORTED && failed && failed->n < PROF_MAX_PLAN_FAILURES) {
        prof_plan_failure *f = &failed->f[failed->n++];
        f->kernel = k;
        f->name = info.name;
        f->status = st;
        snprintf(f->why, sizeof f->why, "%s: %s", txattn_status_name(st), txattn_last_error());
      }
      continue; /* declined (not applicable), or broken */
    }
    if (!take_tunables(&c)) {
      txattn_plan_free(c.plan);
      continue;
    }
    out[n++] = c;
    n = add_variants(ctx, p, &out[n - 1], s, out, n, cap);
  }
  return n;
}

void prof_candidates_free(prof_cand *c, size_t n) {
  for (size_t i = 0; i < n; i++) {
    txattn_plan_free(c[i].plan);
    c[i].plan = NULL;
  }
}

double prof_run_len(const prof_settings *s, double t) {
  double m = prof_policy.run_margin * s->min_run_s;
  double timed = t >= m ? t : ceil(m / (t > 1e-9 ? t : 1e-9)) * t;
  return timed + (t <= prof_policy.warm_up_max_call_s ? t : 0);
}

static txattn_status run_reps(prof_cand *c, const txattn_tensors *t, int64_t reps, double *s) {
  double t0 = tx_clock();
  for (int64_t i = 0; i < reps; i++) {
    txattn_status st = txattn_plan_execute(c->plan, t);
    if (st != TXATTN_OK) return st;
  }
  *s = tx_clock() - t0;
  return TXATTN_OK;
}

/* Judges c's output and time per call after a checked run (prof_run_check); a failure refuses c.
   first: its first call at the point. */
static void judge(prof_cand *c, const txattn_tensors *t, const prof_run_check *chk, int first,
                  double per_call) {
  char why[320], reason[480];
  double err = NAN;
  prof_fault fault = PROF_FAULT_NONE;
  if (chk->exact && !chk->exact(chk->arg, t, &err, why, sizeof why)) {
    fault = first ? PROF_FAULT_INEXACT : PROF_FAULT_LATER;
    snprintf(reason, sizeof reason, "not exact at a timed point%s: %s",
             first ? ""
                   : " on a later call than its first there (its inputs changed and its output "
                     "was poisoned before it)",
             why);
  } else if (per_call < chk->floor_s) {
    fault = PROF_FAULT_TOO_FAST;
    snprintf(reason, sizeof reason,
             "impossibly fast at a timed point: %.3g s per call, under the %.3g s %s", per_call,
             chk->floor_s, chk->floor_why ? chk->floor_why : "");
  } else if (chk->exact) {
    c->max_error = first ? err : fmax(c->max_error, err);
  }
  if (fault == PROF_FAULT_NONE) return;
  c->refused = 1;
  if (chk->refused) chk->refused(chk->arg, c, fault, err, reason);
}

/* reps calls of c, timed into *s, checked by chk (NULL: not): the inputs turned and the output
   poisoned before, the output and the time per call judged after; a candidate that fails is
   marked refused. */
static txattn_status checked_reps(prof_cand *c, const txattn_tensors *t, int64_t reps,
                                  const prof_run_check *chk, int first, double *s) {
  if (chk && chk->turn) chk->turn(chk->arg, t);
  txattn_status st = run_reps(c, t, reps, s);
  if (st == TXATTN_OK && chk) judge(c, t, chk, first, *s / (double)reps);
  return st;
}

/* Would `calls` calls of c, starting now, end after the deadline? */
static int too_late(const prof_cand *c, double calls, double deadline) {
  return deadline > 0 && tx_clock() + calls * c->predict_s > deadline;
}

#define REPS_MAX (INT64_C(1) << 30)

/* c's first call, timed and checked: from it the repetitions that should make a run last
   run_margin x min_run_s. */
static txattn_status first_call(prof_cand *c, const txattn_tensors *t, const prof_settings *s,
                                const prof_run_check *chk) {
  /* a visit's copy of a candidate (borrowed) had its first call at the point before */
  txattn_status st = checked_reps(c, t, 1, chk, !c->borrowed, &c->first_s);
  if (st != TXATTN_OK) return st;
  double want = prof_policy.run_margin * s->min_run_s / (c->first_s > 1e-9 ? c->first_s : 1e-9);
  c->reps = want < 1 ? 1 : want > (double)REPS_MAX ? REPS_MAX : (int64_t)ceil(want);
  c->predict_s = c->first_s;
  return TXATTN_OK;
}

/* c's warm-up before a timed run (profile_policy.h): calls for warm_up_s if the run before was of
   the other kind (*kind: -1 none, else that candidate's `threaded`), then one call; none where a
   call takes more than warm_up_max_call_s ("OpenMP spin and wake", "Runs start warm",
   docs/measurements.md). *kind becomes c's. */
static txattn_status warm_up(prof_cand *c, const txattn_tensors *t, int *kind) {
  int switched = *kind >= 0 && *kind != c->threaded;
  *kind = c->threaded;
  if (c->predict_s > prof_policy.warm_up_max_call_s) return TXATTN_OK;
  if (switched) {
    double t0 = tx_clock();
    do {
      txattn_status st = txattn_plan_execute(c->plan, t);
      if (st != TXATTN_OK) return st;
    } while (tx_clock() - t0 < prof_policy.warm_up_s);
  }
  return txattn_plan_execute(c->plan, t);
}

/* One timed run of c after its warm-up, checked and recorded; c's first run doubles its
   repetitions until it lasts min_run_s. */
static txattn_status next_run(prof_cand *c, const txattn_tensors *t, const prof_settings *s,
                              int *kind, const prof_run_check *chk) {
  double sec;
  txattn_status st = warm_up(c, t, kind);
  if (st != TXATTN_OK) return st;
  for (;;) {
    if ((st = checked_reps(c, t, c->reps, chk, 0, &sec)) != TXATTN_OK || c->refused) return st;
    if (c->n_runs > 0 || sec >= s->min_run_s || c->reps >= REPS_MAX) break;
    c->reps *= 2;
  }
  c->predict_s = c->runs[c->n_runs++] = sec / (double)c->reps;
  return TXATTN_OK;
}

static double fastest(const prof_cand *c) {
  double m = c->runs[0];
  for (int i = 1; i < c->n_runs; i++)
    if (c->runs[i] < m) m = c->runs[i];
  return m;
}

/* c's runs sorted into v; returns their median. */
static double sort_runs(const prof_cand *c, double *v) {
  memcpy(v, c->runs, (size_t)c->n_runs * sizeof v[0]);
  return tx_sort_median(v, (size_t)c->n_runs);
}

static double median(const prof_cand *c) {
  double v[PROF_MAX_RUNS];
  return sort_runs(c, v);
}

/* The median and the spread (the runs' range over their median, tx_sorted_spread); a rough
   candidate keeps its fastest run. */
static void summarise(prof_cand *c) {
  if (c->n_runs == 0) return;
  if (c->rough || c->n_runs == 1) {
    c->time_s = fastest(c);
    c->spread = -1;
    return;
  }
  double v[PROF_MAX_RUNS];
  c->time_s = sort_runs(c, v);
  c->spread = tx_sorted_spread(v, (size_t)c->n_runs);
}

static int wanted(const prof_cand *c, const prof_settings *s) {
  int w = c->want > 0 ? c->want : s->rounds;
  return w < 1 ? 1 : w > PROF_MAX_RUNS ? PROF_MAX_RUNS : w;
}

/* After a round: candidates whose fastest run is slower than `ratio` x the leader's median stop
   (the leader: the smallest median among those with `runs` runs or more), except after one run
   that is a stall (stall_ratio x slower than the plan expected: a thread waiting for a core the
   host gave to someone else) or that nothing was expected of (the first n of a class): those get
   a second ("Stalls", "A single run without an expectation", docs/measurements.md). */
static void prune(prof_cand *c, size_t n, int runs, double ratio) {
  double leader = INFINITY;
  for (size_t i = 0; i < n; i++)
    if (c[i].n_runs >= runs && median(&c[i]) < leader) leader = median(&c[i]);
  for (size_t i = 0; i < n; i++) {
    int stall = c[i].n_runs == 1 &&
                (c[i].expect_s <= 0 || c[i].runs[0] > prof_policy.stall_ratio * c[i].expect_s);
    if (!c[i].keep && !stall && c[i].n_runs >= runs && fastest(&c[i]) > ratio * leader)
      c[i].rough = 1;
  }
}

/* Removes c[i], keeping the others in order (its plan freed unless borrowed). */
static void drop(prof_cand *c, size_t *n, size_t i) {
  if (!c[i].borrowed) txattn_plan_free(c[i].plan);
  memmove(&c[i], &c[i + 1], (--*n - i) * sizeof *c);
}

/* The candidates that run on one thread first, in their order, then the threaded ones: a round
   switches kind, and warms up for warm_up_s, as seldom as it can. */
static void threaded_last(prof_cand *c, size_t n) {
  for (size_t i = 0, k = 0; i < n; i++)
    if (!c[i].threaded) {
      prof_cand x = c[i];
      memmove(&c[k + 1], &c[k], (i - k) * sizeof *c);
      c[k++] = x;
    }
}

/* One timed run of c that is not recorded (its repetitions as set), after its warm-up, checked by
   chk; seconds per call in *per_call. */
static txattn_status run_aside(prof_cand *c, const txattn_tensors *t, int *kind,
                               const prof_run_check *chk, double *per_call) {
  txattn_status st = warm_up(c, t, kind);
  double sec = 0;
  if (st == TXATTN_OK) st = checked_reps(c, t, c->reps, chk, 0, &sec);
  *per_call = sec / (double)c->reps;
  return st;
}

/* prof_paired_runs, each run checked by chk: a run that fails its check ends them with TXATTN_OK
   and *failed at its candidate, which is refused. */
static txattn_status paired_runs(prof_cand *a, prof_cand *b, const txattn_tensors *t, int pairs,
                                 double *ratios, prof_cand **failed, const prof_run_check *chk) {
  int kind = -1;
  for (int k = 0; k < pairs; k++) {
    double sec[2];
    prof_cand *order[2] = {k % 2 ? a : b, k % 2 ? b : a}; /* b a, a b, b a, ... */
    for (int j = 0; j < 2; j++) {
      txattn_status st = run_aside(order[j], t, &kind, chk, &sec[j]);
      if (st != TXATTN_OK || order[j]->refused) {
        if (failed) *failed = order[j];
        return st;
      }
    }
    ratios[k] = k % 2 ? sec[0] / sec[1] : sec[1] / sec[0];
  }
  return TXATTN_OK;
}

txattn_status prof_paired_runs(prof_cand *a, prof_cand *b, const txattn_tensors *t, int pairs,
                               double *ratios, prof_cand **failed) {
  return paired_runs(a, b, t, pairs, ratios, failed, NULL);
}

/* The paired runs of c against the leader lead; on success c is timed in full: its runs are the
   leader's time times each pair's ratio. A failed or refused run leaves *failed at its
   candidate. */
static txattn_status confirm_against(prof_cand *c, prof_cand *lead, const txattn_tensors *t,
                                     prof_cand **failed, const prof_run_check *chk) {
  const int pairs = prof_policy.confirm_pairs;
  double ratio[PROF_MAX_RUNS];
  txattn_status st = paired_runs(c, lead, t, pairs, ratio, failed, chk);
  if (st != TXATTN_OK || c->refused || lead->refused) return st;
  for (int k = 0; k < pairs; k++) c->runs[k] = ratio[k] * lead->time_s;
  c->n_runs = pairs;
  c->rough = 0;
  summarise(c);
  return TXATTN_OK;
}

/* The calls the paired runs of c against lead make. */
static double confirm_calls(const prof_cand *c, const prof_cand *lead) {
  return prof_policy.confirm_pairs * ((double)c->reps + (double)lead->reps + 2);
}

/* The candidates to confirm against lead, closest first; returns how many (written to who). */
static size_t rough_near(const prof_cand *c, size_t n, size_t lead, size_t *who) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    double ratio = prof_pair(prof_policy.confirm_ratio, &c[i], &c[lead]);
    if (c[i].n_runs == 0 || prof_in_full(&c[i]) || c[i].time_s > ratio * c[lead].time_s) continue;
    size_t k = m++;
    for (; k > 0 && c[who[k - 1]].time_s > c[i].time_s; k--) who[k] = who[k - 1];
    who[k] = i;
  }
  return m;
}

/* Confirmation: a rough candidate within confirm_ratio of the fastest one timed in full is timed
   again against that leader in confirm_pairs paired runs (prof_paired_runs); its time becomes the
   leader's times the median of their ratios, and its spread theirs. The runs of a round are tens
   of milliseconds apart and the host's speed modes last milliseconds to seconds, so a candidate
   whose few runs met a slow spell and the leader's not would be pruned on a ratio the next
   profile does not see; back to back, the ratio of two runs holds through a spell that covers
   both ("The host's noise", "Confirmation run for run", docs/measurements.md). Near ties (within
   tie_max) are confirmed whatever it costs, as far as the deadline allows, since prof_choose
   decides them on medians; the others, closest first, while confirming costs less than the
   settings' confirm_share of the point's timing before it. */
static txattn_status confirm_rough(prof_cand *c, size_t *n, const txattn_tensors *t,
                                   const prof_settings *s, double deadline, double point_s,
                                   const prof_run_check *chk) {
  size_t lead = *n;
  for (size_t i = 0; i < *n; i++)
    if (prof_in_full(&c[i]) && (lead == *n || c[i].time_s < c[lead].time_s)) lead = i;
  if (lead == *n) return TXATTN_OK;
  size_t *who = malloc(*n * sizeof *who);
  unsigned char *failed = calloc(*n, 1);
  if (who == NULL || failed == NULL) {
    free(who);
    free(failed);
    return TXATTN_E_NOMEM;
  }
  size_t m = rough_near(c, *n, lead, who);
  txattn_status first = TXATTN_OK;
  double start = tx_clock();
  for (size_t k = 0; k < m; k++) {
    prof_cand *x = &c[who[k]], *bad = NULL;
    double most = prof_pair(prof_policy.tie_max, x, &c[lead]);
    double calls = confirm_calls(x, &c[lead]);
    double cost = calls * fmax(x->predict_s, c[lead].predict_s);
    if (too_late(x, calls, deadline) || (x->time_s > (1 + most) * c[lead].time_s &&
                                         tx_clock() - start + cost > s->confirm_share * point_s))
      continue; /* not confirmed: it stays as it was */
    txattn_status st = confirm_against(x, &c[lead], t, &bad, chk);
    if (st != TXATTN_OK || bad != NULL) {
      first = first != TXATTN_OK ? first : st;
      failed[bad - c] = 1;
      if (bad == &c[lead]) break;
    }
  }
  for (size_t i = *n; i-- > 0;) /* from the last, so that the indices stay valid */
    if (failed[i]) drop(c, n, i);
  free(who);
  free(failed);
  return first;
}

txattn_status prof_time(prof_cand *c, size_t *n, const txattn_tensors *t, const prof_settings *s) {
  return prof_time_until(c, n, t, s, 0);
}

txattn_status prof_time_until(prof_cand *c, size_t *n, const txattn_tensors *t,
                              const prof_settings *s, double deadline) {
  return prof_time_checked(c, n, t, s, deadline, NULL);
}

/* The call after every timed candidate's last run (prof_run_check): checked, and dropped if it
   fails (or refused). */
static txattn_status last_calls(prof_cand *c, size_t *n, const txattn_tensors *t,
                                const prof_run_check *chk) {
  txattn_status first = TXATTN_OK;
  for (size_t i = 0; chk && i < *n; i++) {
    double sec;
    if (c[i].n_runs == 0) continue;
    txattn_status st = checked_reps(&c[i], t, 1, chk, 0, &sec);
    if (st != TXATTN_OK || c[i].refused) {
      first = first != TXATTN_OK ? first : st;
      drop(c, n, i--);
    }
  }
  return first;
}

txattn_status prof_time_checked(prof_cand *c, size_t *n, const txattn_tensors *t,
                                const prof_settings *s, double deadline,
                                const prof_run_check *chk) {
  txattn_status first = TXATTN_OK;
  int most = 0, kind = -1;
  double start = tx_clock();
  threaded_last(c, *n);
  for (size_t i = 0; i < *n; i++) {
    c[i].n_runs = 0;
    c[i].reps = 0;
    c[i].rough = 0;
    c[i].refused = 0;
    if (too_late(&c[i], 2, deadline)) continue; /* the first call and one run */
    txattn_status st = first_call(&c[i], t, s, chk);
    kind = c[i].threaded;
    if (st != TXATTN_OK || c[i].refused) {
      first = first != TXATTN_OK ? first : st;
      drop(c, n, i--);
      continue;
    }
    if (wanted(&c[i], s) > most) most = wanted(&c[i], s);
  }
  for (int r = 0; r < most; r++) {
    for (size_t i = 0; i < *n; i++) {
      if (c[i].reps == 0 || c[i].rough || c[i].n_runs >= wanted(&c[i], s)) continue;
      if (too_late(&c[i], (double)c[i].reps + 1, deadline)) continue;
      txattn_status st = next_run(&c[i], t, s, &kind, chk);
      if (st != TXATTN_OK || c[i].refused) {
        first = first != TXATTN_OK ? first : st;
        drop(c, n, i--);
      }
    }
    prune(c, *n, r + 1,
          r == 0 ? fmax(prof_policy.first_prune_ratio, s->prune_ratio) : s->prune_ratio);
  }
  for (size_t i = 0; i < *n; i++) summarise(&c[i]);
  txattn_status st = confirm_rough(c, n, t, s, deadline, tx_clock() - start, chk);
  txattn_status last = last_calls(c, n, t, chk);
  return first != TXATTN_OK ? first : st != TXATTN_OK ? st : last;
}
