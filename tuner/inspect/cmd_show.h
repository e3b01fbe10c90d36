/* SPDX-License-Identifier: MIT */
/* txtune show (cmd_show.c): a dispatch table for people, or normalised JSON. */
#ifndef TXTUNE_CMD_SHOW_H
#define TXTUNE_CMD_SHOW_H

/* argv[0] is "show"; returns the exit status (TX_EXIT_OK, TX_EXIT_FAIL, TX_EXIT_USAGE). */
int tx_cmd_show(int argc, char **argv);

#endif
