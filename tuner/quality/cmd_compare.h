/* SPDX-License-Identifier: MIT */
/* txtune compare (cmd_compare.c): two dispatch tables' flips against their measured noise. */
#ifndef TXTUNE_CMD_COMPARE_H
#define TXTUNE_CMD_COMPARE_H

/* argv[0] is "compare"; returns the exit status (TX_EXIT_OK, TX_EXIT_FAIL, TX_EXIT_USAGE). */
int tx_cmd_compare(int argc, char **argv);

#endif
