/* SPDX-License-Identifier: MIT */
/* txtune profile (cmd_profile.c): measure the kernels and write the dispatch table libtxattn follows. */
#ifndef TXTUNE_CMD_PROFILE_H
#define TXTUNE_CMD_PROFILE_H

/* argv[0] is "profile"; returns the exit status (TX_EXIT_OK, TX_EXIT_FAIL, TX_EXIT_USAGE). */
int tx_cmd_profile(int argc, char **argv);

#endif
