/* SPDX-License-Identifier: MIT */
/* A txtune plot drawn as one self-contained SVG (plot_svg.c). */
#ifndef TXTUNE_PLOT_SVG_H
#define TXTUNE_PLOT_SVG_H

#include <stdio.h>

#include "plot.h"

/* The chart: first "the price of attention" (tx_plot_has_best), a row of its own, then one panel
   per 2 columns, each with its curves, each labelled at its end (with its slope from 3 points
   up), a note where one stops before the panel's largest n and why, slope 1 and slope 2 guides,
   dashed lines where the fastest kernel changes, an x where one failed, and below the panel what
   the source says about each n a kernel has no time at. A kernel has the same colour and marker
   in every panel (tx_plot_styles). `source` names the input in the SVG's title. Returns 0, or -1
   if writing failed or out of memory. */
int tx_plot_write_svg(const tx_plot *pl, const char *source, FILE *f);

#endif
