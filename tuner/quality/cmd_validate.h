/* SPDX-License-Identifier: MIT */
/* txtune validate (cmd_validate.c): the regret of a dispatch table's picks, measured here. */
#ifndef TXTUNE_CMD_VALIDATE_H
#define TXTUNE_CMD_VALIDATE_H

/* argv[0] is "validate"; returns the exit status (TX_EXIT_OK, TX_EXIT_FAIL, TX_EXIT_USAGE). */
int tx_cmd_validate(int argc, char **argv);

#endif
