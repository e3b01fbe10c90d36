/* SPDX-License-Identifier: MIT */
/* Internal: a dispatch table in memory (txattn_table of txattn/table.h) and its builders
 * (table_model.c). Every way into the model (txtune's builder, the file reader) goes through
 * txattn__tm_*, so a table read from a file obeys exactly the rules that built it; they report into
 * the caller's buffer rather than txattn_last_error, so the reader can prefix the JSON path. */
#ifndef TXATTN_CORE_TABLE_MODEL_H
#define TXATTN_CORE_TABLE_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "txattn/table.h"

struct txattn__kernel; /* loader.h */

typedef struct txattn__tunables {
  size_t n;
  char **names;
  int64_t *values;
} txattn__tunables;

typedef struct txattn__cand {
  char *kernel;
  txattn__tunables tun; /* in the order given */
  double time_s, max_error, spread;
  /* set when a context binds the table (table_context.c): the kernel of that name, or NULL when
     the context has none; its tunables in the kernel's declared order (NULL if it declares none) */
  const struct txattn__kernel *k;
  int64_t *kvals;
  unsigned char other_build; /* k is NULL because the table measured another build of it */
} txattn__cand;

typedef struct txattn__point {
  int64_t n, r;
  size_t n_cands;
  txattn__cand *cands; /* the winner first, then fastest first */
  int tie;             /* the winner is not the fastest: it was chosen among near-equal ones */
  size_t region;       /* the region holding this point */
} txattn__point;

typedef struct txattn__region {
  int64_t n_lo, n_hi, r_lo, r_hi;
  size_t point;                   /* a point of the region: its first candidate is the winner */
  double t_min, t_max, max_error; /* the winner's, over the region */
  const char *runner_up;          /* points into a candidate; NULL if none */
  double margin;                  /* 0 if no runner-up */
} txattn__region;

typedef struct txattn__class {
  txattn_table_class key;
  txattn__point *points; /* sorted by (r, n) */
  size_t n_points, cap_points;
  txattn__region *regions; /* sorted by (r_lo, n_lo) */
  size_t n_regions;
  /* the lookup index: distinct n and r values, ascending, and the point at each (r, n) */
  int64_t *ns, *rs;
  size_t n_ns, n_rs;
  int32_t *grid; /* grid[ri * n_ns + ni]: index in points, or -1 */
} txattn__class;

typedef struct txattn__exclusion {
  txattn_table_class key;
  txattn__cand c; /* time_s and spread unused */
  int64_t n, r;
  char *reason;
} txattn__exclusion;

typedef struct txattn__tplugin {
  char *name, *version, *build;
} txattn__tplugin;

struct txattn_table {
  int format_version;
  char *library_version, *created;
  txattn_machine_info machine; /* only the fingerprint's fields */
  txattn__tplugin *plugins;
  size_t n_plugins;
  char *profile; /* a JSON object's text, or NULL */
  txattn__class *classes;
  size_t n_classes, cap_classes;
  txattn__exclusion *excluded;
  size_t n_excluded, cap_excluded;
  char *path; /* the file it was read from, or NULL */
};

/* The same kernel with the same tunables (as sets). */
static inline int txattn__tm_same_candidate(const txattn__cand *a, const txattn__cand *b) {
  if (strcmp(a->kernel, b->kernel) != 0 || a->tun.n != b->tun.n) return 0;
  for (size_t i = 0; i < a->tun.n; i++) {
    size_t j = 0;
    while (j < b->tun.n && strcmp(a->tun.names[i], b->tun.names[j]) != 0) j++;
    if (j == b->tun.n || a->tun.values[i] != b->tun.values[j]) return 0;
  }
  return 1;
}

/* The same class key (batch and heads_q are not part of it; the element types, ragged, softcap,
   mask_tensor and whether it is paged are). */
static inline int txattn__tm_same_key(const txattn_table_class *a, const txattn_table_class *b) {
  return a->mask == b->mask && a->window == b->window && a->d_qk == b->d_qk && a->d_v == b->d_v &&
         a->group == b->group && a->threads == b->threads && a->decode == b->decode &&
         a->q_type == b->q_type && a->k_type == b->k_type && a->v_type == b->v_type &&
         a->o_type == b->o_type && a->ragged == b->ragged && a->softcap == b->softcap &&
         a->mask_tensor == b->mask_tensor && (a->page_size > 0) == (b->page_size > 0);
}

/* Candidates per point a table may hold (docs/dispatch_table.md): txtune profile records at most
   128; a point with more is refused before any of them is read. */
#define TXATTN__TABLE_MAX_CANDIDATES 256

/* Builders: TXATTN_OK, or a status with the reason in why (no txattn__fail). */
txattn_table *txattn__tm_new(void);
txattn_status txattn__tm_set_header(txattn_table *t, const char *library_version,
                                    const char *created, const txattn_machine_info *m, char *why,
                                    size_t size);
txattn_status txattn__tm_add_plugin(txattn_table *t, const char *name, const char *version,
                                    const char *build, char *why, size_t size);
txattn_status txattn__tm_add_class(txattn_table *t, const txattn_table_class *c, size_t *index,
                                   char *why, size_t size);
/* Copies the candidates, cands[chosen] first (chosen -1: the fastest), the others fastest first.
   With reindex, derives the class's index and regions again, else the caller calls
   txattn__tm_reindex once at the end. */
txattn_status txattn__tm_add_point(txattn_table *t, size_t cls, int64_t n, int64_t r,
                                   const txattn_table_candidate *cands, size_t n_cands, long chosen,
                                   int reindex, char *why, size_t size);
txattn_status txattn__tm_add_exclusion(txattn_table *t, const txattn_table_exclusion *e, char *why,
                                       size_t size);
/* Derives the class's lookup index (its distinct n and r values and the point at each pair) and
   its regions, and sets each point's region. 0 if out of memory or the class has too many distinct
   n and r values; the class is then unchanged. */
int txattn__tm_reindex(txattn__class *c);
int txattn__tm_class_ok(const txattn_table_class *c, char *why, size_t size);

#endif
