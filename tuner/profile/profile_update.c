/* SPDX-License-Identifier: MIT */
/* txtune profile --update: measures, at the points of an existing table, only the kernels it did
   not measure (a plugin new to it, or another version or build of one), and merges them in.

   Each such point is measured as a profile measures one, checks and all, with one more candidate:
   the table's winner there (the first candidate whose kernel it measured as it is), as a
   reference. The new candidates are recorded at their times scaled by the reference's time in the
   table over its time now, so that they compare with the table's times as if measured with them,
   whatever the machine's speed is today. The winner is the new kernel that the point's rule
   (prof_choose) picks over the reference, else the table's winner stays. The candidates of the
   kernels the table measured keep their times; those of plugins no longer loaded, or of other
   builds, are dropped, and so are their exclusions. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context_cli.h"
#include "profile_run.h"

struct prof_update {
  txattn_table *base;
  char path[4096];
  /* per context of the grid, per kernel: 1 to measure it (the base did not) */
  unsigned char *measure[GRID_MAX_CTX];
  size_t n_measure; /* kernels to measure (in the first context) */
  char names[1024]; /* their names, for the report and the header */
};

void prof_update_free(prof_update *u) {
  if (u == NULL) return;
  txattn_table_free(u->base);
  for (size_t i = 0; i < GRID_MAX_CTX; i++) free(u->measure[i]);
  free(u);
}

/* The table at the output path, which a context must follow in part: else why not. */
static int load_base(profile_run *r, prof_update *u) {
  if (r->out)
    snprintf(u->path, sizeof u->path, "%s", r->out);
  else if (txattn_table_default_path(u->path, sizeof u->path) != TXATTN_OK) {
    fprintf(stderr, "txtune profile --update: %s\n", txattn_last_error());
    return TX_EXIT_FAIL;
  }
  txattn_options o = {.plugin_path = r->plugin_path, .table_path = u->path, .n_threads = 1};
  txattn_context *ctx = NULL;
  txattn_status s = txattn_context_create(&o, &ctx);
  if (s != TXATTN_OK) {
    tx_print_lib_error("profile", "cannot create the library context", s);
    return TX_EXIT_FAIL;
  }
  txattn_table_status st = txattn_context_table_status(ctx);
  int rc = 0;
  if (st == TXATTN_TABLE_LOADED)
    printf("txtune profile --update: %s: every kernel loaded here is measured as it is: nothing "
           "to update\n",
           txattn_context_table_state(ctx));
  else if (st != TXATTN_TABLE_PARTIAL)
    fprintf(stderr,
            "txtune profile --update: only a partly valid table can be updated, this one is not: "
            "%s\n",
            txattn_context_table_state(ctx));
  txattn_context_free(ctx);
  if (st != TXATTN_TABLE_PARTIAL) return st == TXATTN_TABLE_LOADED ? -2 : TX_EXIT_FAIL;
  s = txattn_table_load(u->path, &u->base);
  if (s != TXATTN_OK) {
    tx_print_lib_error("profile", "cannot read the table", s);
    rc = TX_EXIT_FAIL;
  }
  return rc;
}

/* Which kernels of each context the base did not measure. */
static int mark_kernels(profile_run *r, prof_update *u) {
  for (size_t c = 0; c < r->g.n_ctx; c++) {
    txattn_context *ctx = r->g.ctx[c];
    size_t n = txattn_kernel_count(ctx);
    if (!(u->measure[c] = calloc(n + 1, 1))) return TX_EXIT_FAIL;
    for (size_t k = 0; k < n; k++) {
      int measured = 1;
      txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
      if (txattn_table_kernel_measured(u->base, ctx, k, &measured, NULL, 0) != TXATTN_OK ||
          txattn_kernel_get(ctx, k, &info) != TXATTN_OK)
        return TX_EXIT_FAIL;
      u->measure[c][k] = !measured;
      if (c > 0 || measured) continue;
      size_t used = strlen(u->names);
      u->n_measure++;
      snprintf(u->names + used, sizeof u->names - used, "%s%s", used ? ", " : "", info.name);
    }
  }
  return 0;
}

