/* SPDX-License-Identifier: MIT */
/* txtune bench as JSON: the object of one problem (what `bench --json` has always printed) and the
   sweep document that wraps such objects with the machine and the settings (bench_sweep.md). */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "bench_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_serving.h"
#include "bench_sweep.h"
#include "buffers.h"
#include "context_cli.h"
#include "txattn/plugin.h"

static void json_problem(tx_json *j, const txattn_problem *p, const tx_serving *sv) {
  tx_json_kv_object(j, "problem");
  tx_json_kv_int(j, "batch", p->batch);
  tx_json_kv_int(j, "heads_q", p->heads_q);
  tx_json_kv_int(j, "heads_kv", p->heads_kv);
  tx_json_kv_int(j, "n_q", p->n_q);
  tx_json_kv_int(j, "n_kv", p->n_kv);
  tx_json_kv_int(j, "d_qk", p->d_qk);
  tx_json_kv_int(j, "d_v", p->d_v);
  tx_json_kv_string(j, "mask", txattn_mask_name(p->mask));
  int w = p->mask == TXATTN_MASK_WINDOW; /* null: no window, or that side unbounded */
  tx_json_key(j, "window_left");
  w && p->window_left != TXATTN_UNBOUNDED ? tx_json_int(j, p->window_left) : tx_json_null(j);
  tx_json_key(j, "window_right");
  w && p->window_right != TXATTN_UNBOUNDED ? tx_json_int(j, p->window_right) : tx_json_null(j);
  tx_json_kv_double(j, "scale", p->scale);
  tx_json_kv_string(j, "q_type", txattn_dtype_name(p->q_type));
  tx_json_kv_string(j, "k_type", txattn_dtype_name(p->k_type));
  tx_json_kv_string(j, "v_type", txattn_dtype_name(p->v_type));
  tx_json_kv_string(j, "o_type", txattn_dtype_name(p->o_type));
  tx_json_kv_bool(j, "lse", p->lse);
  tx_json_key(j, "kv_lens"); /* null: not ragged */
  if (p->ragged) {
    tx_json_begin_array(j);
    for (size_t i = 0; i < sv->n; i++) tx_json_int(j, sv->kv_lens[i]);
    tx_json_end_array(j);
  } else {
    tx_json_null(j);
  }
  tx_json_end_object(j);
}

static void json_env(tx_json *j) {
  tx_json_kv_object(j, "env");
  for (size_t i = 0; i < TX_BENCH_N_ENV; i++)
    tx_json_kv_string(j, tx_bench_env[i].name, getenv(tx_bench_env[i].name));
  tx_json_end_object(j);
}

static void json_ratio(tx_json *j, const char *key, const tx_bench_point *pt, size_t i, long ref) {
  int ok = ref >= 0 && pt->res[i].state == TX_BENCH_OK;
  tx_json_kv_double(j, key, ok ? pt->res[i].tm.median_s / pt->res[ref].tm.median_s : NAN);
}

static void json_tunables(tx_json *j, const char *key, const tx_bench_tunable *t, size_t n) {
  tx_json_kv_object(j, key);
  for (size_t i = 0; i < n; i++) tx_json_kv_int(j, t[i].name, t[i].value);
  tx_json_end_object(j);
}

