/* SPDX-License-Identifier: MIT */
/* txtune validate: the regret of the dispatch table on shapes it was NOT measured on. For random
   shapes between its grid points (n, r, heads, within its classes) it times the dispatcher's pick
   and every applicable kernel (default tunables and those the table has), and reports pick time
   over the fastest: per shape, the geometric mean and the worst. It prints; it judges only when
   asked to (--fail-above). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "buffers.h"
#include "cmd_validate.h"
#include "context_cli.h"
#include "problem_cli.h"
#include "profile.h"
#include "text_table.h"
#include "timing.h"

/* The regret is the pick's time over the fastest's measured run for run (paired_ratio): the
   median of this many pairs. Taken from each one's median, two candidates' times move apart with
   the host's speed modes ("Regret run for run", docs/measurements.md). */
#define VALIDATE_PAIRS 7
#define SEED           UINT64_C(0x76616c6964)
/* Each candidate is timed as the default profile times it (prof_modes[PROF_DEFAULT]). */
#define VALIDATE_MIN_RUN_S 2e-3
#define VALIDATE_RUNS      5

typedef struct validate_run {
  const char *table_path, *plugin_path, *fail_above;
  double max_geomean, max_worst; /* --fail-above G,W; 0 when not given */
  int64_t samples, seed, max_n;
  tx_opt opts[6];
  tx_opt_group groups[1];
  tx_cmd_spec spec;
  char path[4096];
  txattn_table *t;
  uint64_t rng;
  double log_sum, worst;
  size_t n_done;
} validate_run;

static const char about[] =
    "Measures how well the dispatch table chooses on shapes it was not measured on: random\n"
    "shapes between its measured points, within its classes. For each it times the kernel\n"
    "libtxattn picks against every applicable kernel and prints the pick's time over the fastest\n"
    "(the regret, measured run for run where the pick is not the fastest): per shape, the\n"
    "geometric mean and the worst. Targets: geometric mean <= 1.05, worst <= 1.25. By default the\n"
    "result is printed, not judged; --fail-above G,W judges it (--fail-above 1.05,1.25 holds the\n"
    "table to the targets). How it measures: docs/profiling.md#compare-and-validate.\n"
    "Exit status: 0 measured (and within --fail-above, if given); 1 a target of --fail-above\n"
    "exceeded, or something failed to run; 2 usage error.";

/* One target of --fail-above: a finite number >= 1 that ends at `end` (',' or the string's end). */
static int target(const char *s, char stop, double *out) {
  char *end;
  if (!((*s >= '0' && *s <= '9') || *s == '.')) return 0; /* no sign, space, inf or nan */
  for (const char *c = s; *c && *c != stop; c++)
    if (!strchr("0123456789.eE+-", *c)) return 0; /* no hexadecimal */
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end != stop || errno || !isfinite(v) || v < 1) return 0;
  *out = v;
  return 1;
}

/* --fail-above G,W, strictly: two numbers >= 1 and nothing else. Returns -1 to go on, else a
   usage error's exit status. */
static int parse_targets(validate_run *r) {
  const char *s = r->fail_above;
  if (s == NULL) return -1;
  const char *comma = strchr(s, ',');
  if (comma == NULL || !target(s, ',', &r->max_geomean) || !target(comma + 1, '\0', &r->max_worst))
    return tx_args_usage_error(&r->spec,
                               "--fail-above expects G,W: two numbers >= 1 (the targets of the "
                               "geometric mean and of the worst), got '%s'",
                               s);
  return -1;
}

static int parse(validate_run *r, int argc, char **argv) {
  r->samples = 12;
  r->seed = 1;
  r->max_n = 4096;
  tx_opt *o = r->opts;
  o[0] = tx_opt_string("table", &r->table_path, "FILE",
                       "the dispatch table [$TXATTN_TABLE, else the default]");
  o[1] = tx_opt_int("samples", &r->samples, "K", "random shapes [12]", 1, 10000);
  o[2] = tx_opt_int("seed", &r->seed, "S", "of the random shapes [1]", 0, INT64_MAX);
  o[3] = tx_opt_int("max-n", &r->max_n, "N", "largest n drawn, to bound the time [4096]", 2,
                    INT64_C(1) << 20);
  o[4] = tx_opt_string("plugin-path", &r->plugin_path, "DIRS",
                       "plugin directories, ':'-separated [$TXATTN_PLUGIN_PATH, else the default]");
  o[5] = tx_opt_string("fail-above", &r->fail_above, "G,W",
                       "exit 1 when the regret's geometric mean exceeds G or its worst W [none]");
  r->groups[0] = (tx_opt_group){"Options", r->opts, 6};
  r->spec = (tx_cmd_spec){"validate", "[--table FILE] [--samples K] [--seed S] [--fail-above G,W]",
                          about, r->groups, 1};
  int rc = tx_args_parse_cmd(&r->spec, argc, argv);
  return rc >= 0 ? rc : parse_targets(r);
}

