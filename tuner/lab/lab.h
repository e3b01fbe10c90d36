/* SPDX-License-Identifier: MIT */
/* The benchmark lab: txtune bench (one problem, sweeps over n and masks, --roofline, serving and
   merge comparisons) and txtune plot (lab.c), and the machine's roofs as the least time a call can
   take (roof_measure.h), which txtune profile holds its timings to. The rest of txtune needs no
   other header of this folder; the lab depends on tuner/common (its one timer: timing.c) and
   inspect's model runs, never on the profiler. */
#ifndef TXTUNE_LAB_H
#define TXTUNE_LAB_H

#include "roof_measure.h"

/* The commands: argv[0] is the command's name; they return the exit status. */
int tx_cmd_bench(int argc, char **argv);
int tx_cmd_plot(int argc, char **argv);

#endif
