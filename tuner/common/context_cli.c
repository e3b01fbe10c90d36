/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* secure_getenv, as the library reads the variable */
#include "context_cli.h"

#include <stdio.h>
#include <stdlib.h>

#include "txattn/plugin.h"

void tx_context_args_init(tx_context_args *a) {
  a->threads = 0;
  a->plugin_path = NULL;
}

void tx_context_opts(tx_context_args *a, tx_opt *o) {
  o[0] = tx_opt_int("threads", &a->threads, "T",
                    "threads the kernels may use [0: every CPU available]", 0, 4096);
  o[1] = tx_opt_string("plugin-path", &a->plugin_path, "DIRS",
                       "plugin directories, ':'-separated [$TXATTN_PLUGIN_PATH, else the default]");
}

void tx_print_lib_error(const char *cmd, const char *what, txattn_status s) {
  const char *msg = txattn_last_error();
  fprintf(stderr, "txtune %s: %s: %s%s%s\n", cmd, what, txattn_status_name(s), *msg ? ": " : "",
          msg);
}

void tx_json_cpu_fields(tx_json *j, const txattn_machine_info *m) {
  tx_json_kv_string(j, "vendor", m->vendor);
  tx_json_kv_string(j, "brand", m->brand);
  tx_json_kv_int(j, "family", m->family);
  tx_json_kv_int(j, "model", m->model);
  tx_json_kv_int(j, "stepping", m->stepping);
  tx_json_kv_array(j, "isa");
  for (int i = 0; i < TXATTN_ISA_COUNT_; i++)
    if (m->isa_mask & (1u << i)) tx_json_string(j, txattn_isa_name((txattn_isa)i));
  tx_json_end_array(j);
}

int tx_context_open(const char *cmd, const tx_context_args *a, txattn_context **out) {
  txattn_options opts = {.plugin_path = a->plugin_path, .n_threads = (int)a->threads};
  txattn_status s = txattn_context_create(&opts, out);
  if (s == TXATTN_OK) return 0;
  tx_print_lib_error(cmd, "cannot create the library context", s);
  return TX_EXIT_FAIL;
}

const char *tx_plugin_path_source(const tx_context_args *a, const char **path) {
  if (a->plugin_path) {
    *path = a->plugin_path;
    return "--plugin-path";
  }
  const char *env = secure_getenv("TXATTN_PLUGIN_PATH");
  if (env && *env) {
    *path = env;
    return "$TXATTN_PLUGIN_PATH";
  }
  *path = NULL;
  return "default: txattn/plugins beside libtxattn.so, else the installed directory";
}
