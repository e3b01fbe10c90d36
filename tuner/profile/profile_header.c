/* SPDX-License-Identifier: MIT */
/* txtune profile: the table header's profile object, which records the settings, the whole
   protocol (the knobs of profile_policy.h: timing, confirmation, race, revisits, ties, plan) and,
   per n, what the plans decided and cost, so that a table says how it was measured. */
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

static void target_json(double t, char *buf, size_t size) {
  if (isinf(t))
    snprintf(buf, size, "null");
  else
    snprintf(buf, size, "%.4f", t);
}

/* v with printf format fmt, or null where it is unknown (< 0). */
static void known_json(double v, const char *fmt, char *buf, size_t size) {
  if (v < 0)
    snprintf(buf, size, "null");
  else
    snprintf(buf, size, fmt, v);
}

/* Per n: the plans' targets (seconds of runs per planned candidate; null: the most runs), the
   predicted and the spent seconds of the planned candidates, and those of the others. */
static void levels_json(const profile_run *r, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < r->n_levels && used < size; i++) {
    const prof_level *L = &r->levels[i];
    char lo[32], hi[32];
    target_json(L->target_lo, lo, sizeof lo);
    target_json(L->target_hi, hi, sizeof hi);
    char trip[32], trip_end[32];
    known_json(L->trip_ns, "%.0f", trip, sizeof trip);
    known_json(L->trip_end_ns, "%.0f", trip_end, sizeof trip_end);
    used += (size_t)snprintf(buf + used, size - used,
                             "%s{\"n\": %lld, \"points\": %zu, \"run_target_s\": [%s, %s], "
                             "\"predicted_s\": %.2f, \"spent_s\": %.2f, \"optional_s\": %.2f, "
                             "\"revisit_s\": %.2f, \"core_round_trip_ns\": %s, "
                             "\"core_round_trip_end_ns\": %s}",
                             i ? ", " : "", (long long)L->n, L->points, lo, hi, L->predicted_s,
                             L->spent_s, L->optional_s, L->revisit_s, trip, trip_end);
  }
  if (used < size) snprintf(buf + used, size - used, "]");
}

/* {"tiled_omp.avx2": "tiled.avx2", ...}: the kernels the one-thread classes left to their twins
   (prof_twin_stands_in), where both are usable; {} without a one-thread class. */
