/* txtune bench: time every applicable kernel on one shape, verify it, and show the dispatcher's
 * pick. */
#define _POSIX_C_SOURCE 200809L /* isatty */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "context_cli.h"
#include "json.h"
#include "kernels.h"
#include "problem_cli.h"
#include "roofline.h"
#include "table.h"
#include "tensors.h"
#include "timing.h"
#include "txattn/plugin.h"
#include "verify.h"

/* The fp64 reference is single-threaded: past this much work (visible pairs x (d_qk + d_v)) it
   would take longer than the whole benchmark, so verification becomes opt-in. */
#define VERIFY_WORK_LIMIT 4e9
#define POISON            1.0e30f /* see cmd_check.c: unwritten outputs must not pass */
#define SEED              UINT64_C(0x62656e6368)

typedef enum kstate { K_OK, K_UNUSABLE, K_NOT_APPLICABLE, K_FAILED } kstate;

typedef struct kresult {
  kstate state;
  char why[320];    /* for every state but K_OK; for K_OK a failed verification */
  tx_timing tm;     /* K_OK */
  double rel_error; /* NaN when not verified */
  int exact;        /* K_OK: the contract holds and (when verified) the error is within tolerance */
} kresult;

typedef struct bench_opts {
  tx_problem_args prob;
  tx_context_args ctx;
  tx_strlist kernels;
  tx_roofline_args roof;
  int64_t reps, min_time_ms;
  double limit_s;
  int verify, no_verify, json;
} bench_opts;

typedef struct bench_run {
  bench_opts o;
  tx_opt prob_opts[TX_PROBLEM_N_OPTS], run_opts[7], ctx_opts[TX_CONTEXT_N_OPTS];
  tx_opt roof_opts[TX_ROOFLINE_N_OPTS];
  tx_opt_group groups[4];
  tx_cmd_spec spec;
  txattn_problem p; /* resolved */
  txattn_context *ctx;
  tx_kernel_sel *sel;
  kresult *res;
  size_t n_sel;
  tx_buffers b;
  int verified;
  double ref_seconds, pairs, flops;
  char pick[64], pick_why[320]; /* the dispatcher's choice, or why it has none */
  int has_pick;
  long fastest, masked; /* indices into sel; -1 if none */
  tx_roofline roofline; /* with --roofline */
} bench_run;

static const char about[] =
    "Times every usable kernel that can compute the problem (or those --kernel names) and\n"
    "prints its median time, GFLOP/s (2 * (d_qk + d_v) flops per visible (query, key) pair),\n"
    "its error against txattn_reference, its time relative to the fastest kernel and to the\n"
    "dense masked.* kernel, and the kernel the dispatcher picks for this problem.\n"
    "\n"
    "Timing: one warm-up call, then the repetitions are doubled until a run lasts --min-time;\n"
    "the median of --reps such runs is reported (fewer once --time-limit is spent on one\n"
    "kernel). Only txattn_plan_execute is timed; tensors and plans are made once.\n"
    "Verification: the whole output is compared with the fp64 reference when\n"
    "visible pairs x (d_qk + d_v) < 4e9 (the reference is single-threaded); larger problems\n"
    "are verified only with --verify. Whatever the size, rows with no visible key must be\n"
    "exact zeros and every other row finite.\n"
    "Roofline (--roofline): before the kernels, the same run measures the FMA peak of each ISA\n"
    "the CPU runs (register-only loops of independent multiply-add chains), OpenBLAS sgemm\n"
    "(--gemm-n) and memory bandwidth (STREAM triad and a read-only sum over arrays of\n"
    "--stream-mib), each at 1 thread and at --threads, the best of 3 runs of >= --min-time;\n"
    "then each kernel's GFLOP/s is shown as a fraction of its ISA's peak at its thread count,\n"
    "and for memory-bound shapes its GB/s as a fraction of the triad bandwidth. It takes a few\n"
    "seconds.\n"
    "Exit status: 0 ok; 1 a kernel failed, was not exact, or a named kernel could not run;\n"
    "2 usage error.";

