/* SPDX-License-Identifier: MIT */
/* The commands of the benchmark lab (lab.h). txtune bench: time every applicable kernel on one
   shape, or on a sweep of shapes (a list or doubling range of n, a list of mask kinds), verify
   it, and show the dispatcher's pick. txtune plot: a dispatch table or a bench sweep drawn as time
   against n per kernel, one SVG. */
#define _GNU_SOURCE /* getloadavg */
#include "lab.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "bench.h"
#include "bench_json.h"
#include "bench_serving.h"
#include "bench_sweep.h"
#include "buffers.h"
#include "cmd_models.h"
#include "context_cli.h"
#include "json.h"
#include "kernels.h"
#include "plot_source.h"
#include "plot_svg.h"
#include "problem_cli.h"
#include "roofline.h"
#include "text_table.h"
#include "timing.h"
#include "txattn/plugin.h"
#include "txattn/table.h"
#include "verify.h"

/* The fp64 reference is single-threaded: past this much work (visible pairs x (d_qk + d_v)) it
   would take longer than the whole benchmark, so verification becomes opt-in. */
#define VERIFY_WORK_LIMIT 4e9
#define SEED              UINT64_C(0x62656e6368)
#define N_RUN_OPTS        9

typedef struct bench_opts {
  tx_problem_args prob;
  tx_strlist n_items, mask_items; /* --n and --mask: lists, so a run can sweep them */
  tx_context_args ctx;
  tx_strlist kernels, tunable_items;
  tx_bench_tunable_args tunables;
  tx_roofline_args roof;
  tx_serving_args serving;
  int64_t reps, min_time_ms;
  double limit_s;
  int verify, no_verify, json;
  const char *output;
} bench_opts;

typedef struct bench_run {
  bench_opts o;
  tx_opt prob_opts[TX_PROBLEM_N_OPTS], run_opts[N_RUN_OPTS], ctx_opts[TX_CONTEXT_N_OPTS];
  tx_opt roof_opts[TX_ROOFLINE_N_OPTS], serving_opts[TX_SERVING_N_OPTS + 1]; /* + --merge */
  tx_opt_group groups[5];
  tx_cmd_spec spec;
  tx_sweep_axes axes;
  tx_serving serving; /* --kv-lens and --lse, resolved */
  txattn_problem *probs;
  tx_bench_point *pts; /* one per problem */
  size_t n_pts;
  int sweep; /* more than one problem: the sweep's text and JSON */
  txattn_context *ctx;
  tx_kernel_sel *sel; /* an entry per kernel and setting of its tunables */
  tx_bench_tuning *tuning;
  size_t n_sel;
  tx_bench_setup setup;
  tx_buffers b;         /* the current point's; freed before the next one */
  tx_roofline roofline; /* with --roofline */
  int progress;
  char tmp_path[4096]; /* -o: written here, renamed over the output when complete */
  FILE *out;
} bench_run;

static const char about[] =
    "Times every usable kernel that can compute the problem (or those --kernel names) and\n"
    "prints its median time, GFLOP/s, its error against txattn_reference, its time relative to\n"
    "the fastest kernel and to the dense masked.* kernel, and the kernel the dispatcher picks.\n"
    "A list or doubling range for --n (--n 1024..16384 is 1024, 2048, ... 16384; items combine:\n"
    "--n 64..256,1000) or a list for --mask makes a sweep: a table per problem, then per mask\n"
    "kind each kernel's log-log slope of time against n and where the fastest kernel changes.\n"
    "With --json or -o a sweep is one JSON document, format \"" TX_SWEEP_FORMAT "\"\n"
    "(docs/bench_sweep.md), which `txtune plot --from FILE` draws. --roofline first measures\n"
    "the FMA peak of each ISA, OpenBLAS sgemm and memory bandwidth, and shows each kernel as a\n"
    "fraction of them. --tunable block_q=204,block_k=512 plans each kernel that declares those\n"
    "tunables with them (the others with their defaults); a name given with several values\n"
    "times each setting. --kv-lens L1,L2,... makes the batch ragged (a sequence per length, each\n"
    "with N queries against its L keys) and also times, with the same kernel, one call per\n"
    "sequence and the batch padded to the longest; --lse also writes and verifies the\n"
    "log-sum-exp and times the call without it; --merge P also times the keys in P parts, each\n"
    "a call with lse, and txattn_merge of the partials. How it times and verifies: docs/bench.md.\n"
    "`txtune bench --model NAME` times every attention layer of a model of the catalogue instead\n"
    "(txtune models; `txtune bench --model x --help`).\n"
    "Exit status: 0 ok; 1 a kernel failed or was not exact, a kernel named with --kernel was\n"
    "not run for --time-limit, or no kernel was measured (at any problem of a sweep); the last\n"
    "line on stderr then says which and why. A named kernel that cannot run here or declines\n"
    "the problem is a note; 2 usage error.";

static void bench_opts_table(bench_run *r) {
  bench_opts *o = &r->o;
  tx_opt *t = r->run_opts;
  t[0] =
      tx_opt_list("kernel", &o->kernels, "NAME[,NAME...]", "time only these kernels (repeatable)");
  t[1] = tx_opt_int("reps", &o->reps, "R", "timed runs per kernel [5]", 1, 1000);
  t[2] = tx_opt_int("min-time", &o->min_time_ms, "MS", "shortest timed run in ms [20]", 1, 60000);
  t[3] = tx_opt_double("time-limit", &o->limit_s, "S",
                       "seconds per kernel: runs stop being added, and a kernel whose one call "
                       "would take longer is not run [10]",
                       0, 1e6);
  t[4] = tx_opt_flag("verify", &o->verify, "compare with the reference whatever the size");
  t[5] = tx_opt_flag("no-verify", &o->no_verify, "do not compute the reference");
  t[6] = tx_opt_flag("json", &o->json, "JSON on stdout instead of the tables");
  t[7] = tx_opt_string("output", &o->output, "FILE",
                       "also write the JSON to FILE (also -o); the tables stay on stdout");
  t[8] = tx_opt_list("tunable", &o->tunable_items, "NAME=V[,...]",
                     "plan with NAME=V where the kernel declares NAME (repeatable)");
}