static double uniform(validate_run *r) { /* splitmix64 */
  uint64_t z = (r->rng += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

/* The measured values of field r (else n) in class ci that lie within 1..max. */
static size_t measured(const txattn_table *t, size_t ci, int use_r, int64_t max, int64_t *out,
                       size_t cap) {
  size_t n_points, k = 0;
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  txattn_table_class_get(t, ci, &c, &n_points, NULL);
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(t, ci, i, &p) != TXATTN_OK) continue;
    int64_t v = use_r ? p.r : p.n;
    int seen = v > max;
    for (size_t j = 0; j < k && !seen; j++) seen = out[j] == v;
    if (!seen && k < cap) out[k++] = v;
  }
  return k;
}

/* A value log-uniform between the smallest and largest of v[0..n), on none of them; 0 if none. */
static int64_t between(validate_run *r, const int64_t *v, size_t n) {
  int64_t lo = INT64_MAX, hi = 0;
  for (size_t i = 0; i < n; i++) {
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
  }
  if (n < 2 || hi - lo < 2) return 0;
  for (int tries = 0; tries < 100; tries++) {
    int64_t x = (int64_t)llround(exp(log((double)lo) + uniform(r) * log((double)hi / (double)lo)));
    int on = x <= lo || x >= hi;
    for (size_t i = 0; i < n && !on; i++) on = v[i] == x;
    if (!on) return x;
  }
  return 0;
}

/* A random shape of a random class, off its grid; 0 if that class gave none. */
static int draw(validate_run *r, txattn_problem *p, int *threads) {
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  txattn_table_header_get(r->t, &h);
  size_t ci = (size_t)(uniform(r) * (double)h.n_classes);
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  txattn_table_class_get(r->t, ci, &c, NULL, NULL);
  int64_t v[64];
  int64_t n = between(r, v, measured(r->t, ci, 0, r->max_n, v, 64));
  int64_t rr =
      c.mask == TXATTN_MASK_WINDOW ? between(r, v, measured(r->t, ci, 1, INT64_MAX, v, 64)) : 1;
  if (n == 0 || rr == 0) return 0;
  int64_t heads_kv = 1 + (int64_t)(uniform(r) * 4);
  *p = (txattn_problem){.batch = 1,
                        .heads_q = heads_kv * c.group,
                        .heads_kv = heads_kv,
                        .n_q = c.decode ? 1 : n,
                        .n_kv = n,
                        .d_qk = c.d_qk,
                        .d_v = c.d_v,
                        .mask = c.mask,
                        .q_type = c.q_type,
                        .k_type = c.k_type,
                        .v_type = c.v_type,
                        .o_type = c.o_type};
  if (c.mask == TXATTN_MASK_WINDOW) {
    p->window_left = rr;
    p->window_right = c.window == TXATTN_TABLE_WINDOW_SYM ? rr : 0;
  }
  if (c.ragged) { /* the class's batch, with the lengths its points had (prof_ragged_lens) */
    if (c.batch > 4096) return 0;
    p->batch = c.batch;
    p->struct_size = sizeof *p;
    p->ragged = 1;
  }
  if (c.page_size) { /* pages of the class's size, in a shuffled order (one_shape) */
    p->struct_size = sizeof *p;
    p->page_size = c.page_size;
    p->max_pages = (n + c.page_size - 1) / c.page_size;
    p->n_pages = p->batch * p->max_pages;
  }
  *threads = c.threads;
  return 1;
}

