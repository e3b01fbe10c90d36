/* SPDX-License-Identifier: MIT */
/* The catalogue of real models (txattn_model_*): `txtune models` lists it, and `txtune check
 * --model NAME` / `txtune bench --model NAME` run every attention layer kind of one model, prefill
 * (n queries) and decode (one query over the context), with the modifiers the model uses: check
 * holds every kernel that takes a call to the reference's bound, bench times the dispatcher's pick
 * beside the plain call of the same shape (the modifiers off) and sums the decode times over the
 * model's layers into a time per generated token. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "buffers.h"
#include "cmd_models.h"
#include "context_cli.h"
#include "problem_cli.h"
#include "text_table.h"
#include "timing.h"
#include "verify.h"

/* Every kind's parameters that differ from a plain layer, in words: "h 32/8 d 128 causal". */
static void kind_format(const txattn_model_layer_info *k, char *buf, size_t size) {
  size_t u = 0;
  buf[0] = '\0';
#define PUT(...) tx_appendf(buf, size, &u, __VA_ARGS__)
  PUT("%s x%" PRId64 ": h %" PRId64 "/%" PRId64 " d %" PRId64, k->kind, k->layers, k->heads_q,
      k->heads_kv, k->d_qk);
  if (k->d_v != k->d_qk) PUT("/%" PRId64, k->d_v);
  PUT(" %s", txattn_mask_name(k->mask));
  if (k->mask == TXATTN_MASK_WINDOW) PUT(" %" PRId64 "+1", k->window_left);
  PUT(" scale %.6g", (double)k->scale);
  if (k->softcap > 0.0f) PUT(" softcap %g", (double)k->softcap);
  if (k->alibi) PUT(" alibi(max_bias %g)", (double)k->alibi_max_bias);
  if (k->sinks) PUT(" sinks");
  if (k->sink_keys > 0) PUT(" sink_keys %" PRId64, k->sink_keys);
  if (k->n_q > 0) PUT(" n_q %" PRId64, k->n_q);
  if (k->n_kv > 0) PUT(" n_kv %" PRId64, k->n_kv);
  if (k->ragged) PUT(" ragged");
  if (k->relative_bias) PUT(" relative_bias");
  if (!k->decode) PUT(" (no decode)");
#undef PUT
}

static const char models_about[] =
    "Lists the catalogue of real models libtxattn carries (txattn_model_count, txattn_model_get,\n"
    "txattn_model_layer; Python's txattn.models()): one model a line, its name first (what\n"
    "--model takes), then each kind of attention layer, `kind xLAYERS: h HEADS_Q/HEADS_KV d "
    "D_QK[/D_V]\n"
    "MASK [LEFT+1] scale S` and the modifiers it uses, then where the numbers come from. A window\n"
    "`4095+1` is a query and the 4095 keys before it (a sliding_window of 4096).\n"
    "`txtune check --model NAME [--n N] [--n-kv N]` checks every layer kind of one model, prefill\n"
    "(N queries, or the kind's fixed n_q) and decode (one query over N-KV keys, or the kind's\n"
    "fixed n_kv), on every usable kernel that takes the call, against the fp64 reference and its\n"
    "bound; `txtune bench --model NAME [--n N] [--n-kv N]` times the dispatcher's pick for each\n"
    "and the plain call of the same shape (the modifiers off), and prints the time per layer,\n"
    "per prefill and per generated token (the decode times times each kind's layer count).\n"
    "docs/models.md says more.";

int tx_cmd_models(int argc, char **argv) {
  const tx_cmd_spec spec = {"models", "", models_about, NULL, 0};
  int rc = tx_args_parse_cmd(&spec, argc, argv);
  if (rc >= 0) return rc;
  for (int64_t i = 0; i < txattn_model_count(); i++) {
    txattn_model_info m = TXATTN_MODEL_INFO_INIT;
    if (txattn_model_get(i, &m) != TXATTN_OK) {
      tx_print_lib_error("models", "txattn_model_get", TXATTN_E_INTERNAL);
      return TX_EXIT_FAIL;
    }
    printf("%s", m.name);
    for (int64_t j = 0; j < m.n_kinds; j++) {
      txattn_model_layer_info k = TXATTN_MODEL_LAYER_INFO_INIT;
      char buf[320];
      if (txattn_model_layer(i, j, &k) != TXATTN_OK) return TX_EXIT_FAIL;
      kind_format(&k, buf, sizeof buf);
      printf("  [%s]", buf);
    }
    printf("  (%s) source: %s%s%s\n", m.title, m.source, m.note[0] ? "; note: " : "", m.note);
  }
  return TX_EXIT_OK;
}