/* --n and --mask of the shared problem options become lists: the sweep's axes. */
static void sweep_opts(bench_run *r) {
  for (size_t i = 0; i < TX_PROBLEM_N_OPTS; i++) {
    tx_opt *t = &r->prob_opts[i];
    if (strcmp(t->name, "n") == 0)
      *t = tx_opt_list("n", &r->o.n_items, "N|A..B[,...]",
                       "query rows; a list or A..B (A, 2A, 4A ... <= B) sweeps");
    else if (strcmp(t->name, "mask") == 0)
      *t = tx_opt_list("mask", &r->o.mask_items, "KIND[,KIND...]",
                       "none, causal or window [none]; a list sweeps");
  }
}

static int parse_axes(bench_run *r) {
  int rc = tx_sweep_parse_n(&r->spec, &r->o.n_items, &r->axes);
  if (!rc) rc = tx_sweep_parse_mask(&r->spec, &r->o.mask_items, &r->axes);
  if (!rc) rc = tx_sweep_problems(&r->spec, &r->o.prob, &r->axes, &r->probs, &r->n_pts);
  r->sweep = r->n_pts > 1;
  return rc;
}

/* Returns -1 to go on, else the exit code. */
static int parse(bench_run *r, int argc, char **argv) {
  bench_opts *o = &r->o;
  tx_problem_args_init(&o->prob);
  tx_context_args_init(&o->ctx);
  o->reps = 5;
  o->min_time_ms = 20;
  o->limit_s = 10;
  tx_problem_opts(&o->prob, r->prob_opts);
  sweep_opts(r);
  bench_opts_table(r);
  tx_context_opts(&o->ctx, r->ctx_opts);
  tx_roofline_args_init(&o->roof);
  tx_roofline_opts(&o->roof, r->roof_opts);
  tx_serving_args_init(&o->serving);
  tx_serving_opts(&o->serving, r->serving_opts);
  r->serving_opts[TX_SERVING_N_OPTS] = tx_serving_merge_opt(&o->serving);
  r->groups[0] = (tx_opt_group){"Problem", r->prob_opts, TX_PROBLEM_N_OPTS};
  r->groups[1] = (tx_opt_group){"Serving calls", r->serving_opts, TX_SERVING_N_OPTS + 1};
  r->groups[2] = (tx_opt_group){"Benchmark", r->run_opts, N_RUN_OPTS};
  r->groups[3] = (tx_opt_group){"Roofline", r->roof_opts, TX_ROOFLINE_N_OPTS};
  r->groups[4] = (tx_opt_group){"Library", r->ctx_opts, TX_CONTEXT_N_OPTS};
  r->spec = (tx_cmd_spec){"bench",
                          "--n N|LIST|A..B --d D [--mask KIND[,KIND...] --left L --right R] "
                          "[--kv-lens L1,L2,...] [--lse] [--merge P] [--json] [-o FILE] "
                          "[options]",
                          about, r->groups, 5};
  int rc = tx_args_parse_cmd(&r->spec, argc, argv);
  if (rc >= 0) return rc;
  if (o->verify && o->no_verify)
    return tx_args_usage_error(&r->spec, "--verify and --no-verify contradict each other");
  if ((rc = tx_roofline_check_args(&r->spec, &o->roof)) != 0) return rc;
  if ((rc = tx_bench_parse_tunables(&r->spec, &o->tunable_items, &o->tunables)) != 0) return rc;
  if ((rc = tx_serving_from_args(&r->spec, &o->serving, &r->serving)) != 0) return rc;
  if ((rc = tx_serving_apply_args(&r->spec, &r->serving, &o->prob)) != 0) return rc;
  rc = parse_axes(r);
  for (size_t i = 0; !rc && i < r->n_pts && r->serving.n_q_lens; i++)
    if (r->probs[i].n_q < r->serving.max_q)
      rc = tx_args_usage_error(&r->spec, "--n %lld is less than the longest of --q-lens, %lld",
                               (long long)r->probs[i].n_q, (long long)r->serving.max_q);
  if (!rc) rc = tx_serving_merge_check(&r->spec, &r->serving, r->probs, r->n_pts);
  for (size_t i = 0; !rc && i < r->n_pts; i++) tx_serving_apply(&r->serving, &r->probs[i]);
  return rc ? rc : -1;
}

static void ask_dispatcher(bench_run *r, tx_bench_point *pt) {
  txattn_plan *plan = NULL;
  txattn_status s = txattn_plan_create(r->ctx, &pt->p, NULL, &plan);
  pt->has_pick = s == TXATTN_OK;
  if (pt->has_pick) {
    snprintf(pt->pick, sizeof pt->pick, "%s", txattn_plan_kernel(plan));
    snprintf(pt->pick_why, sizeof pt->pick_why, "%s", txattn_plan_why(plan));
  } else {
    snprintf(pt->pick_why, sizeof pt->pick_why, "%s: %s", txattn_status_name(s),
             txattn_last_error());
  }
  txattn_plan_free(plan);
}

