/* SPDX-License-Identifier: MIT */
/* txtune topo: the machine as libtxattn sees it -- what hwloc reports, the cache sizes used after
 * the plausibility check or the override, every note about them -- and the tile sizes each
 * tunable kernel derives from those caches for each head size, with the kernel's own description
 * of each tunable. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cmd_topo.h"
#include "context_cli.h"
#include "json.h"
#include "text_table.h"
#include "txattn/plugin.h"

#define MAX_D 16

typedef struct topo_run {
  tx_context_args ctx_args;
  const char *cache;
  tx_strlist d_list;
  int64_t n;
  int json;
  int64_t d[MAX_D];
  size_t n_d;
  tx_opt opts[4], ctx_opts[TX_CONTEXT_N_OPTS];
  tx_opt_group groups[2];
  tx_cmd_spec spec;
  txattn_context *ctx;
  txattn_machine_info m;
  size_t n_failed; /* (kernel, d) plans that FAILED: a status other than TXATTN_E_UNSUPPORTED */
} topo_run;

static const char about[] =
    "Shows the machine as libtxattn sees it: CPU, cores, NUMA nodes, the caches hwloc reports\n"
    "and the sizes used (after a plausibility check, or --cache), then the tunables each kernel\n"
    "derives from those caches for each head size at n = --n. Details: docs/inspect.md.\n"
    "Exit status: 0 ok; 1 a malformed override, no kernel found, or a kernel FAILED to plan; 2 "
    "usage error.";

static int parse_d_list(topo_run *r) {
  if (r->d_list.n == 0) {
    r->d[0] = 64;
    r->d[1] = 128;
    r->n_d = 2;
    return 0;
  }
  for (size_t i = 0; i < r->d_list.n; i++) {
    int64_t v;
    if (!tx_parse_int(r->d_list.items[i], &v) || v < 1 || v > 65536)
      return tx_args_usage_error(&r->spec, "--d expects head sizes from 1 to 65536, got '%s'",
                                 r->d_list.items[i]);
    if (r->n_d == MAX_D) return tx_args_usage_error(&r->spec, "--d: more than %d sizes", MAX_D);
    r->d[r->n_d++] = v;
  }
  return 0;
}

static int parse(topo_run *r, int argc, char **argv) {
  r->n = 4096;
  r->opts[0] = tx_opt_string("cache", &r->cache, "l1d=S,l2=S,l3=S",
                             "cache sizes per core to use instead of hwloc's [$TXATTN_CACHES]");
  r->opts[1] = tx_opt_list("d", &r->d_list, "D[,D...]", "head sizes to derive tiles for [64,128]");
  r->opts[2] =
      tx_opt_int("n", &r->n, "N", "query and key rows of the problem [4096]", 1, INT64_C(1) << 40);
  r->opts[3] = tx_opt_flag("json", &r->json, "one JSON object on stdout");
  tx_context_args_init(&r->ctx_args);
  tx_context_opts(&r->ctx_args, r->ctx_opts);
  r->groups[0] = (tx_opt_group){"Options", r->opts, 4};
  r->groups[1] = (tx_opt_group){"Library", r->ctx_opts, TX_CONTEXT_N_OPTS};
  r->spec = (tx_cmd_spec){"topo", "[--cache l1d=48K,l2=1M,l3=32M] [--d LIST] [--n N] [--json]",
                          about, r->groups, 2};
  int rc = tx_args_parse_cmd(&r->spec, argc, argv);
  if (rc >= 0) return rc;
  rc = parse_d_list(r);
  return rc ? rc : -1;
}

/* No dispatch table: the tiles shown are the kernels' cache-derived defaults. */
static int open_context(topo_run *r) {
  txattn_options opts = {.plugin_path = r->ctx_args.plugin_path,
                         .table_path = "",
                         .n_threads = (int)r->ctx_args.threads,
                         .caches = r->cache};
  txattn_status s = txattn_context_create(&opts, &r->ctx);
  r->m = (txattn_machine_info)TXATTN_MACHINE_INFO_INIT;
  if (s == TXATTN_OK) s = txattn_context_machine(r->ctx, &r->m);
  if (s == TXATTN_OK) return 0;
  tx_print_lib_error("topo", "cannot create the library context", s);
  return TX_EXIT_FAIL;
}

