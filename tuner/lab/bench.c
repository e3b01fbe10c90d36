/* SPDX-License-Identifier: MIT */
/* What txtune bench's files share (bench.h): the entries to time and what they ran with, a point's
   verdict, the problem line, and --tunable NAME=VALUE: every kernel that declares a named tunable
   is planned with it through txattn_plan_create_tuned; the library, not this file, judges whether
   a value is inside the kernel's declared range. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_table.h"

static int parse_pair(const char *item, tx_bench_tunable *out) {
  const char *eq = strchr(item, '=');
  size_t len = eq ? (size_t)(eq - item) : 0;
  const char *v = eq ? eq + 1 : "";
  if (len == 0 || len >= sizeof out->name || !(*v == '-' || (*v >= '0' && *v <= '9'))) return 0;
  for (size_t i = 0; i < len; i++) {
    char c = item[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return 0;
  }
  if (!tx_parse_int(v, &out->value)) return 0;
  memcpy(out->name, item, len);
  out->name[len] = '\0';
  return 1;
}

int tx_bench_parse_tunables(const tx_cmd_spec *spec, const tx_strlist *items,
                            tx_bench_tunable_args *out) {
  out->n = 0;
  for (size_t i = 0; i < items->n; i++) {
    tx_bench_tunable t;
    if (!parse_pair(items->items[i], &t))
      return tx_args_usage_error(
          spec, "--tunable expects NAME=VALUE with an integer VALUE (block_q=204), got '%s'",
          items->items[i]);
    size_t j = 0; /* a pair given twice is one setting */
    while (j < out->n &&
           !(strcmp(out->pairs[j].name, t.name) == 0 && out->pairs[j].value == t.value))
      j++;
    if (j == out->n) out->pairs[out->n++] = t;
  }
  return 0;
}

void tx_bench_tunables_text(const tx_bench_tunable *t, size_t n, const char *sep, char *buf,
                            size_t size) {
  size_t len = 0;
  snprintf(buf, size, "-");
  for (size_t i = 0; i < n; i++)
    tx_appendf(buf, size, &len, "%s%s=%lld", i ? sep : "", t[i].name, (long long)t[i].value);
}

/* The distinct names given, in order, each with the values given for it. */
typedef struct given_name {
  const char *name;
  int64_t values[TX_LIST_MAX];
  size_t n_values;
  int declared; /* by some kernel of the selection */
} given_name;

static size_t group_names(const tx_bench_tunable_args *a, given_name *g) {
  size_t n = 0;
  for (size_t i = 0; i < a->n; i++) {
    size_t j = 0;
    while (j < n && strcmp(g[j].name, a->pairs[i].name) != 0) j++;
    if (j == n) g[n++] = (given_name){.name = a->pairs[i].name};
    g[j].values[g[j].n_values++] = a->pairs[i].value;
  }
  return n;
}

static int declares(const txattn_context *ctx, size_t kernel, const char *name) {
  size_t n = txattn_kernel_tunable_count(ctx, kernel);
  txattn_tunable_info t = TXATTN_TUNABLE_INFO_INIT;
  for (size_t i = 0; i < n; i++)
    if (txattn_kernel_tunable_get(ctx, kernel, i, &t) == TXATTN_OK && strcmp(t.name, name) == 0)
      return 1;
  return 0;
}

typedef struct expansion {
  tx_kernel_sel *sel;
  tx_bench_tuning *tuning;
  size_t n, cap;
} expansion;

/* The entries of one kernel: the combinations of the values of the names it declares (idx[] of
   g, n_idx of them), the first name's values varying slowest. */
static int add_kernel(const tx_cmd_spec *spec, const tx_kernel_sel *k, const given_name *g,
                      const size_t *idx, size_t n_idx, expansion *e) {
  size_t combos = 1;
  for (size_t i = 0; i < n_idx; i++) {
    combos *= g[idx[i]].n_values;
    if (combos > TX_BENCH_MAX_ENTRIES) break;
  }
  if (combos > TX_BENCH_MAX_ENTRIES || combos > e->cap - e->n)
    return tx_args_usage_error(spec, "--tunable: more than %d settings of %s to time",
                               TX_BENCH_MAX_ENTRIES, k->info.name);
  for (size_t c = 0; c < combos; c++) {
    tx_bench_tuning *t = &e->tuning[e->n];
    e->sel[e->n++] = *k;
    size_t rest = c, varied = 0;
    char vary[128] = "";
    for (size_t i = n_idx; i-- > 0;) { /* the last name varies fastest */
      const given_name *n = &g[idx[i]];
      t->set[i].value = n->values[rest % n->n_values];
      rest /= n->n_values;
      snprintf(t->set[i].name, sizeof t->set[i].name, "%s", n->name);
    }
    t->n_set = n_idx;
    for (size_t i = 0; i < n_idx; i++) {
      if (g[idx[i]].n_values < 2) continue;
      size_t len = strlen(vary);
      snprintf(vary + len, sizeof vary - len, "%s%s=%lld", varied++ ? "," : "", t->set[i].name,
               (long long)t->set[i].value);
    }
    if (varied)
      snprintf(t->label, sizeof t->label, "%s[%s]", k->info.name, vary);
    else
      snprintf(t->label, sizeof t->label, "%s", k->info.name);
  }
  return 0;
}

