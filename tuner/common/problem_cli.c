/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem_cli.h"
#include "text_table.h"

/* The masks are the enum's values from TXATTN_MASK_NONE up to the first txattn_mask_name does
   not know: the library's names are the only spelling. */
static int mask_known(int m) {
  return strcmp(txattn_mask_name((txattn_mask)m), "unknown") != 0;
}

int tx_mask_parse(const char *s, txattn_mask *out) {
  for (int m = TXATTN_MASK_NONE; mask_known(m); m++)
    if (strcmp(s, txattn_mask_name((txattn_mask)m)) == 0) {
      *out = (txattn_mask)m;
      return 1;
    }
  return 0;
}

/* The dtype txattn_dtype_name spells in s[0..len). */
static int dtype_parse(const char *s, size_t len, txattn_dtype *out) {
  for (int t = TXATTN_DTYPE_F32; txattn_dtype_size((txattn_dtype)t) != 0; t++) {
    const char *name = txattn_dtype_name((txattn_dtype)t);
    if (strlen(name) == len && strncmp(s, name, len) == 0) {
      *out = (txattn_dtype)t;
      return 1;
    }
  }
  return 0;
}

int tx_dtypes_parse(const char *s, tx_dtypes *out) {
  tx_dtypes d = {{TXATTN_DTYPE_F32, TXATTN_DTYPE_F32, TXATTN_DTYPE_F32, TXATTN_DTYPE_F32}};
  if (strncmp(s, "kv=", 3) == 0) {
    if (!dtype_parse(s + 3, strlen(s + 3), &d.t[1])) return 0;
    d.t[2] = d.t[1];
  } else {
    if (strncmp(s, "q,k,v,o=", 8) == 0) s += 8;
    const char *at = s;
    int n = 0;
    for (;;) {
      const char *comma = strchr(at, ',');
      size_t len = comma ? (size_t)(comma - at) : strlen(at);
      if (n == 4 || !dtype_parse(at, len, &d.t[n++])) return 0;
      if (!comma) break;
      at = comma + 1;
    }
    if (n == 1)
      d.t[1] = d.t[2] = d.t[3] = d.t[0];
    else if (n != 4)
      return 0;
  }
  *out = d;
  return 1;
}

int tx_dtypes_all_f32(const tx_dtypes *d) {
  for (int i = 0; i < 4; i++)
    if (d->t[i] != TXATTN_DTYPE_F32) return 0;
  return 1;
}

int tx_dtypes_format(const tx_dtypes *d, char *buf, size_t size) {
  const char *n[4];
  for (int i = 0; i < 4; i++) n[i] = txattn_dtype_name(d->t[i]);
  if (d->t[0] == d->t[1] && d->t[1] == d->t[2] && d->t[2] == d->t[3])
    return snprintf(buf, size, "%s", n[0]);
  if (d->t[0] == TXATTN_DTYPE_F32 && d->t[3] == TXATTN_DTYPE_F32 && d->t[1] == d->t[2])
    return snprintf(buf, size, "kv=%s", n[1]);
  return snprintf(buf, size, "q,k,v,o=%s,%s,%s,%s", n[0], n[1], n[2], n[3]);
}

tx_dtypes tx_dtypes_of(const txattn_problem *p) {
  return (tx_dtypes){{p->q_type, p->k_type, p->v_type, p->o_type}};
}

void tx_dtypes_apply(const tx_dtypes *d, txattn_problem *p) {
  p->q_type = d->t[0];
  p->k_type = d->t[1];
  p->v_type = d->t[2];
  p->o_type = d->t[3];
}

/* --mask's choices (indexed by the enum's value) and "none|causal|window", from the names. */
#define MAX_MASKS 8
static const char *mask_choices[MAX_MASKS + 1];
static char mask_metavar[MAX_MASKS * 16];

static void mask_option_text(void) {
  size_t len = 0;
  for (int m = TXATTN_MASK_NONE; m < MAX_MASKS && mask_known(m); m++) {
    mask_choices[m] = txattn_mask_name((txattn_mask)m);
    int w = snprintf(mask_metavar + len, sizeof mask_metavar - len, "%s%s", m ? "|" : "",
                     mask_choices[m]);
    if (w > 0 && (size_t)w < sizeof mask_metavar - len) len += (size_t)w;
  }
}

