/* txtune profile: measures every exact kernel (x tunables) over a grid of shape classes on this
   machine and writes the dispatch table libtxattn follows, then summarises who wins where. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "context_cli.h"
#include "profile.h"
#include "profile_grid.h"
#include "tensors.h"
#include "timing.h"

#define MAX_CANDS  128
#define SEED       UINT64_C(0x70726f66696c65)
#define CHECK_N    193 /* the small shape each candidate must be exact on: no multiple of a block */
#define DROP_RATIO 12.0

static const char about[] =
    "Measures the installed kernels on this machine and writes the dispatch table libtxattn\n"
    "follows from then on. The grid: head sizes --d (64,128); masks none, causal and centred\n"
    "windows of several reaches r; n doubling from 64 to --n-max (steps of 4 with --quick);\n"
    "decode (n_q = 1 against n keys) and GQA (group 4); each at the thread counts --threads\n"
    "(1 and all). Each candidate (kernel x tunables) is first checked against txattn_reference\n"
    "on a small shape of its class (n = 193): an inexact one is excluded and the table says\n"
    "why. Timing: a warm-up call, repetitions doubled until a run is long enough, then runs\n"
    "taken round-robin over the candidates so drift hits all alike, the median kept.\n"
    "Candidates slower than 3x the best after two runs keep that rough time; one that loses by\n"
    "12x at two n in a row is not timed at larger n of its class.\n"
    "Modes: --quick (30 s: default tunables, n up to 4096), default (3 min: plus one tile\n"
    "variant), --patient (30 min: a grid of tiles). --budget caps the whole run: points that\n"
    "would not fit are left out and what was measured is written. The table is written\n"
    "atomically to -o FILE, else $TXATTN_TABLE, else $XDG_CACHE_HOME/txtune/dispatch.json,\n"
    "else ~/.cache/txtune/dispatch.json.";

typedef struct profile_run {
  int quick, patient;
  tx_strlist threads, d;
  int64_t n_max;
  double budget_s;
  const char *out, *plugin_path;
  tx_opt opts[8];
  tx_opt_group groups[1];
  tx_cmd_spec spec;
  prof_settings s;
  prof_grid g;
  txattn_table *table;
  prof_checks *checks;
  prof_progress prog;
  double start;
  size_t n_points, n_skipped, n_excluded;
  double spreads[4096];
  size_t n_spreads;
} profile_run;

static int parse(profile_run *r, int argc, char **argv) {
  tx_opt *o = r->opts;
  r->n_max = 0;
  r->budget_s = 0;
  o[0] = tx_opt_flag("quick", &r->quick, "about 30 s: fewer points, default tunables only");
  o[1] = tx_opt_flag("patient", &r->patient, "a wider tile search (about 30 min)");
  o[2] = tx_opt_list("threads", &r->threads, "LIST", "thread counts [1 and every core]");
  o[3] = tx_opt_list("d", &r->d, "LIST", "head sizes [64,128]");
  o[4] = tx_opt_int("n-max", &r->n_max, "N", "the largest n [16384; --quick 4096]", 64,
                    INT64_C(1) << 20);
  o[5] =
      tx_opt_double("budget", &r->budget_s, "S", "seconds for the whole profile [by mode]", 1, 1e6);
  o[6] = tx_opt_string("output", &r->out, "FILE",
                       "where to write the table (also -o FILE) [the default path]");
  o[7] = tx_opt_string("plugin-path", &r->plugin_path, "DIRS",
                       "plugin directories, ':'-separated [$TXATTN_PLUGIN_PATH, else the default]");
  r->groups[0] = (tx_opt_group){"Options", r->opts, 8};
  r->spec = (tx_cmd_spec){"profile",
                          "[--quick | --patient] [--threads LIST] [--d LIST] [--n-max N] "
                          "[--budget S] [-o FILE]",
                          about, r->groups, 1};
  static char output[] = "--output"; /* the option parser knows long names only */
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-o") == 0) argv[i] = output;
  int rc = tx_args_parse_cmd(&r->spec, argc, argv);
  if (rc >= 0) return rc;
  if (r->quick && r->patient)
    return tx_args_usage_error(&r->spec, "--quick and --patient contradict each other");
  return -1;
}

