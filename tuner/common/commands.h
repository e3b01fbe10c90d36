/* SPDX-License-Identifier: MIT */
/* The subcommands main() dispatches to. Each gets argv with argv[0] = its own name and returns the
   process exit code (TX_EXIT_OK, TX_EXIT_FAIL, TX_EXIT_USAGE). */
#ifndef TXTUNE_COMMANDS_H
#define TXTUNE_COMMANDS_H

int tx_cmd_list(int argc, char **argv);
int tx_cmd_check(int argc, char **argv);
int tx_cmd_bench(int argc, char **argv);
int tx_cmd_topo(int argc, char **argv);
int tx_cmd_show(int argc, char **argv);
int tx_cmd_explain(int argc, char **argv);
int tx_cmd_profile(int argc, char **argv);
int tx_cmd_validate(int argc, char **argv);
int tx_cmd_plot(int argc, char **argv);
int tx_cmd_compare(int argc, char **argv);
int tx_cmd_models(int argc, char **argv);

#endif