void tx_problem_args_init(tx_problem_args *a) {
  a->n = a->n_kv = a->d = a->dv = a->batch = a->heads = a->heads_kv = TX_UNSET;
  a->left = a->right = a->window = TX_UNSET;
  a->mask = -1;
  a->scale = NAN;
  a->dtype = NULL;
  tx_modifier_args_init(&a->mods);
}

void tx_modifier_args_init(tx_modifier_args *a) {
  a->softcap = NAN;
  a->alibi = a->sinks = 0;
  a->sink_keys = TX_UNSET;
  a->doc_lens = a->bias = NULL;
}

/* --doc-lens, parsed by tx_modifier_parse: one list per process, as one command line has one. */
#define MAX_DOCS 4096
static int64_t doc_lens[MAX_DOCS];
static size_t n_docs;

int tx_modifier_parse(const tx_cmd_spec *spec, const tx_modifier_args *a) {
  if (a->bias && strcmp(a->bias, "relative") != 0)
    return tx_args_usage_error(spec, "--bias takes 'relative' (T5's bias), not '%s'", a->bias);
  if (a->bias && a->doc_lens)
    return tx_args_usage_error(spec, "one mask tensor at a time: --doc-lens or --bias");
  n_docs = 0;
  for (const char *c = a->doc_lens; c && *c;) {
    char *end;
    long long v = strtoll(c, &end, 10);
    if (end == c || v < 1 || v > (INT64_C(1) << 31) || (*end != ',' && *end != '\0') ||
        n_docs == MAX_DOCS)
      return tx_args_usage_error(spec,
                                 "--doc-lens takes at most %d lengths >= 1, comma-separated: '%s'",
                                 MAX_DOCS, a->doc_lens);
    doc_lens[n_docs++] = v;
    c = *end ? end + 1 : end;
  }
  if (a->doc_lens && n_docs == 0)
    return tx_args_usage_error(spec, "--doc-lens needs at least one length");
  return 0;
}

int64_t tx_doc_lens_sum(void) {
  int64_t n = 0;
  for (size_t i = 0; i < n_docs; i++) n += doc_lens[i];
  return n;
}

const int64_t *tx_doc_lens(size_t *n) {
  *n = n_docs;
  return doc_lens;
}

void tx_modifier_opts(tx_modifier_args *a, tx_opt *o) {
  o[0] = tx_opt_double("softcap", &a->softcap, "C", "scores become C tanh(s / C) (Gemma 2: 50)",
                       0.0, 3e38);
  o[1] = tx_opt_flag("alibi", &a->alibi, "ALiBi with the standard slopes (max_bias 8)");
  o[2] = tx_opt_flag("sinks", &a->sinks, "a sink logit per head (seeded random, as gpt-oss)");
  o[3] =
      tx_opt_int("sink-keys", &a->sink_keys, "K",
                 "the first K keys visible to every query (StreamingLLM) [0]", 0, INT64_C(1) << 40);
  o[4] = tx_opt_string("doc-lens", &a->doc_lens, "L1,L2,...",
                       "documents packed in one sequence: a block-diagonal causal boolean mask "
                       "tensor [n = the sum]");
  o[5] = tx_opt_string("bias", &a->bias, "relative",
                       "T5's relative-position bias as an additive tensor [heads][n][n_kv]");
}

void tx_modifier_apply(const tx_modifier_args *a, txattn_problem *p) {
  p->struct_size = sizeof *p;
  p->softcap = isnan(a->softcap) ? 0.0f : (float)a->softcap;
  p->alibi = a->alibi;
  p->sinks = a->sinks;
  p->sink_keys = a->sink_keys == TX_UNSET ? 0 : a->sink_keys;
  p->mask_tensor = a->doc_lens ? TXATTN_MASK_TENSOR_BOOL
                   : a->bias   ? TXATTN_MASK_TENSOR_ADDITIVE
                               : TXATTN_MASK_TENSOR_NONE;
  p->mask_type = a->bias ? p->q_type : TXATTN_DTYPE_F32;
}