static void settings(profile_run *r) {
  static const prof_settings modes[] = {
      {PROF_QUICK, 1e-3, 3, 3.0, 0},
      {PROF_DEFAULT, 4e-3, 5, 3.0, 1},
      {PROF_PATIENT, 1e-2, 7, 3.0, 2},
  };
  static const double budgets[] = {30, 180, 1800};
  int m = r->quick ? 0 : r->patient ? 2 : 1;
  r->s = modes[m];
  if (r->budget_s <= 0) r->budget_s = budgets[m];
  if (r->n_max <= 0) r->n_max = r->quick ? 4096 : 16384;
}

static int over_budget(const profile_run *r) {
  return tx_clock() - r->start > r->budget_s;
}

static void add_exclusion(profile_run *r, const prof_grid_class *gc, const txattn_problem *small,
                          const prof_cand *c, double err, const char *why) {
  txattn_table_exclusion x = {.cls = gc->cls,
                              .kernel = c->name,
                              .n_tunables = c->n_tun,
                              .tunable_names = c->tun_names,
                              .tunable_values = c->tun_values,
                              .n = small->n_kv,
                              .r = small->mask == TXATTN_MASK_WINDOW ? small->window_left : 0,
                              .max_error = err,
                              .reason = *why ? why : "not exact"};
  if (txattn_table_add_exclusion(r->table, &x) == TXATTN_OK) r->n_excluded++;
}

/* Keeps the candidates that are exact on the class's small shape; the others are excluded (once)
   or, if they cannot run it, dropped. */
static size_t keep_exact(profile_run *r, prof_grid_class *gc, size_t ri, int64_t rr, prof_cand *c,
                         size_t n) {
  txattn_problem small = prof_grid_problem(gc, CHECK_N, rr);
  txattn_context *ctx = r->g.ctx[gc->ctx];
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    double err;
    char why[256];
    int fresh, v = -1;
    if (!over_budget(r)) /* checks of many variants add up: the budget covers them too */
      v = prof_check(r->checks, ctx, gc->id, &small, &c[i], &err, why, sizeof why, &fresh);
    if (v == 0 && fresh) add_exclusion(r, gc, &small, &c[i], err, why);
    if (v == 1 && !prof_grid_dropped(gc, ri, c[i].kernel)) {
      c[i].max_error = err;
      c[kept++] = c[i];
    } else {
      txattn_plan_free(c[i].plan);
    }
  }
  return kept;
}

static int time_point(profile_run *r, const txattn_problem *p, prof_cand *c, size_t *n) {
  tx_buffers b;
  char err[256];
  if (tx_buffers_alloc(&b, p, TX_LAYOUT_CONTIGUOUS, 0, err, sizeof err) != 0) {
    prof_progress_end(&r->prog);
    fprintf(stderr, "txtune profile: %s\n", err);
    return -1;
  }
  tx_buffers_fill(&b, SEED, 1.0f);
  txattn_status s = prof_time(c, n, &b.t, &r->s);
  if (s != TXATTN_OK) {
    prof_progress_end(&r->prog);
    tx_print_lib_error("profile", "a candidate failed and is left out", s);
  }
  tx_buffers_free(&b);
  return 0;
}

/* Kernels whose every variant lost by DROP_RATIO or more at two points in a row are not timed at
   larger n. */
static void learn(const profile_run *r, prof_grid_class *gc, size_t ri, const prof_cand *c,
                  size_t n) {
  double best = INFINITY, work = 0, calls = 0;
  for (size_t i = 0; i < n; i++) {
    if (c[i].time_s < best) best = c[i].time_s;
    double k = c[i].rough ? 2 : 2 + r->s.rounds;
    work += k * c[i].time_s;
    calls += k;
  }
  uint64_t slow = 0, fast = 0;
  for (size_t i = 0; i < n; i++)
    if (c[i].kernel < 64) {
      if (c[i].time_s > DROP_RATIO * best)
        slow |= UINT64_C(1) << c[i].kernel;
      else
        fast |= UINT64_C(1) << c[i].kernel;
    }
  slow &= ~fast;
  gc->dropped[ri] |= slow & gc->lost[ri]; /* twice in a row: one slow run can be a hiccup */
  gc->lost[ri] = slow;
  gc->last_work[ri] = work;
  gc->last_calls[ri] = calls;
}

