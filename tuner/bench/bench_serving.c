/* SPDX-License-Identifier: MIT */
/* txtune bench --kv-lens / --lse (issue 20): a ragged or lse call against what a caller would do
   without it, with the same kernel in the same run: one call per sequence, the batch padded to
   its longest sequence, the call without lse. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "problem_cli.h"
#include "text_table.h"

double tx_bench_pairs(const txattn_problem *p, const tx_serving *s) {
  if (!p->ragged || !s->n) return txattn_problem_visible_pairs(p);
  double pairs = 0;
  for (size_t b = 0; b < s->n; b++) {
    txattn_problem one = *p;
    one.batch = 1;
    one.ragged = 0;
    one.n_kv = s->kv_lens[b];
    if (one.n_kv > 0) pairs += txattn_problem_visible_pairs(&one);
  }
  return pairs;
}

void tx_bench_shape(const txattn_problem *p, const tx_serving *s, char *buf, size_t size) {
  int len = tx_problem_format(p, buf, size);
  if (len >= 0 && (size_t)len < size) tx_serving_format(s, buf + len, size - (size_t)len);
}

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

txattn_tensors tx_bench_explicit_tensors(const tx_buffers *b) {
  txattn_tensors t = b->t;
  t.q_layout = b->q_str;
  t.k_layout = b->k_str;
  t.v_layout = b->v_str;
  t.o_layout = b->o_str;
  if (b->lse) t.lse_layout = b->lse_str;
  t.kv_lens = t.q_lens = NULL;
  /* the dense inputs, as a caller without pages or packed rows holds them */
  t.k_data = b->k;
  t.v_data = b->v;
  t.block_table = NULL;
  t.q_offsets = NULL;
  return t;
}

static void *offset(void *base, txattn_dtype type, int64_t elements) {
  return (char *)base + txattn_dtype_bytes(type, elements);
}

/* p without pages or packed rows: what tx_bench_explicit_tensors holds. */
static txattn_problem dense_of(const txattn_problem *p) {
  txattn_problem d = *p;
  d.page_size = d.max_pages = d.n_pages = 0;
  d.packed = 0;
  return d;
}

/* Sequence by sequence, each a batch-1 call of its own kv_len, on contiguous K and V; sequences of
   none make no call. */