static const char *size_text(int64_t bytes, char *buf, size_t size) {
  if (bytes <= 0) {
    snprintf(buf, size, "-");
  } else if (bytes % (1 << 20) == 0) {
    snprintf(buf, size, "%" PRId64 " MiB", bytes >> 20);
  } else if (bytes >= (1 << 20)) {
    snprintf(buf, size, "%.2f MiB", (double)bytes / (1 << 20));
  } else if (bytes % 1024 == 0) {
    snprintf(buf, size, "%" PRId64 " KiB", bytes >> 10);
  } else {
    snprintf(buf, size, "%" PRId64 " B", bytes);
  }
  return buf;
}

/* A plan with kernel forced for the representative problem of head size d; NULL with why set
   when the kernel cannot take it (*status, if not NULL, gets the status). */
static txattn_plan *make_plan(const topo_run *r, const char *kernel, int64_t d, char *why,
                              size_t size, txattn_status *status) {
  txattn_problem p = {.n_q = r->n, .d_qk = d};
  txattn_plan *plan = NULL;
  txattn_status s = txattn_plan_create(r->ctx, &p, kernel, &plan);
  if (s != TXATTN_OK) snprintf(why, size, "%s: %s", txattn_status_name(s), txattn_last_error());
  if (status) *status = s;
  return plan;
}

/* Whether kernel i FAILED to plan the problem for some head size (a status other than
   TXATTN_E_UNSUPPORTED, which only says it declines the problem). */
static int kernel_fails(const topo_run *r, const txattn_kernel_info *k) {
  for (size_t i = 0; i < r->n_d; i++) {
    char why[8];
    txattn_status s;
    txattn_plan *plan = make_plan(r, k->name, r->d[i], why, sizeof why, &s);
    txattn_plan_free(plan);
    if (s != TXATTN_OK && s != TXATTN_E_UNSUPPORTED) return 1;
  }
  return 0;
}

/* 1 when the kernel is usable and declares tunables (as its plugin declares them, so a kernel
   that cannot plan is judged too), or is usable and FAILED to plan: either is listed. */
static int tunable_kernel(const topo_run *r, size_t i, const txattn_kernel_info *k) {
  if (!k->usable) return 0;
  return txattn_kernel_tunable_count(r->ctx, i) > 0 || kernel_fails(r, k);
}

/* ---- text ---- */

static void print_machine(const topo_run *r) {
  const txattn_machine_info *m = &r->m;
  printf("CPU       %s%s%s%s, family %d model %d stepping %d; ISAs enabled:",
         m->vendor[0] ? m->vendor : "unknown vendor", m->brand[0] ? " \"" : "", m->brand,
         m->brand[0] ? "\"" : "", m->family, m->model, m->stepping);
  for (int i = 0; i < TXATTN_ISA_COUNT_; i++)
    if (m->isa_mask & (1u << i)) printf(" %s", txattn_isa_name((txattn_isa)i));
  printf("\ntopology  %s\n", m->topology_source);
  if (m->topology_file) printf("          file: %s (HWLOC_XMLFILE)\n", m->topology_file);
  printf("          %d cores, %d hardware threads, %d NUMA node%s\n\n", m->n_cores, m->n_pus,
         m->n_numa, m->n_numa == 1 ? "" : "s");
}