static int prepare(bench_run *r, tx_bench_point *pt) {
  char err[256];
  pt->pairs = tx_bench_pairs(&pt->p, &r->serving);
  pt->flops = 2.0 * (double)(pt->p.d_qk + pt->p.d_v) * pt->pairs;
  pt->verified = !r->o.no_verify &&
                 (r->o.verify || pt->pairs * (double)(pt->p.d_qk + pt->p.d_v) < VERIFY_WORK_LIMIT);
  pt->fastest = pt->masked = -1;
  if (!(pt->res = calloc(r->n_sel ? r->n_sel : 1, sizeof *pt->res))) {
    fprintf(stderr, "txtune bench: out of memory\n");
    return TX_EXIT_FAIL;
  }
  const tx_serving *sv = &r->serving;
  /* packed rows are the interleaved buffers' rows */
  const tx_layout_kind kind = pt->p.packed ? TX_LAYOUT_INTERLEAVED : TX_LAYOUT_CONTIGUOUS;
  if (tx_buffers_alloc(&r->b, &pt->p, kind, pt->verified, err, sizeof err) != 0 ||
      ((pt->p.lse || pt->p.ragged) &&
       tx_buffers_serving(&r->b, pt->p.lse, pt->p.ragged ? sv->kv_lens : NULL, sv->n, err,
                          sizeof err) != 0) ||
      (pt->p.ragged && sv->n_q_lens &&
       tx_buffers_q_lens(&r->b, sv->q_lens, sv->n_q_lens, err, sizeof err) != 0)) {
    fprintf(stderr, "txtune bench: %s\n", err);
    return TX_EXIT_FAIL;
  }
  tx_buffers_fill(&r->b, SEED, 1.0f);
  if (tx_buffers_page(&r->b, SEED, err, sizeof err) != 0) {
    fprintf(stderr, "txtune bench: %s\n", err);
    return TX_EXIT_FAIL;
  }
  ask_dispatcher(r, pt);
  if (!pt->verified) return 0;
  double t0 = tx_clock();
  txattn_status s = tx_buffers_reference(&r->b);
  pt->ref_seconds = tx_clock() - t0;
  if (s == TXATTN_OK) return 0;
  tx_print_lib_error("bench", "the reference failed", s);
  return TX_EXIT_FAIL;
}

static void verify_kernel(bench_run *r, const tx_bench_point *pt, tx_bench_result *k) {
  tx_verdict v;
  tx_verify(&r->b, r->b.o, pt->verified ? r->b.o_ref : NULL, NULL, &v);
  k->rel_error = v.rel_error;
  k->lse_error = v.lse_error;
  k->exact = tx_verdict_pass(&v);
  tx_verdict_explain(&v, k->why, sizeof k->why);
}

/* What the entry ran with: the plan's tunables, else those it was asked to plan with. */
static void record_tunables(const txattn_plan *plan, const tx_bench_tuning *tn,
                            tx_bench_result *k) {
  size_t n = plan ? txattn_plan_tunable_count(plan) : tn->n_set;
  k->n_ran = 0;
  for (size_t i = 0; i < n && k->n_ran < TX_BENCH_MAX_TUNABLES; i++) {
    tx_bench_tunable *t = &k->ran[k->n_ran];
    const char *name = NULL;
    if (!plan) {
      *t = tn->set[i];
    } else if (txattn_plan_tunable_get(plan, i, &name, &t->value) == TXATTN_OK && name) {
      snprintf(t->name, sizeof t->name, "%s", name);
    } else {
      continue;
    }
    k->n_ran++;
  }
}

static txattn_status plan_problem(bench_run *r, const txattn_problem *p, size_t i,
                                  txattn_plan **plan) {
  const tx_bench_tuning *tn = &r->tuning[i];
  if (!tn->n_set) return txattn_plan_create(r->ctx, p, r->sel[i].info.name, plan);
  const char *names[TX_BENCH_MAX_TUNABLES];
  int64_t values[TX_BENCH_MAX_TUNABLES];
  for (size_t j = 0; j < tn->n_set; j++) {
    names[j] = tn->set[j].name;
    values[j] = tn->set[j].value;
  }
  return txattn_plan_create_tuned(r->ctx, p, r->sel[i].info.name, names, values, tn->n_set, plan);
}

/* Entry i's planner for tx_bench_serving_compare. */
typedef struct entry_planner {
  bench_run *r;
  size_t i;
} entry_planner;

static txattn_status plan_for_compare(void *arg, const txattn_problem *p, txattn_plan **out) {
  const entry_planner *e = arg;
  return plan_problem(e->r, p, e->i, out);
}

/* With --kv-lens, --lse or --merge, after entry i's own measurement and verification. */
static void compare_serving(bench_run *r, const tx_bench_point *pt, size_t i, tx_bench_result *k) {
  if (k->state != TX_BENCH_OK) return;
  entry_planner e = {r, i};
  tx_timing_opts to = {.min_run_s = 1e-3 * (double)r->o.min_time_ms,
                       .runs = (int)r->o.reps,
                       .limit_s = r->o.limit_s};
  if (pt->p.ragged || r->serving.lse_given || pt->p.mask_tensor)
    tx_bench_serving_compare(&r->b, &r->serving, plan_for_compare, &e, &to, &k->cmp);
  if (r->serving.merge)
    tx_bench_merge_compare(&r->b, &r->serving, plan_for_compare, &e, &to, &k->merge);
}

/* A probe's warm call must take this long (or a sixteenth of --time-limit if that is less) before
   its time is extrapolated: a shorter one is mostly the call's fixed costs, which an extrapolation
   by the pairs would multiply. */
#define PROBE_MIN_S 5e-3

/* The seconds of the warmer of two calls of plan after a first one (which pays for the caches,
   the pages and the plan's workspace), or a negative value if a call failed. */
static double warm_call(const txattn_plan *plan, const txattn_tensors *t) {
  double best = -1;
  for (int i = 0; i < 3; i++) {
    const double t0 = tx_clock();
    if (txattn_plan_execute(plan, t) != TXATTN_OK) return -1;
    const double took = tx_clock() - t0;
    if (i > 0 && (best < 0 || took < best)) best = took;
  }
  return best;
}

/* A call cannot be interrupted once started (it runs in this process), so --time-limit is honoured
   by not starting a kernel whose one call would take longer. Only a problem of 2^30 pair x
   head-size products or more is probed: a smaller call of the same kernel, n_q and n_kv cut to
   n / 256 (each at least 1) and doubled at each step, until its warm call (warm_call) takes
   PROBE_MIN_S; only such a call measures the kernel's cost per pair, and its time, scaled by the
   visible pairs, is the estimate. A probe that reaches n / 2 without taking that long is one whose
   full call is short: it is run. Returns 1, with k's state and why set, to leave the kernel out. */