static void json_kernel(tx_json *j, const tx_bench_setup *s, const tx_bench_point *pt, size_t i) {
  static const char *const states[] = {"ok", "unusable", "not_applicable", "failed",
                                       "over_time_limit"};
  const tx_bench_result *k = &pt->res[i];
  int ok = k->state == TX_BENCH_OK;
  tx_json_begin_object(j);
  tx_json_kv_string(j, "name", tx_bench_label(s, i));
  tx_json_kv_string(j, "kernel", s->sel[i].info.name);
  tx_json_kv_string(j, "status", states[k->state]);
  tx_json_kv_string(j, "reason", *k->why ? k->why : NULL);
  tx_json_kv_double(j, "median_s", ok ? k->tm.median_s : NAN);
  tx_json_kv_double(j, "min_s", ok ? k->tm.min_s : NAN);
  tx_json_kv_double(j, "max_s", ok ? k->tm.max_s : NAN);
  tx_json_kv_int(j, "runs", ok ? k->tm.runs : 0);
  tx_json_kv_int(j, "reps", ok ? k->tm.reps : 0);
  tx_json_kv_double(j, "gflops", ok ? 1e-9 * pt->flops / k->tm.median_s : NAN);
  tx_json_kv_double(j, "max_rel_error", ok ? k->rel_error : NAN);
  if (pt->p.lse) tx_json_kv_double(j, "max_lse_error", ok ? k->lse_error : NAN);
  tx_json_key(j, "exact");
  ok ? tx_json_bool(j, k->exact) : tx_json_null(j);
  json_ratio(j, "vs_fastest", pt, i, pt->fastest);
  json_ratio(j, "vs_masked", pt, i, pt->masked);
  /* the plan's tunables, or when it did not plan, those it was asked to plan with */
  json_tunables(j, "tunables", k->ran, k->n_ran);
  json_tunables(j, "tunables_given", s->tuning[i].set, s->tuning[i].n_set);
  if (pt->p.ragged || s->serving->lse_given || pt->p.mask_tensor) tx_bench_serving_json(j, k);
  if (s->serving->merge) tx_bench_merge_json(j, k);
  tx_json_kv_bool(j, "dispatcher_choice",
                  pt->has_pick && strcmp(s->sel[i].info.name, pt->pick) == 0);
  if (s->roofline) {
    tx_roof_kernel rk = tx_bench_roof_kernel(s, pt, i);
    tx_roof_work w = tx_roofline_work(&pt->p);
    tx_json_key(j, "roofline");
    tx_roofline_json_fit(j, s->roofline, &w, &rk);
  }
  tx_json_end_object(j);
}

static void json_head(tx_json *j, const tx_bench_setup *s, const tx_bench_point *pt) {
  char shape[400];
  tx_bench_shape(&pt->p, s->serving, shape, sizeof shape);
  tx_json_kv_string(j, "shape", shape);
  json_problem(j, &pt->p, s->serving);
}

/* The fields of a point after its shape: the single object puts the run's settings in between. */
static void json_body(tx_json *j, const tx_bench_setup *s, const tx_bench_point *pt) {
  tx_json_kv_string(j, "dispatcher_kernel", pt->has_pick ? pt->pick : NULL);
  tx_json_kv_string(j, "dispatcher_why", pt->pick_why);
  tx_json_kv_string(j, "masked_kernel", pt->masked >= 0 ? tx_bench_label(s, pt->masked) : NULL);
  tx_json_kv_array(j, "kernels");
  for (size_t i = 0; i < s->n_sel; i++) json_kernel(j, s, pt, i);
  tx_json_end_array(j);
  tx_json_kv_bool(j, "pass", tx_bench_point_status(s, pt) == TX_EXIT_OK);
}

static void json_work(tx_json *j, const tx_bench_point *pt) {
  tx_json_kv_double(j, "visible_pairs", pt->pairs);
  tx_json_kv_double(j, "flops_per_call", pt->flops);
  tx_json_kv_double(j, "tensor_bytes", tx_buffers_bytes(&pt->p));
  tx_json_kv_bool(j, "verified", pt->verified);
  tx_json_kv_double(j, "reference_s", pt->verified ? pt->ref_seconds : NAN);
}

void tx_bench_json_single(tx_json *j, const tx_bench_setup *s, const tx_bench_point *pt) {
  tx_json_begin_object(j);
  json_head(j, s, pt);
  tx_json_kv_int(j, "threads", s->threads);
  json_work(j, pt);
  tx_json_kv_double(j, "tolerance", TXATTN_EXACT_TOLERANCE);
  json_env(j);
  tx_json_key(j, "roofline");
  s->roofline ? tx_roofline_json(j, s->roofline) : tx_json_null(j);
  json_body(j, s, pt);
  tx_json_end_object(j);
}

