/* SPDX-License-Identifier: MIT */
/* txattn dispatch tables: building, writing, reading and checking the measured table that
 * `txtune profile` writes and libtxattn's dispatcher follows.
 *
 * Not installed: this is txtune's header (and the tests'). libtxattn exports these functions for the
 * txtune built with it, from the same tree, so its structs need no struct_size: a program outside
 * the tree reads a table through txtune (`txtune show`, `txtune explain`) or the file itself
 * (docs/dispatch_table.md), never through this API.
 *
 * The file format ("txtune-dispatch-table", format_version 5, JSON) is documented in
 * docs/dispatch_table.md. A file holds a header (library version, the machine's fingerprint, each
 * plugin's name, version and build) and, per class of problems, what was measured: a record per
 * candidate and shape, with its median time and spread, or why it failed. Reading derives the
 * rest: the points (each shape's candidates, the winner first, the others fastest first), the
 * regions and the exclusions (the failed records).
 *
 * A class is what must match exactly for a table entry to apply to a problem: mask kind (and, for
 * windows, the window's shape), d_qk, d_v, the GQA group heads_q / heads_kv, the context's thread
 * count, whether the problem decodes (n_q == 1), the element types of q, k, v and o (so a
 * 16-bit or 8-bit problem never follows an fp32 class's times), whether the batch is ragged (a ragged
 * problem follows its ragged class where the table has one, else the dense class of its capacity)
 * and whether K and V are paged (a paged problem follows a paged class where the table has one,
 * else the contiguous class).
 * Within a class a problem has the coordinates n (n_kv, a ragged problem's capacity per sequence;
 * non-decode classes need n_q == n_kv) and, for windows, r (the window's reach).
 *
 * A tool that profiles does:
 *   txattn_table_create(ctx, &t);                      header filled from ctx
 *   txattn_table_add_class(t, &cls, &ci);              per class
 *   txattn_table_add_point(t, ci, n, r, cands, k);     per measured point (regions follow)
 *   txattn_table_add_exclusion(t, &ex);                per candidate that failed
 *   txattn_table_write(t, NULL);                       atomically, at the path in effect
 * Every function returns a status and sets txattn_last_error(); nothing here prints.
 */
#ifndef TXATTN_TABLE_H
#define TXATTN_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "txattn/txattn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TXATTN_TABLE_FORMAT "txtune-dispatch-table"
/* Written and read by this library. Version 5 holds the measurements alone (a record per kernel and
   shape, the failed ones included); versions 1 to 4 also held the regions derived from them, and
   a table in one of them is refused with a message to rerun `txtune profile`. */
#define TXATTN_TABLE_FORMAT_VERSION 5

typedef struct txattn_table txattn_table;

/* The window shapes a class can have; r is the reach of the window. */
typedef enum txattn_table_window {
  TXATTN_TABLE_WINDOW_NONE = 0, /* mask NONE or CAUSAL */
  TXATTN_TABLE_WINDOW_SYM = 1,  /* window_left == window_right == r ("sym") */
  TXATTN_TABLE_WINDOW_LEFT = 2, /* window_left == r, window_right == 0 ("left": sliding window) */
} txattn_table_window;

/* The TXATTN_TABLE_*_INIT macros give an empty struct of each kind. */
typedef struct txattn_table_class {
  txattn_mask mask;
  txattn_table_window window; /* NONE unless mask == WINDOW */
  int64_t d_qk, d_v;
  int64_t group; /* heads_q / heads_kv */
  int threads;   /* the context's thread count */
  int decode;    /* 1: n_q == 1 against n = n_kv keys; 0: n_q == n_kv == n */
  /* the shape the points were measured with; not part of the class key */
  int64_t batch, heads_q; /* heads_q a multiple of group */
  /* part of the key: the tensors' element types (txattn_problem's) */
  txattn_dtype q_type, k_type, v_type, o_type;
  /* part of the key: 1 for a ragged decode batch (txattn_problem.ragged), whose points time one ragged call of
     `batch` sequences with the kv lengths docs/dispatch_table.md gives, n the longest */
  int ragged;
  /* part of the key: 1 for problems with a softcap (txattn_problem.softcap > 0), and the kind of
     their mask tensor (txattn_problem.mask_tensor, a txattn_mask_tensor) */
  int softcap, mask_tensor;
  /* part of the key as paged or not: 0 for K/V tensors, else the page size P the points were
     measured with (txattn_problem.page_size, pages in a shuffled order); a paged problem follows
     the paged class of its key whatever its own P, else the contiguous class */
  int64_t page_size;
} txattn_table_class;
#define TXATTN_TABLE_CLASS_INIT                                                                    \
  { 0 }

/* One candidate (kernel x tunables) measured at a point. */
typedef struct txattn_table_candidate {
  const char *kernel;
  size_t n_tunables; /* names and values of the tunables it ran with (every declared one) */
  const char *const *tunable_names;
  const int64_t *tunable_values;
  double time_s; /* the median time of one call, > 0 */
  double
      max_error; /* max|O - O_ref| / max|V| against txattn_reference, <= TXATTN_EXACT_TOLERANCE */
  double spread; /* the timings' relative spread (txtune: range / median); < 0: not measured */
} txattn_table_candidate;
#define TXATTN_TABLE_CANDIDATE_INIT                                                                \
  { 0 }

