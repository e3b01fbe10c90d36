/* SPDX-License-Identifier: MIT */
/* txtune check (cmd_check.c): every usable kernel against the fp64 reference on a battery of shapes. */
#ifndef TXTUNE_CMD_CHECK_H
#define TXTUNE_CMD_CHECK_H

/* argv[0] is "check"; returns the exit status (TX_EXIT_OK, TX_EXIT_FAIL, TX_EXIT_USAGE). */
int tx_cmd_check(int argc, char **argv);

#endif