/* ---- check --model / bench --model ---- */

typedef struct model_args {
  const char *model;
  int quick; /* every length at most n (the kinds' fixed ones too) */
  int64_t n, n_kv, reps;
  double min_time_ms, limit_s;
  tx_context_args ctx;
} model_args;

/* The call of one kind in one phase (decode: one query): its problem, and the lengths of a ragged
   batch (BERT: four sequences, the longest n_kv). plain: the modifiers off. */
static int kind_problem(const txattn_model_layer_info *k, int decode, const model_args *a,
                        int plain, txattn_problem *p, int64_t *kv_lens, size_t *n_seq) {
  *p = (txattn_problem)TXATTN_PROBLEM_INIT;
  p->batch = 1;
  p->heads_q = k->heads_q;
  p->heads_kv = k->heads_kv;
  p->d_qk = k->d_qk;
  p->d_v = k->d_v;
  p->mask = k->mask;
  p->window_left = k->window_left;
  p->window_right = k->window_right;
  p->scale = k->scale;
  p->n_q = decode ? 1 : k->n_q > 0 ? k->n_q : a->n;
  p->n_kv = k->n_kv > 0 ? k->n_kv : a->n_kv > 0 ? a->n_kv : a->n;
  if (a->quick) {
    if (p->n_q > a->n) p->n_q = a->n;
    if (p->n_kv > a->n) p->n_kv = a->n;
  }
  if (!plain) {
    p->softcap = k->softcap;
    p->alibi = k->alibi;
    p->sinks = k->sinks;
    p->sink_keys = k->sink_keys;
    if (k->relative_bias) { /* tx_mask_tensor_make's T5 bias: bidirectional unless causal */
      p->mask_tensor = TXATTN_MASK_TENSOR_ADDITIVE;
      p->mask_type = p->q_type;
    }
  }
  *n_seq = 0;
  if (k->ragged) { /* padded batches: sequences of the longest, 3/4, 1/2 and 1/4 of its length */
    *n_seq = 4;
    p->batch = 4;
    for (int s = 0; s < 4; s++) kv_lens[s] = p->n_kv * (4 - s) / 4;
  }
  return 0;
}

/* Buffers for one call, filled, with the reference when asked. Returns 0, or 1 after saying why. */
static int call_buffers(const char *cmd, const txattn_problem *p, const int64_t *kv_lens,
                        size_t n_seq, int with_ref, tx_buffers *b) {
  txattn_problem r = TXATTN_PROBLEM_INIT;
  char err[256];
  txattn_status s = txattn_problem_resolve(p, &r);
  if (s != TXATTN_OK) {
    tx_print_lib_error(cmd, "txattn_problem_resolve", s);
    return 1;
  }
  if (tx_buffers_alloc(b, &r, TX_LAYOUT_CONTIGUOUS, with_ref, err, sizeof err) != 0 ||
      (n_seq > 0 && tx_buffers_serving(b, 0, kv_lens, n_seq, err, sizeof err) != 0)) {
    fprintf(stderr, "txtune %s: %s\n", cmd, err);
    return 1;
  }
  tx_buffers_fill(b, 20261207, 1.0f);
  if (with_ref && (s = tx_buffers_reference(b)) != TXATTN_OK) {
    tx_print_lib_error(cmd, "the reference", s);
    tx_buffers_free(b);
    return 1;
  }
  return 0;
}

/* "n 256/256 b 4 bias": the call's lengths, and whether it adds a relative position bias */
static void call_format(const txattn_problem *p, char *buf, size_t size) {
  size_t u = 0;
  tx_appendf(buf, size, &u, "n %" PRId64 "/%" PRId64, p->n_q, p->n_kv);
  if (p->batch > 1) tx_appendf(buf, size, &u, " b %" PRId64, p->batch);
  if (p->mask_tensor == TXATTN_MASK_TENSOR_ADDITIVE) tx_appendf(buf, size, &u, " bias");
}