typedef struct txattn_table_point {
  int64_t n, r; /* r is 0 in classes without a window */
  size_t n_candidates;
  /* 1: candidate 0, the winner, is not the fastest: it was chosen among candidates whose times
     differ by less than their measured noise (txattn_table_add_point_chosen); 0: it is the
     fastest. The other candidates follow fastest first. */
  int tie;
} txattn_table_point;
#define TXATTN_TABLE_POINT_INIT                                                                    \
  { 0 }

/* A region: a rectangle of measured points (n_lo..n_hi, r_lo..r_hi) with one winner. */
typedef struct txattn_table_region {
  int64_t n_lo, n_hi, r_lo, r_hi; /* r: 0 in classes without a window */
  double time_min_s, time_max_s;  /* the winner's times over the region */
  double max_error;               /* the winner's largest error over the region */
  const char *runner_up;          /* the fastest other kernel where the margin is smallest */
  double margin;                  /* runner-up time / winner time there (> 1); 0: no runner-up */
  /* time_s: the fastest of the region; spread: -1 */
  txattn_table_candidate winner;
} txattn_table_region;
#define TXATTN_TABLE_REGION_INIT                                                                   \
  { 0 }

/* A candidate that failed (not exact, crashed, hung, could not plan...), and where; in the file, a
   failed record of its class. */
typedef struct txattn_table_exclusion {
  const char *kernel;
  size_t n_tunables;
  const char *const *tunable_names;
  const int64_t *tunable_values;
  int64_t n, r;       /* the shape it failed on */
  double max_error;   /* as txattn_table_candidate; NaN when the output was not finite */
  const char *reason; /* one line */
  /* batch and heads_q as measured (read from a file: its class's) */
  txattn_table_class cls;
} txattn_table_exclusion;
#define TXATTN_TABLE_EXCLUSION_INIT                                                                \
  { 0 }

typedef struct txattn_table_plugin {
  const char *name, *version;
  const char
      *build; /* "fnv1a64x4:<16 hex digits>" of the plugin file, as txattn_kernel_info has it */
} txattn_table_plugin;
#define TXATTN_TABLE_PLUGIN_INIT                                                                   \
  { 0 }

typedef struct txattn_table_header {
  int format_version;
  const char *library_version;
  const char *created; /* "2024-05-01T12:00:00Z" */
  const char *profile; /* the profile's settings as a JSON object text, "" if none */
  const char *path;    /* the file it was loaded from, "" if built in memory */
  size_t n_plugins, n_classes, n_excluded;
  /* the fingerprint: vendor, brand, family, model, stepping, isa_mask, n_cores and l1d/l2/l3_bytes;
     every other field is zero */
  txattn_machine_info machine;
} txattn_table_header;
#define TXATTN_TABLE_HEADER_INIT                                                                   \
  { 0 }

/* ---- building ---- */
/* An empty table whose header describes ctx: this library's version, ctx's machine
   (txattn_context_machine) and every plugin ctx loaded. */
TXATTN_API txattn_status txattn_table_create(const txattn_context *ctx, txattn_table **out);
TXATTN_API void txattn_table_free(txattn_table *t); /* NULL is fine */
/* Free-form settings of the profile that made the table (mode, budget, noise...): a JSON object. */
TXATTN_API txattn_status txattn_table_set_profile(txattn_table *t, const char *json_object);
/* Adds a class (E_INVALID if malformed or already there); *index (may be NULL) gets its index. */
TXATTN_API txattn_status txattn_table_add_class(txattn_table *t, const txattn_table_class *c,
                                                size_t *index);
/* Adds the measurements at (n, r) of class cls: at least one candidate, each exact and timed; they
   are stored fastest first. r must be >= 1 in window classes and 0 otherwise. The class's regions
   are derived again. E_INVALID if a point at (n, r) exists or a candidate is malformed. */
TXATTN_API txattn_status txattn_table_add_point(txattn_table *t, size_t cls, int64_t n, int64_t r,
                                                const txattn_table_candidate *cands,
                                                size_t n_cands);
/* The same, with cands[chosen] as the winner (stored first, the others fastest first). When it is
   not the fastest the point is a tie (txattn_table_point.tie): the profiler found the times within
   their noise and chose by a preference of its own; it may be at most 1.25x the fastest
   (E_INVALID otherwise). */
TXATTN_API txattn_status txattn_table_add_point_chosen(txattn_table *t, size_t cls, int64_t n,
                                                       int64_t r,
                                                       const txattn_table_candidate *cands,
                                                       size_t n_cands, size_t chosen);
TXATTN_API txattn_status txattn_table_add_exclusion(txattn_table *t,
                                                    const txattn_table_exclusion *e);

