/* SPDX-License-Identifier: MIT */
/* txtune show: a dispatch table for people (header, fingerprint, whether it fits this machine, and
   per class who wins where, by how much), or normalised JSON for scripts. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "cmd_show.h"
#include "context_cli.h"
#include "problem_cli.h"
#include "text_table.h"
#include "txattn/plugin.h"
#include "txattn/table.h"

typedef struct show_run {
  int json, points;
  const char *file; /* the positional FILE, or NULL */
  tx_context_args ctx_args;
  tx_opt out_opts[2], ctx_opts[TX_CONTEXT_N_OPTS];
  tx_opt_group groups[2];
  tx_cmd_spec spec;
  txattn_context *ctx;
  txattn_table *t;
  char path[4096];
} show_run;

static const char about[] =
    "Shows a dispatch table: first its verdict here (valid; partly valid: followed for the\n"
    "kernels it measured, a plugin being new, another build or gone; stale: ignored), with every\n"
    "field that differs; then who measured it where (library, machine fingerprint, plugin\n"
    "builds), and per class the regions of n (and r for windows) each kernel wins, with its\n"
    "tunables, time, runner-up, margin and error. Without FILE: the table libtxattn loads:\n"
    "$TXATTN_TABLE, else $XDG_CACHE_HOME/txtune/dispatch.json, else\n"
    "~/.cache/txtune/dispatch.json.";

/* The one argument that is not an option or an option's value is FILE: the option parser knows
   only options, so it is taken out of argv first. */
static int take_file(show_run *r, int *argc, char **argv) {
  int out = 1;
  for (int i = 1; i < *argc; i++) {
    const char *a = argv[i];
    int takes_value = (strcmp(a, "--threads") == 0 || strcmp(a, "--plugin-path") == 0);
    if (a[0] != '-' || strcmp(a, "-") == 0) {
      if (r->file != NULL)
        return tx_args_usage_error(&r->spec, "one FILE at most, got '%s' and '%s'", r->file, a);
      r->file = a;
      continue;
    }
    argv[out++] = argv[i];
    if (takes_value && i + 1 < *argc) argv[out++] = argv[++i];
  }
  *argc = out;
  return 0;
}

static int parse(show_run *r, int argc, char **argv) {
  r->out_opts[0] = tx_opt_flag("json", &r->json, "the table as normalised JSON on stdout");
  r->out_opts[1] =
      tx_opt_flag("points", &r->points, "also every measured point with all its candidates");
  tx_context_args_init(&r->ctx_args);
  tx_context_opts(&r->ctx_args, r->ctx_opts);
  r->groups[0] = (tx_opt_group){"Options", r->out_opts, 2};
  r->groups[1] =
      (tx_opt_group){"Library (to compare the table with)", r->ctx_opts, TX_CONTEXT_N_OPTS};
  r->spec = (tx_cmd_spec){"show", "[FILE] [--json] [--points]", about, r->groups, 2};
  int rc = take_file(r, &argc, argv);
  return rc ? rc : tx_args_parse_cmd(&r->spec, argc, argv);
}

static void fmt_bytes(int64_t b, char *buf, size_t size) {
  if (b >= (1 << 20) && b % (1 << 20) == 0)
    snprintf(buf, size, "%lld MiB", (long long)(b >> 20));
  else if (b >= 1024 && b % 1024 == 0)
    snprintf(buf, size, "%lld KiB", (long long)(b >> 10));
  else
    snprintf(buf, size, "%lld B", (long long)b);
}

static void fmt_tunables(size_t n, const char *const *names, const int64_t *values, char *buf,
                         size_t size) {
  size_t used = 0;
  snprintf(buf, size, "-");
  for (size_t i = 0; i < n; i++)
    tx_appendf(buf, size, &used, "%s%s=%lld", i ? " " : "", names[i], (long long)values[i]);
}

/* ---- the profile's settings as a person reads them ---- */

