/* SPDX-License-Identifier: MIT */
/* The library context as the command line configures it (--threads, --plugin-path), shared by every
   subcommand, and how library failures are reported to the user. */
#ifndef TXTUNE_CONTEXT_CLI_H
#define TXTUNE_CONTEXT_CLI_H

#include <stdint.h>

#include "args.h"
#include "json.h"
#include "txattn/txattn.h"

typedef struct tx_context_args {
  int64_t threads;         /* 0: every CPU the process may use */
  const char *plugin_path; /* NULL: the library's default */
} tx_context_args;

#define TX_CONTEXT_N_OPTS 2

void tx_context_args_init(tx_context_args *a);
void tx_context_opts(tx_context_args *a, tx_opt *opts);
/* Returns 0, or prints why and returns TX_EXIT_FAIL. */
int tx_context_open(const char *cmd, const tx_context_args *a, txattn_context **out);
/* Where the plugin path came from, in words, and the path itself (NULL for the built-in default).
 */
const char *tx_plugin_path_source(const tx_context_args *a, const char **path);
/* The CPU's fields in the open JSON object: vendor, brand, family, model, stepping, and the ISAs
   the CPU and OS enable. */
void tx_json_cpu_fields(tx_json *j, const txattn_machine_info *m);
/* "txtune <cmd>: <what>: TXATTN_E_...: <last error>" on stderr */
void tx_print_lib_error(const char *cmd, const char *what, txattn_status s);

#endif
