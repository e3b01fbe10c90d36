/* SPDX-License-Identifier: MIT */
/* txtune list: what the loader found: every kernel, whether it can run here (and whether the
   dispatch table libtxattn follows refused it, and why), and every plugin file it refused, with the
   reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "cmd_list.h"
#include "context_cli.h"
#include "json.h"
#include "kernels.h"
#include "text_table.h"
#include "txattn/plugin.h"
#include "txattn/table.h"

typedef struct list_run {
  int json;
  tx_context_args ctx_args;
  tx_opt out_opts[1], ctx_opts[TX_CONTEXT_N_OPTS];
  tx_opt_group groups[2];
  tx_cmd_spec spec;
  txattn_context *ctx;
} list_run;

static const char about[] =
    "Lists every kernel the plugin loader found: whether this CPU and OS can run it (and why "
    "not),\n"
    "its ISA and flags, the element types it takes, its plugin and file, and where the dispatch\n"
    "table libtxattn follows excluded it, why (txtune show lists every exclusion); then every\n"
    "plugin file that was refused, and why.\n"
    "Exit status: 0 ok; 1 no kernel found (a plugin path that does not exist, say); 2 usage "
    "error.";

static int parse(list_run *r, int argc, char **argv) {
  r->out_opts[0] = tx_opt_flag("json", &r->json, "one JSON object on stdout");
  tx_context_args_init(&r->ctx_args);
  tx_context_opts(&r->ctx_args, r->ctx_opts);
  r->groups[0] = (tx_opt_group){"Options", r->out_opts, 1};
  r->groups[1] = (tx_opt_group){"Library", r->ctx_opts, TX_CONTEXT_N_OPTS};
  r->spec = (tx_cmd_spec){"list", "[--plugin-path DIRS] [--json]", about, r->groups, 2};
  return tx_args_parse_cmd(&r->spec, argc, argv);
}

static const char *safe(const char *s, char *buf, size_t size);

/* The directories the files came from: the search path resolved, as far as the API shows it. */
static void print_dirs(const txattn_context *ctx) {
  char seen[16][512];
  size_t n_seen = 0, nk = txattn_kernel_count(ctx), nr = txattn_rejected_count(ctx);
  for (size_t i = 0; i < nk + nr && n_seen < 16; i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    txattn_rejected_info rj = TXATTN_REJECTED_INFO_INIT;
    const char *path = NULL;
    if (i < nk && txattn_kernel_get(ctx, i, &k) == TXATTN_OK) path = k.path;
    /* a refused file was found in its directory; a refused entry of the plugin path itself (a
       directory, or a file named as one) was not found anywhere: its parent is not listed */
    struct stat st;
    if (i >= nk && txattn_rejected_get(ctx, i - nk, &rj) == TXATTN_OK && stat(rj.path, &st) == 0 &&
        S_ISREG(st.st_mode) && strcmp(rj.reason, "not a directory") != 0)
      path = rj.path;
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!slash) continue;
    char dir[512];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    size_t j = 0;
    while (j < n_seen && strcmp(seen[j], dir) != 0) j++;
    if (j == n_seen) {
      snprintf(seen[n_seen++], sizeof seen[0], "%s", dir);
      char shown[2048];
      printf("%s %s\n", n_seen == 1 ? "plugin files found in:" : "                      ",
             safe(dir, shown, sizeof shown));
    }
  }
}

static void print_header(const list_run *r) {
  const char *path, *source = tx_plugin_path_source(&r->ctx_args, &path);
  printf("txtune %s with libtxattn %s (plugin ABI %u), %d threads\n", TXATTN_VERSION_STRING,
         txattn_version_string(), TXATTN_PLUGIN_ABI_VERSION, txattn_context_threads(r->ctx));
  char shown[4096];
  if (path)
    printf("plugin path (%s): %s\n", source, safe(path, shown, sizeof shown));
  else
    printf("plugin path: %s\n", source);
  print_dirs(r->ctx);
}

/* s with every byte outside printable ASCII written as \xHH, so that nothing a plugin file or its
   name says can move the terminal's cursor or fake a line (the loader refuses such versions, but a
   file name can hold anything). Cut short when buf is full. */
static const char *safe(const char *s, char *buf, size_t size) {
  size_t used = 0;
  for (; s != NULL && *s != '\0' && used + 5 < size; s++) {
    unsigned char c = (unsigned char)*s;
    if (c >= 0x20 && c < 0x7f)
      buf[used++] = (char)c;
    else
      used += (size_t)snprintf(buf + used, size - used, "\\x%02x", c);
  }
  buf[used] = '\0';
  return buf;
}