/* The settings are a JSON object of free form (txattn_table_set_profile). They print as indented
   "key: value" lines, a nested object under its key; a list of more than a few values shows its
   first and last ones, a list of objects its length and the first one's keys; a line is cut at
   OUTLINE_WIDTH. A string of prose longer than OUTLINE_PROSE_MAX is an explanation for readers of
   the JSON and is left out: `txtune show --json` prints all of it. */
#define OUTLINE_WIDTH      100
#define OUTLINE_PROSE_MAX  48
#define OUTLINE_INLINE_MAX 8

/* Appends the scalar v to buf as text: a string without quotes, its line breaks and tabs blanks. */
static void append_scalar(const json_t *v, char *buf, size_t size) {
  size_t used = strlen(buf);
  char num[64];
  const char *text = num;
  if (json_is_string(v))
    text = json_string_value(v);
  else if (json_is_integer(v))
    snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  else if (json_is_real(v) && snprintf(num, sizeof num, "%.15g", json_real_value(v)) > 0 &&
           !strpbrk(num, ".eni"))
    strcat(num, ".0"); /* a real stays a real */
  else if (!json_is_real(v))
    text = json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null";
  for (; *text && used + 1 < size; text++) buf[used++] = strchr("\n\t\r", *text) ? ' ' : *text;
  buf[used] = '\0';
}

static void append_text(char *buf, size_t size, const char *text) {
  size_t used = strlen(buf);
  tx_appendf(buf, size, &used, "%s", text);
}

/* The array a in a line: its values, else its first and last ones, else its length and the keys of
   its first object. */
static void array_summary(const json_t *a, char *buf, size_t size) {
  const size_t n = json_array_size(a);
  size_t i, objects = 0;
  json_t *v, *obj = NULL;
  json_array_foreach(a, i, v) {
    objects += json_is_object(v) || json_is_array(v);
    if (!obj && json_is_object(v)) obj = v;
  }
  buf[0] = '\0';
  if (objects) {
    snprintf(buf, size, "%zu entr%s", n, n == 1 ? "y" : "ies");
    const char *key;
    int k = 0;
    if (obj) append_text(buf, size, ", each {");
    json_object_foreach(obj, key, v) {
      if (k++) append_text(buf, size, ", ");
      append_text(buf, size, key);
    }
    if (obj) append_text(buf, size, "}");
    return;
  }
  if (n > OUTLINE_INLINE_MAX) snprintf(buf, size, "%zu values: ", n);
  append_text(buf, size, n <= OUTLINE_INLINE_MAX ? "[" : "");
  json_array_foreach(a, i, v) {
    if (n > OUTLINE_INLINE_MAX && i >= 3 && i + 1 < n) continue; /* the first three, the last */
    if (i) append_text(buf, size, n > OUTLINE_INLINE_MAX && i + 1 == n && n > 4 ? ", ..., " : ", ");
    append_scalar(v, buf, size);
  }
  append_text(buf, size, n <= OUTLINE_INLINE_MAX ? "]" : "");
}

static void outline_line(int indent, const char *key, const char *value) {
  char line[OUTLINE_WIDTH + 8];
  int k = snprintf(line, sizeof line, "%*s%s: %s", indent, "", key, value);
  if (k > OUTLINE_WIDTH) memcpy(line + OUTLINE_WIDTH - 3, "...", 4);
  printf("%s\n", line);
}

static void outline_object(const json_t *o, int indent) {
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)o, key, v) {
    char value[1024] = "";
    if (json_is_object(v) && json_object_size(v)) {
      printf("%*s%s:\n", indent, "", key);
      outline_object(v, indent + 2);
      continue;
    }
    if (json_is_object(v))
      snprintf(value, sizeof value, "{}");
    else if (json_is_array(v))
      array_summary(v, value, sizeof value);
    else
      append_scalar(v, value, sizeof value);
    int prose = json_is_string(v) && strchr(value, ' ') && strlen(value) > OUTLINE_PROSE_MAX;
    if (!prose) outline_line(indent, key, value);
  }
}

