/* SPDX-License-Identifier: MIT */
/* txtune list (cmd_list.c): the kernels and plugins found, and why any cannot be used. */
#ifndef TXTUNE_CMD_LIST_H
#define TXTUNE_CMD_LIST_H

/* argv[0] is "list"; returns the exit status (TX_EXIT_OK, TX_EXIT_FAIL, TX_EXIT_USAGE). */
int tx_cmd_list(int argc, char **argv);

#endif