/* "f32/f16/bf16" for one tensor's set of types, "all" for all three */
static void types_of(unsigned set, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  if (set == TXATTN_DTYPES_ALL) tx_appendf(out, size, &len, "all");
  for (int t = TXATTN_DTYPE_F32;
       txattn_dtype_size((txattn_dtype)t) != 0 && set != TXATTN_DTYPES_ALL; t++)
    if (set & TXATTN_DTYPE_BIT(t)) /* the 8-bit and 4-bit k/v too */
      tx_appendf(out, size, &len, "%s%s", len ? "/" : "", txattn_dtype_name((txattn_dtype)t));
}

/* The element types a kernel takes: one set when q, k, v and o share it ("f32", "all"), else
   "q k bf16, v o all" */
static void kernel_types_text(const txattn_kernel_info *k, char *out, size_t size) {
  static const char *const tensor[4] = {"q", "k", "v", "o"};
  const unsigned *d = k->dtypes;
  char set[48];
  size_t len = 0;
  if (d[1] == d[0] && d[2] == d[0] && d[3] == d[0]) {
    types_of(d[0], out, size);
    return;
  }
  out[0] = '\0';
  for (int i = 0; i < 4; i++) {
    if (i < 3 && d[i + 1] == d[i]) {
      tx_appendf(out, size, &len, "%s ", tensor[i]);
      continue;
    }
    types_of(d[i], set, sizeof set);
    tx_appendf(out, size, &len, "%s %s%s", tensor[i], set, i < 3 ? ", " : "");
  }
}

/* How many candidates of kernel `name` the context's dispatch table excluded (txtune profile's
   exclusions: inexact, crashed, cheated, failed to plan), the first in *first; 0 without a loaded
   table. */
static size_t table_refusals(const txattn_context *ctx, const char *name,
                             txattn_table_exclusion *first) {
  const txattn_table *t = txattn_context_table(ctx);
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  size_t n = 0;
  if (t == NULL || txattn_table_header_get(t, &h) != TXATTN_OK) return 0;
  for (size_t i = 0; i < h.n_excluded; i++) {
    txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
    if (txattn_table_exclusion_get(t, i, &x) != TXATTN_OK || strcmp(x.kernel, name) != 0) continue;
    if (n++ == 0) *first = x;
  }
  return n;
}

static void print_kernels(const txattn_context *ctx) {
  size_t n = txattn_kernel_count(ctx);
  if (n == 0) {
    printf("\nno kernels found: check the plugin path above, and the refused files below\n");
    return;
  }
  tx_table t;
  tx_table_init(&t, "KERNEL|USABLE|ISA|FLAGS|TYPES|PLUGIN|FILE");
  for (size_t i = 0; i < n; i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, i, &k) != TXATTN_OK) continue;
    char flags[96], types[96], plugin[384], version[300], path[1024];
    tx_kernel_flags_text(k.flags, flags, sizeof flags);
    kernel_types_text(&k, types, sizeof types);
    snprintf(plugin, sizeof plugin, "%s %s", k.plugin,
             safe(k.plugin_version, version, sizeof version));
    const char *cells[] = {k.name, k.usable ? "yes" : "no",        k.isa, flags, types,
                           plugin, safe(k.path, path, sizeof path)};
    tx_table_add(&t, cells);
    if (!k.usable) tx_table_note(&t, "not usable: %s", k.why_unusable ? k.why_unusable : "?");
    txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
    size_t refused = table_refusals(ctx, k.name, &x);
    char cls[96], reason[1024];
    if (refused == 0) continue;
    txattn_table_class_describe(&x.cls, cls, sizeof cls);
    tx_table_note(&t, "the dispatch table excluded it %zu time%s, the first in %s at n=%lld: %s",
                  refused, refused == 1 ? "" : "s", cls, (long long)x.n,
                  safe(x.reason, reason, sizeof reason));
  }
  printf("\n");
  tx_table_print(&t, stdout, "");
  tx_table_free(&t);
}

static void print_rejected(const txattn_context *ctx) {
  size_t n = txattn_rejected_count(ctx);
  if (n == 0) {
    printf("\nno plugin file was refused\n");
    return;
  }
  printf("\nrefused plugin files (%zu):\n", n);
  size_t quarantined = 0;
  for (size_t i = 0; i < n; i++) {
    txattn_rejected_info rj = TXATTN_REJECTED_INFO_INIT;
    char path[1024], reason[2048];
    if (txattn_rejected_get(ctx, i, &rj) != TXATTN_OK) continue;
    printf("  %s\n      %s\n", safe(rj.path, path, sizeof path),
           safe(rj.reason, reason, sizeof reason));
    quarantined += strncmp(rj.reason, "quarantined", 11) == 0;
  }
  /* the library's scanner (docs/plugins.md "Scanning") keeps its verdicts by file content */
  if (quarantined)
    printf(
        "\n%zu file(s) quarantined: they failed when run in the plugin scanner's process and are\n"
        "never loaded; a changed file is scanned again (docs/plugins.md, \"Scanning\")\n",
        quarantined);
}