static void print_profile(const char *text) {
  json_t *root = json_loads(text, 0, NULL);
  printf("  profile settings (with their explanations: txtune show --json):\n");
  if (json_is_object(root))
    outline_object(root, 4);
  else
    printf("    %s\n", text); /* not an object: as it is */
  json_decref(root);
}

static void print_header(const show_run *r, const txattn_table_header *h) {
  const txattn_machine_info *m = &h->machine;
  char l1[32], l2[32], l3[32];
  fmt_bytes(m->l1d_bytes, l1, sizeof l1);
  fmt_bytes(m->l2_bytes, l2, sizeof l2);
  fmt_bytes(m->l3_bytes, l3, sizeof l3);
  printf("  format %s %d, written by libtxattn %s at %s\n", TXATTN_TABLE_FORMAT, h->format_version,
         h->library_version, h->created);
  printf("  machine: %s %s (family %d, model %d, stepping %d), %d cores\n", m->vendor,
         *m->brand ? m->brand : "(no brand string)", m->family, m->model, m->stepping, m->n_cores);
  fputs("  isa:", stdout);
  for (int b = 0; b < TXATTN_ISA_COUNT_; b++)
    if (m->isa_mask & (1u << b)) printf(" %s", txattn_isa_name((txattn_isa)b));
  printf("; caches used: l1d %s, l2 %s, l3 %s per core\n", l1, l2, l3);
  for (size_t i = 0; i < h->n_plugins; i++) {
    txattn_table_plugin p = TXATTN_TABLE_PLUGIN_INIT;
    if (txattn_table_plugin_get(r->t, i, &p) == TXATTN_OK)
      printf("  %-8s %s %s (%s)\n", i ? "" : "plugins:", p.name, p.version, p.build);
  }
  if (*h->profile) print_profile(h->profile);
}

/* The lines of a "; "-separated list, each indented. */
static void print_items(const char *list) {
  for (const char *d = list, *end; d != NULL; d = end ? end + 2 : NULL) {
    end = strstr(d, "; ");
    printf("    %.*s\n", end ? (int)(end - d) : (int)strlen(d), d);
  }
}

/* The verdict, first: what libtxattn does with this table here (a context that loads it says),
   and every difference from this machine, library and plugins (txattn_table_check). */
static void print_verdict(const show_run *r) {
  char why[4096];
  txattn_status s = txattn_table_check(r->t, r->ctx, why, sizeof why);
  if (s != TXATTN_OK && s != TXATTN_E_TABLE) {
    printf("  here: cannot compare: %s\n", txattn_last_error());
    return;
  }
  switch (txattn_context_table_status(r->ctx)) {
  case TXATTN_TABLE_LOADED:
    printf("  here: VALID: fits this machine, this library and these plugins: libtxattn follows "
           "it\n");
    return;
  case TXATTN_TABLE_PARTIAL:
    printf("  here: PARTLY VALID: libtxattn follows it for the kernels it measured, which are as "
           "they were; these differ:\n");
    print_items(why);
    printf("  where it has an entry, the estimate ranks the kernels it did not measure beside its "
           "choice (a third-party kernel never displaces it); `txtune profile --update` measures "
           "them\n");
    return;
  case TXATTN_TABLE_STALE:
    printf("  here: STALE, libtxattn ignores it:\n");
    print_items(s == TXATTN_E_TABLE ? why : txattn_context_table_state(r->ctx));
    printf("  `txtune profile` measures this machine again\n");
    return;
  default: /* read once, then not: it changed meanwhile */
    printf("  here: %s\n", txattn_context_table_state(r->ctx));
  }
}

static void fmt_range(int64_t lo, int64_t hi, char *buf, size_t size) {
  if (lo == hi)
    snprintf(buf, size, "%lld", (long long)lo);
  else
    snprintf(buf, size, "%lld..%lld", (long long)lo, (long long)hi);
}

