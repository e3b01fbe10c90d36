/* SPDX-License-Identifier: MIT */
/* Where a txtune plot comes from (plot_source.c): each returns 0, or prints why ("txtune plot:
   ...") and returns TX_EXIT_FAIL. */
#ifndef TXTUNE_PLOT_SOURCE_H
#define TXTUNE_PLOT_SOURCE_H

#include <stddef.h>

#include "plot.h"

/* The plot of --from FILE (a dispatch table or a bench sweep, told apart by their "format"), else
   of --table FILE, else of the table libtxattn follows; path (size bytes) gets the file's path. */
int tx_plot_load(const char *from, const char *table, tx_plot *pl, char *path, size_t size);

#endif