static void print_caches(const topo_run *r) {
  const txattn_machine_info *m = &r->m;
  const char *names[3] = {"L1d", "L2", "L3"};
  const int64_t hw[3] = {m->hw_l1d_bytes, m->hw_l2_bytes, m->hw_l3_bytes};
  const int64_t used[3] = {m->l1d_bytes, m->l2_bytes, m->l3_bytes};
  tx_table t;
  tx_table_init(&t, "CACHE|>HWLOC PER CORE|HWLOC REPORTS|>USED PER CORE");
  for (int l = 0; l < 3; l++) {
    char a[32], b[32], c[32], rep[96] = "none";
    if (m->hw_cache_total_bytes[l] > 0)
      snprintf(rep, sizeof rep, "%s, %d core%s", size_text(m->hw_cache_total_bytes[l], b, 32),
               m->hw_cache_cores[l], m->hw_cache_cores[l] == 1 ? "" : "s sharing it");
    const char *cells[] = {names[l], size_text(hw[l], a, 32), rep, size_text(used[l], c, 32)};
    tx_table_add(&t, cells);
  }
  tx_table_print(&t, stdout, "");
  tx_table_free(&t);
  printf("cache sizes from: %s\n", m->cache_source);
  if (!m->cache_notes[0]) {
    printf("notes: none (every size hwloc reports was used as reported)\n");
    return;
  }
  printf("notes:\n");
  for (const char *p = m->cache_notes; *p;) {
    size_t n = strcspn(p, "\n");
    printf("  - %.*s\n", (int)n, p);
    p += n + (p[n] == '\n');
  }
}

/* "block_q=66 block_k=512" */
static void tunables_text(const txattn_plan *plan, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < txattn_plan_tunable_count(plan); i++) {
    const char *name;
    int64_t v;
    if (txattn_plan_tunable_get(plan, i, &name, &v) == TXATTN_OK)
      tx_appendf(buf, size, &len, "%s%s=%" PRId64, len ? " " : "", name, v);
  }
}

static void add_tile_rows(topo_run *r, const txattn_kernel_info *k, tx_table *t) {
  for (size_t i = 0; i < r->n_d; i++) {
    char d[24], vals[256], why[512];
    txattn_status s;
    snprintf(d, sizeof d, "%" PRId64, r->d[i]);
    txattn_plan *plan = make_plan(r, k->name, r->d[i], why, sizeof why, &s);
    int failed = plan == NULL && s != TXATTN_E_UNSUPPORTED;
    if (plan) tunables_text(plan, vals, sizeof vals);
    if (plan && !vals[0]) snprintf(vals, sizeof vals, "(no tunables)");
    const char *cells[] = {k->name, d, plan ? vals : failed ? "FAILED" : "declines"};
    tx_table_add(t, cells);
    if (!plan) tx_table_note(t, "%s: %s", failed ? "cannot plan" : "declines the problem", why);
    r->n_failed += (size_t)failed;
    txattn_plan_free(plan);
  }
}

/* Each tunable's declared description and constraints, as kernel ki declares them. */
static void print_rules(const topo_run *r, size_t ki, const txattn_kernel_info *k) {
  size_t n = txattn_kernel_tunable_count(r->ctx, ki);
  if (n == 0) return;
  printf("  %s: %s\n", k->name, k->summary);
  for (size_t i = 0; i < n; i++) {
    txattn_tunable_info ti = TXATTN_TUNABLE_INFO_INIT;
    if (txattn_kernel_tunable_get(r->ctx, ki, i, &ti) != TXATTN_OK) continue;
    printf("    %-12s %s; a multiple of %" PRId64 " in %" PRId64 "..%" PRId64 "\n", ti.name,
           ti.summary, ti.multiple_of, ti.min, ti.max);
  }
}