int prof_update_start(profile_run *r) {
  prof_update *u = calloc(1, sizeof *u);
  if (!u) return TX_EXIT_FAIL;
  r->up = u;
  int rc = load_base(r, u);
  if (rc) return rc;
  if ((rc = prof_grid_from_table(&r->g, u->base, r->plugin_path)) != 0) return rc;
  if ((rc = mark_kernels(r, u)) != 0) return rc;
  if (u->n_measure > 0)
    printf("txtune profile --update %s: measuring %s at the table's %zu points\n", u->path,
           u->names, prof_grid_points(&r->g));
  else
    printf("txtune profile --update %s: no kernel to measure; the plugins no longer loaded are "
           "dropped from it\n",
           u->path);
  fflush(stdout);
  return 0;
}

size_t prof_update_kernels(const profile_run *r) {
  return r->up ? r->up->n_measure : 0;
}

/* The class of the base with gc's key, SIZE_MAX if none. */
static size_t base_class(const prof_update *u, const txattn_table_class *key) {
  size_t ci;
  return txattn_table_find_class(u->base, key, &ci) == TXATTN_OK ? ci : SIZE_MAX;
}

/* The index of t's point (n, rr) in class ci, SIZE_MAX if none. */
static size_t point_at(const txattn_table *t, size_t ci, int64_t n, int64_t rr) {
  txattn_table_class c = TXATTN_TABLE_CLASS_INIT;
  size_t np = 0;
  if (txattn_table_class_get(t, ci, &c, &np, NULL) != TXATTN_OK) return SIZE_MAX;
  for (size_t i = 0; i < np; i++) {
    txattn_table_point p = TXATTN_TABLE_POINT_INIT;
    if (txattn_table_point_get(t, ci, i, &p) == TXATTN_OK && p.n == n && p.r == rr) return i;
  }
  return SIZE_MAX;
}

/* Whether the base measured the kernel of that name as ctx (context index c) has it. */
static int kept(const prof_update *u, txattn_context *ctx, size_t c, const char *name) {
  txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT;
  size_t k = prof_kernel_find(ctx, name, &info);
  return k != SIZE_MAX && !u->measure[c][k];
}

/* The base's winner at a point among the kernels it measured as they are here. */
static int base_winner(const prof_update *u, txattn_context *ctx, size_t c, size_t ci, size_t pi,
                       txattn_table_candidate *w) {
  txattn_table_point p = TXATTN_TABLE_POINT_INIT;
  if (txattn_table_point_get(u->base, ci, pi, &p) != TXATTN_OK) return 0;
  for (size_t k = 0; k < p.n_candidates; k++) {
    *w = (txattn_table_candidate)TXATTN_TABLE_CANDIDATE_INIT;
    if (txattn_table_candidate_get(u->base, ci, pi, k, w) == TXATTN_OK &&
        kept(u, ctx, c, w->kernel))
      return 1;
  }
  return 0;
}

size_t prof_update_candidates(profile_run *r, const prof_grid_class *gc, const txattn_problem *p,
                              int64_t n, int64_t rr, prof_cand *c, size_t nc, size_t cap,
                              prof_plan_failures *pf) {
  prof_update *u = r->up;
  const unsigned char *measure = u->measure[gc->ctx];
  size_t kept_n = 0, kept_f = 0;
  for (size_t i = 0; i < nc; i++) {
    if (measure[c[i].kernel])
      c[kept_n++] = c[i];
    else
      txattn_plan_free(c[i].plan);
  }
  for (size_t i = 0; i < pf->n; i++)
    if (measure[pf->f[i].kernel]) pf->f[kept_f++] = pf->f[i];
  pf->n = kept_f;
  size_t ci = base_class(u, &gc->cls),
         pi = ci == SIZE_MAX ? SIZE_MAX : point_at(u->base, ci, n, rr);
  txattn_table_candidate w = TXATTN_TABLE_CANDIDATE_INIT;
  if (kept_n == 0 || pi == SIZE_MAX || !base_winner(u, r->g.ctx[gc->ctx], gc->ctx, ci, pi, &w))
    return kept_n;
  size_t with_ref = prof_candidate_add(r->g.ctx[gc->ctx], p, w.kernel, w.tunable_names,
                                       w.tunable_values, w.n_tunables, c, kept_n, cap);
  return with_ref; /* the reference: the new times are scaled by its */
}

/* ---- the merge ---- */

typedef struct merged {
  txattn_table_candidate c[256];
  size_t n, n_kept; /* the first n_kept are the base's */
  long chosen;      /* index of the winner, -1: the fastest */
} merged;