/* Upper limits are loose on purpose: the library's validation names the field that is too large. */
void tx_problem_opts(tx_problem_args *a, tx_opt *o) {
  const int64_t big = INT64_C(1) << 40;
  int i = 0;
  mask_option_text();
  o[i++] = tx_opt_int("n", &a->n, "N", "query rows (sequence length)", 1, big);
  o[i++] = tx_opt_int("n-kv", &a->n_kv, "M", "key/value rows [N]", 1, big);
  o[i++] = tx_opt_int("d", &a->d, "D", "head size of queries and keys", 1, big);
  o[i++] = tx_opt_int("dv", &a->dv, "DV", "head size of values [D]", 1, big);
  o[i++] = tx_opt_choice("mask", &a->mask, mask_metavar, "mask kind [none]", mask_choices);
  o[i++] = tx_opt_bound("left", &a->left, "L", "window: keys visible before the query (or inf)", 0,
                        INT64_MAX);
  o[i++] = tx_opt_bound("right", &a->right, "R", "window: keys visible after the query (or inf)", 0,
                        INT64_MAX);
  o[i++] = tx_opt_int("window", &a->window, "W", "centred window of W keys: left = right = W/2", 0,
                      INT64_MAX);
  o[i++] = tx_opt_int("batch", &a->batch, "B", "batch size [1]", 1, big);
  o[i++] = tx_opt_int("heads", &a->heads, "H", "query heads [1]", 1, big);
  o[i++] =
      tx_opt_int("heads-kv", &a->heads_kv, "G", "key/value heads, dividing H (GQA) [H]", 1, big);
  o[i++] = tx_opt_double("scale", &a->scale, "S", "score scale, nonzero [1/sqrt(D)]", -3e38, 3e38);
  o[i++] = tx_opt_string("dtype", &a->dtype, "TYPES", "element types of q,k,v,o: " TX_DTYPE_HELP);
  tx_modifier_opts(&a->mods, o + i);
}

static int window_from_args(const tx_cmd_spec *spec, const tx_problem_args *a, txattn_problem *p) {
  int sides = (a->left != TX_UNSET) + (a->right != TX_UNSET), centred = a->window != TX_UNSET;
  if (!sides && !centred) {
    if (p->mask == TXATTN_MASK_WINDOW)
      return tx_args_usage_error(spec,
                                 "--mask window needs --left L and --right R (or --window W)");
    return 0;
  }
  if (a->mask >= 0 && p->mask != TXATTN_MASK_WINDOW)
    return tx_args_usage_error(spec, "--left, --right and --window need --mask window, not %s",
                               txattn_mask_name((txattn_mask)a->mask));
  if (centred && sides)
    return tx_args_usage_error(spec, "give either --window or --left/--right, not both");
  if (sides == 1)
    return tx_args_usage_error(spec, "a window needs both --left and --right (either may be inf)");
  p->mask = TXATTN_MASK_WINDOW;
  p->window_left = centred ? a->window / 2 : a->left;
  p->window_right = centred ? a->window / 2 : a->right;
  return 0;
}

int tx_problem_from_args(const tx_cmd_spec *spec, const tx_problem_args *a, txattn_problem *out) {
  int rc = tx_modifier_parse(spec, &a->mods);
  if (rc) return rc;
  const int64_t docs = tx_doc_lens_sum(), n = a->n == TX_UNSET && docs ? docs : a->n;
  if (docs && n != docs)
    return tx_args_usage_error(spec, "--n %lld is not the sum of --doc-lens, %lld", (long long)n,
                               (long long)docs);
  if (n == TX_UNSET) return tx_args_usage_error(spec, "--n is required");
  if (a->d == TX_UNSET) return tx_args_usage_error(spec, "--d is required");
  if ((float)a->scale == 0.0f) /* the problem struct reads 0 as "use the default" */
    return tx_args_usage_error(spec, "--scale must be nonzero (leave it out for 1/sqrt(D))");
  txattn_problem p = {0};
  tx_modifier_apply(&a->mods, &p);
  p.n_q = n;
  p.d_qk = a->d;
  p.n_kv = a->n_kv == TX_UNSET ? 0 : a->n_kv;
  p.d_v = a->dv == TX_UNSET ? 0 : a->dv;
  p.batch = a->batch == TX_UNSET ? 0 : a->batch;
  p.heads_q = a->heads == TX_UNSET ? 0 : a->heads;
  p.heads_kv = a->heads_kv == TX_UNSET ? 0 : a->heads_kv;
  p.mask = a->mask >= 0 ? (txattn_mask)a->mask
           : docs       ? TXATTN_MASK_CAUSAL /* the documents' causal ranges are skipped whole */
                        : TXATTN_MASK_NONE;
  p.scale = isnan(a->scale) ? 0.0f : (float)a->scale;
  tx_dtypes types;
  if (a->dtype && !tx_dtypes_parse(a->dtype, &types))
    return tx_args_usage_error(spec, "--dtype expects %s, got '%s'", TX_DTYPE_HELP, a->dtype);
  if (a->dtype) tx_dtypes_apply(&types, &p);
  if (p.mask_tensor == TXATTN_MASK_TENSOR_ADDITIVE) p.mask_type = p.q_type;
  rc = window_from_args(spec, a, &p);
  if (rc) return rc;
  out->struct_size = sizeof *out;
  if (txattn_problem_resolve(&p, out) != TXATTN_OK)
    return tx_args_usage_error(spec, "invalid problem: %s", txattn_last_error());
  return 0;
}

