/* txtune profile: the candidates of one point (kernel x tunables) and their interleaved timing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "timing.h"

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

/* Adds base's kernel with the tunables `values` if that candidate is new and the kernel makes a
   plan with them. */
static size_t add_variant(txattn_context *ctx, const txattn_problem *p, const prof_cand *base,
                          const int64_t *values, prof_cand *out, size_t n, size_t cap) {
  if (n >= cap) return n;
  prof_cand c = *base;
  c.plan = NULL;
  for (size_t i = 0; i < c.n_tun; i++) c.tun_values[i] = values[i];
  for (size_t j = 0; j < n; j++)
    if (same_values(&out[j], &c)) return n;
  if (txattn_plan_create_tuned(ctx, p, c.name, c.tun_names, c.tun_values, c.n_tun, &c.plan) !=
      TXATTN_OK)
    return n;
  /* the plan's names live as long as it does */
  for (size_t i = 0; i < c.n_tun; i++) txattn_plan_tunable_get(c.plan, i, &c.tun_names[i], NULL);
  out[n] = c;
  return n + 1;
}

/* The variants of a kernel's default tunables the settings ask for: one (the last tunable, the
   key block in tiled kernels, doubled, or halved at its maximum) or, patient, the first tunable
   at 1/2, 1 and 2 times its default by the second at 1/2, 1, 2 and 4 times its own. */
static size_t add_variants(txattn_context *ctx, const txattn_problem *p, const prof_cand *base,
                           const prof_settings *s, prof_cand *out, size_t n, size_t cap) {
  txattn_tunable_info ti[PROF_MAX_TUNABLES];
  for (size_t i = 0; i < base->n_tun; i++)
    if (txattn_plan_tunable_info(base->plan, i, &ti[i]) != TXATTN_OK) return n;
  int64_t v[PROF_MAX_TUNABLES];
  memcpy(v, base->tun_values, sizeof v);
  if (s->variants == 1 && base->n_tun > 0) {
    size_t last = base->n_tun - 1;
    int64_t up = snap(v[last] * 2, &ti[last]);
    v[last] = up != v[last] ? up : snap(v[last] / 2, &ti[last]);
    return add_variant(ctx, p, base, v, out, n, cap);
  }
  if (s->variants < 2 || base->n_tun == 0 || base->n_tun > 2) return n;
  static const int num[] = {1, 1, 2, 4}, den[] = {2, 1, 1, 1}; /* x 1/2, 1, 2, 4 */
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < (base->n_tun == 2 ? 4 : 1); b++) {
      v[0] = snap(base->tun_values[0] * num[a] / den[a], &ti[0]);
      if (base->n_tun == 2) v[1] = snap(base->tun_values[1] * num[b] / den[b], &ti[1]);
      n = add_variant(ctx, p, base, v, out, n, cap);
    }
  return n;
}

size_t prof_candidate_add(txattn_context *ctx, const txattn_problem *p, const char *kernel,
                          const char *const *names, const int64_t *values, size_t n_tun,
                          prof_cand *out, size_t n, size_t cap) {
  if (n >= cap || n_tun > PROF_MAX_TUNABLES) return n;
  prof_cand c;
  memset(&c, 0, sizeof c);
  if (txattn_plan_create_tuned(ctx, p, kernel, names, values, n_tun, &c.plan) != TXATTN_OK)
    return n;
  for (size_t k = 0; k < txattn_kernel_count(ctx); k++) {
    txattn_kernel_info info;
    if (txattn_kernel_get(ctx, k, &info) == TXATTN_OK && strcmp(info.name, kernel) == 0) {
      c.kernel = k;
      c.name = info.name;
    }
  }
  c.n_tun = txattn_plan_tunable_count(c.plan);
  for (size_t i = 0; i < c.n_tun && i < PROF_MAX_TUNABLES; i++)
    txattn_plan_tunable_get(c.plan, i, &c.tun_names[i], &c.tun_values[i]);
  int known = c.name == NULL || c.n_tun > PROF_MAX_TUNABLES;
  for (size_t j = 0; j < n && !known; j++) known = same_values(&out[j], &c);
  if (known) {
    txattn_plan_free(c.plan);
    return n;
  }
  out[n] = c;
  return n + 1;
}