static int same_tunables(const txattn_table_candidate *a, const txattn_table_candidate *b) {
  if (strcmp(a->kernel, b->kernel) != 0 || a->n_tunables != b->n_tunables) return 0;
  for (size_t i = 0; i < a->n_tunables; i++) {
    size_t j = 0;
    while (j < b->n_tunables && strcmp(a->tunable_names[i], b->tunable_names[j]) != 0) j++;
    if (j == b->n_tunables || a->tunable_values[i] != b->tunable_values[j]) return 0;
  }
  return 1;
}

/* The point (ci, pi) of the base with the kernels it measured as they are, and the measurement of
   this run at the same point (run class rci, or SIZE_MAX) merged in. *scaled: 1 when new
   candidates were added on the reference's scale, -1 when without one (no reference measured). */
static void merge_point(const profile_run *r, size_t ci, size_t pi, size_t rci, merged *m,
                        int *scaled) {
  const prof_update *u = r->up;
  txattn_table_point p = TXATTN_TABLE_POINT_INIT;
  txattn_context *ctx = r->g.ctx[0];
  txattn_table_class cls = TXATTN_TABLE_CLASS_INIT;
  size_t c = 0;
  m->n = 0;
  m->chosen = -1;
  *scaled = 0;
  if (txattn_table_point_get(u->base, ci, pi, &p) != TXATTN_OK ||
      txattn_table_class_get(u->base, ci, &cls, NULL, NULL) != TXATTN_OK)
    return;
  for (size_t k = 0; k < r->g.n_ctx; k++)
    if (r->g.threads[k] == cls.threads) c = k, ctx = r->g.ctx[k];
  for (size_t k = 0; k < p.n_candidates && m->n < 128; k++) {
    txattn_table_candidate x = TXATTN_TABLE_CANDIDATE_INIT;
    if (txattn_table_candidate_get(u->base, ci, pi, k, &x) == TXATTN_OK &&
        kept(u, ctx, c, x.kernel)) {
      if (m->chosen < 0) m->chosen = (long)m->n; /* the first one kept: the base's winner */
      m->c[m->n++] = x;
    }
  }
  m->n_kept = m->n;
  size_t rpi = rci == SIZE_MAX ? SIZE_MAX : point_at(r->table, rci, p.n, p.r);
  txattn_table_point rp = TXATTN_TABLE_POINT_INIT;
  if (rpi == SIZE_MAX || txattn_table_point_get(r->table, rci, rpi, &rp) != TXATTN_OK) return;
  double scale = 1;
  *scaled = -1;
  for (size_t k = 0; k < rp.n_candidates && m->chosen >= 0; k++) {
    txattn_table_candidate x = TXATTN_TABLE_CANDIDATE_INIT;
    if (txattn_table_candidate_get(r->table, rci, rpi, k, &x) == TXATTN_OK &&
        same_tunables(&x, &m->c[m->chosen])) {
      scale = m->c[m->chosen].time_s / x.time_s;
      *scaled = 1;
    }
  }
  for (size_t k = 0; k < rp.n_candidates && m->n < sizeof m->c / sizeof m->c[0]; k++) {
    txattn_table_candidate x = TXATTN_TABLE_CANDIDATE_INIT;
    if (txattn_table_candidate_get(r->table, rci, rpi, k, &x) != TXATTN_OK ||
        kept(u, ctx, c, x.kernel))
      continue; /* the reference: its time in the base stands */
    x.time_s *= scale;
    if (k == 0 || m->chosen < 0) m->chosen = (long)m->n; /* it beat the reference here */
    m->c[m->n++] = x;
  }
}

static txattn_status add_point(txattn_table *out, size_t oi, const txattn_table_point *p,
                               merged *m) {
  txattn_status s = m->chosen >= 0 ? txattn_table_add_point_chosen(out, oi, p->n, p->r, m->c, m->n,
                                                                   (size_t)m->chosen)
                                   : txattn_table_add_point(out, oi, p->n, p->r, m->c, m->n);
  if (s == TXATTN_E_INVALID && m->chosen >= 0) /* a winner over 1.25x the fastest: the fastest */
    s = txattn_table_add_point(out, oi, p->n, p->r, m->c, m->n);
  return s;
}