static void twins_json(const profile_run *r, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "{");
  for (size_t c = 0; c < r->g.n_ctx; c++) {
    txattn_context *ctx = r->g.ctx[c];
    if (!r->s.one_loop_once || txattn_context_threads(ctx) != 1) continue;
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
  const prof_knobs *k = &prof_policy;
  snprintf(
      json, sizeof json,
      "{\"mode\": \"%s\", \"budget_s\": %g, \"elapsed_s\": %.1f, \"threads\": %s, \"d\": %s, "
      "\"n\": %s, \"window_r\": %s, \"heads_q\": \"GQA group x threads\", \"dtypes\": %s, "
      "\"ragged\": %s, "
      "\"timing\": {\"first_call\": \"one timed call; it predicts the repetitions per run\", "
      "\"warm_up\": \"untimed calls before each run: one, and first warm_up_s of them after a "
      "run of the other kind (one thread, several); none where a call takes over "
      "warm_up_max_call_s\", "
      "\"warm_up_s\": %g, \"warm_up_max_call_s\": %g, "
      "\"min_run_s\": %g, \"runs\": [%d, %d], \"max_run_target_s\": %g, \"first_prune_ratio\": %g, "
      "\"prune_ratio\": %g, \"stall_ratio\": %g, \"time\": \"median of the runs; without a spread "
      "(rough): one run, or stopped as slower by a prune ratio, the fastest run\"}, "
      "\"confirm\": {\"ratio\": %g, \"ratio_threaded\": %g, \"pairs\": %d, \"share\": %g}, "
      "\"race\": {\"drop_ratio_short\": %g, \"drop_ratio_long\": %g, \"long_call_s\": %g, "
      "\"optional_max_call_s\": %g, \"optional_max_ratio\": %g, \"optional_share\": %g, "
      "\"threaded_recheck_n_growth\": %d}, "
      "\"revisits\": {\"visits\": %d, \"runs_per_visit\": %d, \"max_call_s\": %g, "
      "\"close_single\": %g, \"close_threaded\": %g, \"points\": %zu, \"time\": \"median of "
      "the visits' medians (the point's own runs the first), spread over them\"}, "
      "\"ties\": {\"within\": [%g, %g], \"within_threaded\": %g, \"prefer\": \"a candidate "
      "timed in full (not rough), then a kernel that starts no threads, then the kernel's default "
      "tunables; of candidates alike in these, the faster\", \"points\": %zu}, "
      "\"one_thread\": {\"left_to_twin\": %s, \"what\": \"a threaded kernel that runs another's "
      "loop on one thread (the plugin says so: one_thread_same_as) is not timed on one thread "
      "where that one takes the problem\"}, "
      "\"plan\": {\"fill\": %g, \"model_scale\": %.3f}, \"points\": %zu, "
      "\"points_left_out\": %zu, \"classes_left_out\": %s, \"plan_failures\": {\"kernels\": %zu, "
      "\"kernel_points\": "
      "%zu, \"estimate_pick_points\": %zu, \"what\": \"kernels that failed to plan a point "
      "otherwise than by declining it: left out of that point (each an exclusion), and the points "
      "where the estimate's pick was one of them\"}, "
      "\"checks\": {\"n\": %lld, \"rows_per_point\": %d, \"timeout_s\": %g, "
      "\"inexact_at_points\": %zu, \"faults\": %s, \"what\": \"each candidate checked once per "
      "class and r at n in a child process, a kernel that crashes, hangs (no answer within "
      "timeout_s) or prints excluded (one that hangs or prints from then on); and each "
      "candidate's first call at every point compared on rows_per_point rows with the reference "
      "(max_error), one above the bound excluded there and for the rest of its class\"}, "
      "\"noise_median_spread\": %.4f, "
      "\"load_1min\": %s, "
      "\"cpu_others\": {\"before_cores\": %s, \"during_cores\": %s, \"steal_before_cores\": %s, "
      "\"steal_during_cores\": %s, \"what\": \"other processes' busy time (/proc/stat less "
      "txtune's own) and the hypervisor's steal, over the wall time: a short sleep before the "
      "first point, then the whole run\"}, \"core_round_trip_ns\": \"levels[].core_round_trip_ns: "
      "a cache line's round trip "
      "between two CPUs before the level's points, and core_round_trip_end_ns after them and the "
      "visits that follow (the host can move a virtual machine's CPUs nearer or farther apart)\", "
      "\"levels\": %s}",
      names[r->s.mode], r->budget_s, elapsed, th, d, n, rs, dtypes, ragged, k->warm_up_s,
      k->warm_up_max_call_s, r->s.min_run_s, k->min_runs, r->s.rounds, k->max_target_s,
      fmax(k->first_prune_ratio, r->s.prune_ratio), r->s.prune_ratio, k->stall_ratio,
      k->confirm_ratio.single, k->confirm_ratio.threaded, k->confirm_pairs, r->s.confirm_share,
      r->cutoff.short_ratio, r->cutoff.long_ratio, r->cutoff.long_call_s, k->optional_max_call_s,
      k->optional_max_ratio, k->optional_share, k->recheck_growth, r->rv.visits, k->visit_runs,
      k->revisit_max_call_s, k->close.single, k->close.threaded, r->n_revisited, k->tie_min,
      k->tie_max.single, k->tie_max.threaded, r->n_ties, twins, k->plan_fill, r->scale, r->n_points,
      r->n_skipped, classes_out, r->n_failed_kernels, r->n_plan_failures, r->n_pick_failed,
      (long long)k->check_n, k->check_rows,
      fmin(k->check_timeout_s, fmax(k->check_timeout_min_s, k->check_timeout_share * r->budget_s)),
      r->n_inexact_at_point, faults, noise, load, ob, od, sb, sd, levels);
  txattn_status s = txattn_table_set_profile(r->table, json);
  if (s != TXATTN_OK) tx_print_lib_error("profile", "cannot record the settings", s);
}
