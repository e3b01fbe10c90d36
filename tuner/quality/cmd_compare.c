/* SPDX-License-Identifier: MIT */
/* txtune compare: how stable the choice is. Two dispatch tables (two profiles in a row, or before
   and after a change) are compared point by point: where their winners differ, is the difference
   within what the tables themselves measured as noise, or does one table say it matters? */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "args.h"
#include "cmd_compare.h"
#include "context_cli.h"
#include "core_latency.h"
#include "cpu_use.h"
#include "json.h"
#include "text_table.h"
#include "timing.h"
#include "txattn/table.h"

static const char about[] =
    "Compares two dispatch tables point by point: where their winners differ (a flip), whether\n"
    "the gap each measured between the two picks is above the noise they measured there (the\n"
    "candidates' spreads, the profile's tie limit, and the run-to-run change between the tables).\n"
    "A flip the tables cannot judge (a pick one did not time, or a threaded point where the host\n"
    "moved its CPUs between them) is counted apart as not comparable. Two profiles in a row "
    "should\n"
    "show no flip above the noise:\n"
    "  txtune profile -o a.json && txtune profile -o b.json && txtune compare a.json b.json\n"
    "How the noise and the verdicts are defined: docs/profiling.md#compare-and-validate.\n"
    "Exit status: 0 no flip above the noise; 1 a flip above it, or a table cannot be read;\n"
    "2 usage error.";

typedef struct side {
  const char *file;
  txattn_table *t;
  double noise_floor; /* the profile's median spread, 0 if the header has none */
  double others;      /* cores' worth other processes used while it measured; < 0 unknown */
  json_t *profile;    /* the header's free-form profile object, parsed once; NULL if none */
  json_t *levels;     /* its levels (core_round_trip_ns per n), borrowed; NULL if none */
} side;

typedef struct flip {
  char cls[96];
  int64_t n, r;
  txattn_table_candidate win[2]; /* each table's winner, as that table measured it */
  double margin[2], noise[2];    /* in table i: time of the other's winner / own winner - 1 */
  int verdict;                   /* FLIP_* */
  int why;                       /* WHY_* */
  size_t cls_index;              /* A's */
  int threads;                   /* the class's */
  double trip_lo[2], trip_hi[2]; /* each table's core round trips at n, before and after its
                                    points (core_latency.h), < 0 none */
} flip;

enum { FLIP_WITHIN, FLIP_ABOVE, FLIP_UNTIMED };
static const char *const verdicts[] = {"within noise", "ABOVE NOISE", "not comparable"};
/* Why: the measurements contradict each other, or together find a pick slower; within the noise,
   both found the same pick faster (one table took the other as a tie), or they do not agree on
   which is faster, but within the noise. */
enum { WHY_NONE, WHY_CONTRADICT, WHY_SLOWER, WHY_TIE_EDGE, WHY_MACHINE };
static const char *const whys[] = {"", " (they contradict)", " (slower in both)", " (tie edge)",
                                   " (the machine changed)"};
static const char *const why_keys[] = {"", "contradict", "slower_in_both", "tie_edge",
                                       "machine_changed"};

/* How much one candidate's time moved from A to B at one point: |t_B / t_A - 1|. */
typedef struct drift {
  size_t cls;         /* A's class index */
  const char *kernel; /* owned by table A */
  double change;
} drift;

typedef struct compare_run {
  int json;
  side s[2];
  tx_opt opts[1];
  tx_opt_group groups[1];
  tx_cmd_spec spec;
  size_t points, same, only[2];
  size_t quiet, loud, untimed, tie_edges;
  drift *drift; /* every candidate both timed fully */
  size_t n_drift, drift_cap;
  double drift_median; /* over all of them */
  flip *flips;
  size_t n_flips, cap;
} compare_run;

