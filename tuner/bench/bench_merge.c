/* SPDX-License-Identifier: MIT */
/* txtune bench --merge P (issue 20): the keys split into P parts, each a call with lse, and
   txattn_merge of the P partials, against the whole call with the same kernel in the same run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "text_table.h"
#include "verify.h"

/* Everything the three timed variants read, planned and allocated before any of them runs. */
typedef struct merge_setup {
  txattn_problem p;              /* the whole: lse, not ragged */
  size_t n;                      /* parts */
  txattn_plan *whole, *plans[2]; /* plans[0] for parts of part_min keys, plans[1] of part_max */
  txattn_tensors whole_t;
  const txattn_plan *part_plan[TX_SERVING_MAX_MERGE];
  txattn_tensors part_t[TX_SERVING_MAX_MERGE]; /* each part's call */
  txattn_tensors merged[TX_SERVING_MAX_MERGE]; /* what txattn_merge reads: the partials */
  txattn_tensors out;                          /* the whole's o and lse */
  void *o_parts;
  float *lse_parts;
} merge_setup;

static txattn_status run_whole(const merge_setup *m) {
  return txattn_plan_execute(m->whole, &m->whole_t);
}

static txattn_status run_parts(const merge_setup *m) {
  for (size_t i = 0; i < m->n; i++) {
    txattn_status s = txattn_plan_execute(m->part_plan[i], &m->part_t[i]);
    if (s != TXATTN_OK) return s;
  }
  return TXATTN_OK;
}

static txattn_status run_merge(const merge_setup *m) {
  return txattn_merge(&m->p, m->merged, m->n, &m->out);
}

typedef struct step {
  txattn_status (*fn)(const merge_setup *);
  const merge_setup *m;
} step;

static txattn_status run_step(void *arg) {
  const step *s = arg;
  return s->fn(s->m);
}

static void *offset(const void *base, txattn_dtype type, int64_t elements) {
  return (char *)base + txattn_dtype_bytes(type, elements);
}

static void setup_free(merge_setup *m) {
  txattn_plan_free(m->whole);
  txattn_plan_free(m->plans[0]);
  txattn_plan_free(m->plans[1]);
  free(m->o_parts);
  free(m->lse_parts);
  free(m);
}

/* The whole call's plan and tensors, the parts' plans (one per distinct length) and tensors, and
   the partials' buffers. Returns TXATTN_OK, else the failure with why set. */
static txattn_status setup(const tx_buffers *b, size_t n, tx_bench_planner plan, void *arg,
                           merge_setup *m, tx_bench_merge *out) {
  const txattn_problem *p = &b->p;
  m->p = *p;
  m->n = n;
  const int64_t base = p->n_kv / (int64_t)n, extra = p->n_kv % (int64_t)n;
  out->part_min = base;
  out->part_max = base + (extra > 0);
  txattn_status s = plan(arg, p, &m->whole);
  if (s != TXATTN_OK) {
    snprintf(out->why, sizeof out->why, "the whole call: %s: %s", txattn_status_name(s),
             txattn_last_error());
    return s;
  }
  for (int k = 0; k < 1 + (extra > 0) && s == TXATTN_OK; k++) {
    txattn_problem part = *p;
    part.n_kv = base + k;
    if ((s = plan(arg, &part, &m->plans[k])) != TXATTN_OK)
      snprintf(out->why, sizeof out->why, "a part of %lld keys: %s: %s", (long long)part.n_kv,
               txattn_status_name(s), txattn_last_error());
  }
  if (s != TXATTN_OK) return s;
  const size_t o_size = b->o_len * txattn_dtype_size(p->o_type);
  m->o_parts = malloc(n * o_size);
  m->lse_parts = malloc(n * b->lse_len * sizeof *m->lse_parts);
  if (!m->o_parts || !m->lse_parts) {
    snprintf(out->why, sizeof out->why, "out of memory for %zu partials", n);
    return TXATTN_E_NOMEM;
  }
  m->whole_t = tx_bench_explicit_tensors(b);
  m->out = m->whole_t;
  for (int64_t i = 0, start = 0; i < (int64_t)n; i++) {
    const int64_t len = base + (i < extra);
    txattn_tensors t = m->whole_t;
    t.k_data = offset(b->k, p->k_type, start * b->k_str.row);
    t.v_data = offset(b->v, p->v_type, start * b->v_str.row);
    t.o_data = offset(m->o_parts, p->o_type, i * (int64_t)b->o_len);
    t.lse = m->lse_parts + i * (int64_t)b->lse_len;
    m->part_t[i] = t;
    m->merged[i] = t;
    m->part_plan[i] = m->plans[len > base];
    start += len;
  }
  return TXATTN_OK;
}

/* The merged result in b's outputs against the reference (where b has one): o within the whole's
   bound, lse within the whole's txattn_lse_error_bound plus the merge's own rounding of P parts,
   (2P + 2) 2^-24 + 2^-24 |lse_ref| (docs/error_bound.md, "Merging"). The parts' lse errors pass
   through whole, and each part's bound is at most the whole's (its keys are among the whole's). */