static void print_tiles(topo_run *r) {
  char l1[32], l2[32], l3[32];
  printf("\ntile sizes for n_q = n_kv = %" PRId64 ", no mask, 1 head, %d threads,\n"
         "derived from l1d %s, l2 %s, l3 %s per core (no dispatch table):\n",
         r->n, txattn_context_threads(r->ctx), size_text(r->m.l1d_bytes, l1, 32),
         size_text(r->m.l2_bytes, l2, 32), size_text(r->m.l3_bytes, l3, 32));
  tx_table t;
  tx_table_init(&t, "KERNEL|>D|TUNABLES");
  size_t n = txattn_kernel_count(r->ctx), shown = 0;
  for (size_t i = 0; i < n; i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(r->ctx, i, &k) != TXATTN_OK || !tunable_kernel(r, i, &k)) continue;
    add_tile_rows(r, &k, &t);
    shown++;
  }
  if (shown == 0) {
    printf("  no usable kernel declares tunables ('txtune list' shows the kernels)\n");
    tx_table_free(&t);
    return;
  }
  tx_table_print(&t, stdout, "  ");
  tx_table_free(&t);
  printf("\nrules (each kernel's description of its tunables; the defaults above follow them):\n");
  for (size_t i = 0; i < n; i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(r->ctx, i, &k) == TXATTN_OK && tunable_kernel(r, i, &k))
      print_rules(r, i, &k);
  }
  if (r->n_failed)
    printf("\nFAIL: %zu plan%s above FAILED: a kernel whose tiles cannot be derived here cannot "
           "run this problem (libtxattn's dispatcher takes another kernel)\n",
           r->n_failed, r->n_failed == 1 ? "" : "s");
}

/* ---- JSON ---- */

static void json_machine(tx_json *j, const txattn_machine_info *m) {
  tx_json_kv_object(j, "cpu");
  tx_json_cpu_fields(j, m);
  tx_json_end_object(j);
  tx_json_kv_object(j, "topology");
  tx_json_kv_string(j, "source", m->topology_source);
  tx_json_key(j, "file");
  tx_json_string(j, m->topology_file);
  tx_json_kv_int(j, "cores", m->n_cores);
  tx_json_kv_int(j, "pus", m->n_pus);
  tx_json_kv_int(j, "numa_nodes", m->n_numa);
  tx_json_end_object(j);
}

static void json_caches(tx_json *j, const txattn_machine_info *m) {
  const char *names[3] = {"l1d", "l2", "l3"};
  const int64_t hw[3] = {m->hw_l1d_bytes, m->hw_l2_bytes, m->hw_l3_bytes};
  const int64_t used[3] = {m->l1d_bytes, m->l2_bytes, m->l3_bytes};
  tx_json_kv_object(j, "caches");
  tx_json_kv_object(j, "hwloc");
  for (int l = 0; l < 3; l++) {
    tx_json_kv_object(j, names[l]);
    tx_json_kv_int(j, "per_core_bytes", hw[l]);
    tx_json_kv_int(j, "cache_bytes", m->hw_cache_total_bytes[l]);
    tx_json_kv_int(j, "sharing_cores", m->hw_cache_cores[l]);
    tx_json_end_object(j);
  }
  tx_json_end_object(j);
  tx_json_kv_object(j, "used");
  for (int l = 0; l < 3; l++) tx_json_kv_int(j, names[l], used[l]);
  tx_json_end_object(j);
  tx_json_kv_string(j, "source", m->cache_source);
  tx_json_kv_array(j, "notes");
  for (const char *p = m->cache_notes; *p;) {
    size_t n = strcspn(p, "\n");
    char note[1024];
    snprintf(note, sizeof note, "%.*s", (int)n, p);
    tx_json_string(j, note);
    p += n + (p[n] == '\n');
  }
  tx_json_end_array(j);
  tx_json_end_object(j);
}

static void json_declared(tx_json *j, const topo_run *r, size_t ki) {
  tx_json_kv_array(j, "tunables");
  for (size_t i = 0; i < txattn_kernel_tunable_count(r->ctx, ki); i++) {
    txattn_tunable_info ti = TXATTN_TUNABLE_INFO_INIT;
    if (txattn_kernel_tunable_get(r->ctx, ki, i, &ti) != TXATTN_OK) continue;
    tx_json_begin_object(j);
    tx_json_kv_string(j, "name", ti.name);
    tx_json_kv_string(j, "summary", ti.summary);
    tx_json_kv_int(j, "min", ti.min);
    tx_json_kv_int(j, "max", ti.max);
    tx_json_kv_int(j, "multiple_of", ti.multiple_of);
    tx_json_end_object(j);
  }
  tx_json_end_array(j);
}

