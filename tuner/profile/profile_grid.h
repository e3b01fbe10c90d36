/* SPDX-License-Identifier: MIT */
/* txtune profile's grid: the classes with a library context per thread count, the n and r values,
   and per class and r (a series) what its last point cost. */
#ifndef TXTUNE_PROFILE_GRID_H
#define TXTUNE_PROFILE_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "problem_cli.h"
#include "profile.h"

#define GRID_MAX_CTX 8
#define GRID_MAX_D   8
#define GRID_MAX_N   24
#define GRID_MAX_R   4

#define GRID_MAX_TYPES 4 /* type combinations of the 16-bit classes */
/* The largest n of a 16-bit prefill class: a bound on what a slow kernel costs the budget. */
#define GRID_TYPED_PREFILL_N_MAX 4096
/* The ragged-decode class from this n on (its shortest sequence then has n / 32 keys). */
#define GRID_RAGGED_N_MIN 1024

typedef struct prof_last {
  size_t kernel;
  int slot;
  double time_s;
  int lost; /* it lost by PROF_LOSER_RATIO, or was inexact, here or before: no longer timed */
} prof_last;
typedef struct prof_series {
  int stopped;                    /* a point did not fit the budget: larger n are left out */
  double pairs;                   /* the last point's visible pairs (0: none yet) */
  prof_last last[PROF_MAX_CANDS]; /* the last point's candidates and their times per call */
  size_t n_last;
} prof_series;

/* The visible (query, key) pairs of a point, every head (a ragged one's: of its lengths,
   prof_ragged_lens, not of its capacity). */
double prof_grid_pairs(const txattn_problem *p);

/* What became of a class's points (the summary says why a class has none in the table): recorded;
   over the budget; no candidate left (and of their candidates: inexact, faulty, failed to plan);
   every candidate failed when it ran; refused by the table (its first reason). */
typedef struct prof_class_fate {
  size_t recorded, over_budget, no_candidate, inexact, faulty, plan_failed, failed, refused;
  char refused_why[256];
} prof_class_fate;

typedef struct prof_grid_class {
  size_t id; /* index in the grid */
  txattn_table_class cls;
  int64_t n_max; /* its largest n (0: the grid's) */
  int64_t n_min; /* its smallest n (0: the grid's) */
  size_t ctx;    /* index of the context with cls.threads */
  int in_table;
  size_t table_index;
  /* --update: only the table's points, bit ni of points[ri] for (n[ni], r[ri]) */
  int only_points;
  uint32_t points[GRID_MAX_R];
  prof_series series[GRID_MAX_R]; /* per r index (one, r = 0, without a window) */
  prof_class_fate fate;
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
  /* the type combinations of the 16-bit classes (the fp32 grid is always there), and the classes
     of them that no usable kernel takes, left out of the grid with why */
  tx_dtypes types[GRID_MAX_TYPES];
  size_t n_types;
  struct {
    char cls[96], why[160];
  } skipped[4 * GRID_MAX_TYPES * GRID_MAX_CTX];
  size_t n_skipped;
} prof_grid;

/* Builds the grid (profile_grid.c's class list, docs/profiling.md) and opens a context (no table)
   per thread count; a 16-bit class no usable kernel takes is left out (g->skipped). Returns 0, or
   the exit code after printing why. */
int prof_grid_build(prof_grid *g, const tx_cmd_spec *spec, const tx_strlist *threads,
                    const tx_strlist *d, const tx_strlist *dtypes, int64_t n_max, prof_mode mode,
                    const char *plugin_path);
/* Whether class c has a point at (g->n[ni], r index ri). */
int prof_grid_has_point(const prof_grid *g, const prof_grid_class *c, size_t ni, size_t ri);
/* The grid of the table t (--update): its classes, each with the points t has. */
int prof_grid_from_table(prof_grid *g, const txattn_table *t, const char *plugin_path);
void prof_grid_free(prof_grid *g);
/* The r values of class c (g->r for windows, else the single 0). */
size_t prof_grid_rs(const prof_grid *g, const prof_grid_class *c, const int64_t **rs);
/* The problem measured for class c at (n, r). */
txattn_problem prof_grid_problem(const prof_grid_class *c, int64_t n, int64_t r);
/* The number of points of the whole grid. */
size_t prof_grid_points(const prof_grid *g);

#endif
