/* SPDX-License-Identifier: MIT */
/* txtune profile: the candidates of one point (kernel x tunables), their timing and the winner. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <limits.h>
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
                           int variants, prof_cand *out, size_t n, size_t cap) {
  txattn_tunable_info ti[PROF_MAX_TUNABLES] = {0};
  for (size_t i = 0; i < base->n_tun; i++) {
    ti[i] = (txattn_tunable_info)TXATTN_TUNABLE_INFO_INIT;
    if (txattn_plan_tunable_info(base->plan, i, &ti[i]) != TXATTN_OK) return n;
  }
  int64_t v[PROF_MAX_TUNABLES];
  memcpy(v, base->tun_values, sizeof v);
  if (variants == 1 && base->n_tun > 0) {
    size_t last = base->n_tun - 1;
    int64_t up = snap(v[last] * 2, &ti[last]);
    int cut = up != v[last] && default_cut_by_problem(ctx, p, base, last);
    v[last] = up == v[last] || cut ? snap(v[last] / 2, &ti[last]) : up;
    return add_variant(ctx, p, base, v, cut ? 2 : 1, out, n, cap);
  }
  if (variants < 2 || base->n_tun == 0 || base->n_tun > 2) return n;
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

/* The library's own plugin directory: "txattn/plugins" beside the libtxattn.so this program runs
   with (the build tree mirrors the install), resolved. */
static int own_plugin_dir(char *out) {
  Dl_info info;
  char dir[PATH_MAX];
  if (dladdr((void *)txattn_version_string, &info) == 0 || info.dli_fname == NULL) return 0;
  const char *slash = strrchr(info.dli_fname, '/');
  int n = snprintf(dir, sizeof dir, "%.*s/txattn/plugins",
                   slash ? (int)(slash - info.dli_fname) : 1, slash ? info.dli_fname : ".");
  return n > 0 && (size_t)n < sizeof dir && realpath(dir, out) != NULL;
}

int prof_kernel_shipped(const txattn_kernel_info *k) {
  static const char *const names[] = {"naive",      "masked", "banded",
                                      "banded_omp", "tiled",  "tiled_omp"};
  int named = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    named |= k->plugin != NULL && strcmp(k->plugin, names[i]) == 0;
  char own[PATH_MAX], file[PATH_MAX];
  if (!named || k->path == NULL || !own_plugin_dir(own) || realpath(k->path, file) == NULL)
    return 0;
  char *slash = strrchr(file, '/');
  if (slash) *slash = '\0';
  return slash && strcmp(file, own) == 0;
}

/* c's kernel fields: kernel k of ctx, as info describes it. */
static void set_kernel(prof_cand *c, txattn_context *ctx, size_t k,
                       const txattn_kernel_info *info) {
  c->kernel = k;
  c->name = info->name;
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

size_t prof_candidates(txattn_context *ctx, const txattn_problem *p, int variants, int twins,
                       prof_cand *out, size_t cap, prof_plan_failures *failed) {
  size_t n = 0;
  if (failed) failed->n = 0;
  for (size_t k = 0; k < txattn_kernel_count(ctx) && n < cap; k++) {
    txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, k, &info) != TXATTN_OK || !info.usable) continue;
    if (twins && prof_twin_stands_in(ctx, p, &info)) continue;
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
    n = add_variants(ctx, p, &out[n - 1], variants, out, n, cap);
  }
  return n;
}

void prof_candidates_free(prof_cand *c, size_t n) {
  for (size_t i = 0; i < n; i++) {
    txattn_plan_free(c[i].plan);
    c[i].plan = NULL;
  }
}

/* What tx_time's check of a point sees: the candidates and the point's check. */
typedef struct timed_point {
  prof_cand *c;
  const txattn_tensors *t;
  const prof_run_check *chk;
} timed_point;

static txattn_status run_cand(void *arg) {
  const timed_point *tp = ((void **)arg)[0];
  return txattn_plan_execute(tp->c[(uintptr_t)((void **)arg)[1]].plan, tp->t);
}

static void before_run(void *arg, size_t i) {
  const timed_point *tp = arg;
  (void)i;
  if (tp->chk->turn) tp->chk->turn(tp->chk->arg, tp->t);
}