static void json_machine(tx_json *j, const txattn_context *ctx) {
  txattn_machine_info m = TXATTN_MACHINE_INFO_INIT;
  tx_json_key(j, "machine");
  if (txattn_context_machine(ctx, &m) != TXATTN_OK) {
    tx_json_null(j);
    return;
  }
  tx_json_begin_object(j);
  tx_json_cpu_fields(j, &m);
  tx_json_kv_int(j, "cores", m.n_cores);
  tx_json_kv_int(j, "pus", m.n_pus);
  tx_json_kv_int(j, "numa_nodes", m.n_numa);
  tx_json_kv_int(j, "l1d_bytes", m.l1d_bytes);
  tx_json_kv_int(j, "l2_bytes", m.l2_bytes);
  tx_json_kv_int(j, "l3_bytes", m.l3_bytes);
  tx_json_kv_string(j, "cache_source", m.cache_source);
  tx_json_end_object(j);
}

static void json_settings(tx_json *j, const tx_bench_setup *s) {
  tx_json_kv_int(j, "threads", s->threads);
  tx_json_kv_double(j, "tolerance", TXATTN_EXACT_TOLERANCE);
  tx_json_kv_object(j, "timing");
  tx_json_kv_int(j, "reps", s->reps);
  tx_json_kv_double(j, "min_time_s", 1e-3 * (double)s->min_time_ms);
  tx_json_kv_double(j, "time_limit_s", s->limit_s);
  tx_json_end_object(j);
  tx_json_kv_double(j, "load_average_before", s->load_before);
  json_env(j);
  tx_json_key(j, "roofline");
  s->roofline ? tx_roofline_json(j, s->roofline) : tx_json_null(j);
}

static void json_kernel_list(tx_json *j, const tx_bench_setup *s) {
  tx_json_kv_array(j, "kernels");
  for (size_t i = 0; i < s->n_sel; i++) {
    const txattn_kernel_info *k = &s->sel[i].info;
    tx_json_begin_object(j);
    tx_json_kv_string(j, "name", tx_bench_label(s, i));
    tx_json_kv_string(j, "kernel", k->name);
    json_tunables(j, "tunables_given", s->tuning[i].set, s->tuning[i].n_set);
    tx_json_kv_string(j, "isa", k->isa);
    tx_json_kv_bool(j, "usable", k->usable);
    tx_json_kv_bool(j, "threaded", (k->flags & TXATTN_KERNEL_THREADED) != 0);
    tx_json_kv_bool(j, "sparse", (k->flags & TXATTN_KERNEL_SPARSE) != 0);
    tx_json_kv_bool(j, "lse", (k->flags & TXATTN_KERNEL_LSE) != 0);
    tx_json_kv_bool(j, "ragged", (k->flags & TXATTN_KERNEL_RAGGED) != 0);
    tx_json_kv_string(j, "plugin", k->plugin);
    tx_json_kv_string(j, "plugin_version", k->plugin_version);
    tx_json_kv_string(j, "plugin_build", k->plugin_build);
    tx_json_end_object(j);
  }
  tx_json_end_array(j);
}

void tx_bench_json_sweep(tx_json *j, const tx_bench_setup *s, const txattn_context *ctx,
                         const tx_bench_point *pts, size_t n_pts) {
  char created[32] = "";
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm)) strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
  int pass = 1;
  tx_json_begin_object(j);
  tx_json_kv_string(j, "format", TX_SWEEP_FORMAT);
  tx_json_kv_int(j, "format_version", TX_SWEEP_FORMAT_VERSION);
  tx_json_kv_string(j, "created", created);
  tx_json_kv_string(j, "txtune_version", TXATTN_VERSION_STRING);
  tx_json_kv_string(j, "library_version", txattn_version_string());
  json_machine(j, ctx);
  json_settings(j, s);
  json_kernel_list(j, s);
  tx_json_kv_array(j, "points");
  for (size_t i = 0; i < n_pts; i++) {
    tx_json_begin_object(j);
    json_head(j, s, &pts[i]);
    json_work(j, &pts[i]);
    json_body(j, s, &pts[i]);
    tx_json_end_object(j);
    pass &= tx_bench_point_status(s, &pts[i]) == TX_EXIT_OK;
  }
  tx_json_end_array(j);
  tx_json_kv_bool(j, "pass", pass);
  tx_json_end_object(j);
}