static void region_row(tx_table *tab, const txattn_table_class *c, const txattn_table_region *g) {
  char n[48], rr[48], tun[256], t1[32], t2[32], time[72], margin[32], err[32];
  fmt_range(g->n_lo, g->n_hi, n, sizeof n);
  fmt_range(g->r_lo, g->r_hi, rr, sizeof rr);
  fmt_tunables(g->winner.n_tunables, g->winner.tunable_names, g->winner.tunable_values, tun,
               sizeof tun);
  tx_fmt_time(g->time_min_s, t1, sizeof t1);
  tx_fmt_time(g->time_max_s, t2, sizeof t2);
  if (strcmp(t1, t2) == 0) /* one point, or times alike to the digits shown */
    snprintf(time, sizeof time, "%s", t1);
  else
    snprintf(time, sizeof time, "%s..%s", t1, t2);
  snprintf(margin, sizeof margin, g->runner_up ? "%.2fx" : "-", g->margin);
  snprintf(err, sizeof err, "%.2g", g->max_error);
  const char *cells[] = {n, rr, g->winner.kernel, tun, time, g->runner_up, margin, err};
  if (c->mask == TXATTN_MASK_WINDOW) {
    tx_table_add(tab, cells);
  } else {
    const char *no_r[] = {n, g->winner.kernel, tun, time, g->runner_up, margin, err};
    tx_table_add(tab, no_r);
  }
}

static void print_points(const show_run *r, size_t ci, size_t n_points) {
  for (size_t i = 0; i < n_points; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(r->t, ci, i, &p) != TXATTN_OK) continue;
    printf("    n=%lld", (long long)p.n);
    if (p.r) printf(" r=%lld", (long long)p.r);
    printf("%s:", p.tie ? " (a tie: the first chosen among times within their noise)" : "");
    double first = 0;
    for (size_t k = 0; k < p.n_candidates; k++) {
      txattn_table_candidate c = TXATTN_TABLE_CANDIDATE_INIT;
      char t[32], tun[256];
      if (txattn_table_candidate_get(r->t, ci, i, k, &c) != TXATTN_OK) continue;
      if (k == 0) first = c.time_s;
      tx_fmt_time(c.time_s, t, sizeof t);
      fmt_tunables(c.n_tunables, c.tunable_names, c.tunable_values, tun, sizeof tun);
      printf("%s %s%s%s %s", k ? "," : "", c.kernel, c.n_tunables ? " " : "",
             c.n_tunables ? tun : "", t);
      if (k) printf(" (%.2fx)", c.time_s / first);
    }
    printf("\n");
  }
}

static void print_class(const show_run *r, size_t ci) {
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  size_t n_points, n_regions;
  char d[96];
  if (txattn_table_class_get(r->t, ci, &c, &n_points, &n_regions) != TXATTN_OK) return;
  txattn_table_class_describe(&c, d, sizeof d);
  printf("\nclass %s (measured with batch %lld, %lld query heads): %zu point%s, %zu region%s\n", d,
         (long long)c.batch, (long long)c.heads_q, n_points, n_points == 1 ? "" : "s", n_regions,
         n_regions == 1 ? "" : "s");
  tx_table tab;
  tx_table_init(&tab, c.mask == TXATTN_MASK_WINDOW
                          ? ">N|>R|WINNER|TUNABLES|TIME|RUNNER-UP|>MARGIN|>MAX ERROR"
                          : ">N|WINNER|TUNABLES|TIME|RUNNER-UP|>MARGIN|>MAX ERROR");
  for (size_t i = 0; i < n_regions; i++) {
    txattn_table_region g = TXATTN_TABLE_REGION_INIT;
    if (txattn_table_region_get(r->t, ci, i, &g) == TXATTN_OK) region_row(&tab, &c, &g);
  }
  tx_table_print(&tab, stdout, "  ");
  tx_table_free(&tab);
  if (r->points) print_points(r, ci, n_points);
}

/* What the parts of a class name mean: the masks this table has, the other parts with the first
   class's values as the example. */