static int over_limit(bench_run *r, const tx_bench_point *pt, size_t i, tx_bench_result *k) {
  const double limit = r->o.limit_s, enough = fmin(PROBE_MIN_S, limit / 16);
  if (!(limit > 0) || pt->pairs * (double)(pt->p.d_qk + pt->p.d_v) < 0x1p30) return 0;
  for (int shift = 8; shift >= 1; shift--) {
    tx_bench_point small = *pt;
    small.p.n_q = pt->p.n_q >> shift > 0 ? pt->p.n_q >> shift : 1;
    small.p.n_kv = pt->p.n_kv >> shift > 0 ? pt->p.n_kv >> shift : 1;
    small.p.ragged = 0; /* contiguous in the buffers; the estimate scales by the ragged pairs */
    const double pairs = txattn_problem_visible_pairs(&small.p);
    if (!(pairs > 0)) continue;
    txattn_plan *plan = NULL;
    if (plan_problem(r, &small.p, i, &plan) != TXATTN_OK) return 0; /* the full call says why */
    txattn_tensors t = r->b.t; /* contiguous, inside the full problem's buffers */
    t.q_layout = t.k_layout = t.v_layout = t.o_layout = (txattn_layout){0, 0, 0};
    const double took = warm_call(plan, &t), estimate = took * pt->pairs / pairs;
    txattn_plan_free(plan);
    if (took < 0) return 0; /* the full call says why */
    if (took < enough) continue;
    if (estimate <= limit) return 0;
    k->state = TX_BENCH_OVER_LIMIT;
    snprintf(k->why, sizeof k->why,
             "one call would take about %.3g s (a warm call at n_q %lld, n_kv %lld took %.3g s; "
             "scaled by the visible pairs), over --time-limit %g s",
             estimate, (long long)small.p.n_q, (long long)small.p.n_kv, took, limit);
    return 1;
  }
  return 0;
}

static void set_failed(tx_bench_result *k, txattn_status s) {
  k->state = s == TXATTN_E_UNSUPPORTED ? TX_BENCH_NOT_APPLICABLE : TX_BENCH_FAILED;
  snprintf(k->why, sizeof k->why, "%s%s%s", s == TXATTN_E_UNSUPPORTED ? "" : txattn_status_name(s),
           s == TXATTN_E_UNSUPPORTED ? "" : ": ", txattn_last_error());
}

/* With --roofline on a decode, a kernel's timed runs are paired with read-bandwidth runs. */
static int pairs_runs(const bench_run *r, const tx_bench_point *pt) {
  tx_roof_work w = tx_roofline_work(&pt->p);
  return tx_roofline_pairs(r->setup.roofline, &w);
}

/* Times entries idx[0 .. m - 1] (args: their exec_args, each already run once) interleaved, each
   timed run right after a read run when pairs_runs (tx_roofline_measure_paired). */
static void measure_entries(bench_run *r, const tx_bench_point *pt, void *const *args,
                            const size_t *idx, size_t m, tx_timing *tm, txattn_status *st) {
  tx_timing_opts to = {.min_run_s = 1e-3 * (double)r->o.min_time_ms,
                       .runs = (int)r->o.reps,
                       .limit_s = r->o.limit_s};
  if (!pairs_runs(r, pt)) {
    tx_time(tx_plan_call_run, args, m, &to, tm, st, NULL);
    return;
  }
  int threads[TX_BENCH_MAX_ENTRIES];
  tx_roof_paired paired[TX_BENCH_MAX_ENTRIES];
  for (size_t j = 0; j < m; j++) threads[j] = tx_bench_entry_threads(&r->setup, idx[j]);
  tx_roof_work w = tx_roofline_work(&pt->p);
  tx_roofline_measure_paired(&r->roofline, w.bytes, tx_plan_call_run, args, threads, m, &to, tm, st,
                             paired);
  for (size_t j = 0; j < m; j++) pt->res[idx[j]].paired = paired[j];
}

/* Entries first .. first + n - 1, a kernel or the settings of one: each planned, run once and
   checked, then timed interleaved (tx_time). */
static void bench_settings(bench_run *r, const tx_bench_point *pt, size_t first, size_t n) {
  txattn_plan *plans[TX_BENCH_MAX_ENTRIES] = {0};
  tx_plan_call args[TX_BENCH_MAX_ENTRIES];
  void *argp[TX_BENCH_MAX_ENTRIES];
  size_t idx[TX_BENCH_MAX_ENTRIES], m = 0;
  for (size_t i = first; i < first + n; i++) {
    tx_bench_result *k = &pt->res[i];
    const txattn_kernel_info *info = &r->sel[i].info;
    k->rel_error = k->lse_error = NAN;
    record_tunables(NULL, &r->tuning[i], k);
    if (!info->usable) {
      k->state = TX_BENCH_UNUSABLE;
      snprintf(k->why, sizeof k->why, "%s", info->why_unusable ? info->why_unusable : "?");
      continue;
    }
    txattn_status s = plan_problem(r, &pt->p, i, &plans[m]);
    if (s == TXATTN_OK && over_limit(r, pt, i, k)) {
      record_tunables(plans[m], &r->tuning[i], k);
      txattn_plan_free(plans[m]);
      plans[m] = NULL;
      continue;
    }
    if (s == TXATTN_OK) {
      record_tunables(plans[m], &r->tuning[i], k);
      tx_fill_value(r->b.o, r->b.p.o_type, r->b.o_len, TX_POISON);
      if (r->b.lse) tx_fill_value(r->b.lse, TXATTN_DTYPE_F32, r->b.lse_len, TX_POISON);
      args[m] = (tx_plan_call){plans[m], &r->b.t};
      s = tx_plan_call_run(&args[m]);
    }
    if (s != TXATTN_OK) {
      set_failed(k, s);
      txattn_plan_free(plans[m]);
      plans[m] = NULL;
      continue;
    }
    k->state = TX_BENCH_OK;
    verify_kernel(r, pt, k);
    argp[m] = &args[m];
    idx[m++] = i;
  }
  tx_timing tm[TX_BENCH_MAX_ENTRIES];
  txattn_status st[TX_BENCH_MAX_ENTRIES];
  measure_entries(r, pt, argp, idx, m, tm, st);
  for (size_t j = 0; j < m; j++) {
    if (st[j] == TXATTN_OK)
      pt->res[idx[j]].tm = tm[j];
    else
      set_failed(&pt->res[idx[j]], st[j]);
    txattn_plan_free(plans[j]);
  }
  for (size_t j = 0; j < m; j++) compare_serving(r, pt, idx[j], &pt->res[idx[j]]);
}