size_t prof_candidates(txattn_context *ctx, const txattn_problem *p, const prof_settings *s,
                       prof_cand *out, size_t cap) {
  size_t n = 0;
  for (size_t k = 0; k < txattn_kernel_count(ctx) && n < cap; k++) {
    txattn_kernel_info info;
    if (txattn_kernel_get(ctx, k, &info) != TXATTN_OK || !info.usable) continue;
    prof_cand c;
    memset(&c, 0, sizeof c);
    c.kernel = k;
    c.name = info.name;
    if (txattn_plan_create(ctx, p, info.name, &c.plan) != TXATTN_OK) continue; /* not applicable */
    c.n_tun = txattn_plan_tunable_count(c.plan);
    if (c.n_tun > PROF_MAX_TUNABLES) {
      txattn_plan_free(c.plan);
      continue;
    }
    for (size_t i = 0; i < c.n_tun; i++)
      txattn_plan_tunable_get(c.plan, i, &c.tun_names[i], &c.tun_values[i]);
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

static txattn_status run_reps(prof_cand *c, const txattn_tensors *t, int64_t reps, double *s) {
  double t0 = tx_clock();
  for (int64_t i = 0; i < reps; i++) {
    txattn_status st = txattn_plan_execute(c->plan, t);
    if (st != TXATTN_OK) return st;
  }
  *s = tx_clock() - t0;
  return TXATTN_OK;
}

/* Warm-up, then repetitions doubled until a run lasts min_run_s; that run is the first sample. */
static txattn_status calibrate(prof_cand *c, const txattn_tensors *t, double min_run_s) {
  double s;
  txattn_status st = run_reps(c, t, 1, &s);
  if (st != TXATTN_OK) return st;
  c->reps = 1;
  for (;;) {
    if ((st = run_reps(c, t, c->reps, &s)) != TXATTN_OK) return st;
    if (s >= min_run_s || c->reps >= (INT64_C(1) << 30)) break;
    c->reps *= s > 0 && min_run_s / s < 64 ? 2 : 8;
  }
  c->runs[0] = s / (double)c->reps;
  /* a second run: the first after switching kernels can catch sleeping threads or cold caches */
  if ((st = run_reps(c, t, c->reps, &s)) != TXATTN_OK) return st;
  c->runs[1] = s / (double)c->reps;
  c->n_runs = 2;
  return TXATTN_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double fastest(const prof_cand *c) {
  double m = c->runs[0];
  for (int i = 1; i < c->n_runs; i++)
    if (c->runs[i] < m) m = c->runs[i];
  return m;
}

/* The median and the interquartile spread; a rough candidate (two runs) keeps its faster run. */
static void summarise(prof_cand *c) {
  if (c->rough) {
    c->time_s = fastest(c);
    c->spread = -1;
    return;
  }
  double v[PROF_MAX_RUNS];
  memcpy(v, c->runs, sizeof v);
  qsort(v, (size_t)c->n_runs, sizeof v[0], cmp_double);
  int n = c->n_runs;
  c->time_s = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  c->spread = n >= 3 ? (v[n - 1 - n / 4] - v[n / 4]) / c->time_s : -1;
}

static void drop(prof_cand *c, size_t *n, size_t i) {
  txattn_plan_free(c[i].plan);
  c[i] = c[--*n];
}

txattn_status prof_time(prof_cand *c, size_t *n, const txattn_tensors *t, const prof_settings *s) {
  txattn_status first = TXATTN_OK;
  double best = INFINITY;
  for (size_t i = 0; i < *n; i++) {
    txattn_status st = calibrate(&c[i], t, s->min_run_s);
    if (st != TXATTN_OK) {
      first = first != TXATTN_OK ? first : st;
      drop(c, n, i--);
      continue;
    }
    if (fastest(&c[i]) < best) best = fastest(&c[i]);
  }
  for (size_t i = 0; i < *n; i++) c[i].rough = !c[i].keep && fastest(&c[i]) > s->prune_ratio * best;
  int rounds = s->rounds < PROF_MAX_RUNS ? s->rounds : PROF_MAX_RUNS;
  for (int r = 2; r < rounds; r++)
    for (size_t i = 0; i < *n; i++) {
      double sec;
      if (c[i].rough) continue;
      txattn_status st = run_reps(&c[i], t, c[i].reps, &sec);
      if (st != TXATTN_OK) {
        first = first != TXATTN_OK ? first : st;
        drop(c, n, i--);
        continue;
      }
      c[i].runs[c[i].n_runs++] = sec / (double)c[i].reps;
    }
  for (size_t i = 0; i < *n; i++) summarise(&c[i]);
  return first;
}