static void json_kernel(tx_json *j, const txattn_context *ctx, const txattn_kernel_info *k) {
  tx_json_begin_object(j);
  tx_json_kv_string(j, "name", k->name);
  tx_json_kv_string(j, "summary", k->summary);
  tx_json_kv_bool(j, "usable", k->usable);
  tx_json_kv_string(j, "why_unusable", k->usable ? NULL : k->why_unusable);
  tx_json_kv_string(j, "isa", k->isa);
  tx_json_kv_bool(j, "threaded", (k->flags & TXATTN_KERNEL_THREADED) != 0);
  tx_json_kv_bool(j, "sparse", (k->flags & TXATTN_KERNEL_SPARSE) != 0);
  tx_json_kv_string(j, "one_thread_same_as", k->one_thread_same_as);
  /* "dtypes": {"q": ["f32", ...], "k": ..., "v": ..., "o": ...}, the types each tensor may have */
  static const char *const tensor[4] = {"q", "k", "v", "o"};
  tx_json_kv_object(j, "dtypes");
  for (int i = 0; i < 4; i++) {
    tx_json_kv_array(j, tensor[i]);
    for (int t = TXATTN_DTYPE_F32; txattn_dtype_size((txattn_dtype)t) != 0;
         t++) /* 8-, 4-bit k/v too */
      if (k->dtypes[i] & TXATTN_DTYPE_BIT(t)) tx_json_string(j, txattn_dtype_name((txattn_dtype)t));
    tx_json_end_array(j);
  }
  tx_json_end_object(j);
  tx_json_kv_string(j, "plugin", k->plugin);
  tx_json_kv_string(j, "plugin_version", k->plugin_version);
  tx_json_kv_string(j, "path", k->path);
  /* "table_excluded": {"count": N, "first": "reason"}, or null */
  txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
  size_t refused = table_refusals(ctx, k->name, &x);
  tx_json_key(j, "table_excluded");
  if (refused == 0) {
    tx_json_null(j);
  } else {
    tx_json_begin_object(j);
    tx_json_kv_int(j, "count", (int64_t)refused);
    tx_json_kv_string(j, "first", x.reason);
    tx_json_end_object(j);
  }
  tx_json_end_object(j);
}

static void print_json(const list_run *r) {
  const char *path, *source = tx_plugin_path_source(&r->ctx_args, &path);
  tx_json j;
  tx_json_init(&j, stdout);
  tx_json_begin_object(&j);
  tx_json_kv_string(&j, "txtune_version", TXATTN_VERSION_STRING);
  tx_json_kv_string(&j, "library_version", txattn_version_string());
  tx_json_kv_int(&j, "plugin_abi", TXATTN_PLUGIN_ABI_VERSION);
  tx_json_kv_int(&j, "threads", txattn_context_threads(r->ctx));
  tx_json_kv_string(&j, "plugin_path_source", source);
  tx_json_kv_string(&j, "plugin_path", path);
  tx_json_kv_array(&j, "kernels");
  for (size_t i = 0; i < txattn_kernel_count(r->ctx); i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(r->ctx, i, &k) == TXATTN_OK) json_kernel(&j, r->ctx, &k);
  }
  tx_json_end_array(&j);
  tx_json_kv_array(&j, "rejected");
  for (size_t i = 0; i < txattn_rejected_count(r->ctx); i++) {
    txattn_rejected_info rj = TXATTN_REJECTED_INFO_INIT;
    if (txattn_rejected_get(r->ctx, i, &rj) != TXATTN_OK) continue;
    tx_json_begin_object(&j);
    tx_json_kv_string(&j, "path", rj.path);
    tx_json_kv_string(&j, "reason", rj.reason);
    tx_json_end_object(&j);
  }
  tx_json_end_array(&j);
  tx_json_end_object(&j);
  tx_json_finish(&j);
}

int tx_cmd_list(int argc, char **argv) {
  list_run r;
  memset(&r, 0, sizeof r);
  int rc = parse(&r, argc, argv);
  if (rc >= 0) return rc;
  if ((rc = tx_context_open("list", &r.ctx_args, &r.ctx)) != 0) return rc;
  if (r.json) {
    print_json(&r);
  } else {
    print_header(&r);
    print_kernels(r.ctx);
    print_rejected(r.ctx);
  }
  rc = txattn_kernel_count(r.ctx) == 0 ? TX_EXIT_FAIL : TX_EXIT_OK;
  fflush(stdout); /* the last line is this one, also where both go to one file */
  if (rc != TX_EXIT_OK)
    fprintf(stderr, "txtune list: FAIL: no kernel was loaded from the plugin path%s\n",
            txattn_rejected_count(r.ctx) ? " (the files refused, and why, are listed above)" : "");
  txattn_context_free(r.ctx);
  return rc;
}