static int parse(compare_run *r, int *argc, char **argv) {
  r->opts[0] = tx_opt_flag("json", &r->json, "the comparison as JSON on stdout");
  r->groups[0] = (tx_opt_group){"Options", r->opts, 1};
  r->spec = (tx_cmd_spec){"compare", "A.json B.json [--json]", about, r->groups, 1};
  int out = 1, files = 0;
  for (int i = 1; i < *argc; i++) { /* the option parser knows options only: files go first */
    if (argv[i][0] == '-') {
      argv[out++] = argv[i];
      continue;
    }
    if (files == 2) return tx_args_usage_error(&r->spec, "two tables, got a third: '%s'", argv[i]);
    r->s[files++].file = argv[i];
  }
  *argc = out;
  int rc = tx_args_parse_cmd(&r->spec, *argc, argv);
  if (rc >= 0) return rc;
  if (files != 2) return tx_args_usage_error(&r->spec, "expects two tables, A.json and B.json");
  return -1;
}

static int same_cand(const txattn_table_candidate *a, const txattn_table_candidate *b) {
  if (strcmp(a->kernel, b->kernel) != 0 || a->n_tunables != b->n_tunables) return 0;
  for (size_t i = 0; i < a->n_tunables; i++)
    if (strcmp(a->tunable_names[i], b->tunable_names[i]) != 0 ||
        a->tunable_values[i] != b->tunable_values[i])
      return 0;
  return 1;
}

static int point_index(const txattn_table *t, size_t cls, size_t n_points, int64_t n, int64_t rr,
                       size_t *out) {
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(t, cls, i, &p) == TXATTN_OK && p.n == n && p.r == rr) {
      *out = i;
      return 1;
    }
  }
  return 0;
}

static double spread_or_zero(double s) {
  return s >= 0 ? s : 0;
}

/* In table t at (cls, point): how much slower it measured `other` than its own winner w, and the
   noise there. A candidate the table did not time at all is infinitely slower. */
static void judge(const side *sd, size_t cls, size_t point, const txattn_table_candidate *w,
                  const txattn_table_candidate *other, double *margin, double *noise) {
  const txattn_table *t = sd->t;
  txattn_table_point p = TXATTN_TABLE_POINT_INIT;
  *margin = INFINITY;
  *noise = fmax(sd->noise_floor, spread_or_zero(w->spread));
  if (txattn_table_point_get(t, cls, point, &p) != TXATTN_OK) return;
  for (size_t i = 0; i < p.n_candidates; i++) {
    txattn_table_candidate c = TXATTN_TABLE_CANDIDATE_INIT;
    if (txattn_table_candidate_get(t, cls, point, i, &c) != TXATTN_OK || !same_cand(&c, other))
      continue;
    *margin = c.time_s / w->time_s - 1;
    *noise = fmax(*noise, spread_or_zero(c.spread));
  }
}

/* From the header's free-form profile object: the profile's median spread over its winners, and at
   least the smallest difference it treats as a tie (profile.ties.within[0]: below it the profile
   found times it cannot tell apart, so its choice there says nothing). */
static double noise_floor(const json_t *profile) {
  json_t *v = json_object_get(profile, "noise_median_spread");
  json_t *tie = json_array_get(json_object_get(json_object_get(profile, "ties"), "within"), 0);
  double floor = json_is_number(v) ? json_number_value(v) : 0;
  if (json_is_number(tie)) floor = fmax(floor, json_number_value(tie));
  return isfinite(floor) && floor > 0 ? floor : 0;
}

/* The header's profile object, parsed; NULL if the table has none. */
static json_t *profile_of(const txattn_table *t) {
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  if (txattn_table_header_get(t, &h) != TXATTN_OK || !*h.profile) return NULL;
  return json_loads(h.profile, 0, NULL);
}

/* The smallest and largest core round trip the table measured at level n (before and after its
   points); both < 0 if none. */
static void trips_at(const side *s, int64_t n, double *lo, double *hi) {
  static const char *const keys[] = {"core_round_trip_ns", "core_round_trip_end_ns"};
  size_t i;
  json_t *L;
  *lo = *hi = -1;
  json_array_foreach(s->levels, i, L) {
    if (json_integer_value(json_object_get(L, "n")) != n) continue;
    for (int k = 0; k < 2; k++) {
      json_t *v = json_object_get(L, keys[k]);
      if (!json_is_number(v)) continue;
      double t = json_number_value(v);
      if (*lo < 0 || t < *lo) *lo = t;
      if (*hi < 0 || t > *hi) *hi = t;
    }
  }
}