/* The table's candidates at the measured points around p (nearest n, and r, on each side). */
static size_t table_candidates(validate_run *r, txattn_context *ctx, const txattn_problem *p,
                               int threads, prof_cand *c, size_t n) {
  txattn_table_class key = TXATTN_TABLE_CLASS_INIT;
  int64_t pn, pr;
  size_t ci, n_points;
  if (txattn_table_class_of(p, threads, &key, &pn, &pr) != TXATTN_OK ||
      txattn_table_find_class(r->t, &key, &ci) != TXATTN_OK)
    return n;
  txattn_table_class_get(r->t, ci, &key, &n_points, NULL);
  int64_t n_lo = 0, n_hi = INT64_MAX, r_lo = 0, r_hi = INT64_MAX;
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point pt = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(r->t, ci, i, &pt) != TXATTN_OK) continue;
    if (pt.n <= pn && pt.n > n_lo) n_lo = pt.n;
    if (pt.n >= pn && pt.n < n_hi) n_hi = pt.n;
    if (pt.r <= pr && pt.r > r_lo) r_lo = pt.r;
    if (pt.r >= pr && pt.r < r_hi) r_hi = pt.r;
  }
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point pt = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(r->t, ci, i, &pt) != TXATTN_OK) continue;
    if ((pt.n != n_lo && pt.n != n_hi) || (pt.r != r_lo && pt.r != r_hi && pt.r != 0)) continue;
    for (size_t k = 0; k < pt.n_candidates; k++) {
      txattn_table_candidate tc = TXATTN_TABLE_CANDIDATE_INIT;
      if (txattn_table_candidate_get(r->t, ci, i, k, &tc) == TXATTN_OK)
        n = prof_candidate_add(ctx, p, tc.kernel, tc.tunable_names, tc.tunable_values,
                               tc.n_tunables, c, n, PROF_MAX_CANDS);
    }
  }
  return n;
}

/* Every applicable kernel with its default tunables, unless already there. */
static size_t add_defaults(txattn_context *ctx, const txattn_problem *p, prof_cand *c, size_t n) {
  size_t end = n + prof_candidates(ctx, p, 0, 0, c + n, PROF_MAX_CANDS - n, NULL);
  for (size_t i = n; i < end; i++) {
    int known = 0;
    for (size_t j = 0; j < n && !known; j++)
      known = c[j].name == c[i].name && c[j].n_tun == c[i].n_tun &&
              memcmp(c[j].tun_values, c[i].tun_values, c[i].n_tun * sizeof(int64_t)) == 0;
    if (known)
      txattn_plan_free(c[i].plan);
    else
      c[n++] = c[i];
  }
  return n;
}

static void fmt_pick(const prof_cand *c, char *buf, size_t size) {
  size_t used = 0;
  tx_appendf(buf, size, &used, "%s", c->name);
  for (size_t i = 0; i < c->n_tun; i++)
    tx_appendf(buf, size, &used, " %s=%lld", c->tun_names[i], (long long)c->tun_values[i]);
}

/* Times the pick and the alternatives on p; adds a row. Returns 0, or -1 if it could not. */
/* The dispatcher's pick (first), the table's candidates around p and every kernel's defaults. */
static size_t gather(validate_run *r, txattn_context *ctx, const txattn_problem *p, int threads,
                     prof_cand *c, char *why, size_t why_size) {
  txattn_plan *pick = NULL;
  txattn_status s = txattn_plan_create(ctx, p, NULL, &pick);
  if (s != TXATTN_OK) { /* said, and the shape is drawn again */
    char shape[160];
    tx_problem_format(p, shape, sizeof shape);
    fprintf(stderr, "txtune validate: libtxattn cannot plan %s on %d thread%s: %s: %s\n", shape,
            threads, threads == 1 ? "" : "s", txattn_status_name(s), txattn_last_error());
    return 0;
  }
  const char *names[PROF_MAX_TUNABLES];
  int64_t values[PROF_MAX_TUNABLES];
  size_t nt = txattn_plan_tunable_count(pick);
  for (size_t i = 0; i < nt && i < PROF_MAX_TUNABLES; i++)
    txattn_plan_tunable_get(pick, i, &names[i], &values[i]);
  size_t n =
      prof_candidate_add(ctx, p, txattn_plan_kernel(pick), names, values, nt, c, 0, PROF_MAX_CANDS);
  snprintf(why, why_size, "%s", txattn_plan_why(pick));
  txattn_plan_free(pick);
  if (n == 0) return 0;
  n = table_candidates(r, ctx, p, threads, c, n);
  return add_defaults(ctx, p, c, n);
}

