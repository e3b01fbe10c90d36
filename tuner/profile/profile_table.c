/* SPDX-License-Identifier: MIT */
/* txtune profile: everything the profile writes into the dispatch table (see profile.h): a
   measured point, an exclusion, a candidate as the format takes it, and a table without the
   classes that ended up with no point. */
#include <math.h>
#include <stdlib.h>

#include "profile.h"

txattn_table_candidate prof_table_candidate(const prof_cand *c) {
  double spread = !(c->spread >= 0) ? -1 : fmin(c->spread, PROF_MAX_SPREAD);
  return (txattn_table_candidate){.kernel = c->name,
                                  .n_tunables = c->n_tun,
                                  .tunable_names = c->tun_names,
                                  .tunable_values = c->tun_values,
                                  .time_s = c->time_s,
                                  .max_error = c->max_error,
                                  .spread = spread};
}

txattn_status prof_table_add_point(txattn_table *t, const txattn_table_class *cls, int *in_table,
                                   size_t *index, int64_t n, int64_t r, const prof_cand *c,
                                   size_t nc, size_t winner) {
  txattn_table_candidate tc[PROF_MAX_CANDS] = {0}; /* each set from prof_table_candidate */
  size_t m = 0, tw = 0;
  for (size_t i = 0; i < nc && m < PROF_MAX_CANDS; i++) {
    if (c[i].n_runs == 0) continue;
    if (i == winner) tw = m;
    tc[m++] = prof_table_candidate(&c[i]);
  }
  if (!*in_table) {
    txattn_status s = txattn_table_add_class(t, cls, index);
    if (s != TXATTN_OK) return s;
    *in_table = 1;
  }
  return txattn_table_add_point_chosen(t, *index, n, r, tc, m, tw);
}

txattn_status prof_table_exclude(txattn_table *t, const txattn_table_class *cls, const char *kernel,
                                 size_t n_tun, const char *const *names, const int64_t *values,
                                 int64_t n, int64_t r, double err, const char *reason) {
  txattn_table_exclusion x = {.cls = *cls,
                              .kernel = kernel,
                              .n_tunables = n_tun,
                              .tunable_names = names,
                              .tunable_values = values,
                              .n = n,
                              .r = r,
                              .max_error = err,
                              .reason = reason};
  return txattn_table_add_exclusion(t, &x);
}
