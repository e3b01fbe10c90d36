/* txtune check: every usable kernel against txattn_reference on the battery of shapes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "battery.h"
#include "check_plans.h"
#include "commands.h"
#include "context_cli.h"
#include "json.h"
#include "kernels.h"
#include "text_table.h"
#include "timing.h"
#include "verify.h"

/* Written into every output before a kernel runs: a value no kernel computes, so rows a kernel
   leaves unwritten fail the comparison instead of passing on stale results. */
#define POISON 1.0e30f

typedef struct check_opts {
  tx_strlist kernels;
  int quick, verbose, json;
  tx_context_args ctx;
} check_opts;

typedef enum outcome { OUT_PASS, OUT_FAIL, OUT_SKIP } outcome;

typedef struct result { /* one kernel on one shape */
  size_t case_index, kernel;
  outcome out;
  double rel_error;
  char msg[320];
} result;

typedef struct kstat { /* one kernel over the battery */
  int64_t run, skipped, failed;
  double max_error; /* -1 until a shape was compared */
  size_t worst_case;
  const result *first_failure;
} kstat;

typedef struct check_run {
  check_opts o;
  tx_opt run_opts[4], ctx_opts[TX_CONTEXT_N_OPTS];
  tx_opt_group groups[2];
  tx_cmd_spec spec;
  txattn_context *ctx;
  tx_kernel_sel *sel;
  size_t n_sel;
  kstat *stats;
  result *results; /* n_cases x n_sel, in run order */
  size_t n_results, n_cases;
  int64_t ref_failures;
  char ref_failure[512];
  tx_plan_pass plans; /* the planning pass on large shapes (check_plans.h) */
  int label_width, name_width;
} check_run;

static const char about[] =
    "Runs every usable kernel (or those --kernel names) on a battery of shapes and compares each\n"
    "output with the fp64 txattn_reference within txattn_error_bound; then asks each kernel and\n"
    "the dispatcher for a plan on large shapes, which are not run. What passes: docs/inspect.md.\n"
    "Exit status: 0 all passed; 1 a kernel failed or could not be checked; 2 usage error.";

/* Returns -1 to go on, else the exit code (help printed, or a usage error). */
static int parse(check_run *r, int argc, char **argv) {
  check_opts *o = &r->o;
  r->run_opts[0] =
      tx_opt_list("kernel", &o->kernels, "NAME[,NAME...]", "check only these kernels (repeatable)");
  r->run_opts[1] = tx_opt_flag("quick", &o->quick, "a smaller battery");
  r->run_opts[2] = tx_opt_flag("verbose", &o->verbose, "one line per kernel and shape");
  r->run_opts[3] = tx_opt_flag("json", &o->json, "one JSON object on stdout");
  tx_context_args_init(&o->ctx);
  tx_context_opts(&o->ctx, r->ctx_opts);
  r->groups[0] = (tx_opt_group){"Options", r->run_opts, 4};
  r->groups[1] = (tx_opt_group){"Library", r->ctx_opts, TX_CONTEXT_N_OPTS};
  r->spec = (tx_cmd_spec){"check", "[--kernel NAME] [--quick] [--verbose] [--threads T] [--json]",
                          about, r->groups, 2};
  return tx_args_parse_cmd(&r->spec, argc, argv);
}

static int case_selected(const check_run *r, size_t i) {
  return !r->o.quick || tx_battery_get(i)->quick;
}

static void print_verbose(const check_run *r, const result *res) {
  char label[TX_CASE_TEXT_MAX];
  tx_case_format(tx_battery_get(res->case_index), label, sizeof label);
  const char *name = r->sel[res->kernel].info.name;
  if (res->out == OUT_SKIP)
    printf("  %-*s  %-*s  %9s  skipped: %s\n", r->name_width, name, r->label_width, label, "-",
           res->msg);
  else
    printf("  %-*s  %-*s  %9.2e  %s%s%s\n", r->name_width, name, r->label_width, label,
           res->rel_error, res->out == OUT_PASS ? "ok" : "FAIL", *res->msg ? ": " : "", res->msg);
  fflush(stdout);
}

static void record(check_run *r, result *res) {
  kstat *k = &r->stats[res->kernel];
  if (res->out == OUT_SKIP) {
    k->skipped++;
  } else {
    k->run++;
    if (res->out == OUT_FAIL && k->failed++ == 0) k->first_failure = res;
    if (isfinite(res->rel_error) && res->rel_error > k->max_error) {
      k->max_error = res->rel_error;
      k->worst_case = res->case_index;
    }
  }
  if (r->o.verbose && !r->o.json) print_verbose(r, res);
}

