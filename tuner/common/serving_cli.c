/* SPDX-License-Identifier: MIT */
#include "serving_cli.h"

#include <stdio.h>
#include <string.h>

#include "text_table.h"

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
                       "with --packed) instead of N for every one");
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