static void format_bound(int64_t v, char *buf, size_t size) {
  if (v == TXATTN_UNBOUNDED)
    snprintf(buf, size, "inf");
  else
    snprintf(buf, size, "%lld", (long long)v);
}

int tx_problem_format(const txattn_problem *p, char *buf, size_t size) {
  char bv[32] = "", hv[48] = "", nv[64], dv[64], mv[64], sv[32] = "", l[24], r[24];
  int64_t heads = p->heads_q ? p->heads_q : 1, kv = p->heads_kv ? p->heads_kv : heads;
  if (p->batch > 1) snprintf(bv, sizeof bv, "b=%lld ", (long long)p->batch);
  if (heads != 1 || kv != heads)
    snprintf(hv, sizeof hv, kv == heads ? "h=%lld " : "h=%lld/%lld ", (long long)heads,
             (long long)kv);
  if (p->n_kv && p->n_kv != p->n_q)
    snprintf(nv, sizeof nv, "n_q=%lld n_kv=%lld", (long long)p->n_q, (long long)p->n_kv);
  else
    snprintf(nv, sizeof nv, "n=%lld", (long long)p->n_q);
  if (p->d_v && p->d_v != p->d_qk)
    snprintf(dv, sizeof dv, "d_qk=%lld d_v=%lld", (long long)p->d_qk, (long long)p->d_v);
  else
    snprintf(dv, sizeof dv, "d=%lld", (long long)p->d_qk);
  format_bound(p->window_left, l, sizeof l);
  format_bound(p->window_right, r, sizeof r);
  if (p->mask == TXATTN_MASK_WINDOW)
    snprintf(mv, sizeof mv, "window(%s,%s)", l, r);
  else
    snprintf(mv, sizeof mv, "%s", txattn_mask_name(p->mask));
  if (p->scale != 0 && p->scale != (float)(1.0 / sqrt((double)p->d_qk)))
    snprintf(sv, sizeof sv, " scale=%g", (double)p->scale);
  char tv[40] = "";
  tx_dtypes d = tx_dtypes_of(p);
  if (!tx_dtypes_all_f32(&d)) {
    tv[0] = ' ';
    tx_dtypes_format(&d, tv + 1, sizeof tv - 1);
  }
  char xv[96] = "";
  int at = 0;
  if (p->softcap > 0.0f)
    at += snprintf(xv + at, sizeof xv - (size_t)at, " softcap=%g", (double)p->softcap);
  if (p->alibi) at += snprintf(xv + at, sizeof xv - (size_t)at, " alibi");
  if (p->sinks) at += snprintf(xv + at, sizeof xv - (size_t)at, " sinks");
  if (p->sink_keys > 0)
    at += snprintf(xv + at, sizeof xv - (size_t)at, " sink_keys=%lld", (long long)p->sink_keys);
  if (p->mask_tensor == TXATTN_MASK_TENSOR_BOOL)
    snprintf(xv + at, sizeof xv - (size_t)at, " doc_lens");
  if (p->mask_tensor == TXATTN_MASK_TENSOR_ADDITIVE)
    snprintf(xv + at, sizeof xv - (size_t)at, " bias=relative");
  return snprintf(buf, size, "%s%s%s %s %s%s%s%s", bv, hv, nv, dv, mv, sv, tv, xv);
}