/* ---- files ---- */
/* The path in effect when txattn_options.table_path is NULL: $TXATTN_TABLE if set and not empty,
   else $XDG_CACHE_HOME/txtune/dispatch.json (an absolute XDG_CACHE_HOME), else
   $HOME/.cache/txtune/dispatch.json; E_NOT_FOUND when none applies, E_INVALID if it does not fit. */
TXATTN_API txattn_status txattn_table_default_path(char *buf, size_t size);
/* Writes atomically: a temporary file in the same directory, fsync, rename over path, fsync of the
   directory; missing directories are created (0755 less the umask), the file is 0644 less the
   umask. On failure the file at path is untouched and no temporary file is left. path NULL: the
   default path. */
TXATTN_API txattn_status txattn_table_write(const txattn_table *t, const char *path);
/* Reads and strictly validates a table: E_IO if it cannot be read, E_TABLE naming the file and
   line:column (syntax) or the JSON path of the bad field. *out is NULL on any failure. */
TXATTN_API txattn_status txattn_table_load(const char *path, txattn_table **out);
/* The table as normalised JSON (what txattn_table_write puts in the file). */
TXATTN_API txattn_status txattn_table_dump(const txattn_table *t, FILE *f);
/* OK if the table fits ctx: same library version, machine fingerprint and plugins (name, version,
   build), and tunables that the named kernels declare. Else E_TABLE, and why (may be NULL) gets
   every difference with the table's value and ctx's. A context follows a table that differs only
   in its plugins in part (TXATTN_TABLE_PARTIAL): txattn_table_kernel_measured says for which
   kernels. */
TXATTN_API txattn_status txattn_table_check(const txattn_table *t, const txattn_context *ctx,
                                            char *why, size_t size);
/* Whether t measured ctx's kernel `kernel` (txattn_kernel_get's index) as ctx has it: *measured 1
   when t lists the kernel's plugin with the same version and build, else 0 (the plugin is new to
   t, or t measured another version or build of it). why (may be NULL) says which, in one line. */
TXATTN_API txattn_status txattn_table_kernel_measured(const txattn_table *t,
                                                      const txattn_context *ctx, size_t kernel,
                                                      int *measured, char *why, size_t size);

/* ---- reading ---- */
TXATTN_API txattn_status txattn_table_header_get(const txattn_table *t, txattn_table_header *out);
TXATTN_API txattn_status txattn_table_plugin_get(const txattn_table *t, size_t i,
                                                 txattn_table_plugin *out);
/* n_points and n_regions may be NULL. */
TXATTN_API txattn_status txattn_table_class_get(const txattn_table *t, size_t cls,
                                                txattn_table_class *out, size_t *n_points,
                                                size_t *n_regions);
/* Points are in order of r, then n. */
TXATTN_API txattn_status txattn_table_point_get(const txattn_table *t, size_t cls, size_t point,
                                                txattn_table_point *out);
TXATTN_API txattn_status txattn_table_candidate_get(const txattn_table *t, size_t cls, size_t point,
                                                    size_t i, txattn_table_candidate *out);
/* Regions are in order of r_lo, then n_lo. */
TXATTN_API txattn_status txattn_table_region_get(const txattn_table *t, size_t cls, size_t i,
                                                 txattn_table_region *out);
TXATTN_API txattn_status txattn_table_exclusion_get(const txattn_table *t, size_t i,
                                                    txattn_table_exclusion *out);
/* The class with c's key (batch and heads_q ignored): E_NOT_FOUND if none. */
TXATTN_API txattn_status txattn_table_find_class(const txattn_table *t, const txattn_table_class *c,
                                                 size_t *index);
/* The class key (element types and raggedness included) and coordinates of problem p on `threads`
   threads (batch and heads_q from p; a ragged problem's n is its n_kv, the capacity, since the
   lengths are known only when it runs).
   E_UNSUPPORTED, with the reason, for shapes no class describes: 1 < n_q != n_kv, and windows
   that are neither "sym" nor "left" or have an unbounded side. */
TXATTN_API txattn_status txattn_table_class_of(const txattn_problem *p, int threads,
                                               txattn_table_class *cls, int64_t *n, int64_t *r);
/* "causal d64/64 g1 t2", "window-sym d128/128 g4 t1 decode", "causal d64/64 g1 t2 decode ragged",
   "causal d128/128 g4 t2 decode paged16 kv=q8_0"; a class with 16-bit or 8-bit tensors ends in
   its types as txtune's --dtype spells them: " bf16" (all four), " kv=f16" (k and v; q and o
   f32), else " q,k,v,o=f32,f16,f16,bf16". Returns what snprintf would. */
TXATTN_API int txattn_table_class_describe(const txattn_table_class *c, char *buf, size_t size);

/* The table ctx loaded, NULL unless txattn_context_table_status(ctx) is TXATTN_TABLE_LOADED or
   TXATTN_TABLE_PARTIAL. It lives as long as ctx. */
TXATTN_API const txattn_table *txattn_context_table(const txattn_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* TXATTN_TABLE_H */