static void record(profile_run *r, prof_grid_class *gc, int64_t n, int64_t rr, prof_cand *c,
                   size_t nc) {
  txattn_table_candidate tc[MAX_CANDS];
  for (size_t i = 0; i < nc; i++)
    tc[i] = (txattn_table_candidate){.kernel = c[i].name,
                                     .n_tunables = c[i].n_tun,
                                     .tunable_names = c[i].tun_names,
                                     .tunable_values = c[i].tun_values,
                                     .time_s = c[i].time_s,
                                     .max_error = c[i].max_error,
                                     .spread = c[i].rough ? -1 : c[i].spread};
  txattn_status s = TXATTN_OK;
  if (!gc->in_table) {
    s = txattn_table_add_class(r->table, &gc->cls, &gc->table_index);
    gc->in_table = s == TXATTN_OK;
  }
  if (s == TXATTN_OK) s = txattn_table_add_point(r->table, gc->table_index, n, rr, tc, nc);
  if (s != TXATTN_OK) {
    prof_progress_end(&r->prog);
    tx_print_lib_error("profile", "cannot record a point", s);
    return;
  }
  r->n_points++;
  size_t w = 0;
  for (size_t i = 1; i < nc; i++)
    if (c[i].time_s < c[w].time_s) w = i;
  if (c[w].spread >= 0 && r->n_spreads < sizeof r->spreads / sizeof r->spreads[0])
    r->spreads[r->n_spreads++] = c[w].spread;
}

/* What measuring (n, r) will cost, from the last point of the class: short calls cost min_run
   each, long ones grow with the visible pairs. */
static double predict(const profile_run *r, const prof_grid_class *gc, size_t ri, double pairs) {
  if (gc->last_pairs[ri] <= 0) return 0;
  double grow = pairs / gc->last_pairs[ri];
  double floor = gc->last_calls[ri] * r->s.min_run_s, scaled = gc->last_work[ri] * grow;
  return floor > scaled ? floor : scaled;
}

static void measure_point(profile_run *r, prof_grid_class *gc, int64_t n, size_t ri, int64_t rr) {
  txattn_problem p = prof_grid_problem(gc, n, rr);
  double pairs = txattn_problem_visible_pairs(&p);
  if (!gc->stopped[ri] && tx_clock() - r->start + predict(r, gc, ri, pairs) > r->budget_s)
    gc->stopped[ri] = 1;
  if (gc->stopped[ri]) {
    r->n_skipped++;
    r->prog.done++;
    return;
  }
  char what[160], d[96];
  txattn_table_class_describe(&gc->cls, d, sizeof d);
  snprintf(what, sizeof what, "%s n=%lld", d, (long long)n);
  if (rr) snprintf(what + strlen(what), sizeof what - strlen(what), " r=%lld", (long long)rr);
  prof_progress_show(&r->prog, what);
  prof_cand c[MAX_CANDS];
  size_t nc = prof_candidates(r->g.ctx[gc->ctx], &p, &r->s, c, MAX_CANDS);
  nc = keep_exact(r, gc, ri, rr, c, nc);
  if (over_budget(r)) {
    gc->stopped[ri] = 1;
    r->n_skipped++;
  } else if (nc > 0 && time_point(r, &p, c, &nc) == 0 && nc > 0) {
    record(r, gc, n, rr, c, nc);
    learn(r, gc, ri, c, nc);
    gc->last_pairs[ri] = pairs;
  }
  prof_candidates_free(c, nc);
  r->prog.done++;
}

/* Every class at one n before any at the next, so a budget that runs out costs the largest n. */
static void measure_all(profile_run *r) {
  prof_progress_init(&r->prog, prof_grid_points(&r->g), r->budget_s);
  for (size_t ni = 0; ni < r->g.n_n; ni++)
    for (size_t ci = 0; ci < r->g.n_cls; ci++) {
      const int64_t *rs;
      size_t n_r = prof_grid_rs(&r->g, &r->g.cls[ci], &rs);
      for (size_t ri = 0; ri < n_r; ri++) measure_point(r, &r->g.cls[ci], r->g.n[ni], ri, rs[ri]);
    }
  prof_progress_end(&r->prog);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void list_json(char *buf, size_t size, const int64_t *v, size_t n) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
}

