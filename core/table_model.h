/* Internal: a dispatch table in memory (txattn_table of txattn/table.h), shared by the builder,
 * the file parser and writer, the fingerprint check and the dispatcher's lookup.
 *
 * Every way into the model (the public builder, the parser) goes through txattn__tm_* below, so a
 * table read from a file is validated by exactly the rules that built it. Those functions report
 * failures into a caller's buffer rather than txattn_last_error, so the parser can prefix the JSON
 * path of the offending field. */
#ifndef TXATTN_CORE_TABLE_MODEL_H
#define TXATTN_CORE_TABLE_MODEL_H

#include <stddef.h>
#include <stdint.h>

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
  /* set when a context binds the table (table_bind.c): the kernel of that name, or NULL when the
     context has none; its tunables in the kernel's declared order (NULL if it declares none) */
  const struct txattn__kernel *k;
  int64_t *kvals;
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

/* Builders. Each returns TXATTN_OK, or a status with the reason in why (no txattn__fail). */
txattn_table *txattn__tm_new(void);
void txattn__tm_free(txattn_table *t);
txattn_status txattn__tm_set_header(txattn_table *t, const char *library_version,
                                    const char *created, const txattn_machine_info *m, char *why,
                                    size_t size);
txattn_status txattn__tm_add_plugin(txattn_table *t, const char *name, const char *version,
                                    const char *build, char *why, size_t size);
txattn_status txattn__tm_add_class(txattn_table *t, const txattn_table_class *c, size_t *index,
                                   char *why, size_t size);
/* Copies the candidates and sorts them fastest first (equal times by kernel name); chosen >= 0
   names the winner (cands[chosen] goes first: a tie when it is not the fastest, then it may be at
   most TXATTN__TIE_MAX_RATIO x the fastest), -1 the fastest. With reindex, derives the class's
   regions and index again (else the caller calls txattn__tm_reindex once at the end). */
#define TXATTN__TIE_MAX_RATIO 1.25
txattn_status txattn__tm_add_point(txattn_table *t, size_t cls, int64_t n, int64_t r,
                                   const txattn_table_candidate *cands, size_t n_cands, long chosen,
                                   int reindex, char *why, size_t size);
txattn_status txattn__tm_add_exclusion(txattn_table *t, const txattn_table_exclusion *e, char *why,
                                       size_t size);

/* Checks shared with the parser. */
int txattn__tm_class_ok(const txattn_table_class *c, char *why, size_t size);
int txattn__tm_name_ok(const char *s, int need_dot); /* [a-z0-9_.-]{1,63} */
/* The same kernel with the same tunables (as sets). */
int txattn__tm_same_candidate(const txattn__cand *a, const txattn__cand *b);
int txattn__tm_same_key(const txattn_table_class *a, const txattn_table_class *b);
/* "block_q=64 block_k=256", "" if none. */
void txattn__tm_tunables_text(const txattn__tunables *tun, char *buf, size_t size);
/* ISA names <-> txattn_machine_info.isa_mask bits. */
const char *txattn__tm_isa_name(unsigned bit);
int txattn__tm_isa_bit(const char *name);                      /* -1 if unknown */
const char *txattn__tm_mask_name(const txattn_table_class *c); /* "none", "causal", "window-sym" */

/* table_regions.c: the lookup index and the regions of a class, from its points. 0 if out of
   memory. */
int txattn__tm_reindex(txattn__class *c);

/* table_lookup.c: the class key and coordinates of a resolved problem; 0 with the reason in why
   when no class shape describes it. */
int txattn__tm_class_of(const txattn_problem *r, int threads, txattn_table_class *cls, int64_t *n,
                        int64_t *rr, char *why, size_t size);

/* Public views of internal records (table_read.c). */
void txattn__tm_cand_view(const txattn__cand *c, txattn_table_candidate *out);

#endif