static void check_merged(const tx_buffers *b, int64_t parts, tx_bench_merge *out) {
  tx_buffers merged = *b; /* the same tensors, the lse bound widened */
  merged.lse_ref_bound[0] += (2.0 * (double)parts + 2.0) * 0x1p-24;
  merged.lse_ref_bound[1] += 0x1p-24;
  tx_verdict v;
  tx_verify(&merged, b->o, b->o_ref, NULL, &v);
  out->checked = 1;
  out->exact = tx_verdict_pass(&v);
  out->rel_error = v.rel_error;
  out->o_of_bound = b->o_ref ? v.error / v.bound : NAN;
  out->lse_error = b->o_ref ? v.lse_error : NAN;
  out->lse_of_bound = b->o_ref ? v.lse_ratio : NAN;
  if (!out->exact) {
    char why[256];
    tx_verdict_explain(&v, why, sizeof why);
    snprintf(out->why, sizeof out->why, "the merged result: %s", why);
  }
}

void tx_bench_merge_compare(const tx_buffers *b, const tx_serving *sv, tx_bench_planner plan,
                            void *arg, const tx_timing_opts *to, tx_bench_merge *out) {
  enum { WHOLE, PARTS, MERGE, N_STEPS };
  static const char *const names[] = {"the whole call", "the partial calls", "txattn_merge"};
  *out = (tx_bench_merge){.measured = 1,
                          .parts = sv->merge,
                          .call_s = NAN,
                          .partials_s = NAN,
                          .merge_s = NAN,
                          .rel_error = NAN,
                          .o_of_bound = NAN,
                          .lse_error = NAN,
                          .lse_of_bound = NAN};
  merge_setup *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(out->why, sizeof out->why, "out of memory");
    return;
  }
  if (setup(b, (size_t)sv->merge, plan, arg, m, out) != TXATTN_OK) {
    setup_free(m);
    return;
  }
  step steps[N_STEPS] = {{run_whole, m}, {run_parts, m}, {run_merge, m}};
  /* the warm-up (first touch of every buffer), the whole's output poisoned before the partials
     are merged over it; a step that fails is not timed, nor is a merge of partials that failed */
  void *args[N_STEPS];
  size_t idx[N_STEPS], n = 0;
  for (size_t i = 0; i < N_STEPS; i++) {
    if (i == MERGE && (n == 0 || idx[n - 1] != PARTS)) break;
    txattn_status st = run_step(&steps[i]);
    if (i == WHOLE) {
      tx_fill_value(b->o, b->p.o_type, b->o_len, TX_POISON);
      tx_fill_value(b->lse, TXATTN_DTYPE_F32, b->lse_len, TX_POISON);
    }
    if (st != TXATTN_OK) {
      if (!*out->why)
        snprintf(out->why, sizeof out->why, "%s: %s: %s", names[i], txattn_status_name(st),
                 txattn_last_error());
      continue;
    }
    args[n] = &steps[i];
    idx[n++] = i;
  }
  if (n && idx[n - 1] == MERGE) check_merged(b, sv->merge, out);
  tx_timing tm[N_STEPS];
  txattn_status ts[N_STEPS];
  tx_time(run_step, args, n, to, tm, ts, NULL);
  double *dest[N_STEPS] = {&out->call_s, &out->partials_s, &out->merge_s};
  for (size_t j = 0; j < n; j++) {
    if (ts[j] == TXATTN_OK)
      *dest[idx[j]] = tm[j].median_s;
    else if (!*out->why)
      snprintf(out->why, sizeof out->why, "%s: %s", names[idx[j]], txattn_status_name(ts[j]));
  }
  setup_free(m);
}

int tx_bench_merge_failed(const tx_bench_result *k) {
  return k->state == TX_BENCH_OK && k->merge.measured && k->merge.checked && !k->merge.exact;
}

/* merge / (partials + merge): what merging adds to the partial calls it merges. */
static double share(const tx_bench_merge *c) {
  return c->merge_s / (c->partials_s + c->merge_s);
}

/* The larger of the o and lse errors, each over its bound. */
static double of_bound(const tx_bench_merge *c) {
  return isnan(c->lse_of_bound) ? c->o_of_bound : fmax(c->o_of_bound, c->lse_of_bound);
}

static void cell(const char *fmt, double x, char *buf, size_t size) {
  if (isnan(x))
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, fmt, x);
}

/* The entry said in words: the dispatcher's pick, else the fastest. */
static long headline(const tx_bench_setup *s, const tx_bench_point *pt) {
  for (size_t i = 0; pt->has_pick && i < s->n_sel; i++)
    if (strcmp(s->sel[i].info.name, pt->pick) == 0 && pt->res[i].merge.measured) return (long)i;
  return pt->fastest >= 0 && pt->res[pt->fastest].merge.measured ? pt->fastest : -1;
}