void tx_serving_args_init(tx_serving_args *a) {
  a->kv_lens = NULL;
  a->q_lens = NULL;
  a->lse = 0;
  a->merge = 0;
  a->page_size = 0;
  a->packed = 0;
}

void tx_serving_opts(tx_serving_args *a, tx_opt *o) {
  o[0] = tx_opt_string("kv-lens", &a->kv_lens, "L1,L2,...",
                       "a ragged batch: a sequence per length L (0 allowed) with L keys and N "
                       "queries");
  o[1] = tx_opt_flag("lse", &a->lse, "also compute and verify the log-sum-exp of each row");
  o[2] = tx_opt_int("page-size", &a->page_size, "P",
                    "K and V in pages of P keys, in a shuffled pool read through a block table", 1,
                    INT64_C(1) << 30);
  o[3] = tx_opt_flag("packed", &a->packed,
                     "q, o and lse packed without padding, each sequence's rows from q_offsets");
  o[4] = tx_opt_string("q-lens", &a->q_lens, "L1,L2,...",
                       "with --kv-lens, each sequence's query rows (0 allowed; ragged, or packed "
                       "with --packed) instead of N for every one; --n defaults to the longest");
}

/* A list of lengths from 0 to big separated by commas (--kv-lens, --q-lens) into out[*n], with
   their largest in *max. */
static int parse_lens(const tx_cmd_spec *spec, const char *option, const char *text, int64_t *out,
                      size_t *n, int64_t *max) {
  const int64_t big = INT64_C(1) << 40; /* as --n-kv takes */
  *n = 0;
  *max = 0;
  for (const char *s = text;;) {
    size_t len = strcspn(s, ",");
    char item[32];
    int64_t v;
    if (len == 0) return tx_args_usage_error(spec, "%s: empty item in '%s'", option, text);
    if (*n == TX_SERVING_MAX_SEQ)
      return tx_args_usage_error(spec, "%s: more than %d lengths", option, TX_SERVING_MAX_SEQ);
    snprintf(item, sizeof item, "%.*s", (int)len, s);
    if (len >= sizeof item || !tx_parse_int(item, &v) || v < 0 || v > big)
      return tx_args_usage_error(spec,
                                 "%s expects lengths from 0 to %lld separated by commas, "
                                 "got '%.*s' in '%s'",
                                 option, (long long)big, (int)len, s, text);
    out[(*n)++] = v;
    if (v > *max) *max = v;
    if (s[len] == '\0') return 0;
    s += len + 1;
  }
}

tx_opt tx_serving_merge_opt(tx_serving_args *a) {
  return tx_opt_int("merge", &a->merge, "P",
                    "also time the keys split into P parts, each a call with lse, and their "
                    "txattn_merge (implies --lse; --mask none, no --kv-lens)",
                    2, TX_SERVING_MAX_MERGE);
}

int tx_serving_from_args(const tx_cmd_spec *spec, const tx_serving_args *a, tx_serving *out) {
  out->n = out->n_q_lens = 0;
  out->max_kv = out->max_q = 0;
  out->lse_given = a->lse;
  out->merge = a->merge;
  out->lse = a->lse || a->merge > 0;
  out->page_size = a->page_size;
  out->packed = a->packed;
  if (a->merge && (a->page_size || a->packed))
    return tx_args_usage_error(spec, "--merge takes neither --page-size nor --packed");
  if (a->q_lens && !a->kv_lens)
    return tx_args_usage_error(spec, "--q-lens needs --kv-lens (one length of each per sequence)");
  if (!a->kv_lens) return 0;
  int rc = parse_lens(spec, "--kv-lens", a->kv_lens, out->kv_lens, &out->n, &out->max_kv);
  if (rc || !a->q_lens) return rc;
  rc = parse_lens(spec, "--q-lens", a->q_lens, out->q_lens, &out->n_q_lens, &out->max_q);
  if (!rc && out->n_q_lens != out->n)
    return tx_args_usage_error(spec,
                               "--q-lens gives %zu lengths, --kv-lens %zu: one each per "
                               "sequence",
                               out->n_q_lens, out->n);
  return rc;
}

