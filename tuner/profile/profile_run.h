/* SPDX-License-Identifier: MIT */
/* txtune profile: the state of one run, shared by the command (cmd_profile.c), the table
   header's profile object (profile_header.c) and --update (profile_update.c). */
#ifndef TXTUNE_PROFILE_RUN_H
#define TXTUNE_PROFILE_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "cpu_use.h"
#include "profile.h"
#include "profile_grid.h"
#include "buffers.h"
#include "lab.h"

#define MAX_LEVELS GRID_MAX_N

/* What one n cost, and the core round trip before and after its points (core_latency.h; < 0
   none). */
typedef struct prof_level {
  int64_t n;
  double spent_s, trip_ns, trip_end_ns;
  size_t points;
} prof_level;

/* A kernel the summary names: one that failed to plan points (fault PROF_FAULT_NONE; count: its
   points) or was excluded for what it did on a check (count: its candidates excluded so). */
#define MAX_NOTED_KERNELS 64
typedef struct prof_kernel_note {
  char name[64];
  prof_fault fault;
  size_t count;
  char first_at[160];  /* "none d64/64 g1 t1 n=4096" */
  char first_why[384]; /* "TXATTN_E_PLUGIN: ..." */
  int left_out; /* it hung, printed or faulted at a timed point: out of the rest of the profile */
} prof_kernel_note;

/* The tensors of every point at one n of the classes of one type combination, dense or ragged (a
   ragged one's kv_lens: prof_ragged_lens of n). */
typedef struct prof_bufs {
  tx_dtypes types;
  int ragged;
  tx_buffers b;
} prof_bufs;

/* A third-party candidate's check on the small shape of a class and r (cmd_profile.c). */
typedef struct prof_checked {
  size_t cls, kernel, n_tun;
  int64_t r, values[PROF_MAX_TUNABLES];
  int verdict; /* 1 exact, 0 not (fault), -1 cannot run it */
  prof_fault fault;
  double err;
  char why[512];
} prof_checked;

/* --update (profile_update.c): the table being updated and the kernels it did not measure. */
typedef struct prof_update prof_update;

typedef struct profile_run {
  int quick, patient, update;
  prof_update *up; /* with --update */
  tx_strlist threads, d, dtypes;
  int64_t n_max;
  double budget_s;
  const char *out, *plugin_path;
  tx_opt opts[10];
  tx_opt_group groups[1];
  tx_cmd_spec spec;
  prof_mode mode;
  prof_grid g;
  txattn_table *table;
  prof_checked *checked; /* the third-party candidates' checks on their classes' small shapes */
  size_t n_checked;
  tx_roof_ceiling ceiling; /* the machine's roofs: no timed call may beat them (point_floor) */
  prof_progress prog;
  double start;
  /* the tensors of every point of the current n, per type combination: each point uses the
     start of its combination's */
  prof_bufs bufs[GRID_MAX_TYPES + 4];
  size_t n_bufs;
  int64_t buf_n;
  prof_level levels[MAX_LEVELS];
  size_t n_levels;
  size_t n_points, n_skipped, n_excluded, n_ties;
  size_t n_classes_out; /* classes with no point in the table (prof_class_fate says why) */
  /* the kernels named in the summary; how many failed to plan, their (kernel, point) exclusions,
     and the kernels excluded for each fault */
  prof_kernel_note notes[MAX_NOTED_KERNELS];
  size_t n_failed_kernels, n_plan_failures;
  size_t n_notes, n_faulty_by[PROF_FAULT_COUNT_];
  size_t n_inexact_at_point; /* candidates exact on their check, found inexact at a timed point */
  double spreads[4096];
  size_t n_spreads;
  /* what other processes used of the CPUs (cpu_use.h): over a short sleep before the first point,
     and from then to the end (cores' worth, < 0 unknown), and the counters at the first point */
  double others_before, steal_before, others_during, steal_during;
  tx_cpu_use use_start;
} profile_run;

/* Seconds since the run started. */
double prof_now_s(const profile_run *r);

/* The table header's profile object: the settings, the protocol and the measured noise. */
void prof_set_header(profile_run *r, double elapsed);

/* --update: reads the table at the output path (it must be partly valid here: made for this
   machine and library), makes the grid of its points and marks the kernels it did not measure.
   Returns 0 to go on, -2 when it measured every kernel (nothing to do), else the exit code after
   printing why. */
int prof_update_start(profile_run *r);
/* The number of kernels --update measures (0 without --update). */
size_t prof_update_kernels(const profile_run *r);
/* The candidates of a point of the grid (c, nc as prof_candidates_failed made them, with their
   plan failures pf) cut to the kernels --update measures, and, when any is left, the table's
   winner there as a reference (timed in full). Returns the new count. */
size_t prof_update_candidates(profile_run *r, const prof_grid_class *gc, const txattn_problem *p,
                              int64_t n, int64_t rr, prof_cand *c, size_t nc, size_t cap,
                              prof_plan_failures *pf);
/* Merges r->table (this run's points) into the table read: r->table becomes the table to write.
   Returns 0, or the exit code after printing why. */
int prof_update_finish(profile_run *r);
void prof_update_free(prof_update *u);

#endif