static txattn_status per_sequence(const tx_buffers *b, const tx_serving *s, tx_bench_planner plan,
                                  void *arg, variant *v) {
  const txattn_problem *p = &b->p;
  if (variant_alloc(v, s->n) != 0) return TXATTN_E_NOMEM;
  for (size_t i = 0; i < s->n; i++) {
    const int64_t bb = (int64_t)i;
    if (s->kv_lens[i] == 0) continue;
    txattn_problem one = dense_of(p);
    one.batch = 1;
    one.ragged = 0;
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
  tx_timing tm[N_VARIANTS];
  txattn_status ts[N_VARIANTS];
  tx_time(run_variant, args, n, to, tm, ts, NULL);
  double *dest[N_VARIANTS] = {&out->call_s,   &out->per_sequence_s, &out->padded_s,
                              &out->no_lse_s, &out->per_doc_s,      &out->no_mask_s};
  for (size_t j = 0; j < n; j++) {
    if (ts[j] == TXATTN_OK)
      *dest[idx[j]] = tm[j].median_s;
    else if (!*out->why)
      snprintf(out->why, sizeof out->why, "%s: %s", names[idx[j]], txattn_status_name(ts[j]));
  }
  out->measured = 1;
  for (size_t i = 0; i < N_VARIANTS; i++) variant_free(&v[i]);
}

static void cell_ms(double s, char *buf, size_t size) {
  if (isnan(s))
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%.4g", 1e3 * s);
}

static void cell_ratio(double a, double b, char *buf, size_t size) {
  if (isnan(a) || isnan(b) || !(b > 0))
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%.2f", a / b);
}

/* The entry whose ratios are said in words: the dispatcher's pick, else the fastest. */
static long headline(const tx_bench_setup *s, const tx_bench_point *pt) {
  for (size_t i = 0; pt->has_pick && i < s->n_sel; i++)
    if (strcmp(s->sel[i].info.name, pt->pick) == 0 && pt->res[i].cmp.measured &&
        !isnan(pt->res[i].cmp.call_s))
      return (long)i;
  return pt->fastest >= 0 && pt->res[pt->fastest].cmp.measured ? pt->fastest : -1;
}

/* With a mask tensor: the call against the per-document calls and the call without it. */
static void mask_print(const tx_bench_setup *s, const tx_bench_point *pt, FILE *f) {
  tx_table t;
  tx_table_init(&t, "KERNEL|>CALL ms|>PER-DOC ms|>x PER-DOC|>NO-MASK ms|>x NO-MASK");
  for (size_t i = 0; i < s->n_sel; i++) {
    const tx_bench_compare *c = &pt->res[i].cmp;
    if (!c->measured) continue;
    char call[32], doc[32], xdoc[32], nom[32], xnom[32];
    cell_ms(c->call_s, call, sizeof call);
    cell_ms(c->per_doc_s, doc, sizeof doc);
    cell_ratio(c->call_s, c->per_doc_s, xdoc, sizeof xdoc);
    cell_ms(c->no_mask_s, nom, sizeof nom);
    cell_ratio(c->call_s, c->no_mask_s, xnom, sizeof xnom);
    const char *cells[6] = {tx_bench_label(s, i), call, doc, xdoc, nom, xnom};
    tx_table_add(&t, cells);
    if (*c->why) tx_table_note(&t, "%s", c->why);
  }
  fprintf(f, "\nthe call with its mask tensor against one causal call per document (--doc-lens) "
             "and the call without the tensor, same kernel, timed interleaved:\n");
  tx_table_print(&t, f, "");
  tx_table_free(&t);
  long h = headline(s, pt);
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
    cell_ms(c->call_s, call, sizeof call);
    cell_ms(c->per_sequence_s, seq, sizeof seq);
    cell_ratio(c->call_s, c->per_sequence_s, xseq, sizeof xseq);
    cell_ms(c->padded_s, pad, sizeof pad);
    cell_ratio(c->padded_s, c->call_s, xpad, sizeof xpad);
    cell_ms(c->no_lse_s, nol, sizeof nol);
    cell_ratio(c->call_s, c->no_lse_s, xnol, sizeof xnol);
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
  long h = headline(s, pt);
  if (h < 0) return;
  const tx_bench_compare *c = &pt->res[h].cmp;
  size_t calls = 0, len = 0;
  for (size_t i = 0; i < sv->n; i++) calls += sv->kv_lens[i] > 0;
  char line[400] = "";
  if (ragged && !isnan(c->per_sequence_s))
    len += (size_t)snprintf(line + len, sizeof line - len, " %.2fx of the %zu per-sequence calls;",
                            c->call_s / c->per_sequence_s, calls);
  if (ragged && !isnan(c->padded_s) && len < sizeof line)
    len +=
        (size_t)snprintf(line + len, sizeof line - len, " %.2fx faster than padding to %lld keys;",
                         c->padded_s / c->call_s, (long long)sv->max_kv);
  if (lse && !isnan(c->no_lse_s) && len < sizeof line)
    snprintf(line + len, sizeof line - len, " lse costs %.2fx the call without it;",
             c->call_s / c->no_lse_s);
  if (*line) fprintf(f, "%s:%s\n", tx_bench_label(s, (size_t)h), line);
}

static void kv_ratio(tx_json *j, const char *key, double a, double b) {
  tx_json_kv_double(j, key, isnan(a) || isnan(b) || !(b > 0) ? NAN : a / b);
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
  kv_ratio(j, "x_per_doc", c->call_s, c->per_doc_s);
  kv_ratio(j, "x_no_mask", c->call_s, c->no_mask_s);
  kv_ratio(j, "x_per_sequence", c->call_s, c->per_sequence_s);
  kv_ratio(j, "x_faster_than_padding", c->padded_s, c->call_s);
  kv_ratio(j, "x_no_lse", c->call_s, c->no_lse_s);
  tx_json_kv_string(j, "why", *c->why ? c->why : NULL);
  tx_json_end_object(j);
}