/* The entries from k on that are settings of the same kernel (adjacent by construction). */
static size_t settings_of(const bench_run *r, size_t k) {
  size_t n = 1;
  while (k + n < r->n_sel && strcmp(r->sel[k + n].info.name, r->sel[k].info.name) == 0) n++;
  return n;
}

static void find_references(const bench_run *r, tx_bench_point *pt) {
  for (size_t i = 0; i < r->n_sel; i++) {
    if (pt->res[i].state != TX_BENCH_OK) continue;
    double t = pt->res[i].tm.median_s;
    if (pt->fastest < 0 || t < pt->res[pt->fastest].tm.median_s) pt->fastest = (long)i;
    if (strncmp(r->sel[i].info.name, "masked.", 7) == 0 &&
        (pt->masked < 0 || t < pt->res[pt->masked].tm.median_s))
      pt->masked = (long)i;
  }
}

static int exit_code(const bench_run *r) {
  for (size_t i = 0; i < r->n_pts; i++)
    if (tx_bench_point_status(&r->setup, &r->pts[i]) != TX_EXIT_OK) return TX_EXIT_FAIL;
  return TX_EXIT_OK;
}

/* Appends "<sep><text>" to the list in buf; a list that no longer fits ends in "...". */
static void list_add(char *buf, size_t size, const char *sep, const char *text) {
  size_t used = strlen(buf);
  if (used >= 3 && strcmp(buf + used - 3, "...") == 0) return;
  int n = snprintf(buf + used, size - used, "%s%s", used ? sep : "", text);
  if (n < 0 || used + (size_t)n >= size) strcpy(buf + size - 4, "...");
}

/* Why entry i failed at pt, as tx_bench_kernel_failed judges it; "" if it did not. */
static void failure_text(const bench_run *r, const tx_bench_point *pt, size_t i, char *buf,
                         size_t size) {
  const tx_bench_result *k = &pt->res[i];
  const char *name = tx_bench_label(&r->setup, i);
  buf[0] = '\0';
  if (!tx_bench_kernel_failed(&r->setup, pt, i)) return;
  if (k->state == TX_BENCH_FAILED)
    snprintf(buf, size, "%s failed: %s", name, k->why);
  else if (k->state == TX_BENCH_OVER_LIMIT)
    snprintf(buf, size, "%s was not run: %s (raise --time-limit)", name, k->why);
  else if (!k->exact)
    snprintf(buf, size, "%s is not exact: %s", name, k->why);
  else
    snprintf(buf, size, "%s's merged result is not exact: %s", name, k->merge.why);
}

/* "tiled.avx512 cannot run here (...)": an entry that was not run for what it is, not for what it
   did; "" for the others. */
static void not_run_text(const bench_run *r, const tx_bench_point *pt, size_t i, char *buf,
                         size_t size) {
  const tx_bench_result *k = &pt->res[i];
  const char *name = tx_bench_label(&r->setup, i);
  buf[0] = '\0';
  if (k->state == TX_BENCH_UNUSABLE)
    snprintf(buf, size, "%s cannot run here (%s)", name, k->why);
  else if (k->state == TX_BENCH_NOT_APPLICABLE)
    snprintf(buf, size, "%s declines the problem (%s)", name, k->why);
  else if (k->state == TX_BENCH_OVER_LIMIT && !tx_bench_kernel_failed(&r->setup, pt, i))
    snprintf(buf, size, "%s was not run (%s)", name, k->why);
}

/* The last lines, on stderr: a note per kernel named with --kernel that was not run for what it is
   (it cannot run here or declines the problem: a note, unless no kernel was measured), and, when
   the run fails, one line that says what failed and why. */
static void print_verdict(const bench_run *r, int rc) {
  char fails[1200] = "", text[600], shape[400];
  fflush(stdout); /* these lines come last, also where both streams go to one file */
  for (size_t k = 0; k < r->n_sel; k++) { /* notes: once per kernel, at its first problem */
    if (!r->sel[k].requested) continue;
    for (size_t p = 0; p < r->n_pts; p++) {
      not_run_text(r, &r->pts[p], k, text, sizeof text);
      if (!*text || r->pts[p].fastest < 0) continue;
      tx_bench_shape(&r->pts[p].p, &r->serving, shape, sizeof shape);
      fprintf(stderr, "txtune bench: note: %s%s%s; not timed\n", text, r->sweep ? " at " : "",
              r->sweep ? shape : "");
      break;
    }
  }
  if (rc == TX_EXIT_OK) return;
  for (size_t p = 0; p < r->n_pts; p++) {
    const tx_bench_point *pt = &r->pts[p];
    char at[420] = "";
    if (r->sweep) {
      tx_bench_shape(&pt->p, &r->serving, shape, sizeof shape);
      snprintf(at, sizeof at, " at %s", shape);
    }
    if (pt->fastest < 0) {
      char why[800] = "";
      for (size_t k = 0; k < r->n_sel; k++) {
        not_run_text(r, pt, k, text, sizeof text);
        if (!*text) failure_text(r, pt, k, text, sizeof text);
        if (*text) list_add(why, sizeof why, ", ", text);
      }
      char line[1300];
      snprintf(line, sizeof line, "no kernel was measured%s: %s", at,
               *why ? why : "none was selected ('txtune list' shows why)");
      list_add(fails, sizeof fails, "; ", line);
      continue;
    }
    for (size_t k = 0; k < r->n_sel; k++) {
      failure_text(r, pt, k, text, sizeof text);
      if (!*text) continue;
      size_t len = strlen(text);
      snprintf(text + len, sizeof text - len, "%s", at);
      list_add(fails, sizeof fails, "; ", text);
    }
  }
  fprintf(stderr, "txtune bench: FAIL: %s\n",
          *fails ? fails : "a problem could not be measured (see above)");
}

