/* SPDX-License-Identifier: MIT */
/* txtune topo (cmd_topo.c): the machine's caches as used, and the tiles each kernel derives from them. */
#ifndef TXTUNE_CMD_TOPO_H
#define TXTUNE_CMD_TOPO_H

/* argv[0] is "topo"; returns the exit status (TX_EXIT_OK, TX_EXIT_FAIL, TX_EXIT_USAGE). */
int tx_cmd_topo(int argc, char **argv);

#endif
