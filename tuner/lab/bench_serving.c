/* SPDX-License-Identifier: MIT */
/* What a serving call of txtune bench is against what a caller would run without the feature,
   with the same kernel in the same run, timed interleaved (bench_serving.h): with --kv-lens one
   call per sequence and the batch padded to its longest sequence, with --lse the call without
   lse, with a mask tensor one causal call per document and the call without the tensor; with
   --merge P the keys split into P parts, each a call with lse, and txattn_merge of the P
   partials. */
#include "bench_serving.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem_cli.h"
#include "text_table.h"
#include "verify.h"

/* One variant: calls made one after the other, each a plan on its tensors. */
typedef struct variant {
  txattn_plan **plans;
  txattn_tensors *t;
  size_t n;
} variant;

static txattn_status run_variant(void *arg) {
  const variant *v = arg;
  for (size_t i = 0; i < v->n; i++) {
    txattn_status s = txattn_plan_execute(v->plans[i], &v->t[i]);
    if (s != TXATTN_OK) return s;
  }
  return TXATTN_OK;
}

static void variant_free(variant *v) {
  for (size_t i = 0; v->plans && i < v->n; i++) txattn_plan_free(v->plans[i]);
  free(v->plans);
  free(v->t);
  memset(v, 0, sizeof *v);
}

static int variant_alloc(variant *v, size_t n) {
  v->plans = calloc(n ? n : 1, sizeof *v->plans);
  v->t = calloc(n ? n : 1, sizeof *v->t);
  v->n = 0;
  return v->plans && v->t ? 0 : -1;
}

static txattn_status add_call(variant *v, tx_bench_planner plan, void *arg, const txattn_problem *p,
                              const txattn_tensors *t) {
  txattn_status s = plan(arg, p, &v->plans[v->n]);
  if (s != TXATTN_OK) return s;
  v->t[v->n++] = *t;
  return TXATTN_OK;
}

static void *offset(const void *base, txattn_dtype type, int64_t elements) {
  return (char *)base + txattn_dtype_bytes(type, elements);
}

/* p without pages or packed rows: what tx_bench_explicit_tensors holds. */
static txattn_problem dense_of(const txattn_problem *p) {
  txattn_problem d = *p;
  d.page_size = d.max_pages = d.n_pages = 0;
  d.packed = 0;
  return d;
}

/* Sequence by sequence, each a batch-1 call of its own kv_len (and its own query rows with
   --q-lens), on contiguous K and V; sequences of no key or no query row make no call. */
static txattn_status per_sequence(const tx_buffers *b, const tx_serving *s, tx_bench_planner plan,
                                  void *arg, variant *v) {
  const txattn_problem *p = &b->p;
  if (variant_alloc(v, s->n) != 0) return TXATTN_E_NOMEM;
  for (size_t i = 0; i < s->n; i++) {
    const int64_t bb = (int64_t)i;
    const int64_t n_q = b->q_lens ? b->q_lens[i] : p->n_q;
    if (s->kv_lens[i] == 0 || n_q == 0) continue;
    txattn_problem one = dense_of(p);
    one.batch = 1;
    one.ragged = 0;
    one.n_q = n_q;
    one.n_kv = s->kv_lens[i];
    txattn_tensors t = tx_bench_explicit_tensors(b);
    t.q_data = offset(b->q, p->q_type, bb * b->q_str.batch);
    t.k_data = offset(b->k, p->k_type, bb * b->k_str.batch);
    t.v_data = offset(b->v, p->v_type, bb * b->v_str.batch);
    t.o_data = offset(b->o, p->o_type, bb * b->o_str.batch);
    if (b->lse) t.lse = b->lse + bb * b->lse_str.batch;
    txattn_status st = add_call(v, plan, arg, &one, &t);
    if (st != TXATTN_OK) return st;
  }
  return TXATTN_OK;
}

/* Document by document (--doc-lens, n_q = n_kv = their sum): each a causal call over its own rows
   and keys, without the mask tensor: what packing them replaces. */