/* One kernel on one prepared shape. */
static void check_kernel(check_run *r, const tx_case *c, tx_buffers *b, result *res) {
  const char *name = r->sel[res->kernel].info.name;
  txattn_plan *plan = NULL;
  tx_fill_value(b->o, b->o_len, POISON);
  txattn_status s = txattn_plan_create(r->ctx, &c->p, name, &plan);
  if (s == TXATTN_E_UNSUPPORTED) {
    res->out = OUT_SKIP;
    snprintf(res->msg, sizeof res->msg, "%s", txattn_last_error());
    return;
  }
  if (s == TXATTN_OK) s = txattn_plan_execute(plan, &b->t);
  if (s != TXATTN_OK) {
    res->out = OUT_FAIL;
    snprintf(res->msg, sizeof res->msg, "%s: %s", txattn_status_name(s), txattn_last_error());
  } else {
    tx_verdict v;
    tx_verify(b, b->o, b->o_ref, &c->nan, &v);
    res->rel_error = v.rel_error;
    res->out = tx_verdict_pass(&v) ? OUT_PASS : OUT_FAIL;
    tx_verdict_explain(&v, res->msg, sizeof res->msg);
  }
  txattn_plan_free(plan);
}

/* The oracle must itself obey the contract, or no comparison with it means anything. */
static int reference_ok(check_run *r, const tx_case *c, size_t index, tx_buffers *b) {
  char label[TX_CASE_TEXT_MAX], why[256] = "";
  txattn_status s = tx_buffers_reference(b);
  if (s != TXATTN_OK) {
    snprintf(why, sizeof why, "%s: %s", txattn_status_name(s), txattn_last_error());
  } else {
    tx_verdict v;
    tx_verify(b, b->o_ref, NULL, &c->nan, &v);
    if (v.violations == 0) return 1;
    snprintf(why, sizeof why, "%s", v.first);
  }
  tx_case_format(c, label, sizeof label);
  if (r->ref_failures++ == 0)
    snprintf(r->ref_failure, sizeof r->ref_failure, "shape %zu (%s): %s", index, label, why);
  if (!r->o.json) fprintf(stderr, "txtune check: txattn_reference fails on %s: %s\n", label, why);
  return 0;
}

static int run_case(check_run *r, size_t index) {
  const tx_case *c = tx_battery_get(index);
  tx_buffers b;
  char err[256];
  if (tx_case_prepare(c, index, &b, err, sizeof err) != 0) {
    fprintf(stderr, "txtune check: %s\n", err);
    return -1;
  }
  if (reference_ok(r, c, index, &b))
    for (size_t k = 0; k < r->n_sel; k++) {
      if (!r->sel[k].info.usable) continue;
      result *res = &r->results[r->n_results++];
      *res = (result){.case_index = index, .kernel = k, .rel_error = NAN};
      check_kernel(r, c, &b, res);
      record(r, res);
    }
  tx_buffers_free(&b);
  return 0;
}

static void set_widths(check_run *r) {
  char label[TX_CASE_TEXT_MAX];
  r->label_width = r->name_width = 0;
  for (size_t i = 0; i < r->n_cases; i++) {
    tx_case_format(tx_battery_get(i), label, sizeof label);
    if (case_selected(r, i) && (int)strlen(label) > r->label_width)
      r->label_width = (int)strlen(label);
  }
  for (size_t k = 0; k < r->n_sel; k++)
    if ((int)strlen(r->sel[k].info.name) > r->name_width)
      r->name_width = (int)strlen(r->sel[k].info.name);
}

static size_t count_selected(const check_run *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_cases; i++) n += (size_t)case_selected(r, i);
  return n;
}

/* A kernel that could not be checked at all fails only when it was asked for by name. */
static int kernel_failed(const check_run *r, size_t k) {
  return r->stats[k].failed > 0 || (!r->sel[k].info.usable && r->sel[k].requested) ||
         tx_plan_pass_failed(&r->plans, k);
}

static int overall_pass(const check_run *r, size_t *n_checked) {
  int pass = r->ref_failures == 0 && !tx_plan_pass_failed(&r->plans, SIZE_MAX);
  *n_checked = 0;
  for (size_t k = 0; k < r->n_sel; k++) {
    *n_checked += (size_t)r->sel[k].info.usable;
    if (kernel_failed(r, k)) pass = 0;
  }
  return pass && *n_checked > 0;
}

