/* SPDX-License-Identifier: MIT */
/* txtune profile: the table header's profile object, which records the settings, the knobs of
   profile.h and, per n, what its points cost, so that a table says how it was measured. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

#include "context_cli.h"
#include "profile_run.h"
#include "timing.h"

static void list_json(char *buf, size_t size, const int64_t *v, size_t n) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < n && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
}

/* v with printf format fmt, or null where it is unknown (< 0). */
static void known_json(double v, const char *fmt, char *buf, size_t size) {
  if (v < 0)
    snprintf(buf, size, "null");
  else
    snprintf(buf, size, fmt, v);
}

/* Per n: its points, their seconds and the core round trips before and after them. */
static void levels_json(const profile_run *r, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < r->n_levels && used < size; i++) {
    const prof_level *L = &r->levels[i];
    char trip[32], trip_end[32];
    known_json(L->trip_ns, "%.0f", trip, sizeof trip);
    known_json(L->trip_end_ns, "%.0f", trip_end, sizeof trip_end);
    used += (size_t)snprintf(buf + used, size - used,
                             "%s{\"n\": %lld, \"points\": %zu, \"spent_s\": %.2f, "
                             "\"core_round_trip_ns\": %s, \"core_round_trip_end_ns\": %s}",
                             i ? ", " : "", (long long)L->n, L->points, L->spent_s, trip, trip_end);
  }
  if (used < size) snprintf(buf + used, size - used, "]");
}

/* {"tiled_omp.avx2": "tiled.avx2", ...}: the kernels the one-thread classes left to their twins
   (prof_twin_stands_in), where both are usable; {} without a one-thread class. */
static void twins_json(const profile_run *r, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "{");
  for (size_t c = 0; c < r->g.n_ctx; c++) {
    txattn_context *ctx = r->g.ctx[c];
    if (txattn_context_threads(ctx) != 1) continue;
    for (size_t k = 0; k < txattn_kernel_count(ctx) && used < size; k++) {
      txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT, twin = TXATTN_KERNEL_INFO_INIT;
      if (txattn_kernel_get(ctx, k, &info) != TXATTN_OK || !info.usable ||
          info.one_thread_same_as == NULL ||
          prof_kernel_find(ctx, info.one_thread_same_as, &twin) == SIZE_MAX || !twin.usable)
        continue;
      used += (size_t)snprintf(buf + used, size - used, "%s\"%s\": \"%s\"", used > 1 ? ", " : "",
                               info.name, info.one_thread_same_as);
    }
    break;
  }
  if (used < size) snprintf(buf + used, size - used, "}");
}

/* ["causal d64/64 g1 t1 decode", ...]: the classes with no point in the table. */
static void left_out_json(const profile_run *r, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < r->g.n_cls && used < size; i++) {
    char d[96];
    if (r->g.cls[i].fate.recorded > 0) continue;
    txattn_table_class_describe(&r->g.cls[i].cls, d, sizeof d);
    used += (size_t)snprintf(buf + used, size - used, "%s\"%s\"", used > 1 ? ", " : "", d);
  }
  if (used < size) snprintf(buf + used, size - used, "]");
}

/* {"combinations": ["kv=f16"], "prefill_n_max": 4096, "not_measured": [{"class": ..., "why":
   ...}]}: the 16-bit classes of the grid, and those no usable kernel takes. */
/* {"batch": 8, "n_min": 1024, "kv_lengths": ...}: the ragged-decode classes' points (null when
   the grid has none). */
static void ragged_json(const profile_run *r, char *buf, size_t size) {
  snprintf(buf, size, "null");
  for (size_t i = 0; i < r->g.n_cls; i++)
    if (r->g.cls[i].cls.ragged) {
      snprintf(buf, size,
               "{\"batch\": %lld, \"n_min\": %lld, \"kv_lengths\": \"sequence b: max(1, n / den "
               "x num) keys for the (b mod 8)-th of 1/32, 1/16, 1/8, 1/4, 1/2, 1, 3/32, 5/8; n the "
               "longest\"}",
               (long long)r->g.cls[i].cls.batch, (long long)r->g.cls[i].n_min);
      return;
    }
}