static txattn_status per_document(const tx_buffers *b, tx_bench_planner plan, void *arg,
                                  variant *v) {
  const txattn_problem *p = &b->p;
  size_t n;
  const int64_t *lens = tx_doc_lens(&n);
  if (variant_alloc(v, n) != 0) return TXATTN_E_NOMEM;
  for (size_t i = 0, r0 = 0; i < n; r0 += (size_t)lens[i++]) {
    txattn_problem one = *p;
    one.n_q = one.n_kv = lens[i];
    one.mask = TXATTN_MASK_CAUSAL;
    one.mask_tensor = TXATTN_MASK_TENSOR_NONE;
    txattn_tensors t = tx_bench_explicit_tensors(b);
    const int64_t r = (int64_t)r0;
    t.q_data = offset(b->q, p->q_type, r * b->q_str.row);
    t.k_data = offset(b->k, p->k_type, r * b->k_str.row);
    t.v_data = offset(b->v, p->v_type, r * b->v_str.row);
    t.o_data = offset(b->o, p->o_type, r * b->o_str.row);
    if (b->lse) t.lse = b->lse + r * b->lse_str.row;
    t.mask = NULL;
    txattn_status st = add_call(v, plan, arg, &one, &t);
    if (st != TXATTN_OK) return st;
  }
  return TXATTN_OK;
}

static txattn_status one_call(const tx_buffers *b, const txattn_problem *p, tx_bench_planner plan,
                              void *arg, variant *v) {
  if (variant_alloc(v, 1) != 0) return TXATTN_E_NOMEM;
  txattn_tensors t = p->ragged || p->page_size || p->packed ? b->t : tx_bench_explicit_tensors(b);
  return add_call(v, plan, arg, p, &t);
}

/* Times the variants args[0 .. n) interleaved (idx[j]: which of names and dest entry j is), each
   median into *dest[idx[j]]; the first failure, by name and status, into why if it is empty. */
static void time_into(tx_run_fn fn, void *const *args, const size_t *idx, size_t n,
                      const tx_timing_opts *to, const char *const *names, double *const *dest,
                      char *why, size_t size) {
  tx_timing tm[8]; /* n is at most 6 */
  txattn_status ts[8];
  tx_time(fn, args, n, to, tm, ts, NULL);
  for (size_t j = 0; j < n; j++) {
    if (ts[j] == TXATTN_OK)
      *dest[idx[j]] = tm[j].median_s;
    else if (!*why)
      snprintf(why, size, "%s: %s", names[idx[j]], txattn_status_name(ts[j]));
  }
}