static void report(validate_run *r, tx_table *tab, const txattn_problem *p, int threads,
                   const prof_cand *pick, const prof_cand *best, double ratio, const char *why) {
  r->log_sum += log(ratio);
  r->worst = ratio > r->worst ? ratio : r->worst;
  r->n_done++;
  char shape[160], th[16], pk[160], bk[160], t1[32], t2[32], rt[16];
  int len = tx_problem_format(p, shape, sizeof shape);
  if (p->ragged && len > 0 && (size_t)len < sizeof shape) /* the lengths: prof_ragged_lens */
    snprintf(shape + len, sizeof shape - (size_t)len, " ragged");
  snprintf(th, sizeof th, "%d", threads);
  fmt_pick(pick, pk, sizeof pk);
  fmt_pick(best, bk, sizeof bk);
  snprintf(t1, sizeof t1, "%.4g ms", pick->time_s * 1e3);
  snprintf(t2, sizeof t2, "%.4g ms", best->time_s * 1e3);
  snprintf(rt, sizeof rt, "%.3f", ratio);
  const char *cells[] = {shape, th, pk, t1, bk, t2, rt};
  tx_table_add(tab, cells);
  tx_table_note(tab, "why: %.200s", why);
}

/* a's time over b's, run for run: tx_time on the two, each round's runs in turn and the order
   alternating, so that a pair's two runs share the host's speed of the moment; the median over
   VALIDATE_PAIRS rounds (after the calibration runs), at least 1. Returns 0, or -1 if a call
   failed. */
static int paired_ratio(const prof_cand *a, const prof_cand *b, const txattn_tensors *t,
                        double *ratio) {
  tx_plan_call x[2] = {{a->plan, t}, {b->plan, t}};
  void *args[2] = {&x[0], &x[1]};
  enum { RUNS = VALIDATE_PAIRS + 1 };
  double runs[2 * RUNS], ratios[VALIDATE_PAIRS];
  tx_timing tm[2];
  txattn_status st[2];
  tx_timing_opts o = {.min_run_s = VALIDATE_MIN_RUN_S, .runs = RUNS, .warm_each_run = 1};
  tx_time(tx_plan_call_run, args, 2, &o, tm, st, runs);
  if (st[0] != TXATTN_OK || st[1] != TXATTN_OK || tm[0].runs < RUNS || tm[1].runs < RUNS) return -1;
  for (int k = 0; k < VALIDATE_PAIRS; k++) ratios[k] = runs[1 + k] / runs[RUNS + 1 + k];
  *ratio = fmax(1.0, tx_sort_median(ratios, VALIDATE_PAIRS));
  return 0;
}

/* Times the pick and the alternatives on p and adds a row. Returns 0, or -1 if it could not. */
static int one_shape(validate_run *r, txattn_context *ctx, const txattn_problem *p, int threads,
                     tx_table *tab) {
  prof_cand c[PROF_MAX_CANDS];
  char why[512], err[256];
  size_t n = gather(r, ctx, p, threads, c, why, sizeof why);
  tx_buffers b;
  int64_t lens[4096];
  if (p->ragged) prof_ragged_lens(p->n_kv, p->batch, lens);
  if (n == 0 || tx_buffers_alloc(&b, p, TX_LAYOUT_CONTIGUOUS, 0, err, sizeof err) != 0) {
    prof_candidates_free(c, n);
    return -1;
  }
  if (p->ragged && tx_buffers_serving(&b, 0, lens, (size_t)p->batch, err, sizeof err) != 0) {
    tx_buffers_free(&b);
    prof_candidates_free(c, n);
    return -1;
  }
  tx_buffers_fill(&b, SEED, 1.0f);
  if (p->page_size && tx_buffers_page(&b, SEED, err, sizeof err) != 0) {
    tx_buffers_free(&b);
    prof_candidates_free(c, n);
    return -1;
  }
  const char *pick_name = c[0].name; /* timing may reorder the candidates */
  int64_t pick_values[PROF_MAX_TUNABLES];
  memcpy(pick_values, c[0].tun_values, sizeof pick_values);
  size_t untimed;
  prof_time(c, &n, &b.t, VALIDATE_MIN_RUN_S, VALIDATE_RUNS, 0, NULL, &untimed);
  size_t best = 0, at = SIZE_MAX;
  for (size_t i = 0; i < n; i++) {
    if (c[i].time_s < c[best].time_s) best = i;
    if (at == SIZE_MAX && c[i].name == pick_name &&
        memcmp(c[i].tun_values, pick_values, c[i].n_tun * sizeof(int64_t)) == 0)
      at = i;
  }
  double ratio = 1;
  if (at != SIZE_MAX && at != best && paired_ratio(&c[at], &c[best], &b.t, &ratio) != 0)
    at = SIZE_MAX;
  tx_buffers_free(&b);
  if (at != SIZE_MAX) report(r, tab, p, threads, &c[at], &c[best], ratio, why);
  prof_candidates_free(c, n);
  return at != SIZE_MAX ? 0 : -1;
}