static void summary_row(const check_run *r, tx_table *t, size_t k) {
  const kstat *s = &r->stats[k];
  const txattn_kernel_info *info = &r->sel[k].info;
  char run[24], skipped[24], err[24], worst[TX_CASE_TEXT_MAX] = "";
  if (!info->usable) {
    const char *state = r->sel[k].requested ? "FAIL (not usable)" : "not usable";
    const char *cells[] = {info->name, NULL, NULL, NULL, NULL, state};
    tx_table_add(t, cells);
    tx_table_note(t, "not usable: %s", info->why_unusable ? info->why_unusable : "?");
    return;
  }
  snprintf(run, sizeof run, "%lld", (long long)s->run);
  snprintf(skipped, sizeof skipped, "%lld", (long long)s->skipped);
  snprintf(err, sizeof err, "%.2e", s->max_error);
  int compared = s->max_error >= 0;
  if (compared) tx_case_format(tx_battery_get(s->worst_case), worst, sizeof worst);
  const char *res = s->failed                           ? "FAIL"
                    : tx_plan_pass_failed(&r->plans, k) ? "FAIL (planning)"
                    : s->run                            ? "PASS"
                                                        : "no shape applies";
  const char *cells[] = {info->name, run, skipped, compared ? err : NULL, compared ? worst : NULL,
                         res};
  tx_table_add(t, cells);
  if (s->failed) {
    char label[TX_CASE_TEXT_MAX];
    tx_case_format(tx_battery_get(s->first_failure->case_index), label, sizeof label);
    tx_table_note(t, "%lld failed; first: %s: %s", (long long)s->failed, label,
                  s->first_failure->msg);
  }
}

static size_t n_usable_of(const check_run *r) {
  size_t n = 0;
  for (size_t k = 0; k < r->n_sel; k++) n += (size_t)r->sel[k].info.usable;
  return n;
}

static void print_text(const check_run *r, double seconds) {
  tx_table t;
  tx_table_init(&t, "KERNEL|>SHAPES|>SKIPPED|>MAX ERROR|WORST SHAPE|RESULT");
  for (size_t k = 0; k < r->n_sel; k++) summary_row(r, &t, k);
  if (r->n_sel) {
    printf("\n");
    tx_table_print(&t, stdout, "");
  }
  tx_table_free(&t);
  if (n_usable_of(r)) tx_plan_pass_print(&r->plans, r->sel, r->n_sel);
  if (r->ref_failures)
    printf("\ntxattn_reference broke the contract on %lld shapes; first: %s\n",
           (long long)r->ref_failures, r->ref_failure);
  size_t n_checked, n_failed = 0;
  int pass = overall_pass(r, &n_checked);
  for (size_t k = 0; k < r->n_sel; k++) n_failed += (size_t)kernel_failed(r, k);
  if (n_checked == 0)
    printf("\nFAIL: no usable kernel to check (see 'txtune list')\n");
  else if (pass)
    printf("\nPASS: %zu kernel%s exact on %zu shapes (%.1f s)\n", n_checked,
           n_checked == 1 ? "" : "s", count_selected(r), seconds);
  else
    printf("\nFAIL: %zu of %zu kernels failed%s (%.1f s)\n", n_failed, r->n_sel,
           tx_plan_pass_failed(&r->plans, SIZE_MAX) ? "; the dispatcher failed to plan" : "",
           seconds);
}

static void json_kernel(tx_json *j, const check_run *r, size_t k) {
  const kstat *s = &r->stats[k];
  const txattn_kernel_info *info = &r->sel[k].info;
  char worst[TX_CASE_TEXT_MAX];
  tx_json_begin_object(j);
  tx_json_kv_string(j, "name", info->name);
  tx_json_kv_bool(j, "usable", info->usable);
  tx_json_kv_string(j, "why_unusable", info->usable ? NULL : info->why_unusable);
  tx_json_kv_int(j, "shapes_run", s->run);
  tx_json_kv_int(j, "skipped", s->skipped);
  tx_json_kv_int(j, "failed", s->failed);
  int compared = s->max_error >= 0;
  tx_json_kv_double(j, "max_rel_error", compared ? s->max_error : NAN);
  if (compared) tx_case_format(tx_battery_get(s->worst_case), worst, sizeof worst);
  tx_json_kv_string(j, "worst_shape", compared ? worst : NULL);
  char label[TX_CASE_TEXT_MAX];
  if (s->failed) tx_case_format(tx_battery_get(s->first_failure->case_index), label, sizeof label);
  tx_json_kv_string(j, "first_failure_shape", s->failed ? label : NULL);
  tx_json_kv_string(j, "first_failure", s->failed ? s->first_failure->msg : NULL);
  if (info->usable && r->plans.stats) tx_plan_pass_json_kernel(j, &r->plans, k);
  tx_json_kv_bool(j, "pass", !kernel_failed(r, k));
  tx_json_end_object(j);
}

