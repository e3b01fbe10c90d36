/* SPDX-License-Identifier: MIT */
/* Where a txtune plot comes from (plot_source.c): each returns 0, or prints why ("txtune plot:
   ...") and returns TX_EXIT_FAIL. */
#ifndef TXTUNE_PLOT_SOURCE_H
#define TXTUNE_PLOT_SOURCE_H

#include "plot.h"

/* A dispatch table, strictly validated by libtxattn: one panel per class and window reach r, each
   kernel's fastest time (any tunables) at each n; and for the first panel, per mask kind, the
   chosen kernel's time at each n of one class (plot_source.c says which). */
int tx_plot_from_table(const char *path, tx_plot *pl);
/* A bench sweep document (bench_sweep.md) already parsed: `root` is a json_t *. One panel per
   problem class (mask kind and window, head sizes, heads, batch); for the first panel, per mask
   kind, the fastest exact kernel at each n of the class with the most n. */
int tx_plot_from_sweep(const void *root, const char *path, tx_plot *pl);

#endif