static void json_by_d(tx_json *j, topo_run *r, const txattn_kernel_info *k) {
  tx_json_kv_array(j, "by_d");
  for (size_t i = 0; i < r->n_d; i++) {
    char why[512];
    txattn_status s;
    txattn_plan *plan = make_plan(r, k->name, r->d[i], why, sizeof why, &s);
    int failed = plan == NULL && s != TXATTN_E_UNSUPPORTED;
    r->n_failed += (size_t)failed;
    tx_json_begin_object(j);
    tx_json_kv_int(j, "d", r->d[i]);
    if (plan == NULL) {
      tx_json_kv_string(j, "status", txattn_status_name(s));
      tx_json_kv_bool(j, "failed", failed);
      tx_json_kv_string(j, "error", why);
    }
    if (plan) {
      tx_json_kv_object(j, "values");
      for (size_t t = 0; t < txattn_plan_tunable_count(plan); t++) {
        const char *name;
        int64_t v;
        if (txattn_plan_tunable_get(plan, t, &name, &v) == TXATTN_OK) tx_json_kv_int(j, name, v);
      }
      tx_json_end_object(j);
    }
    tx_json_end_object(j);
    txattn_plan_free(plan);
  }
  tx_json_end_array(j);
}

static void json_kernel(tx_json *j, topo_run *r, size_t ki, const txattn_kernel_info *k) {
  tx_json_begin_object(j);
  tx_json_kv_string(j, "name", k->name);
  tx_json_kv_string(j, "summary", k->summary);
  json_declared(j, r, ki);
  json_by_d(j, r, k);
  tx_json_end_object(j);
}

static void print_json(topo_run *r) {
  tx_json j;
  tx_json_init(&j, stdout);
  tx_json_begin_object(&j);
  json_machine(&j, &r->m);
  json_caches(&j, &r->m);
  tx_json_kv_object(&j, "problem");
  tx_json_kv_int(&j, "n", r->n);
  tx_json_kv_int(&j, "threads", txattn_context_threads(r->ctx));
  tx_json_end_object(&j);
  tx_json_kv_array(&j, "kernels");
  for (size_t i = 0; i < txattn_kernel_count(r->ctx); i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(r->ctx, i, &k) == TXATTN_OK && tunable_kernel(r, i, &k))
      json_kernel(&j, r, i, &k);
  }
  tx_json_end_array(&j);
  tx_json_kv_int(&j, "plan_failures", (int64_t)r->n_failed);
  tx_json_end_object(&j);
  tx_json_finish(&j);
}

int tx_cmd_topo(int argc, char **argv) {
  topo_run r;
  memset(&r, 0, sizeof r);
  int rc = parse(&r, argc, argv);
  if (rc < 0 && (rc = open_context(&r)) == 0) {
    if (r.json) {
      print_json(&r);
    } else {
      print_machine(&r);
      print_caches(&r);
      print_tiles(&r);
    }
    rc = r.n_failed ? TX_EXIT_FAIL : TX_EXIT_OK;
    fflush(stdout);
    if (r.n_failed && r.json) /* stdout is the JSON's; the text says it on its last line */
      fprintf(stderr, "txtune topo: FAIL: %zu plan%s failed (\"failed\": true)\n",
              (size_t)r.n_failed, r.n_failed == 1 ? "" : "s");
    if (txattn_kernel_count(r.ctx) == 0) { /* a plugin path that does not exist, say */
      fprintf(stderr, "txtune topo: no kernel was found on the plugin path ('txtune list' shows "
                      "why)\n");
      rc = TX_EXIT_FAIL;
    }
  }
  txattn_context_free(r.ctx);
  tx_strlist_free(&r.d_list);
  return rc;
}