void tx_bench_serving_compare(const tx_buffers *b, const tx_serving *s, tx_bench_planner plan,
                              void *arg, const tx_timing_opts *to, tx_bench_compare *out) {
  enum { CALL, PER_SEQ, PADDED, NO_LSE, PER_DOC, NO_MASK, N_VARIANTS };
  static const char *const names[] = {"the call",
                                      "the per-sequence calls",
                                      "the padded call",
                                      "the call without lse",
                                      "the per-document calls",
                                      "the call without the mask tensor"};
  variant v[N_VARIANTS] = {{0}};
  /* a batch of no keys at all is no call one by one, and nothing to pad */
  const int some_keys = b->p.ragged && s->max_kv > 0;
  size_t n_docs;
  tx_doc_lens(&n_docs);
  const int docs = b->p.mask_tensor == TXATTN_MASK_TENSOR_BOOL && n_docs > 0 && !b->p.ragged &&
                   b->p.n_q == b->p.n_kv && tx_doc_lens_sum() == b->p.n_q;
  int want[N_VARIANTS] = {1,         some_keys,
                          some_keys, b->p.lse && s->lse_given,
                          docs,      b->p.mask_tensor != TXATTN_MASK_TENSOR_NONE};
  txattn_status st[N_VARIANTS] = {TXATTN_OK};
  txattn_problem padded = dense_of(&b->p), plain = b->p, unmasked = b->p;
  padded.ragged = 0;
  padded.n_kv = s->max_kv;
  plain.lse = 0;
  unmasked.mask_tensor = TXATTN_MASK_TENSOR_NONE;
  *out = (tx_bench_compare){.call_s = NAN,
                            .per_sequence_s = NAN,
                            .padded_s = NAN,
                            .no_lse_s = NAN,
                            .per_doc_s = NAN,
                            .no_mask_s = NAN};
  st[CALL] = one_call(b, &b->p, plan, arg, &v[CALL]);
  if (want[PER_SEQ]) st[PER_SEQ] = per_sequence(b, s, plan, arg, &v[PER_SEQ]);
  if (want[PADDED]) st[PADDED] = one_call(b, &padded, plan, arg, &v[PADDED]);
  if (want[NO_LSE]) st[NO_LSE] = one_call(b, &plain, plan, arg, &v[NO_LSE]);
  if (want[PER_DOC]) st[PER_DOC] = per_document(b, plan, arg, &v[PER_DOC]);
  if (want[NO_MASK]) st[NO_MASK] = one_call(b, &unmasked, plan, arg, &v[NO_MASK]);
  void *args[N_VARIANTS];
  size_t idx[N_VARIANTS], n = 0;
  for (size_t i = 0; i < N_VARIANTS; i++) {
    if (want[i] && st[i] == TXATTN_OK) st[i] = run_variant(&v[i]); /* the warm-up */
    if (want[i] && st[i] != TXATTN_OK && !*out->why)
      snprintf(out->why, sizeof out->why, "%s: %s: %s", names[i], txattn_status_name(st[i]),
               txattn_last_error());
    if (want[i] && st[i] == TXATTN_OK) {
      args[n] = &v[i];
      idx[n++] = i;
    }
  }
  double *dest[N_VARIANTS] = {&out->call_s,   &out->per_sequence_s, &out->padded_s,
                              &out->no_lse_s, &out->per_doc_s,      &out->no_mask_s};
  time_into(run_variant, args, idx, n, to, names, dest, out->why, sizeof out->why);
  out->measured = 1;
  for (size_t i = 0; i < N_VARIANTS; i++) variant_free(&v[i]);
}

/* A number in a table's cell, "-" for NaN (not measured). */
static void cell(const char *fmt, double x, char *buf, size_t size) {
  if (isnan(x))
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, fmt, x);
}

/* a / b, NaN where either was not measured. */
static double ratio(double a, double b) {
  return b > 0 ? a / b : NAN;
}

/* Whether entry i has what the words say: its serving comparison's call (merge: its merge). */
static int compared(const tx_bench_point *pt, long i, int merge) {
  const tx_bench_result *k = &pt->res[i];
  return merge ? k->merge.measured : k->cmp.measured && !isnan(k->cmp.call_s);
}

/* The entry whose ratios are said in words: the dispatcher's pick, else the fastest. */
static long headline(const tx_bench_setup *s, const tx_bench_point *pt, int merge) {
  for (size_t i = 0; pt->has_pick && i < s->n_sel; i++)
    if (strcmp(s->sel[i].info.name, pt->pick) == 0 && compared(pt, (long)i, merge)) return (long)i;
  return pt->fastest >= 0 &&
                 (merge ? pt->res[pt->fastest].merge.measured : pt->res[pt->fastest].cmp.measured)
             ? pt->fastest
             : -1;
}