static void bench_opts_table(bench_run *r) {
  bench_opts *o = &r->o;
  tx_opt *t = r->run_opts;
  t[0] =
      tx_opt_list("kernel", &o->kernels, "NAME[,NAME...]", "time only these kernels (repeatable)");
  t[1] = tx_opt_int("reps", &o->reps, "R", "timed runs per kernel [5]", 1, 1000);
  t[2] = tx_opt_int("min-time", &o->min_time_ms, "MS", "shortest timed run in ms [20]", 1, 60000);
  t[3] = tx_opt_double("time-limit", &o->limit_s, "S",
                       "seconds per kernel before runs stop being added [10]", 0, 1e6);
  t[4] = tx_opt_flag("verify", &o->verify, "compare with the reference whatever the size");
  t[5] = tx_opt_flag("no-verify", &o->no_verify, "do not compute the reference");
  t[6] = tx_opt_flag("json", &o->json, "one JSON object on stdout");
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
  bench_opts_table(r);
  tx_context_opts(&o->ctx, r->ctx_opts);
  tx_roofline_args_init(&o->roof);
  tx_roofline_opts(&o->roof, r->roof_opts);
  r->groups[0] = (tx_opt_group){"Problem", r->prob_opts, TX_PROBLEM_N_OPTS};
  r->groups[1] = (tx_opt_group){"Benchmark", r->run_opts, 7};
  r->groups[2] = (tx_opt_group){"Roofline", r->roof_opts, TX_ROOFLINE_N_OPTS};
  r->groups[3] = (tx_opt_group){"Library", r->ctx_opts, TX_CONTEXT_N_OPTS};
  r->spec =
      (tx_cmd_spec){"bench", "--n N --d D [--mask none|causal|window --left L --right R] [options]",
                    about, r->groups, 4};
  int rc = tx_args_parse_cmd(&r->spec, argc, argv);
  if (rc >= 0) return rc;
  if (o->verify && o->no_verify)
    return tx_args_usage_error(&r->spec, "--verify and --no-verify contradict each other");
  if ((rc = tx_roofline_check_args(&r->spec, &o->roof)) != 0) return rc;
  rc = tx_problem_from_args(&r->spec, &o->prob, &r->p);
  return rc ? rc : -1;
}

static void ask_dispatcher(bench_run *r) {
  txattn_plan *plan = NULL;
  txattn_status s = txattn_plan_create(r->ctx, &r->p, NULL, &plan);
  r->has_pick = s == TXATTN_OK;
  if (r->has_pick) {
    snprintf(r->pick, sizeof r->pick, "%s", txattn_plan_kernel(plan));
    snprintf(r->pick_why, sizeof r->pick_why, "%s", txattn_plan_why(plan));
  } else {
    snprintf(r->pick_why, sizeof r->pick_why, "%s: %s", txattn_status_name(s), txattn_last_error());
  }
  txattn_plan_free(plan);
}

static int prepare(bench_run *r) {
  char err[256];
  r->pairs = txattn_problem_visible_pairs(&r->p);
  r->flops = 2.0 * (double)(r->p.d_qk + r->p.d_v) * r->pairs;
  r->verified = !r->o.no_verify &&
                (r->o.verify || r->pairs * (double)(r->p.d_qk + r->p.d_v) < VERIFY_WORK_LIMIT);
  if (tx_buffers_alloc(&r->b, &r->p, TX_LAYOUT_CONTIGUOUS, r->verified, err, sizeof err) != 0) {
    fprintf(stderr, "txtune bench: %s\n", err);
    return TX_EXIT_FAIL;
  }
  tx_buffers_fill(&r->b, SEED, 1.0f);
  ask_dispatcher(r);
  if (!r->verified) return 0;
  double t0 = tx_clock();
  txattn_status s = txattn_reference(&r->p, &r->b.t_ref);
  r->ref_seconds = tx_clock() - t0;
  if (s == TXATTN_OK) return 0;
  tx_print_lib_error("bench", "the reference failed", s);
  return TX_EXIT_FAIL;
}

typedef struct exec_arg {
  const txattn_plan *plan;
  const txattn_tensors *t;
} exec_arg;

