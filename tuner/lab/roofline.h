/* SPDX-License-Identifier: MIT */
/* `txtune bench --roofline`: the machine's roofs measured in the same run as the kernels (FMA peak
   per ISA, OpenBLAS sgemm, memory bandwidth, each at 1 thread and at the context's thread count),
   and each kernel's rate as a fraction of the roof that bounds it; for decode also against read
   runs made right before each of its timed runs. */
#ifndef TXTUNE_ROOFLINE_H
#define TXTUNE_ROOFLINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "args.h"
#include "json.h"
#include "roof_measure.h"
#include "txattn/txattn.h"

typedef struct tx_roofline_args {
  int enabled;                /* --roofline */
  int64_t gemm_n, stream_mib; /* 0: the defaults */
} tx_roofline_args;

#define TX_ROOFLINE_N_OPTS 3
void tx_roofline_args_init(tx_roofline_args *a);
/* Writes the TX_ROOFLINE_N_OPTS options that fill a into opts. */
void tx_roofline_opts(tx_roofline_args *a, tx_opt *opts);
/* The sizes only mean something with --roofline. Returns 0, or prints a usage error and returns
   TX_EXIT_USAGE. */
int tx_roofline_check_args(const tx_cmd_spec *spec, const tx_roofline_args *a);

#define TX_ROOF_MAX_COUNTS 2 /* thread counts: 1 and the context's (once if they are equal) */

typedef struct tx_roof_peak {
  tx_peak_isa isa;
  double gflops[TX_ROOF_MAX_COUNTS]; /* -1 when not usable */
} tx_roof_peak;

typedef struct tx_roofline {
  int n_counts, threads[TX_ROOF_MAX_COUNTS];
  size_t n_peaks;
  tx_roof_peak peaks[TX_PEAK_MAX_ISAS];
  int64_t gemm_n;
  double sgemm_gflops[TX_ROOF_MAX_COUNTS];
  size_t stream_bytes; /* per array */
  size_t l3_bytes;     /* one L3 as the library's machine info has it (hwloc), 0 if unknown */
  double triad_gbs[TX_ROOF_MAX_COUNTS], read_gbs[TX_ROOF_MAX_COUNTS];
  double min_run_s, load_before, seconds; /* load_before: 1-minute load average, -1 if unknown */
  int runs;
  /* b and c of the bandwidth arrays, kept (made and first touched once) for the read runs paired
     with a decode's timed runs; a is freed after the triad */
  tx_stream_arrays stream;
} tx_roofline;

/* Measures everything for 1 and `threads` threads, each rate the best of a few runs of at least
   min_run_s, with the loops of the ISAs m enables and arrays sized by its L3. Returns 0, or prints
   why on stderr and returns TX_EXIT_FAIL. Takes a few seconds. */
int tx_roofline_measure(const tx_roofline_args *a, const txattn_machine_info *m, int threads,
                        double min_run_s, tx_roofline *r);
void tx_roofline_free(tx_roofline *r); /* the arrays it keeps */
void tx_roofline_print(const tx_roofline *r, FILE *f);
void tx_roofline_json(tx_json *j, const tx_roofline *r); /* the value: one object */

/* ---- a kernel against the roofs ---- */

typedef struct tx_roof_work {
  double flops;   /* 2 (d_qk + d_v) per visible pair */
  double bytes;   /* Q, K and V read once and O written once, each in its element type */
  int decode;     /* n_q == 1: the bytes are K and V read, held to the read bandwidth */
  char types[64]; /* "q f32, k f16, v f16, o f32" */
} tx_roof_work;
/* p must be resolved. */
tx_roof_work tx_roofline_work(const txattn_problem *p);

/* A kernel's GB/s as a fraction of the read bandwidth measured right before each of its timed
   runs: per round, (bytes / that run's time per call) / (that round's read GB/s). A ratio within
   one round cancels the machine's drifts, which a roof measured seconds earlier does not. */
typedef struct tx_roof_paired {
  int pairs;                       /* rounds paired: 0 with a single timed run */
  double median, min, q1, q3, max; /* of the per-round fraction */
  double read_gbs;                 /* median of the paired read runs' GB/s */
} tx_roof_paired;

/* Whether a problem of work w has its kernels' timed runs paired with read runs: a decode (held to
   the read bandwidth), once the roofs are measured. */
int tx_roofline_pairs(const tx_roofline *r, const tx_roof_work *w);
/* Times n kernels fn(args[i]), each already called once, as tx_time does
   (tm and status as there), with a read-bandwidth run on threads[i] threads over r's arrays (at
   least o->min_run_s long) right before each timed run of kernel i; out[i] is its paired fraction
   for `bytes` per call, over the rounds (the calibration runs are not paired). */
void tx_roofline_measure_paired(tx_roofline *r, double bytes, tx_run_fn fn, void *const *args,
                                const int *threads, size_t n, const tx_timing_opts *o,
                                tx_timing *tm, txattn_status *status, tx_roof_paired *out);

typedef struct tx_roof_kernel {
  const char *name, *isa;       /* as txattn_kernel_info gives them */
  int threads;                  /* the threads it ran on: the context's if it is threaded, else 1 */
  double seconds;               /* median per call; <= 0 when it was not measured */
  const tx_roof_paired *paired; /* NULL when its runs were not paired with read runs */
} tx_roof_kernel;

typedef struct tx_roof_fit {
  const tx_roof_peak *roof; /* the FMA peak it is held to */
  int for_scalar;           /* a scalar kernel held to the best SIMD peak (see the footnote) */
  double peak_gflops, gflops, fraction;
  double intensity, balance; /* flop per byte: the kernel's, and peak / bandwidth */
  int memory_bound;          /* intensity < balance */
  /* the bandwidth it is held to: the read bandwidth for decode (a KV cache read once), else the
     triad's; gbs counts the bytes the element types imply */
  int read_roof;
  double bandwidth_gbs, gbs, bw_fraction;
} tx_roof_fit;

/* Returns 1 with *out filled, or 0 when the kernel was not measured or there is no roof for its
   ISA and thread count. */
int tx_roofline_fit(const tx_roofline *r, const tx_roof_work *w, const tx_roof_kernel *k,
                    tx_roof_fit *out);
/* A table of every measured kernel against its roofs, with the footnotes it needs. */
void tx_roofline_print_fits(const tx_roofline *r, const tx_roof_work *w, const tx_roof_kernel *ks,
                            size_t n, FILE *f);
/* The value: an object, or null when tx_roofline_fit gives nothing. */
void tx_roofline_json_fit(tx_json *j, const tx_roofline *r, const tx_roof_work *w,
                          const tx_roof_kernel *k);

#endif