void tx_bench_merge_print(const tx_bench_setup *s, const tx_bench_point *pt, FILE *f) {
  const int64_t parts = s->serving->merge;
  if (!parts) return;
  tx_table t;
  tx_table_init(&t, "KERNEL|>CALL ms|>PARTIALS ms|>x CALL|>MERGE ms|>MERGE SHARE|>MAX ERROR|"
                    ">OF BOUND");
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < s->n_sel; i++) {
    const tx_bench_merge *c = &pt->res[i].merge;
    if (!c->measured) continue;
    lo = c->part_min, hi = c->part_max;
    char call[32], sum[32], x[32], mrg[32], shr[32], err[32], bound[32];
    cell("%.4g", 1e3 * c->call_s, call, sizeof call);
    cell("%.4g", 1e3 * c->partials_s, sum, sizeof sum);
    cell("%.2f", c->partials_s / c->call_s, x, sizeof x);
    cell("%.4g", 1e3 * c->merge_s, mrg, sizeof mrg);
    cell("%.3g%%", 100 * share(c), shr, sizeof shr);
    cell("%.1e", c->rel_error, err, sizeof err);
    cell("%.2g", of_bound(c), bound, sizeof bound);
    const char *cells[] = {tx_bench_label(s, i), call, sum, x, mrg, shr, err, bound};
    tx_table_add(&t, cells);
    if (*c->why) tx_table_note(&t, "%s%s", c->checked && !c->exact ? "NOT EXACT: " : "", c->why);
  }
  char sizes[64];
  if (hi > lo)
    snprintf(sizes, sizeof sizes, "%lld..%lld", (long long)lo, (long long)hi);
  else
    snprintf(sizes, sizeof sizes, "%lld", (long long)lo);
  fprintf(
      f,
      "\nthe call against its keys in %lld parts of %s keys, each a call with lse, and "
      "txattn_merge of the partials, same kernel, timed interleaved (SHARE = merge / "
      "(partials + merge); ERROR of the merged result, OF BOUND the larger of o's and lse's):\n",
      (long long)parts, sizes);
  tx_table_print(&t, f, "");
  tx_table_free(&t);
  long h = headline(s, pt);
  if (h < 0) return;
  const tx_bench_merge *c = &pt->res[h].merge;
  char line[400];
  size_t len = (size_t)snprintf(line, sizeof line,
                                "%s: merge of %lld partials:", tx_bench_label(s, (size_t)h),
                                (long long)parts);
  if (!isnan(c->merge_s) && !isnan(c->partials_s) && len < sizeof line)
    len += (size_t)snprintf(line + len, sizeof line - len, " %.3g%% of the time;", 100 * share(c));
  if (!isnan(c->partials_s) && !isnan(c->call_s) && len < sizeof line)
    len += (size_t)snprintf(line + len, sizeof line - len,
                            " the %lld partial calls %.2fx the whole call;", (long long)parts,
                            c->partials_s / c->call_s);
  if (len < sizeof line) {
    if (!c->checked)
      snprintf(line + len, sizeof line - len, " not merged (%s)", c->why);
    else if (!c->exact)
      snprintf(line + len, sizeof line - len, " merged result NOT exact (%s)", c->why);
    else if (isnan(c->o_of_bound))
      snprintf(line + len, sizeof line - len,
               " merged result within the contract (not verified against the reference)");
    else
      snprintf(line + len, sizeof line - len, " merged result exact (error %.2g of the bound)",
               of_bound(c));
  }
  fprintf(f, "%s\n", line);
}

void tx_bench_merge_json(tx_json *j, const tx_bench_result *k) {
  const tx_bench_merge *c = &k->merge;
  tx_json_key(j, "merge");
  if (!c->measured) {
    tx_json_null(j);
    return;
  }
  tx_json_begin_object(j);
  tx_json_kv_int(j, "parts", c->parts);
  tx_json_kv_int(j, "part_keys_min", c->part_min);
  tx_json_kv_int(j, "part_keys_max", c->part_max);
  tx_json_kv_double(j, "call_s", c->call_s);
  tx_json_kv_double(j, "partials_s", c->partials_s);
  tx_json_kv_double(j, "merge_s", c->merge_s);
  tx_json_kv_double(j, "merge_share", share(c));
  tx_json_kv_double(j, "x_partials", c->partials_s / c->call_s);
  tx_json_kv_double(j, "max_rel_error", c->rel_error);
  tx_json_kv_double(j, "error_of_bound", c->o_of_bound);
  tx_json_kv_double(j, "max_lse_error", c->lse_error);
  tx_json_kv_double(j, "lse_error_of_bound", c->lse_of_bound);
  tx_json_key(j, "exact"); /* null: no merged result was made */
  c->checked ? tx_json_bool(j, c->exact) : tx_json_null(j);
  tx_json_kv_string(j, "why", *c->why ? c->why : NULL);
  tx_json_end_object(j);
}