static void dtypes_json(const profile_run *r, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "{\"combinations\": [");
  for (size_t i = 0; i < r->g.n_types && used < size; i++) {
    char name[48];
    tx_dtypes_format(&r->g.types[i], name, sizeof name);
    used += (size_t)snprintf(buf + used, size - used, "%s\"%s\"", i ? ", " : "", name);
  }
  if (used < size)
    used += (size_t)snprintf(buf + used, size - used,
                             "], \"all_bf16_prefill\": %s, \"prefill_n_max\": %d, "
                             "\"not_measured\": [",
                             r->dtypes.n == 0 && !r->quick ? "true" : "false",
                             GRID_TYPED_PREFILL_N_MAX);
  for (size_t i = 0; i < r->g.n_skipped && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s{\"class\": \"%s\", \"why\": \"%s\"}",
                             i ? ", " : "", r->g.skipped[i].cls, r->g.skipped[i].why);
  if (used < size) snprintf(buf + used, size - used, "]}");
}

/* The kernels excluded for a fault on a check, by fault: {"crashed": [...], "hung": [...],
   "printed": [...]} (kernel names need no escaping: [a-z0-9_.-]). */
static void faults_json(const profile_run *r, char *buf, size_t size) {
  static const struct {
    prof_fault f;
    const char *key;
  } kinds[] = {{PROF_FAULT_CRASHED, "crashed"},
               {PROF_FAULT_HUNG, "hung"},
               {PROF_FAULT_PRINTS, "printed"},
               {PROF_FAULT_OVERRUN, "wrote_outside_output"}};
  size_t used = (size_t)snprintf(buf, size, "{");
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && used < size; k++) {
    used += (size_t)snprintf(buf + used, size - used, "%s\"%s\": [", k ? ", " : "", kinds[k].key);
    int first = 1;
    for (size_t i = 0; i < r->n_faulty && used < size; i++)
      if (r->faulty[i].fault == kinds[k].f) {
        used += (size_t)snprintf(buf + used, size - used, "%s\"%s\"", first ? "" : ", ",
                                 r->faulty[i].name);
        first = 0;
      }
    if (used < size) used += (size_t)snprintf(buf + used, size - used, "]");
  }
  if (used < size) snprintf(buf + used, size - used, "}");
}

static double load_1min(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  double l1 = -1;
  if (f && fscanf(f, "%lf", &l1) != 1) l1 = -1;
  if (f) fclose(f);
  return l1;
}

/* The settings, the protocol, the measured noise (the winners' median relative spread) and what
   other processes and the hypervisor took of the CPUs before and while it measured. */