/* "54" or "54-432": a table's round trips at a level. */
static void fmt_trips(double lo, double hi, char *buf, size_t size) {
  if (hi > lo)
    snprintf(buf, size, "%.0f-%.0f", lo, hi);
  else
    snprintf(buf, size, "%.0f", lo);
}

/* profile.cpu_others.during_cores (cpu_use.h); -1 if the table has none. */
static double others_during(const json_t *profile) {
  json_t *v = json_object_get(json_object_get(profile, "cpu_others"), "during_cores");
  double cores = json_is_number(v) ? json_number_value(v) : -1;
  return isfinite(cores) && cores >= 0 ? cores : -1;
}

static int add_flip(compare_run *r, const flip *f) {
  if (r->n_flips == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 16;
    flip *nf = realloc(r->flips, cap * sizeof *nf);
    if (nf == NULL) return 0;
    r->flips = nf;
    r->cap = cap;
  }
  r->flips[r->n_flips++] = *f;
  return 1;
}

/* Point pa of class ca in A against point pb of class cb in B. */
static int compare_point(compare_run *r, const size_t ci[2], const size_t pi[2],
                         const txattn_table_class *cls, const txattn_table_point *p) {
  flip f;
  memset(&f, 0, sizeof f);
  for (int k = 0; k < 2; k++) {
    f.win[k] = (txattn_table_candidate)TXATTN_TABLE_CANDIDATE_INIT;
    if (txattn_table_candidate_get(r->s[k].t, ci[k], pi[k], 0, &f.win[k]) != TXATTN_OK) return 0;
  }
  r->points++;
  if (same_cand(&f.win[0], &f.win[1])) {
    r->same++;
    return 1;
  }
  txattn_table_class_describe(cls, f.cls, sizeof f.cls);
  f.cls_index = ci[0];
  f.threads = cls->threads;
  f.n = p->n;
  f.r = p->r;
  for (int k = 0; k < 2; k++)
    judge(&r->s[k], ci[k], pi[k], &f.win[k], &f.win[1 - k], &f.margin[k], &f.noise[k]);
  return add_flip(r, &f);
}

/* How much the same candidate's time moved from A to B at the same point, against the point's
   candidates as a whole, for every candidate both timed fully (with a spread): the run-to-run
   noise of a margin, which a profile's own spreads (runs seconds apart) understate. Each
   candidate's factor t_B / t_A is set against the median factor of the point's candidates, as a
   margin is a ratio: the host's speed as a whole moves between two profiles, which moves every
   candidate of a point alike and no margin ("compare's run-to-run noise", docs/measurements.md). */
static int add_drift(compare_run *r, const size_t ci[2], const size_t pi[2], size_t n_a) {
  size_t start = r->n_drift; /* the point's factors go in first, then become their changes */
  for (size_t i = 0; i < n_a; i++) {
    txattn_table_candidate a = TXATTN_TABLE_CANDIDATE_INIT;
    double margin, ignored;
    if (txattn_table_candidate_get(r->s[0].t, ci[0], pi[0], i, &a) != TXATTN_OK || a.spread < 0)
      continue;
    judge(&r->s[1], ci[1], pi[1], &a, &a, &margin, &ignored); /* finds a in B: b / a - 1 */
    if (isinf(margin)) continue;
    if (r->n_drift == r->drift_cap) {
      size_t cap = r->drift_cap ? 2 * r->drift_cap : 64;
      drift *d = realloc(r->drift, cap * sizeof *d);
      if (d == NULL) return 0;
      r->drift = d;
      r->drift_cap = cap;
    }
    r->drift[r->n_drift++] = (drift){ci[0], a.kernel, 1 + margin};
  }
  size_t m = r->n_drift - start;
  if (m == 0) return 1;
  double *sorted = malloc(m * sizeof *sorted);
  if (sorted == NULL) return 0;
  for (size_t i = 0; i < m; i++) sorted[i] = r->drift[start + i].change;
  double common = tx_sort_median(sorted, m);
  for (size_t i = start; i < r->n_drift; i++)
    r->drift[i].change = fabs(r->drift[i].change / common - 1);
  free(sorted);
  return 1;
}