int tx_serving_apply_args(const tx_cmd_spec *spec, const tx_serving *s, tx_problem_args *pa) {
  if (!s->n) return 0;
  if (pa->batch != TX_UNSET && pa->batch != (int64_t)s->n)
    return tx_args_usage_error(spec,
                               "--batch %lld disagrees with --kv-lens, which gives %zu length%s",
                               (long long)pa->batch, s->n, s->n == 1 ? "" : "s");
  if (pa->n_kv != TX_UNSET && pa->n_kv < s->max_kv)
    return tx_args_usage_error(spec, "--n-kv %lld is less than the longest of --kv-lens, %lld",
                               (long long)pa->n_kv, (long long)s->max_kv);
  pa->batch = (int64_t)s->n;
  if (pa->n_kv == TX_UNSET) pa->n_kv = s->max_kv > 0 ? s->max_kv : 1; /* a capacity of 0 is none */
  if (!s->n_q_lens) return 0;
  if (pa->n != TX_UNSET && pa->n < s->max_q)
    return tx_args_usage_error(spec, "--n %lld is less than the longest of --q-lens, %lld",
                               (long long)pa->n, (long long)s->max_q);
  if (pa->n == TX_UNSET) pa->n = s->max_q > 0 ? s->max_q : 1;
  return 0;
}

int tx_serving_merge_check(const tx_cmd_spec *spec, const tx_serving *s,
                           const txattn_problem *probs, size_t n_probs) {
  if (!s->merge) return 0;
  if (s->n)
    return tx_args_usage_error(spec,
                               "--merge does not take --kv-lens: a part of each sequence's "
                               "keys starts at a key of its own, which one call cannot offset");
  for (size_t i = 0; i < n_probs; i++)
    if (probs[i].mask != TXATTN_MASK_NONE)
      return tx_args_usage_error(spec,
                                 "--merge needs --mask none, not %s: a part of the keys of a "
                                 "masked problem is not a problem of its own (which keys a query "
                                 "sees depends on where the part lies in the whole)",
                                 txattn_mask_name(probs[i].mask));
  for (size_t i = 0; i < n_probs; i++)
    if (probs[i].n_kv < s->merge)
      return tx_args_usage_error(spec, "--merge %lld needs at least %lld keys, n_kv is %lld",
                                 (long long)s->merge, (long long)s->merge,
                                 (long long)probs[i].n_kv);
  return 0;
}

void tx_serving_apply(const tx_serving *s, txattn_problem *p) {
  p->struct_size = sizeof *p;
  p->lse = s->lse;
  p->ragged = s->n > 0;
  p->packed = s->packed;
  if (!s->page_size) return;
  const int64_t n_kv = p->n_kv ? p->n_kv : p->n_q, batch = p->batch ? p->batch : 1;
  p->page_size = s->page_size;
  p->max_pages = (n_kv + s->page_size - 1) / s->page_size;
  p->n_pages = batch * p->max_pages;
}

int tx_serving_format(const tx_serving *s, char *buf, size_t size) {
  size_t len = 0;
  if (size) buf[0] = '\0';
  for (size_t i = 0; i < s->n && i < 16; i++)
    tx_appendf(buf, size, &len, "%s%lld", i ? "," : " kv_lens=", (long long)s->kv_lens[i]);
  if (s->n > 16) tx_appendf(buf, size, &len, ",... (%zu)", s->n);
  for (size_t i = 0; i < s->n_q_lens && i < 16; i++)
    tx_appendf(buf, size, &len, "%s%lld", i ? "," : " q_lens=", (long long)s->q_lens[i]);
  if (s->lse) tx_appendf(buf, size, &len, " lse");
  if (s->page_size) tx_appendf(buf, size, &len, " page_size=%lld", (long long)s->page_size);
  if (s->packed) tx_appendf(buf, size, &len, " packed");
  if (s->merge) tx_appendf(buf, size, &len, " merge=%lld", (long long)s->merge);
  return (int)len;
}