/* With a mask tensor: the call against the per-document calls and the call without it. */
static void mask_print(const tx_bench_setup *s, const tx_bench_point *pt, FILE *f) {
  tx_table t;
  tx_table_init(&t, "KERNEL|>CALL ms|>PER-DOC ms|>x PER-DOC|>NO-MASK ms|>x NO-MASK");
  for (size_t i = 0; i < s->n_sel; i++) {
    const tx_bench_compare *c = &pt->res[i].cmp;
    if (!c->measured) continue;
    char call[32], doc[32], xdoc[32], nom[32], xnom[32];
    cell("%.4g", 1e3 * c->call_s, call, sizeof call);
    cell("%.4g", 1e3 * c->per_doc_s, doc, sizeof doc);
    cell("%.2f", ratio(c->call_s, c->per_doc_s), xdoc, sizeof xdoc);
    cell("%.4g", 1e3 * c->no_mask_s, nom, sizeof nom);
    cell("%.2f", ratio(c->call_s, c->no_mask_s), xnom, sizeof xnom);
    const char *cells[6] = {tx_bench_label(s, i), call, doc, xdoc, nom, xnom};
    tx_table_add(&t, cells);
    if (*c->why) tx_table_note(&t, "%s", c->why);
  }
  fprintf(f, "\nthe call with its mask tensor against one causal call per document (--doc-lens) "
             "and the call without the tensor, same kernel, timed interleaved:\n");
  tx_table_print(&t, f, "");
  tx_table_free(&t);
  long h = headline(s, pt, 0);
  if (h < 0) return;
  const tx_bench_compare *c = &pt->res[h].cmp;
  if (!isnan(c->per_doc_s))
    fprintf(f, "%s: %.2fx the per-document calls\n", tx_bench_label(s, (size_t)h),
            c->call_s / c->per_doc_s);
  if (!isnan(c->no_mask_s))
    fprintf(f, "%s: %.2fx the call without the mask tensor\n", tx_bench_label(s, (size_t)h),
            c->call_s / c->no_mask_s);
}

void tx_bench_serving_print(const tx_bench_setup *s, const tx_bench_point *pt, FILE *f) {
  const tx_serving *sv = s->serving;
  if (pt->p.mask_tensor) mask_print(s, pt, f);
  /* an lse implied by --merge alone is not compared with the call without it */
  const int ragged = pt->p.ragged, lse = pt->p.lse && sv->lse_given;
  if (!ragged && !lse) return;
  char spec[200];
  snprintf(spec, sizeof spec, "KERNEL|>CALL ms%s%s",
           ragged ? "|>PER-SEQ ms|>x PER-SEQ|>PADDED ms|>PADDED/CALL" : "",
           lse ? "|>NO-LSE ms|>x NO-LSE" : "");
  tx_table t;
  tx_table_init(&t, spec);
  for (size_t i = 0; i < s->n_sel; i++) {
    const tx_bench_compare *c = &pt->res[i].cmp;
    if (!c->measured) continue;
    char call[32], seq[32], xseq[32], pad[32], xpad[32], nol[32], xnol[32];
    cell("%.4g", 1e3 * c->call_s, call, sizeof call);
    cell("%.4g", 1e3 * c->per_sequence_s, seq, sizeof seq);
    cell("%.2f", ratio(c->call_s, c->per_sequence_s), xseq, sizeof xseq);
    cell("%.4g", 1e3 * c->padded_s, pad, sizeof pad);
    cell("%.2f", ratio(c->padded_s, c->call_s), xpad, sizeof xpad);
    cell("%.4g", 1e3 * c->no_lse_s, nol, sizeof nol);
    cell("%.2f", ratio(c->call_s, c->no_lse_s), xnol, sizeof xnol);
    const char *cells[8] = {tx_bench_label(s, i), call};
    size_t n = 2;
    if (ragged) cells[n++] = seq, cells[n++] = xseq, cells[n++] = pad, cells[n++] = xpad;
    if (lse) cells[n++] = nol, cells[n++] = xnol;
    tx_table_add(&t, cells);
    if (*c->why) tx_table_note(&t, "%s", c->why);
  }
  fprintf(f, "\nthe %s call against %s%s%s, same kernel, timed interleaved:\n",
          ragged ? "ragged" : "lse",
          ragged ? "one call per sequence and the batch padded to its longest" : "",
          ragged && lse ? ", and " : "", lse ? "the call without lse" : "");
  tx_table_print(&t, f, "");
  tx_table_free(&t);
  long h = headline(s, pt, 0);
  if (h < 0) return;
  const tx_bench_compare *c = &pt->res[h].cmp;
  size_t calls = 0, len = 0;
  for (size_t i = 0; i < sv->n; i++) calls += sv->kv_lens[i] > 0;
  char line[400] = "";
  if (ragged && !isnan(c->per_sequence_s))
    tx_appendf(line, sizeof line, &len, " %.2fx of the %zu per-sequence calls;",
               c->call_s / c->per_sequence_s, calls);
  if (ragged && !isnan(c->padded_s))
    tx_appendf(line, sizeof line, &len, " %.2fx faster than padding to %lld keys;",
               c->padded_s / c->call_s, (long long)sv->max_kv);
  if (lse && !isnan(c->no_lse_s))
    tx_appendf(line, sizeof line, &len, " lse costs %.2fx the call without it;",
               c->call_s / c->no_lse_s);
  if (*line) fprintf(f, "%s:%s\n", tx_bench_label(s, (size_t)h), line);
}