static void print_legend(const show_run *r, size_t n_classes) {
  int causal = 0, none = 0, sym = 0, left = 0, decode = 0, ragged = 0, have = 0;
  txattn_table_class ex = {0};
  for (size_t i = 0; i < n_classes; i++) {
    txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
    if (txattn_table_class_get(r->t, i, &c, NULL, NULL) != TXATTN_OK) continue;
    if (!have) ex = c, have = 1;
    none |= c.mask == TXATTN_MASK_NONE;
    causal |= c.mask == TXATTN_MASK_CAUSAL;
    sym |= c.mask == TXATTN_MASK_WINDOW && c.window == TXATTN_TABLE_WINDOW_SYM;
    left |= c.mask == TXATTN_MASK_WINDOW && c.window == TXATTN_TABLE_WINDOW_LEFT;
    decode |= c.decode;
    ragged |= c.ragged;
  }
  if (!have) return;
  /* the type combinations of the typed classes, each once */
  tx_dtypes types[8];
  size_t n_types = 0;
  for (size_t i = 0; i < n_classes; i++) {
    txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
    if (txattn_table_class_get(r->t, i, &c, NULL, NULL) != TXATTN_OK) continue;
    tx_dtypes x = {{c.q_type, c.k_type, c.v_type, c.o_type}};
    size_t k = 0;
    while (k < n_types && memcmp(&types[k], &x, sizeof x) != 0) k++;
    if (k == n_types && n_types < 8 && !tx_dtypes_all_f32(&x)) types[n_types++] = x;
  }
  char d[48], g[32], t[32];
  snprintf(d, sizeof d, "d%lld/%lld", (long long)ex.d_qk, (long long)ex.d_v);
  snprintf(g, sizeof g, "g%lld", (long long)ex.group);
  snprintf(t, sizeof t, "t%d", ex.threads);
  printf("\nclass names are MASK dQK/DV gGROUP tTHREADS [decode]%s%s; N counts the keys (n_kv), "
         "R the window's reach:\n",
         ragged ? " [ragged]" : "", n_types ? " [TYPES]" : "");
  if (none) printf("  %-12s every key visible\n", "none");
  if (causal) printf("  %-12s query row i sees keys j <= pos(i) = i + n_kv - n_q\n", "causal");
  if (sym)
    printf("  %-12s a window of R keys on each side: pos(i) - R <= j <= pos(i) + R\n",
           "window-sym");
  if (left)
    printf("  %-12s a sliding window, the R keys before: pos(i) - R <= j <= pos(i)\n",
           "window-left");
  printf("  %-12s head sizes: d_qk %lld (queries and keys), d_v %lld (values)\n", d,
         (long long)ex.d_qk, (long long)ex.d_v);
  printf("  %-12s GQA group: %lld query head%s per key/value head (g1: every head its own)\n", g,
         (long long)ex.group, ex.group == 1 ? "" : "s");
  printf("  %-12s run on %d thread%s\n", t, ex.threads, ex.threads == 1 ? "" : "s");
  if (decode)
    printf("  %-12s one query row against N keys (without it: N queries, N keys)\n", "decode");
  if (ragged)
    printf("  %-12s one call for a batch of decode sequences of different lengths, N the longest "
           "(docs/dispatch_table.md has the lengths)\n",
           "ragged");
  for (size_t i = 0; i < n_types; i++) {
    char name[48];
    tx_dtypes_format(&types[i], name, sizeof name);
    printf("  %-12s element types q %s, k %s, v %s, o %s (without TYPES: every tensor f32)\n", name,
           txattn_dtype_name(types[i].t[0]), txattn_dtype_name(types[i].t[1]),
           txattn_dtype_name(types[i].t[2]), txattn_dtype_name(types[i].t[3]));
  }
}

/* An exclusion the profile made because the kernel could not plan the point, or because a timed
   call of it was faster than the machine can compute (their reasons start so), not because it
   failed the exactness check. */
static int reason_starts(const txattn_table_exclusion *x, const char *prefix) {
  return strncmp(x->reason, prefix, strlen(prefix)) == 0;
}
static int failed_to_plan(const txattn_table_exclusion *x) {
  return reason_starts(x, "failed to plan");
}
static int too_fast(const txattn_table_exclusion *x) {
  return reason_starts(x, "impossibly fast");
}