static void json_results(tx_json *j, const check_run *r) {
  static const char *const names[] = {"pass", "fail", "skipped"};
  char label[TX_CASE_TEXT_MAX];
  tx_json_key(j, "results");
  tx_json_begin_array(j);
  for (size_t i = 0; i < r->n_results; i++) {
    const result *res = &r->results[i];
    tx_case_format(tx_battery_get(res->case_index), label, sizeof label);
    tx_json_begin_object(j);
    tx_json_kv_string(j, "kernel", r->sel[res->kernel].info.name);
    tx_json_kv_string(j, "shape", label);
    tx_json_kv_string(j, "result", names[res->out]);
    tx_json_kv_double(j, "rel_error", res->rel_error);
    tx_json_kv_string(j, "message", *res->msg ? res->msg : NULL);
    tx_json_end_object(j);
  }
  tx_json_end_array(j);
}

static void print_json(const check_run *r, double seconds) {
  tx_json j;
  size_t n_checked;
  tx_json_init(&j, stdout);
  tx_json_begin_object(&j);
  tx_json_kv_double(&j, "tolerance", TXATTN_EXACT_TOLERANCE);
  tx_json_kv_int(&j, "threads", txattn_context_threads(r->ctx));
  tx_json_kv_bool(&j, "quick", r->o.quick);
  tx_json_kv_int(&j, "shapes", (int64_t)count_selected(r));
  tx_json_kv_double(&j, "seconds", seconds);
  tx_json_kv_string(&j, "reference_failure", r->ref_failures ? r->ref_failure : NULL);
  tx_json_key(&j, "kernels");
  tx_json_begin_array(&j);
  for (size_t k = 0; k < r->n_sel; k++) json_kernel(&j, r, k);
  tx_json_end_array(&j);
  if (r->o.verbose) json_results(&j, r);
  if (r->plans.stats) tx_plan_pass_json(&j, &r->plans);
  tx_json_kv_bool(&j, "pass", overall_pass(r, &n_checked));
  tx_json_end_object(&j);
  tx_json_finish(&j);
}

static int run_battery(check_run *r) {
  r->n_cases = tx_battery_size();
  r->stats = calloc(r->n_sel ? r->n_sel : 1, sizeof *r->stats);
  r->results = calloc(r->n_cases * (r->n_sel ? r->n_sel : 1), sizeof *r->results);
  if (!r->stats || !r->results) {
    fprintf(stderr, "txtune check: out of memory\n");
    return TX_EXIT_FAIL;
  }
  for (size_t k = 0; k < r->n_sel; k++) r->stats[k].max_error = -1; /* none yet */
  set_widths(r);
  if (!r->o.json)
    printf("txtune check: %zu shapes per kernel, %d thread%s, exact when max|O - O_ref| <= "
           "max|V| * max(%g, (3 + sqrt(d_qk)) * 2^-24 * L)\n",
           count_selected(r), txattn_context_threads(r->ctx),
           txattn_context_threads(r->ctx) == 1 ? "" : "s", TXATTN_EXACT_TOLERANCE);
  size_t n_usable = 0;
  for (size_t k = 0; k < r->n_sel; k++) n_usable += (size_t)r->sel[k].info.usable;
  double t0 = tx_clock();
  for (size_t i = 0; i < r->n_cases && n_usable; i++)
    if (case_selected(r, i) && run_case(r, i) != 0) return TX_EXIT_FAIL;
  if (n_usable && tx_plan_pass_run(r->ctx, r->sel, r->n_sel, r->o.quick, r->o.verbose && !r->o.json,
                                   &r->plans) != 0) {
    fprintf(stderr, "txtune check: out of memory\n");
    return TX_EXIT_FAIL;
  }
  double seconds = tx_clock() - t0;
  if (r->o.json)
    print_json(r, seconds);
  else
    print_text(r, seconds);
  size_t n_checked;
  return overall_pass(r, &n_checked) ? TX_EXIT_OK : TX_EXIT_FAIL;
}

static int run(check_run *r, int argc, char **argv) {
  int rc = parse(r, argc, argv);
  if (rc >= 0) return rc;
  if ((rc = tx_context_open("check", &r->o.ctx, &r->ctx)) != 0) return rc;
  if ((rc = tx_kernels_select(&r->spec, r->ctx, &r->o.kernels, &r->sel, &r->n_sel)) != 0) return rc;
  return run_battery(r);
}

int tx_cmd_check(int argc, char **argv) {
  check_run r;
  memset(&r, 0, sizeof r);
  int rc = run(&r, argc, argv);
  free(r.stats);
  free(r.results);
  tx_plan_pass_free(&r.plans);
  free(r.sel);
  txattn_context_free(r.ctx);
  tx_strlist_free(&r.o.kernels);
  return rc;
}