/* Every usable kernel that plans the call, against the reference. Returns the kernels that failed;
   *ran the kernels that ran. */
static int check_call(txattn_context *ctx, const tx_buffers *b, int *ran, double *worst,
                      char *worst_kernel, size_t wk_size) {
  int failed = 0;
  *ran = 0;
  *worst = 0.0;
  for (size_t i = 0; i < txattn_kernel_count(ctx); i++) {
    txattn_kernel_info ki = TXATTN_KERNEL_INFO_INIT;
    txattn_plan *plan = NULL;
    if (txattn_kernel_get(ctx, i, &ki) != TXATTN_OK || !ki.usable) continue;
    txattn_status s = txattn_plan_create(ctx, &b->p, ki.name, &plan);
    if (s == TXATTN_E_UNSUPPORTED) continue; /* declines the call: the dispatcher never picks it */
    if (s == TXATTN_OK) s = txattn_plan_execute(plan, &b->t);
    txattn_plan_free(plan);
    (*ran)++;
    if (s != TXATTN_OK) {
      printf("    FAIL %s: %s: %s\n", ki.name, txattn_status_name(s), txattn_last_error());
      failed++;
      continue;
    }
    tx_verdict v;
    tx_verify(b, b->o, b->o_ref, NULL, &v);
    if (!tx_verdict_pass(&v)) {
      char why[512];
      tx_verdict_explain(&v, why, sizeof why);
      printf("    FAIL %s: %s\n", ki.name, why);
      failed++;
    } else if (v.error / v.bound >= *worst) {
      *worst = v.bound > 0.0 ? v.error / v.bound : 0.0;
      snprintf(worst_kernel, wk_size, "%s", ki.name);
    }
  }
  return failed;
}

/* The dispatcher's pick for the call and for the plain call (the modifiers off), timed in turns
   by the one timer (tx_time: --reps interleaved runs each), so that both see the same load; each
   time the least of the runs' (seconds per call), NaN after saying why a call failed. */
static void time_pair(const char *cmd, txattn_context *ctx, const model_args *a,
                      const txattn_problem *const p[2], const int64_t *kv_lens, size_t n_seq,
                      char (*kernel)[64], double *best) {
  tx_buffers b[2];
  txattn_plan *plan[2] = {NULL, NULL};
  tx_plan_call c[2];
  int ok[2] = {0, 0};
  for (int x = 0; x < 2; x++) {
    best[x] = NAN;
    if (call_buffers(cmd, p[x], kv_lens, n_seq, 0, &b[x]) != 0) continue;
    ok[x] = 1;
    txattn_status s = txattn_plan_create(ctx, &b[x].p, NULL, &plan[x]);
    c[x] = (tx_plan_call){plan[x], &b[x].t};
    if (s != TXATTN_OK) {
      tx_print_lib_error(cmd, "txattn_plan_create", s);
      continue;
    }
    snprintf(kernel[x], sizeof kernel[x], "%s", txattn_plan_kernel(plan[x]));
    best[x] = INFINITY;
  }
  void *args[2];
  size_t idx[2], n = 0;
  for (int x = 0; x < 2; x++)
    if (!isnan(best[x])) {
      args[n] = &c[x];
      idx[n++] = (size_t)x;
    }
  const tx_timing_opts to = {.min_run_s = 1e-3 * a->min_time_ms,
                             .runs = a->reps < 1      ? 1
                                     : a->reps > 1000 ? 1000
                                                      : (int)a->reps,
                             .limit_s = a->limit_s};
  tx_timing tm[2];
  txattn_status st[2];
  if (n > 0) tx_time(tx_plan_call_run, args, n, &to, tm, st, NULL);
  for (size_t j = 0; j < n; j++) {
    if (st[j] != TXATTN_OK) {
      tx_print_lib_error(cmd, "the call", st[j]);
      best[idx[j]] = NAN;
    } else {
      best[idx[j]] = tm[j].min_s;
    }
  }
  for (int x = 0; x < 2; x++) {
    txattn_plan_free(plan[x]);
    if (ok[x]) tx_buffers_free(&b[x]);
  }
}