static int open_ctx(validate_run *r, int threads, txattn_context **ctx) {
  txattn_options o = {.plugin_path = r->plugin_path, .table_path = r->path, .n_threads = threads};
  txattn_status s = txattn_context_create(&o, ctx);
  if (s != TXATTN_OK) {
    tx_print_lib_error("validate", "cannot create the library context", s);
    return TX_EXIT_FAIL;
  }
  txattn_table_status st = txattn_context_table_status(*ctx);
  if (st == TXATTN_TABLE_PARTIAL)
    fprintf(stderr, "txtune validate: note: %s\n", txattn_context_table_state(*ctx));
  if (st == TXATTN_TABLE_LOADED || st == TXATTN_TABLE_PARTIAL) return 0;
  fprintf(stderr, "txtune validate: libtxattn does not follow the table: %s\n",
          txattn_context_table_state(*ctx));
  return TX_EXIT_FAIL;
}

static int load(validate_run *r) {
  if (r->table_path)
    snprintf(r->path, sizeof r->path, "%s", r->table_path);
  else if (txattn_table_default_path(r->path, sizeof r->path) != TXATTN_OK) {
    fprintf(stderr, "txtune validate: %s\n", txattn_last_error());
    return TX_EXIT_FAIL;
  }
  txattn_status s = txattn_table_load(r->path, &r->t);
  if (s != TXATTN_OK) {
    tx_print_lib_error("validate", "cannot use the table", s);
    return TX_EXIT_FAIL;
  }
  return 0;
}

static int sample_all(validate_run *r, tx_table *tab) {
  enum { MAX_T = 8 };
  txattn_context *ctx[MAX_T] = {0};
  int th[MAX_T], n_ctx = 0, rc = 0;
  for (int64_t k = 0, tries = 0; k < r->samples && tries < 100 * r->samples && rc == 0; tries++) {
    txattn_problem p = TXATTN_PROBLEM_INIT;
    int threads, i;
    if (!draw(r, &p, &threads)) continue;
    for (i = 0; i < n_ctx && th[i] != threads; i++) {
    }
    if (i == n_ctx) {
      if (n_ctx == MAX_T) continue;
      th[n_ctx] = threads;
      if ((rc = open_ctx(r, threads, &ctx[n_ctx])) != 0) break;
      n_ctx++;
    }
    if (one_shape(r, ctx[i], &p, threads, tab) == 0) k++;
  }
  for (int i = 0; i < n_ctx; i++) txattn_context_free(ctx[i]);
  return rc;
}

/* --fail-above: exit status 1, saying which target was exceeded, when one was. */
static int judge(const validate_run *r, double geomean) {
  if (r->fail_above == NULL) return TX_EXIT_OK;
  int over_g = geomean > r->max_geomean, over_w = r->worst > r->max_worst;
  if (over_g)
    printf("FAIL: the geometric mean of the regret, %.3f, exceeds %g (--fail-above)\n", geomean,
           r->max_geomean);
  if (over_w)
    printf("FAIL: the worst regret, %.3f, exceeds %g (--fail-above)\n", r->worst, r->max_worst);
  if (!over_g && !over_w)
    printf("PASS: geometric mean %.3f <= %g and worst %.3f <= %g (--fail-above)\n", geomean,
           r->max_geomean, r->worst, r->max_worst);
  return over_g || over_w ? TX_EXIT_FAIL : TX_EXIT_OK;
}

int tx_cmd_validate(int argc, char **argv) {
  validate_run r;
  memset(&r, 0, sizeof r);
  int rc = parse(&r, argc, argv);
  if (rc >= 0) return rc;
  if ((rc = load(&r)) != 0) return rc;
  r.rng = (uint64_t)r.seed;
  tx_table tab;
  tx_table_init(&tab, "SHAPE|>T|PICK|>PICK TIME|FASTEST|>FASTEST TIME|>PICK/FASTEST");
  rc = sample_all(&r, &tab);
  tx_table_print(&tab, stdout, "");
  tx_table_free(&tab);
  txattn_table_free(r.t);
  if (rc) return rc;
  if (r.n_done == 0) {
    fprintf(stderr, "txtune validate: the table has no class with two measured n to draw from\n");
    return TX_EXIT_FAIL;
  }
  double geomean = exp(r.log_sum / (double)r.n_done);
  printf("\nregret over %zu shapes off the grid (table %s): geometric mean %.3f (target <= 1.05), "
         "worst %.3f (target <= 1.25)\n",
         r.n_done, r.path, geomean, r.worst);
  return judge(&r, geomean);
}