static txattn_status exec_plan(void *arg) {
  const exec_arg *a = arg;
  return txattn_plan_execute(a->plan, a->t);
}

static void verify_kernel(bench_run *r, kresult *k) {
  tx_verdict v;
  tx_verify(&r->b, r->b.o, r->verified ? r->b.o_ref : NULL, NULL, &v);
  k->rel_error = v.rel_error;
  k->exact = tx_verdict_pass(&v);
  tx_verdict_explain(&v, k->why, sizeof k->why);
}

static void bench_kernel(bench_run *r, const txattn_kernel_info *info, kresult *k) {
  k->rel_error = NAN;
  if (!info->usable) {
    k->state = K_UNUSABLE;
    snprintf(k->why, sizeof k->why, "%s", info->why_unusable ? info->why_unusable : "?");
    return;
  }
  txattn_plan *plan = NULL;
  txattn_status s = txattn_plan_create(r->ctx, &r->p, info->name, &plan);
  if (s == TXATTN_OK) {
    tx_fill_value(r->b.o, r->b.o_len, POISON);
    exec_arg a = {plan, &r->b.t};
    tx_timing_opts to = {1e-3 * (double)r->o.min_time_ms, (int)r->o.reps, r->o.limit_s};
    s = tx_measure(exec_plan, &a, &to, &k->tm);
  }
  if (s == TXATTN_OK) {
    k->state = K_OK;
    verify_kernel(r, k);
  } else {
    k->state = s == TXATTN_E_UNSUPPORTED ? K_NOT_APPLICABLE : K_FAILED;
    snprintf(k->why, sizeof k->why, "%s%s%s",
             s == TXATTN_E_UNSUPPORTED ? "" : txattn_status_name(s),
             s == TXATTN_E_UNSUPPORTED ? "" : ": ", txattn_last_error());
  }
  txattn_plan_free(plan);
}

static void find_references(bench_run *r) {
  r->fastest = r->masked = -1;
  for (size_t i = 0; i < r->n_sel; i++) {
    if (r->res[i].state != K_OK) continue;
    double t = r->res[i].tm.median_s;
    if (r->fastest < 0 || t < r->res[r->fastest].tm.median_s) r->fastest = (long)i;
    if (strncmp(r->sel[i].info.name, "masked.", 7) == 0 &&
        (r->masked < 0 || t < r->res[r->masked].tm.median_s))
      r->masked = (long)i;
  }
}

static int kernel_failed(const bench_run *r, size_t i) {
  const kresult *k = &r->res[i];
  return k->state == K_FAILED || (k->state == K_OK && !k->exact) ||
         (k->state != K_OK && r->sel[i].requested);
}

static int exit_code(const bench_run *r) {
  if (r->fastest < 0) return TX_EXIT_FAIL; /* nothing was measured */
  for (size_t i = 0; i < r->n_sel; i++)
    if (kernel_failed(r, i)) return TX_EXIT_FAIL;
  return TX_EXIT_OK;
}

static const char *const env_vars[] = {"OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
                                       "OMP_NUM_THREADS"};
/* These change which kernels run or which one is picked: shown only when set. */
static const char *const txattn_vars[] = {"TXATTN_FORCE_KERNEL", "TXATTN_MAX_ISA", "TXATTN_TABLE"};

static void print_env(void) {
  printf("  env:");
  for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) {
    const char *v = getenv(env_vars[i]);
    printf(" %s=%s", env_vars[i], v ? v : "(unset)");
  }
  for (size_t i = 0; i < sizeof txattn_vars / sizeof txattn_vars[0]; i++) {
    const char *v = getenv(txattn_vars[i]);
    if (v) printf(" %s=%s", txattn_vars[i], v);
  }
  printf("\n");
}