static const char model_about[] =
    "Runs every kind of attention layer of one model of the catalogue (txtune models lists\n"
    "them), prefill (--n queries, or the kind's fixed n_q) and decode (one query over --n-kv\n"
    "keys, or the kind's fixed n_kv), with the modifiers the model uses (softcap, ALiBi, sink\n"
    "logits, sink keys) and a ragged batch where the model pads (BERT: sequences of the\n"
    "longest, 3/4, 1/2 and 1/4 of its length). A kind with T5's relative position bias gets\n"
    "it as an additive mask tensor [heads][n_q][n_kv] (txtune's --bias relative: T5's buckets,\n"
    "32 of them up to distance 128, bidirectional unless causal, over a seeded table per head);\n"
    "its calls say `bias`.\n"
    "check: every usable kernel that takes the call against the fp64 reference and its bound\n"
    "(the fraction of the bound the worst kernel reached).\n"
    "bench: the dispatcher's pick and its time per call beside the plain call of the same shape\n"
    "(the modifiers off; the ratio is what the model's modifiers cost), timed in turns, the least\n"
    "of --reps rounds each; then per prefill and per generated token, the sum over the kinds of\n"
    "their time times their layer count.\n"
    "--quick caps every length at --n, the kinds' fixed ones too.\n"
    "Exit status: 0 ok; 1 a kernel failed or was not exact, or the model is unknown; 2 usage\n"
    "error.";

