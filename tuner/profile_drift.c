/* txtune profile: the drift that candidates timed together share, taken out of their runs (see
   profile.h, prof_remove_drift). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "timing.h"

/* Two passes of the polish: the second corrects the candidates' levels for the first's factors. */
#define DRIFT_PASSES 2

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], tx_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A candidate's level: the median of its runs as adjusted so far. */
static double level_of(const prof_cand *c) {
  double v[PROF_MAX_RUNS];
  memcpy(v, c->adj, (size_t)c->n_runs * sizeof v[0]);
  return median_of(v, c->n_runs);
}

void prof_remove_drift(prof_cand *c, size_t n) {
  int rounds = 0;
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < c[i].n_runs; k++) {
      c[i].adj[k] = c[i].runs[k];
      if (c[i].round[k] >= rounds) rounds = c[i].round[k] + 1;
    }
  double *level = malloc((n ? n : 1) * sizeof *level);
  double *ratio = malloc((n ? n : 1) * sizeof *ratio);
  if (!level || !ratio || rounds > PROF_MAX_ROUNDS) { /* the runs stay as measured */
    free(level);
    free(ratio);
    return;
  }
  for (int pass = 0; pass < DRIFT_PASSES; pass++) {
    for (size_t i = 0; i < n; i++) level[i] = c[i].n_runs >= 2 ? level_of(&c[i]) : 0;
    double factor[PROF_MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
      int m = 0;
      for (size_t i = 0; i < n; i++)
        for (int k = 0; k < c[i].n_runs && level[i] > 0; k++)
          if (c[i].round[k] == r && c[i].adj[k] > 0) ratio[m++] = c[i].adj[k] / level[i];
      factor[r] = m >= 2 ? median_of(ratio, m) : 1;
    }
    for (size_t i = 0; i < n; i++)
      for (int k = 0; k < c[i].n_runs && c[i].n_runs >= 2; k++)
        if (c[i].round[k] >= 0 && factor[c[i].round[k]] > 0) c[i].adj[k] /= factor[c[i].round[k]];
  }
  free(level);
  free(ratio);
}