/* The median change over the drifts of class cls (any class: SIZE_MAX) and kernel (any: NULL). */
static double drift_median(const compare_run *r, size_t cls, const char *kernel, double *scratch) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_drift; i++)
    if ((cls == SIZE_MAX || r->drift[i].cls == cls) &&
        (kernel == NULL || strcmp(r->drift[i].kernel, kernel) == 0))
      scratch[n++] = r->drift[i].change;
  qsort(scratch, n, sizeof *scratch, tx_cmp_double);
  return n ? scratch[n / 2] : 0;
}

/* A flip both tables timed: gap_k = ln(time of B's pick / time of A's pick) in table k, as each
   measured it (gap_A = ln(1 + margin_A), gap_B = -ln(1 + margin_B)). The two contradict each other
   when they differ by more than both tables' noise; taken together (their mean) they find a pick
   slower when the mean is beyond the larger noise. */
static void judge_flip(flip *f) {
  double gap_a = log1p(f->margin[0]), gap_b = -log1p(f->margin[1]);
  double apart = fabs(gap_a - gap_b), mean = 0.5 * (gap_a + gap_b);
  if (apart > log1p(f->noise[0]) + log1p(f->noise[1])) {
    f->verdict = FLIP_ABOVE;
    f->why = WHY_CONTRADICT;
  } else if (fabs(mean) > log1p(fmax(f->noise[0], f->noise[1]))) {
    f->verdict = FLIP_ABOVE;
    f->why = WHY_SLOWER;
  } else {
    f->verdict = FLIP_WITHIN;
    f->why = (gap_a > 0) == (gap_b > 0) ? WHY_TIE_EDGE : WHY_NONE;
  }
}

/* Each flip against the noise: the candidates' own spreads, the profile's, and the run-to-run
   drift, overall and of the two kernels in that class (2-thread kernels on a shared VM drift far
   more between runs than within one). */
static int verdicts_for_flips(compare_run *r) {
  double *scratch = malloc((r->n_drift ? r->n_drift : 1) * sizeof *scratch);
  if (scratch == NULL) return 0;
  r->drift_median = drift_median(r, SIZE_MAX, NULL, scratch);
  for (size_t i = 0; i < r->n_flips; i++) {
    flip *f = &r->flips[i];
    double moved =
        fmax(r->drift_median, fmax(drift_median(r, f->cls_index, f->win[0].kernel, scratch),
                                   drift_median(r, f->cls_index, f->win[1].kernel, scratch)));
    int untimed = 0;
    for (int k = 0; k < 2; k++) {
      f->noise[k] = fmax(f->noise[k], moved);
      untimed |= isinf(f->margin[k]);
    }
    for (int k = 0; k < 2; k++) trips_at(&r->s[k], f->n, &f->trip_lo[k], &f->trip_hi[k]);
    double lo = fmin(f->trip_lo[0], f->trip_lo[1]), hi = fmax(f->trip_hi[0], f->trip_hi[1]);
    if (untimed) {
      f->verdict = FLIP_UNTIMED;
    } else if (f->threads > 1 && lo > 0 && hi >= TX_CORE_ROUND_TRIP_CHANGE * lo) {
      f->verdict = FLIP_UNTIMED; /* the CPUs were nearer or farther apart: two machines */
      f->why = WHY_MACHINE;
    } else {
      judge_flip(f);
    }
    size_t *count[] = {&r->quiet, &r->loud, &r->untimed};
    (*count[f->verdict])++;
    r->tie_edges += f->why == WHY_TIE_EDGE;
  }
  free(scratch);
  return 1;
}