int tx_model_run(const char *cmd, int argc, char **argv) {
  const int bench = strcmp(cmd, "bench") == 0;
  model_args a = {NULL, 0, 0, 0, 3, 20.0, 10.0, {0}};
  tx_context_args_init(&a.ctx);
  tx_opt model_opts[4], time_opts[3], ctx_opts[TX_CONTEXT_N_OPTS];
  model_opts[0] = tx_opt_string("model", &a.model, "NAME", "the model (txtune models lists them)");
  model_opts[1] = tx_opt_int(
      "n", &a.n, "N", bench ? "tokens: prefill queries [1024]" : "tokens: prefill queries [256]", 1,
      INT64_C(1) << 24);
  model_opts[2] = tx_opt_int("n-kv", &a.n_kv, "N", "keys of the context [N]", 1, INT64_C(1) << 24);
  model_opts[3] = tx_opt_flag("quick", &a.quick,
                              "every length at most N, the kinds' fixed ones too (Whisper's 1500)");
  time_opts[0] = tx_opt_int(
      "reps", &a.reps, "R",
      "rounds, each one timed run of the call and one of the plain call (bench) [3]", 1, 1000);
  time_opts[1] = tx_opt_double("min-time", &a.min_time_ms, "MS",
                               "shortest timed run in ms (bench) [20]", 0.0, 1e6);
  time_opts[2] = tx_opt_double("time-limit", &a.limit_s, "S",
                               "seconds per call, all rounds (bench) [10]", 0.0, 1e6);
  tx_context_opts(&a.ctx, ctx_opts);
  const tx_opt_group groups[] = {{"Model", model_opts, 4},
                                 {"Benchmark", time_opts, 3},
                                 {"Library", ctx_opts, TX_CONTEXT_N_OPTS}};
  const tx_cmd_spec spec = {cmd, "--model NAME [--n N] [--n-kv N] [options]", model_about, groups,
                            3};
  int rc = tx_args_parse_cmd(&spec, argc, argv);
  if (rc >= 0) return rc;
  if (!a.model) return tx_args_usage_error(&spec, "--model NAME is required");
  if (a.n <= 0) a.n = bench ? 1024 : 256;
  int64_t mi;
  if (txattn_model_find(a.model, &mi) != TXATTN_OK) {
    char why[600];
    snprintf(why, sizeof why, "%s", txattn_last_error()); /* the names the catalogue has */
    const char *names[64];
    int64_t n = txattn_model_count() < 64 ? txattn_model_count() : 64;
    for (int64_t i = 0; i < n; i++) {
      txattn_model_info m = TXATTN_MODEL_INFO_INIT;
      names[i] = txattn_model_get(i, &m) == TXATTN_OK ? m.name : "";
    }
    char near[160];
    tx_did_you_mean(a.model, names, (size_t)n, "", near, sizeof near);
    fprintf(stderr, "txtune %s: unknown model '%s'%s: %s\n", cmd, a.model, near, why);
    return TX_EXIT_FAIL;
  }
  txattn_model_info m = TXATTN_MODEL_INFO_INIT;
  if (txattn_model_get(mi, &m) != TXATTN_OK) return TX_EXIT_FAIL;
  txattn_context *ctx = NULL;
  if ((rc = tx_context_open(cmd, &a.ctx, &ctx)) != 0) return rc;
  printf("%s (%s), %" PRId64 " attention layers; source: %s\n", m.name, m.title, m.layers,
         m.source);
  if (m.note[0]) printf("note: %s\n", m.note);
  if (bench)
    printf("%-8s %-7s %-16s %-18s %12s %-18s %12s %7s\n", "KIND", "PHASE", "CALL", "KERNEL",
           "ms/LAYER", "PLAIN KERNEL", "PLAIN ms", "x PLAIN");
  int failed = 0;
  double prefill_s = 0.0, token_s = 0.0, prefill_plain_s = 0.0, token_plain_s = 0.0;
  for (int64_t j = 0; j < m.n_kinds; j++) {
    txattn_model_layer_info k = TXATTN_MODEL_LAYER_INFO_INIT;
    char desc[320];
    if (txattn_model_layer(mi, j, &k) != TXATTN_OK) {
      failed++;
      continue;
    }
    kind_format(&k, desc, sizeof desc);
    if (!bench) printf("  [%s]\n", desc);
    for (int decode = 0; decode <= k.decode; decode++) {
      txattn_problem p = TXATTN_PROBLEM_INIT, plain = TXATTN_PROBLEM_INIT;
      int64_t kv_lens[4];
      size_t n_seq;
      char call[64], kernel[64] = "-", plain_kernel[64] = "-";
      kind_problem(&k, decode, &a, 0, &p, kv_lens, &n_seq);
      kind_problem(&k, decode, &a, 1, &plain, kv_lens, &n_seq);
      call_format(&p, call, sizeof call);
      const char *phase = decode ? "decode" : "prefill";
      if (!bench) {
        tx_buffers b;
        if (call_buffers(cmd, &p, kv_lens, n_seq, 1, &b) != 0) {
          failed++;
          continue;
        }
        int ran;
        double worst;
        int f = check_call(ctx, &b, &ran, &worst, kernel, sizeof kernel);
        tx_buffers_free(&b);
        failed += f + (ran == 0);
        printf("    %-7s %-16s %s: %d kernels, %d failed; worst %s at %.3f of the bound\n", phase,
               call, f == 0 && ran > 0 ? "exact" : "FAIL", ran, f, kernel, worst);
        continue;
      }
      const txattn_problem *const pair[2] = {&p, &plain};
      char names[2][64] = {"-", "-"};
      double best[2];
      time_pair(cmd, ctx, &a, pair, kv_lens, n_seq, names, best);
      snprintf(kernel, sizeof kernel, "%s", names[0]);
      snprintf(plain_kernel, sizeof plain_kernel, "%s", names[1]);
      const double t = best[0], tp = best[1];
      if (isnan(t) || isnan(tp)) failed++;
      printf("%-8s %-7s %-16s %-18s %12.4f %-18s %12.4f %7.3f\n", k.kind, phase, call, kernel,
             1e3 * t, plain_kernel, 1e3 * tp, t / tp);
      if (decode) {
        token_s += t * (double)k.layers;
        token_plain_s += tp * (double)k.layers;
      } else {
        prefill_s += t * (double)k.layers;
        prefill_plain_s += tp * (double)k.layers;
      }
    }
  }
  if (bench) {
    printf("per prefill (all %" PRId64 " layers): %.3f ms, plain %.3f ms (x %.3f)\n", m.layers,
           1e3 * prefill_s, 1e3 * prefill_plain_s, prefill_s / prefill_plain_s);
    if (token_s > 0.0)
      printf("per generated token (decode, all layers that run per token): %.3f ms, plain %.3f "
             "ms (x %.3f)\n",
             1e3 * token_s, 1e3 * token_plain_s, token_s / token_plain_s);
    else
      printf("per generated token: - (an encoder: no layer runs per token)\n");
  }
  txattn_context_free(ctx);
  if (failed) fprintf(stderr, "txtune %s --model %s: %d call(s) failed\n", cmd, m.name, failed);
  return failed ? TX_EXIT_FAIL : TX_EXIT_OK;
}

int tx_model_requested(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--model") == 0 || strncmp(argv[i], "--model=", 8) == 0) return 1;
  return 0;
}