static void print_env(void) {
  printf("  env:");
  for (size_t i = 0; i < TX_BENCH_N_ENV; i++) {
    const char *v = getenv(tx_bench_env[i].name);
    if (v || tx_bench_env[i].always) printf(" %s=%s", tx_bench_env[i].name, v ? v : "(unset)");
  }
  printf("\n");
}

/* A table the dispatcher does not follow whole (stale, malformed, partly valid): why not. */
static void print_table_state(const bench_run *r) {
  txattn_table_status st = txattn_context_table_status(r->ctx);
  if (st != TXATTN_TABLE_LOADED && st != TXATTN_TABLE_NONE)
    printf("  dispatch table: %s\n", txattn_context_table_state(r->ctx));
}

static void print_timing(const bench_run *r) {
  printf("  timing: median of up to %lld runs of >= %lld ms each, at most %g s per kernel\n",
         (long long)r->o.reps, (long long)r->o.min_time_ms, r->o.limit_s);
}

static void print_pick(const tx_bench_point *pt) {
  if (pt->has_pick)
    printf("  dispatcher picks %s: %s\n", pt->pick, pt->pick_why);
  else
    printf("  dispatcher has no kernel: %s\n", pt->pick_why);
}

/* "q f32, k f16, v f16, o f32: 16.8 MB of tensors" */
static void types_text(const txattn_problem *p, char *buf, size_t size) {
  snprintf(buf, size, "q %s, k %s, v %s, o %s: %.4g MB of tensors", txattn_dtype_name(p->q_type),
           txattn_dtype_name(p->k_type), txattn_dtype_name(p->v_type), txattn_dtype_name(p->o_type),
           1e-6 * tx_buffers_bytes(p));
}

static void print_header(const bench_run *r, const tx_bench_point *pt) {
  char shape[400], types[160];
  tx_bench_shape(&pt->p, &r->serving, shape, sizeof shape);
  types_text(&pt->p, types, sizeof types);
  int threads = r->setup.threads;
  printf("txtune bench: %s, %d thread%s\n", shape, threads, threads == 1 ? "" : "s");
  printf("  %.0f visible pairs, %.4g GFLOP per call; %s\n", pt->pairs, 1e-9 * pt->flops, types);
  if (pt->verified)
    printf("  verified against txattn_reference (fp64, %.2f s)\n", pt->ref_seconds);
  else
    printf("  not verified against the reference%s\n",
           r->o.no_verify ? " (--no-verify)" : ": too large for the default (use --verify)");
  print_env();
  print_table_state(r);
  print_pick(pt);
  print_timing(r);
}

static void print_tunables_note(void) {
  printf("TUNABLES: what each plan ran with: --tunable's values where the kernel declares them, "
         "else its defaults\n");
}

static void print_sweep_header(const bench_run *r) {
  int threads = r->setup.threads;
  printf("txtune bench sweep: %zu problems (%zu n x %zu mask kind%s), %d thread%s\n", r->n_pts,
         r->axes.n_n, r->axes.n_mask, r->axes.n_mask == 1 ? "" : "s", threads,
         threads == 1 ? "" : "s");
  if (r->o.no_verify)
    printf("  not verified against the reference (--no-verify)\n");
  else if (r->o.verify)
    printf("  every problem verified against txattn_reference (fp64)\n");
  else
    printf("  verified against txattn_reference (fp64) where visible pairs x (d_qk + d_v) < 4e9\n");
  print_env();
  print_table_state(r);
  print_timing(r);
  if (!isnan(r->setup.load_before)) /* other work on the machine makes every time noisier */
    printf("  load average %.2f when the sweep started\n", r->setup.load_before);
  printf("  * the dispatcher's choice; x = median time / the named kernel's median time\n");
  if (r->setup.tunables_given) {
    printf("  ");
    print_tunables_note();
  }
}

static void print_point_header(const bench_run *r, const tx_bench_point *pt, size_t i) {
  char shape[400];
  tx_bench_shape(&pt->p, &r->serving, shape, sizeof shape);
  printf("\n[%zu/%zu] %s: %.4g visible pairs, %.4g GFLOP per call, %.4g MB of tensors, ", i + 1,
         r->n_pts, shape, pt->pairs, 1e-9 * pt->flops, 1e-6 * tx_buffers_bytes(&pt->p));
  if (pt->verified)
    printf("verified (reference %.2f s)\n", pt->ref_seconds);
  else
    printf("not verified%s\n", r->o.no_verify ? "" : " (too large; --verify)");
  print_pick(pt);
}

static void ratio_text(const tx_bench_point *pt, size_t i, long ref, char *buf, size_t size) {
  if (ref >= 0 && pt->res[i].state == TX_BENCH_OK)
    snprintf(buf, size, "%.2f", pt->res[i].tm.median_s / pt->res[ref].tm.median_s);
  else
    snprintf(buf, size, "-");
}

static void table_row(const bench_run *r, const tx_bench_point *pt, tx_table *t, size_t i) {
  const tx_bench_result *k = &pt->res[i];
  char label[192], ms[32] = "-", gf[32] = "-", err[32] = "-", fast[32], msk[32], runs[48] = "-";
  char tun[256];
  int picked = pt->has_pick && strcmp(r->sel[i].info.name, pt->pick) == 0;
  snprintf(label, sizeof label, "%s%s", tx_bench_label(&r->setup, i), picked ? " *" : "");
  tx_bench_tunables_text(k->ran, k->n_ran, " ", tun, sizeof tun);
  if (k->state == TX_BENCH_OK) {
    snprintf(ms, sizeof ms, "%.4g", 1e3 * k->tm.median_s);
    snprintf(gf, sizeof gf, "%.2f", 1e-9 * pt->flops / k->tm.median_s);
    if (!isnan(k->rel_error)) snprintf(err, sizeof err, "%.1e", k->rel_error);
    snprintf(runs, sizeof runs, "%dx%lld", k->tm.runs, (long long)k->tm.reps);
  }
  ratio_text(pt, i, pt->fastest, fast, sizeof fast);
  ratio_text(pt, i, pt->masked, msk, sizeof msk);
  const char *cells[] = {label, ms, gf, err, fast, msk, runs, tun};
  tx_table_add(t, cells);
  static const char *const what[] = {"", "not usable", "not applicable", "FAILED", "not run"};
  if (k->state != TX_BENCH_OK)
    tx_table_note(t, "%s: %s", what[k->state], k->why);
  else if (!k->exact)
    tx_table_note(t, "%s", k->why);
}