void tx_bench_serving_json(tx_json *j, const tx_bench_result *k) {
  const tx_bench_compare *c = &k->cmp;
  tx_json_key(j, "serving");
  if (!c->measured) {
    tx_json_null(j);
    return;
  }
  tx_json_begin_object(j);
  tx_json_kv_double(j, "call_s", c->call_s);
  tx_json_kv_double(j, "per_sequence_s", c->per_sequence_s);
  tx_json_kv_double(j, "padded_s", c->padded_s);
  tx_json_kv_double(j, "no_lse_s", c->no_lse_s);
  tx_json_kv_double(j, "per_doc_s", c->per_doc_s);
  tx_json_kv_double(j, "no_mask_s", c->no_mask_s);
  tx_json_kv_double(j, "x_per_doc", ratio(c->call_s, c->per_doc_s));
  tx_json_kv_double(j, "x_no_mask", ratio(c->call_s, c->no_mask_s));
  tx_json_kv_double(j, "x_per_sequence", ratio(c->call_s, c->per_sequence_s));
  tx_json_kv_double(j, "x_faster_than_padding", ratio(c->padded_s, c->call_s));
  tx_json_kv_double(j, "x_no_lse", ratio(c->call_s, c->no_lse_s));
  tx_json_kv_string(j, "why", *c->why ? c->why : NULL);
  tx_json_end_object(j);
}

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
  double *dest[N_STEPS] = {&out->call_s, &out->partials_s, &out->merge_s};
  time_into(run_step, args, idx, n, to, names, dest, out->why, sizeof out->why);
  setup_free(m);
}

/* merge / (partials + merge): what merging adds to the partial calls it merges. */
static double share(const tx_bench_merge *c) {
  return c->merge_s / (c->partials_s + c->merge_s);
}

/* The larger of the o and lse errors, each over its bound. */
static double of_bound(const tx_bench_merge *c) {
  return isnan(c->lse_of_bound) ? c->o_of_bound : fmax(c->o_of_bound, c->lse_of_bound);
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
  long h = headline(s, pt, 1);
  if (h < 0) return;
  const tx_bench_merge *c = &pt->res[h].merge;
  char line[400];
  size_t len = 0;
  tx_appendf(line, sizeof line, &len, "%s: merge of %lld partials:", tx_bench_label(s, (size_t)h),
             (long long)parts);
  if (!isnan(c->merge_s) && !isnan(c->partials_s))
    tx_appendf(line, sizeof line, &len, " %.3g%% of the time;", 100 * share(c));
  if (!isnan(c->partials_s) && !isnan(c->call_s))
    tx_appendf(line, sizeof line, &len, " the %lld partial calls %.2fx the whole call;",
               (long long)parts, c->partials_s / c->call_s);
  if (!c->checked)
    tx_appendf(line, sizeof line, &len, " not merged (%s)", c->why);
  else if (!c->exact)
    tx_appendf(line, sizeof line, &len, " merged result NOT exact (%s)", c->why);
  else if (isnan(c->o_of_bound))
    tx_appendf(line, sizeof line, &len,
               " merged result within the contract (not verified against the reference)");
  else
    tx_appendf(line, sizeof line, &len, " merged result exact (error %.2g of the bound)",
               of_bound(c));
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