static void print_header(const bench_run *r) {
  char shape[192];
  tx_problem_format(&r->p, shape, sizeof shape);
  int threads = txattn_context_threads(r->ctx);
  printf("txtune bench: %s, %d thread%s\n", shape, threads, threads == 1 ? "" : "s");
  printf("  %.0f visible pairs, %.4g GFLOP per call\n", r->pairs, 1e-9 * r->flops);
  if (r->verified)
    printf("  verified against txattn_reference (fp64, %.2f s)\n", r->ref_seconds);
  else
    printf("  not verified against the reference%s\n",
           r->o.no_verify ? " (--no-verify)" : ": too large for the default (use --verify)");
  print_env();
  if (r->has_pick)
    printf("  dispatcher picks %s: %s\n", r->pick, r->pick_why);
  else
    printf("  dispatcher has no kernel: %s\n", r->pick_why);
  printf("  timing: median of up to %lld runs of >= %lld ms each, at most %g s per kernel\n",
         (long long)r->o.reps, (long long)r->o.min_time_ms, r->o.limit_s);
}

static void ratio_text(const bench_run *r, size_t i, long ref, char *buf, size_t size) {
  if (ref >= 0 && r->res[i].state == K_OK)
    snprintf(buf, size, "%.2f", r->res[i].tm.median_s / r->res[ref].tm.median_s);
  else
    snprintf(buf, size, "-");
}

static void table_row(const bench_run *r, tx_table *t, size_t i) {
  const kresult *k = &r->res[i];
  const char *name = r->sel[i].info.name;
  char label[96], ms[32] = "-", gf[32] = "-", err[32] = "-", fast[32], msk[32], runs[48] = "-";
  int picked = r->has_pick && strcmp(name, r->pick) == 0;
  snprintf(label, sizeof label, "%s%s", name, picked ? " *" : "");
  if (k->state == K_OK) {
    snprintf(ms, sizeof ms, "%.4g", 1e3 * k->tm.median_s);
    snprintf(gf, sizeof gf, "%.2f", 1e-9 * r->flops / k->tm.median_s);
    if (!isnan(k->rel_error)) snprintf(err, sizeof err, "%.1e", k->rel_error);
    snprintf(runs, sizeof runs, "%dx%lld", k->tm.runs, (long long)k->tm.reps);
  }
  ratio_text(r, i, r->fastest, fast, sizeof fast);
  ratio_text(r, i, r->masked, msk, sizeof msk);
  const char *cells[] = {label, ms, gf, err, fast, msk, runs};
  tx_table_add(t, cells);
  static const char *const what[] = {"", "not usable", "not applicable", "FAILED"};
  if (k->state != K_OK)
    tx_table_note(t, "%s: %s", what[k->state], k->why);
  else if (!k->exact)
    tx_table_note(t, "%s", k->why);
}

static tx_roof_kernel roof_kernel(const bench_run *r, size_t i) {
  const txattn_kernel_info *info = &r->sel[i].info;
  int threads = info->flags & TXATTN_KERNEL_THREADED ? txattn_context_threads(r->ctx) : 1;
  double t = r->res[i].state == K_OK ? r->res[i].tm.median_s : 0;
  return (tx_roof_kernel){info->name, info->isa, threads, t};
}

static void print_roofline_fits(const bench_run *r) {
  tx_roof_kernel *ks = calloc(r->n_sel ? r->n_sel : 1, sizeof *ks);
  if (!ks) {
    printf("\nroofline: out of memory\n");
    return;
  }
  for (size_t i = 0; i < r->n_sel; i++) ks[i] = roof_kernel(r, i);
  tx_roof_work w = tx_roofline_work(&r->p);
  tx_roofline_print_fits(&r->roofline, &w, ks, r->n_sel, stdout);
  free(ks);
}

static void print_text(const bench_run *r) {
  char spec[160];
  snprintf(spec, sizeof spec, "KERNEL|>MEDIAN ms|>GFLOP/s|>MAX ERROR|>x FASTEST|>x %s|>RUNSxREPS",
           r->masked >= 0 ? r->sel[r->masked].info.name : "MASKED");
  tx_table t;
  tx_table_init(&t, spec);
  for (size_t i = 0; i < r->n_sel; i++) table_row(r, &t, i);
  if (r->fastest >= 0) {
    printf("\n");
    tx_table_print(&t, stdout, "");
    printf("\n* the dispatcher's choice; x = median time / the named kernel's median time%s\n",
           r->masked >= 0 ? "" : " (no masked.* kernel was measured)");
    if (r->o.roof.enabled) print_roofline_fits(r);
  } else {
    printf("\nno kernel could be measured%s\n", r->n_sel ? ":" : " ('txtune list' shows why)");
    if (r->n_sel) tx_table_print(&t, stdout, "  ");
  }
  tx_table_free(&t);
}

