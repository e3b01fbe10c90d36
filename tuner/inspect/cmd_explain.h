/* SPDX-License-Identifier: MIT */
/* txtune explain (cmd_explain.c): which kernel runs one shape and why. */
#ifndef TXTUNE_CMD_EXPLAIN_H
#define TXTUNE_CMD_EXPLAIN_H

/* argv[0] is "explain"; returns the exit status (TX_EXIT_OK, TX_EXIT_FAIL, TX_EXIT_USAGE). */
int tx_cmd_explain(int argc, char **argv);

#endif
