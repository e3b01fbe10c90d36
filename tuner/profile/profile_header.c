/* SPDX-License-Identifier: MIT */
/* txtune profile: the table header's profile object, which records the settings, the knobs of
   profile.h, the measured noise and, per n, what its points cost (docs/profiling.md). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "context_cli.h"
#include "profile_run.h"
#include "timing.h"

static json_t *ints(const int64_t *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
  return a;
}

/* v, or null where it is unknown (< 0). */
static json_t *known(double v) {
  return v < 0 ? json_null() : json_real(v);
}

static json_t *levels(const profile_run *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->n_levels; i++) {
    const prof_level *L = &r->levels[i];
    json_array_append_new(a, json_pack("{s:I, s:I, s:f, s:o, s:o}", "n", (json_int_t)L->n, "points",
                                       (json_int_t)L->points, "spent_s", L->spent_s,
                                       "core_round_trip_ns", known(L->trip_ns),
                                       "core_round_trip_end_ns", known(L->trip_end_ns)));
  }
  return a;
}

/* {"tiled_omp.avx2": "tiled.avx2", ...}: the kernels the one-thread classes left to their twins. */
static json_t *twins(const profile_run *r) {
  json_t *o = json_object();
  for (size_t c = 0; c < r->g.n_ctx; c++) {
    txattn_context *ctx = r->g.ctx[c];
    for (size_t k = 0; k < txattn_kernel_count(ctx) && txattn_context_threads(ctx) == 1; k++) {
      txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT, twin = TXATTN_KERNEL_INFO_INIT;
      if (txattn_kernel_get(ctx, k, &info) == TXATTN_OK && info.usable && info.one_thread_same_as &&
          prof_kernel_find(ctx, info.one_thread_same_as, &twin) != SIZE_MAX && twin.usable)
        json_object_set_new(o, info.name, json_string(info.one_thread_same_as));
    }
  }
  return o;
}

static json_t *left_out(const profile_run *r) {
  json_t *a = json_array();
  for (size_t i = 0; i < r->g.n_cls; i++) {
    char d[96];
    if (r->g.cls[i].fate.recorded > 0) continue;
    txattn_table_class_describe(&r->g.cls[i].cls, d, sizeof d);
    json_array_append_new(a, json_string(d));
  }
  return a;
}

static json_t *dtypes(const profile_run *r) {
  json_t *combos = json_array(), *skipped = json_array();
  for (size_t i = 0; i < r->g.n_types; i++) {
    char name[48];
    tx_dtypes_format(&r->g.types[i], name, sizeof name);
    json_array_append_new(combos, json_string(name));
  }
  for (size_t i = 0; i < r->g.n_skipped; i++)
    json_array_append_new(
        skipped, json_pack("{s:s, s:s}", "class", r->g.skipped[i].cls, "why", r->g.skipped[i].why));
  return json_pack("{s:o, s:o}", "combinations", combos, "not_measured", skipped);
}

/* The kernels excluded for a fault, by fault. */
static json_t *faults(const profile_run *r) {
  static const char *const keys[PROF_FAULT_COUNT_] = {[PROF_FAULT_CRASHED] = "crashed",
                                                      [PROF_FAULT_HUNG] = "hung",
                                                      [PROF_FAULT_PRINTS] = "printed",
                                                      [PROF_FAULT_OVERRUN] =
                                                          "wrote_outside_output"};
  json_t *o = json_object();
  for (int f = 0; f < PROF_FAULT_COUNT_; f++) {
    if (!keys[f]) continue;
    json_t *a = json_array();
    for (size_t i = 0; i < r->n_notes; i++)
      if (r->notes[i].fault == (prof_fault)f)
        json_array_append_new(a, json_string(r->notes[i].name));
    json_object_set_new(o, keys[f], a);
  }
  return o;
}

void prof_set_header(profile_run *r, double elapsed) {
  static const char *const modes[] = {"quick", "default", "patient"};
  int64_t th[GRID_MAX_CTX];
  for (size_t i = 0; i < r->g.n_ctx; i++) th[i] = r->g.threads[i];
  qsort(r->spreads, r->n_spreads, sizeof r->spreads[0], tx_cmp_double);
  const prof_mode_knobs *m = &prof_modes[r->mode];
  json_t *o = json_pack(
      "{s:s, s:f, s:f, s:o, s:o, s:o, s:o, s:o, s:{s:f, s:i, s:f, s:i}, "
      "s:{s:[f, f], s:f, s:I}, s:{s:o}, s:I, s:I, s:o, s:{s:I, s:I}, "
      "s:{s:I, s:o}, s:f, s:{s:o, s:o, s:o, s:o}, s:o}",
      "mode", modes[r->mode], "budget_s", r->budget_s, "elapsed_s", elapsed, "threads",
      ints(th, r->g.n_ctx), "d", ints(r->g.d, r->g.n_d), "n", ints(r->g.n, r->g.n_n), "window_r",
      ints(r->g.r, r->g.n_r), "dtypes", dtypes(r), "timing", "min_run_s", m->min_run_s, "runs",
      m->runs, "drop_ratio", PROF_DROP_RATIO, "variants", m->variants, "ties", "within",
      PROF_TIE_MIN, PROF_TIE_MAX, "within_threaded", PROF_TIE_MAX_THREADED, "points",
      (json_int_t)r->n_ties, "one_thread", "left_to_twin", twins(r), "points",
      (json_int_t)r->n_points, "points_left_out", (json_int_t)r->n_skipped, "classes_left_out",
      left_out(r), "plan_failures", "kernels", (json_int_t)r->n_failed_kernels, "kernel_points",
      (json_int_t)r->n_plan_failures, "checks", "inexact_at_points",
      (json_int_t)r->n_inexact_at_point, "faults", faults(r), "noise_median_spread",
      r->n_spreads ? r->spreads[r->n_spreads / 2] : 0.0, "cpu_others", "before_cores",
      known(r->others_before), "during_cores", known(r->others_during), "steal_before_cores",
      known(r->steal_before), "steal_during_cores", known(r->steal_during), "levels", levels(r));
  char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
  txattn_status s = text ? txattn_table_set_profile(r->table, text) : TXATTN_E_NOMEM;
  if (s != TXATTN_OK) tx_print_lib_error("profile", "cannot record the settings", s);
  free(text);
  json_decref(o);
}