void prof_set_header(profile_run *r, double elapsed) {
  static const char *const names[] = {"quick", "default", "patient"};
  char json[24576], th[256], d[256], n[512], rs[128], load[32] = "null", levels[4096];
  char twins[1024], classes_out[2048], dtypes[2048], faults[3 * 1024], ragged[512];
  int64_t t[GRID_MAX_CTX];
  for (size_t i = 0; i < r->g.n_ctx; i++) t[i] = r->g.threads[i];
  list_json(th, sizeof th, t, r->g.n_ctx);
  list_json(d, sizeof d, r->g.d, r->g.n_d);
  list_json(n, sizeof n, r->g.n, r->g.n_n);
  list_json(rs, sizeof rs, r->g.r, r->g.n_r);
  levels_json(r, levels, sizeof levels);
  twins_json(r, twins, sizeof twins);
  left_out_json(r, classes_out, sizeof classes_out);
  dtypes_json(r, dtypes, sizeof dtypes);
  ragged_json(r, ragged, sizeof ragged);
  faults_json(r, faults, sizeof faults);
  if (load_1min() >= 0) snprintf(load, sizeof load, "%.2f", load_1min());
  char ob[16], sb[16], od[16], sd[16];
  known_json(r->others_before, "%.3f", ob, sizeof ob);
  known_json(r->steal_before, "%.3f", sb, sizeof sb);
  known_json(r->others_during, "%.3f", od, sizeof od);
  known_json(r->steal_during, "%.3f", sd, sizeof sd);
  qsort(r->spreads, r->n_spreads, sizeof r->spreads[0], tx_cmp_double);
  double noise = r->n_spreads ? r->spreads[r->n_spreads / 2] : 0;
  const prof_mode_knobs *m = &prof_modes[r->mode];
  snprintf(
      json, sizeof json,
      "{\"mode\": \"%s\", \"budget_s\": %g, \"elapsed_s\": %.1f, \"threads\": %s, \"d\": %s, "
      "\"n\": %s, \"window_r\": %s, \"heads_q\": \"GQA group x threads\", \"dtypes\": %s, "
      "\"ragged\": %s, "
      "\"timing\": {\"min_run_s\": %g, \"runs\": %d, \"drop_ratio\": %g, \"variants\": %d, "
      "\"time\": \"per candidate: one untimed call, repetitions doubled until a run lasts "
      "min_run_s, then runs of each candidate in turn (one untimed call before each), the median; "
      "after each round a candidate whose fastest run is drop_ratio x the leader's median "
      "stops\"}, "
      "\"ties\": {\"within\": [%g, %g], \"within_threaded\": %g, \"prefer\": \"a candidate "
      "timed more than once, then a kernel that starts no threads, then the kernel's default "
      "tunables; of candidates alike in these, the faster\", \"points\": %zu}, "
      "\"one_thread\": {\"left_to_twin\": %s, \"what\": \"a threaded kernel that runs another's "
      "loop on one thread (the plugin says so: one_thread_same_as) is not timed on one thread "
      "where that one takes the problem\"}, "
      "\"points\": %zu, \"points_left_out\": %zu, \"classes_left_out\": %s, "
      "\"plan_failures\": {\"kernels\": %zu, \"kernel_points\": %zu, \"estimate_pick_points\": "
      "%zu, \"what\": \"kernels that failed to plan a point otherwise than by declining it: left "
      "out of that point (each an exclusion), and the points where the estimate's pick was one of "
      "them\"}, "
      "\"checks\": {\"n\": %d, \"rows_per_point\": %d, \"timeout_s\": %g, \"floor_slack\": %g, "
      "\"inexact_at_points\": %zu, \"faults\": %s, \"what\": \"each candidate checked once per "
      "class and r at n in a child process, a kernel that crashes, hangs (no answer within "
      "timeout_s) or prints excluded (one that hangs or prints from then on); and each timed run's "
      "last call and one call after the last run compared on rows_per_point rows with the "
      "reference (max_error), their inputs changed and outputs poisoned before, and held to "
      "floor_slack x the machine's roofs\"}, "
      "\"noise_median_spread\": %.4f, \"load_1min\": %s, "
      "\"cpu_others\": {\"before_cores\": %s, \"during_cores\": %s, \"steal_before_cores\": %s, "
      "\"steal_during_cores\": %s, \"what\": \"other processes' busy time (/proc/stat less "
      "txtune's own) and the hypervisor's steal, over the wall time: a short sleep before the "
      "first point, then the whole run\"}, \"core_round_trip_ns\": \"levels[].core_round_trip_ns: "
      "a cache line's round trip between two CPUs before the level's points, and "
      "core_round_trip_end_ns after them (the host can move a virtual machine's CPUs nearer or "
      "farther apart)\", \"levels\": %s}",
      names[r->mode], r->budget_s, elapsed, th, d, n, rs, dtypes, ragged, m->min_run_s, m->runs,
      PROF_DROP_RATIO, m->variants, PROF_TIE_MIN, PROF_TIE_MAX, PROF_TIE_MAX_THREADED, r->n_ties,
      twins, r->n_points, r->n_skipped, classes_out, r->n_failed_kernels, r->n_plan_failures,
      r->n_pick_failed, PROF_CHECK_N, PROF_CHECK_ROWS,
      fmin(PROF_CHECK_TIMEOUT_S, fmax(1.0, PROF_CHECK_TIMEOUT_SHARE * r->budget_s)),
      PROF_FLOOR_SLACK, r->n_inexact_at_point, faults, noise, load, ob, od, sb, sd, levels);
  txattn_status s = txattn_table_set_profile(r->table, json);
  if (s != TXATTN_OK) tx_print_lib_error("profile", "cannot record the settings", s);
}
