/* txtune profile's grid: the classes (mask, window, head size, GQA group, threads, decode) with a
   library context per thread count, the n and r values measured, and per class what was learnt
   along the way (kernels no longer worth timing, the cost of the last point). */
#ifndef TXTUNE_PROFILE_GRID_H
#define TXTUNE_PROFILE_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "profile.h"

#define GRID_MAX_CTX 8
#define GRID_MAX_D   8
#define GRID_MAX_N   24
#define GRID_MAX_R   4

typedef struct prof_grid_class {
  size_t id; /* index in the grid */
  txattn_table_class cls;
  size_t ctx; /* index of the context with cls.threads */
  int in_table;
  size_t table_index;
  /* per r index (one, r = 0, without a window) */
  int stopped[GRID_MAX_R];       /* a point did not fit the budget: larger n are left out */
  double last_work[GRID_MAX_R];  /* the last point's seconds in kernel calls */
  double last_calls[GRID_MAX_R]; /* its kernel calls */
  double last_pairs[GRID_MAX_R]; /* its visible pairs */
  uint64_t lost[GRID_MAX_R];     /* kernel indices that lost by far at the last point */
  uint64_t dropped[GRID_MAX_R];  /* and at the one before: not timed at larger n */
} prof_grid_class;

typedef struct prof_grid {
  txattn_context *ctx[GRID_MAX_CTX];
  int threads[GRID_MAX_CTX];
  size_t n_ctx;
  int64_t d[GRID_MAX_D];
  size_t n_d;
  int64_t n[GRID_MAX_N];
  size_t n_n;
  int64_t r[GRID_MAX_R];
  size_t n_r;
  prof_grid_class *cls;
  size_t n_cls;
} prof_grid;

/* Builds the grid and opens a context (no table) per thread count. Returns 0, or the exit code
   after printing why. */
int prof_grid_build(prof_grid *g, const tx_cmd_spec *spec, const tx_strlist *threads,
                    const tx_strlist *d, int64_t n_max, prof_mode mode, const char *plugin_path);
void prof_grid_free(prof_grid *g);
/* The r values of class c (g->r for windows, else the single 0). */
size_t prof_grid_rs(const prof_grid *g, const prof_grid_class *c, const int64_t **rs);
/* The problem measured for class c at (n, r). */
txattn_problem prof_grid_problem(const prof_grid_class *c, int64_t n, int64_t r);
int prof_grid_dropped(const prof_grid_class *c, size_t ri, size_t kernel);
/* The number of points of the whole grid. */
size_t prof_grid_points(const prof_grid *g);

#endif
