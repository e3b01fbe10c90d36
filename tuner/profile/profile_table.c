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

size_t prof_table_empty_classes(const txattn_table *t) {
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  size_t empty = 0;
  if (txattn_table_header_get(t, &h) != TXATTN_OK) return 0;
  for (size_t ci = 0; ci < h.n_classes; ci++) {
    txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
    size_t n_points = 0;
    if (txattn_table_class_get(t, ci, &c, &n_points, NULL) == TXATTN_OK && n_points == 0) empty++;
  }
  return empty;
}

/* Copies class ci of t with its points into out (winner first: a tie stays a tie). */
static txattn_status copy_class(const txattn_table *t, size_t ci, const txattn_table_class *c,
                                size_t n_points, txattn_table *out) {
  size_t oi;
  txattn_status s = txattn_table_add_class(out, c, &oi);
  for (size_t pi = 0; pi < n_points && s == TXATTN_OK; pi++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    if ((s = txattn_table_point_get(t, ci, pi, &p)) != TXATTN_OK) break;
    txattn_table_candidate *cands = calloc(p.n_candidates, sizeof *cands);
    if (cands == NULL) return TXATTN_E_NOMEM;
    for (size_t k = 0; k < p.n_candidates && s == TXATTN_OK; k++) {
      cands[k] = (txattn_table_candidate)TXATTN_TABLE_CANDIDATE_INIT;
      s = txattn_table_candidate_get(t, ci, pi, k, &cands[k]);
    }
    if (s == TXATTN_OK)
      s = txattn_table_add_point_chosen(out, oi, p.n, p.r, cands, p.n_candidates, 0);
    free(cands);
  }
  return s;
}

txattn_status prof_table_drop_empty(const txattn_context *ctx, const txattn_table *t,
                                    txattn_table **out) {
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  txattn_table *copy = NULL;
  *out = NULL;
  txattn_status s = txattn_table_header_get(t, &h);
  if (s == TXATTN_OK) s = txattn_table_create(ctx, &copy);
  if (s == TXATTN_OK && h.profile && *h.profile) s = txattn_table_set_profile(copy, h.profile);
  for (size_t ci = 0; ci < h.n_classes && s == TXATTN_OK; ci++) {
    txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
    size_t n_points = 0;
    s = txattn_table_class_get(t, ci, &c, &n_points, NULL);
    if (s == TXATTN_OK && n_points > 0) s = copy_class(t, ci, &c, n_points, copy);
  }
  for (size_t i = 0; i < h.n_excluded && s == TXATTN_OK; i++) {
    txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
    if ((s = txattn_table_exclusion_get(t, i, &x)) == TXATTN_OK)
      s = txattn_table_add_exclusion(copy, &x);
  }
  if (s != TXATTN_OK) {
    txattn_table_free(copy);
    return s;
  }
  *out = copy;
  return TXATTN_OK;
}