static void json_problem(tx_json *j, const txattn_problem *p) {
  tx_json_key(j, "problem");
  tx_json_begin_object(j);
  tx_json_kv_int(j, "batch", p->batch);
  tx_json_kv_int(j, "heads_q", p->heads_q);
  tx_json_kv_int(j, "heads_kv", p->heads_kv);
  tx_json_kv_int(j, "n_q", p->n_q);
  tx_json_kv_int(j, "n_kv", p->n_kv);
  tx_json_kv_int(j, "d_qk", p->d_qk);
  tx_json_kv_int(j, "d_v", p->d_v);
  tx_json_kv_string(j, "mask", tx_mask_name(p->mask));
  int w = p->mask == TXATTN_MASK_WINDOW; /* null: no window, or that side unbounded */
  tx_json_key(j, "window_left");
  w && p->window_left != TXATTN_UNBOUNDED ? tx_json_int(j, p->window_left) : tx_json_null(j);
  tx_json_key(j, "window_right");
  w && p->window_right != TXATTN_UNBOUNDED ? tx_json_int(j, p->window_right) : tx_json_null(j);
  tx_json_kv_double(j, "scale", p->scale);
  tx_json_end_object(j);
}

static void json_env(tx_json *j) {
  tx_json_key(j, "env");
  tx_json_begin_object(j);
  for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++)
    tx_json_kv_string(j, env_vars[i], getenv(env_vars[i]));
  for (size_t i = 0; i < sizeof txattn_vars / sizeof txattn_vars[0]; i++)
    tx_json_kv_string(j, txattn_vars[i], getenv(txattn_vars[i]));
  tx_json_end_object(j);
}

static void json_ratio(tx_json *j, const char *key, const bench_run *r, size_t i, long ref) {
  int ok = ref >= 0 && r->res[i].state == K_OK;
  tx_json_kv_double(j, key, ok ? r->res[i].tm.median_s / r->res[ref].tm.median_s : NAN);
}

static void json_kernel(tx_json *j, const bench_run *r, size_t i) {
  static const char *const states[] = {"ok", "unusable", "not_applicable", "failed"};
  const kresult *k = &r->res[i];
  int ok = k->state == K_OK;
  tx_json_begin_object(j);
  tx_json_kv_string(j, "name", r->sel[i].info.name);
  tx_json_kv_string(j, "status", states[k->state]);
  tx_json_kv_string(j, "reason", *k->why ? k->why : NULL);
  tx_json_kv_double(j, "median_s", ok ? k->tm.median_s : NAN);
  tx_json_kv_double(j, "min_s", ok ? k->tm.min_s : NAN);
  tx_json_kv_double(j, "max_s", ok ? k->tm.max_s : NAN);
  tx_json_kv_int(j, "runs", ok ? k->tm.runs : 0);
  tx_json_kv_int(j, "reps", ok ? k->tm.reps : 0);
  tx_json_kv_double(j, "gflops", ok ? 1e-9 * r->flops / k->tm.median_s : NAN);
  tx_json_kv_double(j, "max_rel_error", ok ? k->rel_error : NAN);
  tx_json_key(j, "exact");
  ok ? tx_json_bool(j, k->exact) : tx_json_null(j);
  json_ratio(j, "vs_fastest", r, i, r->fastest);
  json_ratio(j, "vs_masked", r, i, r->masked);
  tx_json_kv_bool(j, "dispatcher_choice", r->has_pick && strcmp(r->sel[i].info.name, r->pick) == 0);
  if (r->o.roof.enabled) {
    tx_roof_kernel rk = roof_kernel(r, i);
    tx_roof_work w = tx_roofline_work(&r->p);
    tx_json_key(j, "roofline");
    tx_roofline_json_fit(j, &r->roofline, &w, &rk);
  }
  tx_json_end_object(j);
}