/* The settings and the measured noise (the winners' median relative spread) for the header. */
static void set_profile(profile_run *r, double elapsed) {
  static const char *const names[] = {"quick", "default", "patient"};
  char json[2048], th[256], d[256], n[512], rs[128], load[64] = "null";
  int64_t t[GRID_MAX_CTX];
  for (size_t i = 0; i < r->g.n_ctx; i++) t[i] = r->g.threads[i];
  list_json(th, sizeof th, t, r->g.n_ctx);
  list_json(d, sizeof d, r->g.d, r->g.n_d);
  list_json(n, sizeof n, r->g.n, r->g.n_n);
  list_json(rs, sizeof rs, r->g.r, r->g.n_r);
  FILE *f = fopen("/proc/loadavg", "r");
  double l1;
  if (f && fscanf(f, "%lf", &l1) == 1) snprintf(load, sizeof load, "%.2f", l1);
  if (f) fclose(f);
  qsort(r->spreads, r->n_spreads, sizeof r->spreads[0], cmp_double);
  double noise = r->n_spreads ? r->spreads[r->n_spreads / 2] : 0;
  snprintf(json, sizeof json,
           "{\"mode\": \"%s\", \"budget_s\": %g, \"elapsed_s\": %.1f, \"threads\": %s, \"d\": %s, "
           "\"n\": %s, \"window_r\": %s, \"min_run_s\": %g, \"runs\": %d, \"prune_ratio\": %g, "
           "\"points\": %zu, \"points_left_out\": %zu, \"noise_median_spread\": %.4f, "
           "\"load_1min\": %s}",
           names[r->s.mode], r->budget_s, elapsed, th, d, n, rs, r->s.min_run_s, r->s.rounds,
           r->s.prune_ratio, r->n_points, r->n_skipped, noise, load);
  txattn_status s = txattn_table_set_profile(r->table, json);
  if (s != TXATTN_OK) tx_print_lib_error("profile", "cannot record the settings", s);
}

static int write_table(profile_run *r) {
  char path[4096];
  if (r->out)
    snprintf(path, sizeof path, "%s", r->out);
  else if (txattn_table_default_path(path, sizeof path) != TXATTN_OK) {
    fprintf(stderr, "txtune profile: %s\n", txattn_last_error());
    return TX_EXIT_FAIL;
  }
  txattn_status s = txattn_table_write(r->table, path);
  if (s != TXATTN_OK) {
    tx_print_lib_error("profile", "cannot write the table", s);
    return TX_EXIT_FAIL;
  }
  printf("wrote %s: %zu points", path, r->n_points);
  if (r->n_skipped) printf(" (%zu left out: over the %g s budget)", r->n_skipped, r->budget_s);
  printf(", %zu candidates excluded as inexact, in %.1f s\n", r->n_excluded, tx_clock() - r->start);
  return TX_EXIT_OK;
}

static int run_profile(profile_run *r) {
  settings(r);
  int rc =
      prof_grid_build(&r->g, &r->spec, &r->threads, &r->d, r->n_max, r->s.mode, r->plugin_path);
  if (rc) return rc;
  txattn_status s = txattn_table_create(r->g.ctx[0], &r->table);
  if (s != TXATTN_OK) {
    tx_print_lib_error("profile", "cannot start a table", s);
    return TX_EXIT_FAIL;
  }
  if (!(r->checks = prof_checks_new())) return TX_EXIT_FAIL;
  r->start = tx_clock();
  measure_all(r);
  if (r->n_points == 0) {
    fprintf(stderr, "txtune profile: nothing was measured within the %g s budget\n", r->budget_s);
    return TX_EXIT_FAIL;
  }
  set_profile(r, tx_clock() - r->start);
  if ((rc = write_table(r)) != 0) return rc;
  printf("\nwho wins where (time: the winner's median per call; vs masked: how much faster than "
         "the dense OpenBLAS kernel):\n");
  prof_summary(r->table, stdout);
  return TX_EXIT_OK;
}

int tx_cmd_profile(int argc, char **argv) {
  profile_run *r = calloc(1, sizeof *r);
  if (!r) return TX_EXIT_FAIL;
  int rc = parse(r, argc, argv);
  if (rc < 0) rc = run_profile(r);
  txattn_table_free(r->table);
  prof_checks_free(r->checks);
  prof_grid_free(&r->g);
  tx_strlist_free(&r->threads);
  tx_strlist_free(&r->d);
  free(r);
  return rc;
}