static void print_excluded(const show_run *r, size_t n) {
  if (n == 0) return;
  size_t n_plan = 0, n_fast = 0;
  for (size_t i = 0; i < n; i++) {
    txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
    if (txattn_table_exclusion_get(r->t, i, &x) != TXATTN_OK) continue;
    n_plan += (size_t)failed_to_plan(&x);
    n_fast += (size_t)too_fast(&x);
  }
  printf("\nexcluded (%zu): %zu failed the exactness check (inexact, or crashed on it), ", n,
         n - n_plan - n_fast);
  if (n_fast) printf("%zu ran faster than this machine can compute, ", n_fast);
  printf("%zu failed to plan a point\n", n_plan);
  for (size_t i = 0; i < n; i++) {
    txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
    char d[96], tun[256];
    if (txattn_table_exclusion_get(r->t, i, &x) != TXATTN_OK) continue;
    txattn_table_class_describe(&x.cls, d, sizeof d);
    fmt_tunables(x.n_tunables, x.tunable_names, x.tunable_values, tun, sizeof tun);
    printf("  %s%s%s in %s at n=%lld", x.kernel, x.n_tunables ? " " : "", x.n_tunables ? tun : "",
           d, (long long)x.n);
    if (x.r) printf(" r=%lld", (long long)x.r);
    if (failed_to_plan(&x) || too_fast(&x))
      printf(": %s\n", x.reason);
    else if (x.max_error == x.max_error)
      printf(": not exact, max error %.3g: %s\n", x.max_error, x.reason);
    else /* no finite error: the reason says why (an output not finite, a crash) */
      printf(": failed the exactness check: %s\n", x.reason);
  }
}

static int load(show_run *r) {
  if (r->file) {
    snprintf(r->path, sizeof r->path, "%s", r->file);
  } else if (txattn_table_default_path(r->path, sizeof r->path) != TXATTN_OK) {
    fprintf(stderr, "txtune show: %s\n", txattn_last_error());
    return TX_EXIT_FAIL;
  }
  txattn_status s = txattn_table_load(r->path, &r->t);
  if (s == TXATTN_OK) return 0;
  struct stat st; /* only a path that is not there is "no table"; a FIFO, a directory... say why */
  if (s == TXATTN_E_IO && !r->file && stat(r->path, &st) != 0 && errno == ENOENT)
    fprintf(stderr, "txtune show: no table at %s: run `txtune profile` to measure this machine\n",
            r->path);
  else
    tx_print_lib_error("show", "cannot use the table", s);
  return TX_EXIT_FAIL;
}

int tx_cmd_show(int argc, char **argv) {
  show_run r;
  memset(&r, 0, sizeof r);
  int rc = parse(&r, argc, argv);
  if (rc >= 0) return rc;
  if ((rc = load(&r)) != 0) return rc;
  if (r.json) {
    txattn_status s = txattn_table_dump(r.t, stdout);
    txattn_table_free(r.t);
    if (s != TXATTN_OK) tx_print_lib_error("show", "cannot print the table", s);
    return s == TXATTN_OK ? TX_EXIT_OK : TX_EXIT_FAIL;
  }
  txattn_options opts = {.plugin_path = r.ctx_args.plugin_path,
                         .table_path = r.path,
                         .n_threads = (int)r.ctx_args.threads};
  txattn_status s = txattn_context_create(&opts, &r.ctx);
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  txattn_table_header_get(r.t, &h);
  printf("dispatch table %s\n", h.path);
  fflush(stdout);
  if (s == TXATTN_OK)
    print_verdict(&r);
  else
    tx_print_lib_error("show", "cannot compare with this machine", s);
  print_header(&r, &h);
  for (size_t i = 0; i < h.n_classes; i++) print_class(&r, i);
  print_legend(&r, h.n_classes);
  print_excluded(&r, h.n_excluded);
  txattn_table_free(r.t);
  txattn_context_free(r.ctx);
  return TX_EXIT_OK;
}