/* Judges candidate i's output and time per call after a run; nonzero refuses it. */
static int after_run(void *arg, size_t i, int first, double per_call) {
  const timed_point *tp = arg;
  const prof_run_check *chk = tp->chk;
  prof_cand *c = &tp->c[i];
  char why[320], reason[480];
  double err = NAN;
  prof_fault fault = PROF_FAULT_NONE;
  if (chk->exact && !chk->exact(chk->arg, tp->t, &err, why, sizeof why)) {
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
  if (fault != PROF_FAULT_NONE && chk->refused) chk->refused(chk->arg, c, fault, err, reason);
  return fault != PROF_FAULT_NONE;
}

/* The candidates that run on one thread first, then the threaded ones: a round switches kind
   (OpenMP threads spin after a region, a sleeping team is slow to wake) twice at most. */
static void threaded_last(prof_cand *c, size_t n) {
  for (size_t i = 0, k = 0; i < n; i++)
    if (!c[i].threaded) {
      prof_cand x = c[i];
      memmove(&c[k + 1], &c[k], (i - k) * sizeof *c);
      c[k++] = x;
    }
}

txattn_status prof_time(prof_cand *c, size_t *n, const txattn_tensors *t, double min_run_s,
                        int runs, double deadline, const prof_run_check *chk, size_t *untimed) {
  size_t m = *n;
  threaded_last(c, m);
  timed_point tp = {c, t, chk};
  void *pairs[PROF_MAX_CANDS][2], *args[PROF_MAX_CANDS] = {0};
  tx_timing tm[PROF_MAX_CANDS];
  txattn_status st[PROF_MAX_CANDS], first = TXATTN_OK;
  unsigned char refused[PROF_MAX_CANDS] = {0};
  double *v = calloc(m * (size_t)runs + 1, sizeof *v);
  if (!v) return TXATTN_E_NOMEM;
  for (size_t i = 0; i < m; i++) {
    pairs[i][0] = &tp;
    pairs[i][1] = (void *)(uintptr_t)i;
    args[i] = pairs[i];
  }
  tx_timing_check ck = {before_run, after_run, &tp, refused};
  tx_timing_opts o = {.min_run_s = min_run_s,
                      .runs = runs,
                      .deadline = deadline,
                      .drop_ratio = PROF_DROP_RATIO,
                      .warm_each_run = 1,
                      .check = chk ? &ck : NULL};
  tx_time(run_cand, args, m, &o, tm, st, v);
  size_t kept = 0;
  *untimed = 0;
  for (size_t i = 0; i < m; i++) {
    if (st[i] == TXATTN_OK && !refused[i] && tm[i].runs > 0) {
      c[i].n_runs = tm[i].runs;
      c[i].time_s = tm[i].median_s;
      c[i].fastest_s = tm[i].min_s;
      qsort(v + i * (size_t)runs, (size_t)tm[i].runs, sizeof *v, tx_cmp_double);
      c[i].spread =
          tm[i].runs > 1 ? tx_sorted_spread(v + i * (size_t)runs, (size_t)tm[i].runs) : -1;
      c[kept++] = c[i];
      continue;
    }
    if (st[i] != TXATTN_OK && first == TXATTN_OK) first = st[i];
    *untimed += st[i] == TXATTN_OK && !refused[i];
    txattn_plan_free(c[i].plan);
  }
  *n = kept;
  free(v);
  return first;
}

/* Whether a is preferred to b among candidates within the noise of the fastest (prof_choose). */
static int preferred(const prof_cand *a, const prof_cand *b) {
  if ((a->spread >= 0) != (b->spread >= 0)) return a->spread >= 0;
  if (a->parallel != b->parallel && !a->threaded && !b->threaded) return a->parallel < b->parallel;
  if ((a->slot == 0) != (b->slot == 0)) return a->slot == 0;
  if (a->time_s != b->time_s) return a->time_s < b->time_s;
  int c = strcmp(a->name, b->name);
  return c != 0 ? c < 0 : a->slot < b->slot;
}

size_t prof_choose(const prof_cand *c, size_t n) {
  size_t fast = n, w;
  for (size_t i = 0; i < n; i++)
    if (c[i].n_runs > 0 && (fast == n || c[i].time_s < c[fast].time_s)) fast = i;
  if (fast == n) return n;
  w = fast;
  for (size_t i = 0; i < n; i++) {
    if (c[i].n_runs == 0) continue;
    double most = c[i].threaded || c[fast].threaded ? PROF_TIE_MAX_THREADED : PROF_TIE_MAX;
    double tol = fmin(most, fmax(PROF_TIE_MIN, fmax(c[fast].spread, c[i].spread)));
    if (c[i].time_s <= (1 + tol) * c[fast].time_s && preferred(&c[i], &c[w])) w = i;
  }
  return w;
}