int tx_bench_expand_tunables(const tx_cmd_spec *spec, const txattn_context *ctx,
                             const tx_bench_tunable_args *a, const tx_kernel_sel *sel, size_t n_sel,
                             tx_kernel_sel **sel_out, tx_bench_tuning **tuning_out, size_t *n_out) {
  given_name g[TX_LIST_MAX];
  size_t n_g = group_names(a, g);
  expansion e = {.cap = n_sel + TX_BENCH_MAX_ENTRIES};
  e.sel = calloc(e.cap, sizeof *e.sel);
  e.tuning = calloc(e.cap, sizeof *e.tuning);
  int rc = e.sel && e.tuning ? 0 : tx_args_usage_error(spec, "out of memory");
  for (size_t k = 0; !rc && k < n_sel; k++) {
    size_t idx[TX_BENCH_MAX_TUNABLES], n_idx = 0, kernel = 0;
    txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
    int found = tx_kernel_find(ctx, sel[k].info.name, &kernel, &info);
    for (size_t i = 0; found && !rc && i < n_g; i++) {
      if (!declares(ctx, kernel, g[i].name)) continue;
      g[i].declared = 1;
      if (n_idx == TX_BENCH_MAX_TUNABLES)
        rc = tx_args_usage_error(spec, "--tunable: more than %d tunables of %s",
                                 TX_BENCH_MAX_TUNABLES, sel[k].info.name);
      else
        idx[n_idx++] = i;
    }
    if (!rc) rc = add_kernel(spec, &sel[k], g, idx, n_idx, &e);
  }
  for (size_t i = 0; !rc && i < n_g; i++)
    if (!g[i].declared)
      rc = tx_args_usage_error(spec,
                               "--tunable %s: no kernel timed here declares it ('txtune topo' "
                               "shows each kernel's tunables)",
                               g[i].name);
  if (rc) {
    free(e.sel);
    free(e.tuning);
    return rc;
  }
  *sel_out = e.sel;
  *tuning_out = e.tuning;
  *n_out = e.n;
  return 0;
}

int tx_bench_entry_threads(const tx_bench_setup *s, size_t i) {
  return s->sel[i].info.flags & TXATTN_KERNEL_THREADED ? s->threads : 1;
}

const char *tx_bench_label(const tx_bench_setup *s, size_t i) {
  return s->tuning[i].label;
}

int tx_bench_kernel_failed(const tx_bench_setup *s, const tx_bench_point *pt, size_t i) {
  const tx_bench_result *k = &pt->res[i];
  return k->state == TX_BENCH_FAILED || (k->state == TX_BENCH_OK && !k->exact) ||
         (k->state == TX_BENCH_OVER_LIMIT && s->sel[i].requested) ||
         (k->state == TX_BENCH_OK && k->merge.measured && k->merge.checked && !k->merge.exact);
}

int tx_bench_point_status(const tx_bench_setup *s, const tx_bench_point *pt) {
  if (pt->fastest < 0) return TX_EXIT_FAIL; /* nothing was measured */
  for (size_t i = 0; i < s->n_sel; i++)
    if (tx_bench_kernel_failed(s, pt, i)) return TX_EXIT_FAIL;
  return TX_EXIT_OK;
}

tx_roof_kernel tx_bench_roof_kernel(const tx_bench_setup *s, const tx_bench_point *pt, size_t i) {
  const txattn_kernel_info *info = &s->sel[i].info;
  const int ok = pt->res[i].state == TX_BENCH_OK;
  tx_roof_work w = tx_roofline_work(&pt->p);
  const tx_roof_paired *paired =
      ok && tx_roofline_pairs(s->roofline, &w) ? &pt->res[i].paired : NULL;
  return (tx_roof_kernel){tx_bench_label(s, i), info->isa, tx_bench_entry_threads(s, i),
                          ok ? pt->res[i].tm.median_s : 0, paired};
}

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

const tx_bench_env_var tx_bench_env[TX_BENCH_N_ENV] = {
    {"OPENBLAS_CORETYPE", 1},   {"OPENBLAS_NUM_THREADS", 1}, {"OMP_NUM_THREADS", 1},
    {"TXATTN_FORCE_KERNEL", 0}, {"TXATTN_MAX_ISA", 0},       {"TXATTN_TABLE", 0}};
