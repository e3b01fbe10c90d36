/* SPDX-License-Identifier: MIT */
/* txtune profile's progress line: what is being measured, how far, and the time left. Drawn on
   stderr only when stderr is a terminal, so logs and pipes stay clean. */
#define _POSIX_C_SOURCE 200809L /* isatty, fileno */
#include <stdio.h>
#include <unistd.h>

#include "profile.h"
#include "timing.h"

#define BAR_WIDTH 24

void prof_progress_init(prof_progress *p, size_t total, double budget_s) {
  p->on = isatty(fileno(stderr));
  p->done = 0;
  p->total = total ? total : 1;
  p->start = tx_clock();
  p->budget_s = budget_s;
}

void prof_progress_show(prof_progress *p, const char *what) {
  if (!p->on) return;
  double now = tx_clock(), elapsed = now - p->start, frac = (double)p->done / (double)p->total;
  double left = p->budget_s - elapsed > 0 ? p->budget_s - elapsed : 0; /* the budget: a ceiling */
  char bar[BAR_WIDTH + 1];
  int full = (int)(frac * BAR_WIDTH);
  for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < full ? '#' : '.';
  bar[BAR_WIDTH] = '\0';
  fprintf(stderr, "\r\033[K[%s] %3.0f%% %zu/%zu points, %.0f s, ~%.0f s left: %s", bar,
          100.0 * frac, p->done, p->total, elapsed, left, what);
  fflush(stderr);
}

void prof_progress_end(prof_progress *p) {
  if (!p->on) return;
  fprintf(stderr, "\r\033[K");
  fflush(stderr);
}