/* The base's profile object, with this run's appended to its "updates" list. */
static txattn_status set_profile(const profile_run *r, txattn_table *out) {
  txattn_table_header bh = TXATTN_TABLE_HEADER_INIT, rh = TXATTN_TABLE_HEADER_INIT;
  if (txattn_table_header_get(r->up->base, &bh) != TXATTN_OK ||
      txattn_table_header_get(r->table, &rh) != TXATTN_OK)
    return TXATTN_E_INVALID;
  json_t *base = *bh.profile ? json_loads(bh.profile, 0, NULL) : json_object();
  json_t *run = *rh.profile ? json_loads(rh.profile, 0, NULL) : json_object();
  if (!json_is_object(base)) {
    json_decref(base);
    base = json_object();
  }
  json_t *updates = json_object_get(base, "updates");
  if (!json_is_array(updates)) {
    updates = json_array();
    json_object_set_new(base, "updates", updates);
  }
  json_array_append_new(updates, json_pack("{s:s, s:s, s:o}", "created", rh.created, "measured",
                                           r->up->names, "profile", run ? run : json_object()));
  char *text = json_dumps(base, JSON_COMPACT);
  json_decref(base);
  txattn_status s = text ? txattn_table_set_profile(out, text) : TXATTN_E_NOMEM;
  free(text);
  return s;
}

int prof_update_finish(profile_run *r) {
  prof_update *u = r->up;
  txattn_table_header h = TXATTN_TABLE_HEADER_INIT;
  txattn_table *out = NULL;
  txattn_status s = txattn_table_header_get(u->base, &h);
  if (s == TXATTN_OK) s = txattn_table_create(r->g.ctx[0], &out);
  if (s == TXATTN_OK) s = set_profile(r, out);
  size_t unscaled = 0, points = 0, measured = 0, won = 0;
  for (size_t ci = 0; ci < h.n_classes && s == TXATTN_OK; ci++) {
    txattn_table_class cls = TXATTN_TABLE_CLASS_INIT;
    size_t np = 0, oi = SIZE_MAX, rci;
    if ((s = txattn_table_class_get(u->base, ci, &cls, &np, NULL)) != TXATTN_OK) break;
    if (txattn_table_find_class(r->table, &cls, &rci) != TXATTN_OK) rci = SIZE_MAX;
    for (size_t pi = 0; pi < np && s == TXATTN_OK; pi++) {
      txattn_table_point p = TXATTN_TABLE_POINT_INIT;
      merged m;
      int scaled;
      if ((s = txattn_table_point_get(u->base, ci, pi, &p)) != TXATTN_OK) break;
      merge_point(r, ci, pi, rci, &m, &scaled);
      if (m.n == 0) continue; /* every kernel it measured there is gone or another build */
      if (oi == SIZE_MAX) s = txattn_table_add_class(out, &cls, &oi);
      if (s == TXATTN_OK) s = add_point(out, oi, &p, &m);
      unscaled += scaled < 0;
      measured += m.n > m.n_kept;
      won += m.chosen >= (long)m.n_kept;
      points++;
    }
  }
  /* the exclusions of the kernels kept, and this run's */
  const txattn_table *from[2] = {u->base, r->table};
  for (int t = 0; t < 2 && s == TXATTN_OK; t++) {
    txattn_table_header th = TXATTN_TABLE_HEADER_INIT;
    txattn_table_header_get(from[t], &th);
    for (size_t i = 0; i < th.n_excluded && s == TXATTN_OK; i++) {
      txattn_table_exclusion x = TXATTN_TABLE_EXCLUSION_INIT;
      size_t c = 0;
      if ((s = txattn_table_exclusion_get(from[t], i, &x)) != TXATTN_OK) break;
      for (size_t k = 0; k < r->g.n_ctx; k++)
        if (r->g.threads[k] == x.cls.threads) c = k;
      if (t == 1 || kept(u, r->g.ctx[c], c, x.kernel)) s = txattn_table_add_exclusion(out, &x);
    }
  }
  if (s != TXATTN_OK) {
    tx_print_lib_error("profile", "cannot merge the measurements into the table", s);
    txattn_table_free(out);
    return TX_EXIT_FAIL;
  }
  if (unscaled)
    fprintf(stderr,
            "txtune profile --update: at %zu point%s the table's winner could not be timed again, "
            "so the new kernels' times there are as measured today, not scaled to the table's\n",
            unscaled, unscaled == 1 ? "" : "s");
  printf("\n%zu of the table's %zu points measured again with %s; a new kernel wins at %zu of "
         "them\n",
         measured, points, u->n_measure ? u->names : "no kernel", won);
  txattn_table_free(r->table);
  r->table = out;
  r->n_points = points;
  return 0;
}