static int compare_class(compare_run *r, size_t ca) {
  txattn_table_class cls = TXATTN_TABLE_CLASS_INIT, cls_b = TXATTN_TABLE_CLASS_INIT;
  size_t n_a, n_b, cb;
  if (txattn_table_class_get(r->s[0].t, ca, &cls, &n_a, NULL) != TXATTN_OK) return 0;
  if (txattn_table_find_class(r->s[1].t, &cls, &cb) != TXATTN_OK) {
    r->only[0] += n_a;
    return 1;
  }
  if (txattn_table_class_get(r->s[1].t, cb, &cls_b, &n_b, NULL) != TXATTN_OK) return 0;
  size_t matched = 0;
  for (size_t i = 0; i < n_a; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    size_t ci[2] = {ca, cb}, pi[2] = {i, 0};
    if (txattn_table_point_get(r->s[0].t, ca, i, &p) != TXATTN_OK) return 0;
    if (!point_index(r->s[1].t, cb, n_b, p.n, p.r, &pi[1])) {
      r->only[0]++;
      continue;
    }
    matched++;
    if (!compare_point(r, ci, pi, &cls, &p) || !add_drift(r, ci, pi, p.n_candidates)) return 0;
  }
  r->only[1] += n_b - matched;
  return 1;
}

/* Points of B's classes that A lacks altogether. */
static void count_only_b(compare_run *r) {
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  if (txattn_table_header_get(r->s[1].t, &h) != TXATTN_OK) return;
  for (size_t i = 0; i < h.n_classes; i++) {
    txattn_table_class cls = TXATTN_TABLE_CLASS_INIT;
    size_t n, ignored;
    if (txattn_table_class_get(r->s[1].t, i, &cls, &n, NULL) == TXATTN_OK &&
        txattn_table_find_class(r->s[0].t, &cls, &ignored) != TXATTN_OK)
      r->only[1] += n;
  }
}

static void fmt_cand(const txattn_table_candidate *c, char *buf, size_t size) {
  size_t used = 0;
  tx_appendf(buf, size, &used, "%s", c->kernel);
  for (size_t i = 0; i < c->n_tunables; i++)
    tx_appendf(buf, size, &used, "%s%s=%lld", i ? "," : " ", c->tunable_names[i],
               (long long)c->tunable_values[i]);
}

static void fmt_margin(double m, double noise, char *buf, size_t size) {
  if (isinf(m))
    snprintf(buf, size, "not timed there");
  else
    snprintf(buf, size, "%+.1f%% (noise %.1f%%)", 100 * m, 100 * noise);
}