static void print_roofline_fits(const bench_run *r, const tx_bench_point *pt) {
  tx_roof_kernel *ks = calloc(r->n_sel ? r->n_sel : 1, sizeof *ks);
  if (!ks) {
    printf("\nroofline: out of memory\n");
    return;
  }
  for (size_t i = 0; i < r->n_sel; i++) ks[i] = tx_bench_roof_kernel(&r->setup, pt, i);
  tx_roof_work w = tx_roofline_work(&pt->p);
  tx_roofline_print_fits(&r->roofline, &w, ks, r->n_sel, stdout);
  free(ks);
}

static void print_text(const bench_run *r, const tx_bench_point *pt) {
  char spec[256];
  snprintf(spec, sizeof spec, "KERNEL|>MEDIAN ms|>GFLOP/s|>MAX ERROR|>x FASTEST|>x %s|>RUNSxREPS%s",
           pt->masked >= 0 ? tx_bench_label(&r->setup, pt->masked) : "MASKED",
           r->setup.tunables_given ? "|TUNABLES" : "");
  tx_table t;
  tx_table_init(&t, spec);
  for (size_t i = 0; i < r->n_sel; i++) table_row(r, pt, &t, i);
  if (pt->fastest >= 0) {
    printf("\n");
    tx_table_print(&t, stdout, "");
    if (!r->sweep)
      printf("\n* the dispatcher's choice; x = median time / the named kernel's median time%s\n",
             pt->masked >= 0 ? "" : " (no masked.* kernel was measured)");
    if (!r->sweep && r->setup.tunables_given) print_tunables_note();
    tx_bench_serving_print(&r->setup, pt, stdout);
    tx_bench_merge_print(&r->setup, pt, stdout);
    if (r->o.roof.enabled) print_roofline_fits(r, pt);
  } else {
    printf("\nno kernel could be measured%s\n", r->n_sel ? ":" : " ('txtune list' shows why)");
    if (r->n_sel) tx_table_print(&t, stdout, "  ");
  }
  tx_table_free(&t);
}

static void write_json(const bench_run *r, FILE *f) {
  tx_json j;
  tx_json_init(&j, f);
  if (r->sweep)
    tx_bench_json_sweep(&j, &r->setup, r->ctx, r->pts, r->n_pts);
  else
    tx_bench_json_single(&j, &r->setup, &r->pts[0]);
  tx_json_finish(&j);
}

/* -o: opened before anything is measured, so a long sweep cannot end in an unwritable path; the
   file appears complete or not at all. */
static int open_output(bench_run *r) {
  if (!r->o.output) return 0;
  snprintf(r->tmp_path, sizeof r->tmp_path, "%s.tmp%ld", r->o.output, (long)getpid());
  if ((r->out = fopen(r->tmp_path, "w"))) return 0;
  fprintf(stderr, "txtune bench: cannot write %s: %s\n", r->tmp_path, strerror(errno));
  return TX_EXIT_FAIL;
}

static int close_output(bench_run *r) {
  write_json(r, r->out);
  int bad = ferror(r->out);
  bad |= fclose(r->out) != 0;
  r->out = NULL;
  if (!bad && rename(r->tmp_path, r->o.output) == 0) {
    if (!r->o.json) printf("\nwrote %s\n", r->o.output);
    return 0;
  }
  fprintf(stderr, "txtune bench: cannot write %s: %s\n", r->o.output, strerror(errno));
  remove(r->tmp_path);
  return TX_EXIT_FAIL;
}

/* Before the kernels, in the same run, so the ratios compare like with like. */
static int measure_roofline(bench_run *r) {
  if (r->progress) fprintf(stderr, "\r\033[K  measuring the roofline ...");
  txattn_machine_info m = TXATTN_MACHINE_INFO_INIT;
  txattn_context_machine(r->ctx, &m);
  int rc = tx_roofline_measure(&r->o.roof, &m, r->setup.threads, 1e-3 * (double)r->o.min_time_ms,
                               &r->roofline);
  if (r->progress) fprintf(stderr, "\r\033[K");
  if (rc == 0 && !r->o.json) tx_roofline_print(&r->roofline, stdout);
  fflush(stdout);
  r->setup.roofline = &r->roofline;
  return rc;
}

static int run_point(bench_run *r, size_t i) {
  tx_bench_point *pt = &r->pts[i];
  pt->p = r->probs[i];
  int rc = prepare(r, pt);
  if (rc) return rc;
  if (!r->o.json) r->sweep ? print_point_header(r, pt, i) : print_header(r, pt);
  fflush(stdout);
  if (i == 0 && r->o.roof.enabled && (rc = measure_roofline(r)) != 0) return rc;
  for (size_t k = 0, n; k < r->n_sel; k += n) {
    n = settings_of(r, k);
    if (r->progress)
      fprintf(stderr, "\r\033[K  [%zu/%zu] timing %s%s ...", i + 1, r->n_pts,
              n > 1 ? r->sel[k].info.name : tx_bench_label(&r->setup, k),
              n > 1 ? ", its settings interleaved" : "");
    bench_settings(r, pt, k, n);
  }
  if (r->progress) fprintf(stderr, "\r\033[K");
  tx_buffers_free(&r->b);
  find_references(r, pt);
  if (!r->o.json) print_text(r, pt);
  fflush(stdout);
  return 0;
}

