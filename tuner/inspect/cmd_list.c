/* txtune list: what the loader found: every kernel, whether it can run here, and every plugin file
   it refused, with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "context_cli.h"
#include "json.h"
#include "kernels.h"
#include "text_table.h"
#include "txattn/plugin.h"

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
    "its ISA and flags, its plugin and file; then every plugin file that was refused, and why.";

static int parse(list_run *r, int argc, char **argv) {
  r->out_opts[0] = tx_opt_flag("json", &r->json, "one JSON object on stdout");
  tx_context_args_init(&r->ctx_args);
  tx_context_opts(&r->ctx_args, r->ctx_opts);
  r->groups[0] = (tx_opt_group){"Options", r->out_opts, 1};
  r->groups[1] = (tx_opt_group){"Library", r->ctx_opts, TX_CONTEXT_N_OPTS};
  r->spec = (tx_cmd_spec){"list", "[--plugin-path DIRS] [--json]", about, r->groups, 2};
  return tx_args_parse_cmd(&r->spec, argc, argv);
}

/* The directories the files came from: the search path resolved, as far as the API shows it. */
static void print_dirs(const txattn_context *ctx) {
  char seen[16][512];
  size_t n_seen = 0, nk = txattn_kernel_count(ctx), nr = txattn_rejected_count(ctx);
  for (size_t i = 0; i < nk + nr && n_seen < 16; i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    txattn_rejected_info rj = TXATTN_REJECTED_INFO_INIT;
    const char *path = NULL;
    if (i < nk && txattn_kernel_get(ctx, i, &k) == TXATTN_OK) path = k.path;
    if (i >= nk && txattn_rejected_get(ctx, i - nk, &rj) == TXATTN_OK) path = rj.path;
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!slash) continue;
    char dir[512];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    size_t j = 0;
    while (j < n_seen && strcmp(seen[j], dir) != 0) j++;
    if (j == n_seen) {
      snprintf(seen[n_seen++], sizeof seen[0], "%s", dir);
      printf("%s %s\n", n_seen == 1 ? "plugin files found in:" : "                      ", dir);
    }
  }
}

static void print_header(const list_run *r) {
  const char *path, *source = tx_plugin_path_source(&r->ctx_args, &path);
  printf("txtune %s with libtxattn %s (plugin ABI %u), %d threads\n", TXATTN_VERSION_STRING,
         txattn_version_string(), TXATTN_PLUGIN_ABI_VERSION, txattn_context_threads(r->ctx));
  if (path)
    printf("plugin path (%s): %s\n", source, path);
  else
    printf("plugin path: %s\n", source);
  print_dirs(r->ctx);
}

static void print_kernels(const txattn_context *ctx) {
  size_t n = txattn_kernel_count(ctx);
  if (n == 0) {
    printf("\nno kernels found: check the plugin path above, and the refused files below\n");
    return;
  }
  tx_table t;
  tx_table_init(&t, "KERNEL|USABLE|ISA|FLAGS|PLUGIN|FILE");
  for (size_t i = 0; i < n; i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, i, &k) != TXATTN_OK) continue;
    char flags[32], plugin[128];
    tx_kernel_flags_text(k.flags, flags, sizeof flags);
    snprintf(plugin, sizeof plugin, "%s %s", k.plugin, k.plugin_version ? k.plugin_version : "");
    const char *cells[] = {k.name, k.usable ? "yes" : "no", k.isa, flags, plugin, k.path};
    tx_table_add(&t, cells);
    if (!k.usable) tx_table_note(&t, "not usable: %s", k.why_unusable ? k.why_unusable : "?");
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
  for (size_t i = 0; i < n; i++) {
    txattn_rejected_info rj = TXATTN_REJECTED_INFO_INIT;
    if (txattn_rejected_get(ctx, i, &rj) == TXATTN_OK)
      printf("  %s\n      %s\n", rj.path, rj.reason);
  }
}

static void json_kernel(tx_json *j, const txattn_kernel_info *k) {
  tx_json_begin_object(j);
  tx_json_kv_string(j, "name", k->name);
  tx_json_kv_string(j, "summary", k->summary);
  tx_json_kv_bool(j, "usable", k->usable);
  tx_json_kv_string(j, "why_unusable", k->usable ? NULL : k->why_unusable);
  tx_json_kv_string(j, "isa", k->isa);
  tx_json_kv_bool(j, "threaded", (k->flags & TXATTN_KERNEL_THREADED) != 0);
  tx_json_kv_bool(j, "sparse", (k->flags & TXATTN_KERNEL_SPARSE) != 0);
  tx_json_kv_string(j, "one_thread_same_as", k->one_thread_same_as);
  tx_json_kv_string(j, "plugin", k->plugin);
  tx_json_kv_string(j, "plugin_version", k->plugin_version);
  tx_json_kv_string(j, "path", k->path);
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
  tx_json_key(&j, "kernels");
  tx_json_begin_array(&j);
  for (size_t i = 0; i < txattn_kernel_count(r->ctx); i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(r->ctx, i, &k) == TXATTN_OK) json_kernel(&j, &k);
  }
  tx_json_end_array(&j);
  tx_json_key(&j, "rejected");
  tx_json_begin_array(&j);
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
  txattn_context_free(r.ctx);
  return TX_EXIT_OK;
}