static void print_text(const compare_run *r) {
  printf("A: %s (median spread of its winners %.1f%%)\nB: %s (%.1f%%)\n", r->s[0].file,
         100 * r->s[0].noise_floor, r->s[1].file, 100 * r->s[1].noise_floor);
  printf("run-to-run noise: a candidate's time moved by %.1f%% against its point's (median over "
         "%zu timed in both; per class and kernel for the flips below)\n",
         100 * r->drift_median, r->n_drift);
  if (r->n_flips) {
    tx_table t;
    tx_table_init(&t, "CLASS|>N|>R|A PICKS|B PICKS|B'S PICK IN A|A'S PICK IN B|VERDICT");
    for (size_t i = 0; i < r->n_flips; i++) {
      const flip *f = &r->flips[i];
      char n[24], rr[24], w0[160], w1[160], m0[64], m1[64], v[160];
      snprintf(n, sizeof n, "%lld", (long long)f->n);
      snprintf(rr, sizeof rr, "%lld", (long long)f->r);
      fmt_cand(&f->win[0], w0, sizeof w0);
      fmt_cand(&f->win[1], w1, sizeof w1);
      fmt_margin(f->margin[0], f->noise[0], m0, sizeof m0);
      fmt_margin(f->margin[1], f->noise[1], m1, sizeof m1);
      if (f->why == WHY_MACHINE) {
        char ta[48], tb[48]; /* "54-432" */
        fmt_trips(f->trip_lo[0], f->trip_hi[0], ta, sizeof ta);
        fmt_trips(f->trip_lo[1], f->trip_hi[1], tb, sizeof tb);
        snprintf(v, sizeof v, "%s (the machine changed: core round trip %s, %s ns)",
                 verdicts[f->verdict], ta, tb);
      } else
        snprintf(v, sizeof v, "%s%s", verdicts[f->verdict], whys[f->why]);
      const char *cells[] = {f->cls, n, f->r ? rr : NULL, w0, w1, m0, m1, v};
      tx_table_add(&t, cells);
    }
    printf("\nwhere the winners differ (margin: how much slower that table measured the other's "
           "pick):\n");
    tx_table_print(&t, stdout, "  ");
    tx_table_free(&t);
  }
  printf("\n%zu points in both tables: %zu same winner, %zu flip%s within the measured noise, %zu "
         "above it, %zu not comparable (a table did not time the other's pick, or the CPUs' round "
         "trip differed)",
         r->points, r->same, r->quiet, r->quiet == 1 ? "" : "s", r->loud, r->untimed);
  if (r->only[0] || r->only[1])
    printf(" (%zu points only in A, %zu only in B)", r->only[0], r->only[1]);
  if (r->tie_edges)
    printf("\n%zu of the flips within the noise at a tie's edge (both tables found the same pick "
           "faster)",
           r->tie_edges);
  printf("\n%s\n", r->loud ? "not stable: where a flip is above the noise, the tables contradict "
                             "each other or together find one pick clearly slower"
                           : "stable: every difference lies within the measured noise");
  for (int k = 0; k < 2; k++)
    if (r->s[k].others >= TX_CPU_OTHERS_WARN)
      printf("note: %s was profiled while other processes used %.2f cores' worth of the CPUs: "
             "its timings measured them too (threaded kernels most)\n",
             k ? "B" : "A", r->s[k].others);
}

static void json_cand(tx_json *j, const char *key, const txattn_table_candidate *c) {
  tx_json_kv_object(j, key);
  tx_json_kv_string(j, "kernel", c->kernel);
  tx_json_kv_object(j, "tunables");
  for (size_t i = 0; i < c->n_tunables; i++)
    tx_json_kv_int(j, c->tunable_names[i], c->tunable_values[i]);
  tx_json_end_object(j);
  tx_json_kv_double(j, "time_s", c->time_s);
  tx_json_end_object(j);
}