static int select_kernels(bench_run *r) {
  tx_kernel_sel *kernels = NULL;
  size_t n = 0;
  int rc = tx_kernels_select(&r->spec, r->ctx, &r->o.kernels, &kernels, &n);
  if (!rc)
    rc = tx_bench_expand_tunables(&r->spec, r->ctx, &r->o.tunables, kernels, n, &r->sel, &r->tuning,
                                  &r->n_sel);
  free(kernels);
  return rc;
}

static int setup(bench_run *r) {
  int rc = tx_context_open("bench", &r->o.ctx, &r->ctx);
  if (!rc) rc = select_kernels(r);
  if (rc) return rc;
  if (!(r->pts = calloc(r->n_pts, sizeof *r->pts))) {
    fprintf(stderr, "txtune bench: out of memory\n");
    return TX_EXIT_FAIL;
  }
  r->setup = (tx_bench_setup){.sel = r->sel,
                              .tuning = r->tuning,
                              .n_sel = r->n_sel,
                              .tunables_given = r->o.tunables.n > 0,
                              .threads = txattn_context_threads(r->ctx),
                              .reps = r->o.reps,
                              .min_time_ms = r->o.min_time_ms,
                              .limit_s = r->o.limit_s,
                              .serving = &r->serving};
  double load[1];
  r->setup.load_before = getloadavg(load, 1) == 1 ? load[0] : NAN;
  r->progress = isatty(STDERR_FILENO);
  return open_output(r);
}

static int run(bench_run *r, int argc, char **argv) {
  int rc = parse(r, argc, argv);
  if (rc >= 0) return rc;
  if ((rc = setup(r)) != 0) return rc;
  if (r->sweep && !r->o.json) print_sweep_header(r);
  for (size_t i = 0; i < r->n_pts; i++)
    if ((rc = run_point(r, i)) != 0) return rc;
  if (r->sweep && !r->o.json) tx_sweep_print_summary(&r->setup, r->pts, r->n_pts, stdout);
  if (r->o.json) write_json(r, stdout);
  if (r->out && (rc = close_output(r)) != 0) return rc;
  rc = exit_code(r);
  print_verdict(r, rc);
  return rc;
}

int tx_cmd_bench(int argc, char **argv) {
  if (tx_model_requested(argc, argv)) return tx_model_run("bench", argc, argv);
  bench_run r;
  memset(&r, 0, sizeof r);
  int rc = run(&r, argc, argv);
  if (r.out) { /* a failure before the end: no partial document */
    fclose(r.out);
    remove(r.tmp_path);
  }
  tx_buffers_free(&r.b);
  for (size_t i = 0; r.pts && i < r.n_pts; i++) free(r.pts[i].res);
  free(r.pts);
  free(r.probs);
  free(r.sel);
  free(r.tuning);
  txattn_context_free(r.ctx);
  tx_roofline_free(&r.roofline);
  tx_strlist_free(&r.o.kernels);
  tx_strlist_free(&r.o.tunable_items);
  tx_strlist_free(&r.o.n_items);
  tx_strlist_free(&r.o.mask_items);
  return rc;
}

typedef struct plot_run {
  const char *table_path, *from_path, *out;
  tx_opt opts[3];
  tx_opt_group groups[1];
  tx_cmd_spec spec;
  char path[4096];
  tx_plot plot;
} plot_run;

static const char plot_about[] =
    "Draws a dispatch table (`txtune profile`) or a bench sweep (`txtune bench --n A..B -o FILE`)\n"
    "as an SVG of time against n, log-log: first the best kernel per mask kind (dense attention\n"
    "bends toward slope 2, a window stays at 1), then a panel per class with each kernel's curve\n"
    "and fitted slope. Without a file: the table libtxattn follows. How to read it: "
    "docs/bench.md.\n"
    "Exit status: 0 written; 1 a file could not be read, plotted or written; 2 usage error.";

static int plot_parse(plot_run *r, int argc, char **argv) {
  r->opts[0] = tx_opt_string("from", &r->from_path, "FILE",
                             "a dispatch table or a bench sweep's JSON, told apart by content");
  r->opts[1] = tx_opt_string("table", &r->table_path, "FILE",
                             "the dispatch table [$TXATTN_TABLE, else the default]");
  r->opts[2] = tx_opt_string("output", &r->out, "FILE.svg",
                             "where to write the SVG (also -o) [txtune-profile.svg]");
  r->groups[0] = (tx_opt_group){"Options", r->opts, 3};
  r->spec =
      (tx_cmd_spec){"plot", "[--from FILE | --table FILE] [-o FILE.svg]", plot_about, r->groups, 1};
  int rc = tx_args_parse_cmd(&r->spec, argc, argv);
  if (rc >= 0) return rc;
  if (r->from_path && r->table_path)
    return tx_args_usage_error(&r->spec, "give either --from or --table, not both");
  return -1;
}

static int write_file(plot_run *r, const char *out) {
  FILE *f = fopen(out, "w");
  if (!f) {
    fprintf(stderr, "txtune plot: cannot write %s: %s\n", out, strerror(errno));
    return TX_EXIT_FAIL;
  }
  int bad = tx_plot_write_svg(&r->plot, r->path, f) != 0;
  bad |= fclose(f) != 0;
  if (!bad) return 0;
  fprintf(stderr, "txtune plot: cannot write %s\n", out);
  return TX_EXIT_FAIL;
}

int tx_cmd_plot(int argc, char **argv) {
  plot_run r;
  memset(&r, 0, sizeof r);
  int rc = plot_parse(&r, argc, argv);
  if (rc >= 0) return rc;
  const char *out = r.out ? r.out : "txtune-profile.svg";
  if ((rc = tx_plot_load(r.from_path, r.table_path, &r.plot, r.path, sizeof r.path)) == 0 &&
      (rc = write_file(&r, out)) == 0)
    printf("wrote %s (%s%zu panel%s of time against n per class, from %s)\n", out,
           tx_plot_has_best(&r.plot) ? "the price of attention, " : "",
           tx_plot_count_drawable(&r.plot), tx_plot_count_drawable(&r.plot) == 1 ? "" : "s",
           r.path);
  tx_plot_free(&r.plot);
  return rc;
}