static void print_json(const bench_run *r) {
  char shape[192];
  tx_problem_format(&r->p, shape, sizeof shape);
  tx_json j;
  tx_json_init(&j, stdout);
  tx_json_begin_object(&j);
  tx_json_kv_string(&j, "shape", shape);
  json_problem(&j, &r->p);
  tx_json_kv_int(&j, "threads", txattn_context_threads(r->ctx));
  tx_json_kv_double(&j, "visible_pairs", r->pairs);
  tx_json_kv_double(&j, "flops_per_call", r->flops);
  tx_json_kv_bool(&j, "verified", r->verified);
  tx_json_kv_double(&j, "reference_s", r->verified ? r->ref_seconds : NAN);
  tx_json_kv_double(&j, "tolerance", TXATTN_EXACT_TOLERANCE);
  json_env(&j);
  tx_json_key(&j, "roofline");
  r->o.roof.enabled ? tx_roofline_json(&j, &r->roofline) : tx_json_null(&j);
  tx_json_kv_string(&j, "dispatcher_kernel", r->has_pick ? r->pick : NULL);
  tx_json_kv_string(&j, "dispatcher_why", r->pick_why);
  tx_json_kv_string(&j, "masked_kernel", r->masked >= 0 ? r->sel[r->masked].info.name : NULL);
  tx_json_key(&j, "kernels");
  tx_json_begin_array(&j);
  for (size_t i = 0; i < r->n_sel; i++) json_kernel(&j, r, i);
  tx_json_end_array(&j);
  tx_json_kv_bool(&j, "pass", exit_code(r) == TX_EXIT_OK);
  tx_json_end_object(&j);
  tx_json_finish(&j);
}

/* Before the kernels, in the same run, so the ratios compare like with like. */
static int measure_roofline(bench_run *r, int progress) {
  if (progress) fprintf(stderr, "\r\033[K  measuring the roofline ...");
  int rc = tx_roofline_measure(&r->o.roof, txattn_context_threads(r->ctx),
                               1e-3 * (double)r->o.min_time_ms, &r->roofline);
  if (progress) fprintf(stderr, "\r\033[K");
  if (rc == 0 && !r->o.json) tx_roofline_print(&r->roofline, stdout);
  fflush(stdout);
  return rc;
}

static int run(bench_run *r, int argc, char **argv) {
  int rc = parse(r, argc, argv);
  if (rc >= 0) return rc;
  if ((rc = tx_context_open("bench", &r->o.ctx, &r->ctx)) != 0) return rc;
  if ((rc = tx_kernels_select(&r->spec, r->ctx, &r->o.kernels, &r->sel, &r->n_sel)) != 0) return rc;
  if (!(r->res = calloc(r->n_sel ? r->n_sel : 1, sizeof *r->res))) {
    fprintf(stderr, "txtune bench: out of memory\n");
    return TX_EXIT_FAIL;
  }
  if ((rc = prepare(r)) != 0) return rc;
  if (!r->o.json) print_header(r);
  fflush(stdout);
  int progress = isatty(STDERR_FILENO);
  if (r->o.roof.enabled && (rc = measure_roofline(r, progress)) != 0) return rc;
  for (size_t i = 0; i < r->n_sel; i++) {
    if (progress) fprintf(stderr, "\r\033[K  timing %s ...", r->sel[i].info.name);
    bench_kernel(r, &r->sel[i].info, &r->res[i]);
  }
  if (progress) fprintf(stderr, "\r\033[K");
  find_references(r);
  if (r->o.json)
    print_json(r);
  else
    print_text(r);
  return exit_code(r);
}

int tx_cmd_bench(int argc, char **argv) {
  bench_run r;
  memset(&r, 0, sizeof r);
  int rc = run(&r, argc, argv);
  tx_buffers_free(&r.b);
  free(r.res);
  free(r.sel);
  txattn_context_free(r.ctx);
  tx_strlist_free(&r.o.kernels);
  return rc;
}