static void print_json(const compare_run *r) {
  tx_json j;
  tx_json_init(&j, stdout);
  tx_json_begin_object(&j);
  tx_json_kv_string(&j, "a", r->s[0].file);
  tx_json_kv_string(&j, "b", r->s[1].file);
  tx_json_kv_int(&j, "points", (int64_t)r->points);
  tx_json_kv_int(&j, "same_winner", (int64_t)r->same);
  tx_json_kv_int(&j, "flips_within_noise", (int64_t)r->quiet);
  tx_json_kv_int(&j, "flips_above_noise", (int64_t)r->loud);
  tx_json_kv_int(&j, "flips_not_comparable", (int64_t)r->untimed);
  tx_json_kv_int(&j, "flips_at_tie_edge", (int64_t)r->tie_edges);
  tx_json_kv_double(&j, "noise_floor_a", r->s[0].noise_floor);
  tx_json_kv_double(&j, "noise_floor_b", r->s[1].noise_floor);
  for (int k = 0; k < 2; k++) {
    tx_json_key(&j, k ? "others_cores_b" : "others_cores_a");
    if (r->s[k].others >= 0)
      tx_json_double(&j, r->s[k].others);
    else
      tx_json_null(&j);
  }
  tx_json_kv_double(&j, "run_to_run_noise", r->drift_median);
  tx_json_kv_int(&j, "run_to_run_samples", (int64_t)r->n_drift);
  tx_json_kv_int(&j, "points_only_in_a", (int64_t)r->only[0]);
  tx_json_kv_int(&j, "points_only_in_b", (int64_t)r->only[1]);
  tx_json_kv_bool(&j, "stable", r->loud == 0);
  tx_json_kv_array(&j, "flips");
  for (size_t i = 0; i < r->n_flips; i++) {
    const flip *f = &r->flips[i];
    tx_json_begin_object(&j);
    tx_json_kv_string(&j, "class", f->cls);
    tx_json_kv_int(&j, "n", f->n);
    if (f->r) tx_json_kv_int(&j, "r", f->r);
    json_cand(&j, "a_winner", &f->win[0]);
    json_cand(&j, "b_winner", &f->win[1]);
    tx_json_kv_double(&j, "margin_in_a", f->margin[0]); /* null: not timed there */
    tx_json_kv_double(&j, "noise_in_a", f->noise[0]);
    tx_json_kv_double(&j, "margin_in_b", f->margin[1]);
    tx_json_kv_double(&j, "noise_in_b", f->noise[1]);
    static const char *const keys[] = {"within_noise", "above_noise", "not_comparable"};
    tx_json_kv_string(&j, "verdict", keys[f->verdict]);
    if (f->why != WHY_NONE) tx_json_kv_string(&j, "reason", why_keys[f->why]);
    for (int k = 0; k < 2; k++)
      if (f->trip_lo[k] >= 0) {
        tx_json_kv_double(&j, k ? "core_round_trip_min_ns_b" : "core_round_trip_min_ns_a",
                          f->trip_lo[k]);
        tx_json_kv_double(&j, k ? "core_round_trip_max_ns_b" : "core_round_trip_max_ns_a",
                          f->trip_hi[k]);
      }
    tx_json_end_object(&j);
  }
  tx_json_end_array(&j);
  tx_json_end_object(&j);
  tx_json_finish(&j);
}

static int run_compare(compare_run *r) {
  for (int k = 0; k < 2; k++) {
    txattn_status s = txattn_table_load(r->s[k].file, &r->s[k].t);
    if (s != TXATTN_OK) {
      tx_print_lib_error("compare", "cannot read a table", s);
      return TX_EXIT_FAIL;
    }
    r->s[k].profile = profile_of(r->s[k].t);
    r->s[k].noise_floor = noise_floor(r->s[k].profile);
    r->s[k].others = others_during(r->s[k].profile);
    json_t *levels = json_object_get(r->s[k].profile, "levels");
    r->s[k].levels = json_is_array(levels) ? levels : NULL;
  }
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  if (txattn_table_header_get(r->s[0].t, &h) != TXATTN_OK) return TX_EXIT_FAIL;
  for (size_t i = 0; i < h.n_classes; i++)
    if (!compare_class(r, i)) {
      fprintf(stderr, "txtune compare: %s\n",
              *txattn_last_error() ? txattn_last_error() : "out of memory");
      return TX_EXIT_FAIL;
    }
  count_only_b(r);
  if (!verdicts_for_flips(r)) {
    fprintf(stderr, "txtune compare: out of memory\n");
    return TX_EXIT_FAIL;
  }
  if (r->json)
    print_json(r);
  else
    print_text(r);
  if (r->points == 0) {
    fprintf(stderr, "txtune compare: the tables have no measured point in common\n");
    return TX_EXIT_FAIL;
  }
  fflush(stdout);
  if (r->loud && r->json) /* stdout is the JSON's; the text says it on its last line */
    fprintf(stderr, "txtune compare: FAIL: not stable: a flip of the winner is above the "
                    "measured noise (\"flips_above_noise\")\n");
  return r->loud ? TX_EXIT_FAIL : TX_EXIT_OK;
}

int tx_cmd_compare(int argc, char **argv) {
  compare_run r;
  memset(&r, 0, sizeof r);
  int rc = parse(&r, &argc, argv);
  if (rc < 0) rc = run_compare(&r);
  for (int k = 0; k < 2; k++) {
    txattn_table_free(r.s[k].t);
    json_decref(r.s[k].profile);
  }
  free(r.flips);
  free(r.drift);
  return rc;
}
