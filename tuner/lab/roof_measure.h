/* SPDX-License-Identifier: MIT */
/* The machine's roofs (roof_measure.c): the FMA peak of each ISA, OpenBLAS sgemm and memory
   bandwidth, each for a given number of threads, which `txtune bench --roofline` reports; and what
   no call can beat, the least time a call's work needs under roofs measured once, quickly (txtune
   profile refuses a time below it). Rates are the best of several runs (as STREAM reports them): a
   roof is what the machine can reach, not what it usually does. */
#ifndef TXTUNE_ROOF_MEASURE_H
#define TXTUNE_ROOF_MEASURE_H

#include <stddef.h>
#include <stdint.h>
#include "roof_peak_loops.h"
#include "timing.h"
#include "txattn/plugin.h"
/* The ISAs of this build's target architecture, in report order, with whether the CPU and OS can run
   each one's loop (isa_mask: txattn_machine_info's, the library's check of the CPU and OS) and,
   if not, why. */
typedef struct tx_peak_isa {
  const tx_peak_loop *loop;
  txattn_isa isa; /* the loop's; txattn_isa_name() names it as kernels do */
  int usable;
  char why[128];
} tx_peak_isa;
#define TX_PEAK_MAX_ISAS 3
size_t tx_peak_isas(unsigned isa_mask,
                    tx_peak_isa *out); /* how many it wrote (<= TX_PEAK_MAX_ISAS) */

/* Each measurement runs `threads` threads at once (an OpenMP team) and returns the best rate over
   t->runs runs of at least t->min_run_s, or -1 on failure. The FMA peak sums the rates each thread
   measures for itself; bandwidth and sgemm divide the work of the whole team by its wall time. */
double tx_peak_gflops(const tx_peak_loop *l, int threads, const tx_timing_opts *t);

/* STREAM-style arrays, much larger than the last-level cache, touched once when made. */
typedef struct tx_stream_arrays {
  float *a, *b, *c;
  size_t n; /* floats per array */
} tx_stream_arrays;
int tx_stream_alloc(tx_stream_arrays *s, size_t bytes_each); /* 0, or -1 out of memory */
void tx_stream_free(tx_stream_arrays *s);
/* Triad a[i] = b[i] + q * c[i]: 12 bytes per element (read b and c, write a), as STREAM counts them
   (the write-allocate read of a is not counted). */
double tx_stream_triad_gbs(tx_stream_arrays *s, int threads, const tx_timing_opts *t);
/* Sum of b and c: 8 bytes per element, reads only (what attention mostly does to K and V). */
double tx_stream_read_gbs(tx_stream_arrays *s, int threads, const tx_timing_opts *t);
/* One pass of that sum as a tx_run_fn, to time it interleaved with something else: arg is a
   tx_stream_run. It counts tx_stream_read_bytes bytes. */
typedef struct tx_stream_run {
  tx_stream_arrays *s;
  int threads;
  volatile float sink;
} tx_stream_run;
txattn_status tx_stream_read_pass(void *arg);
double tx_stream_read_bytes(const tx_stream_arrays *s);

/* C = A B at n x n x n with cblas_sgemm of the OpenBLAS this program is linked with; its thread
   count follows omp_set_num_threads (the OpenMP build, see cmake/TxattnDeps.cmake). */
typedef struct tx_sgemm_bufs {
  float *a, *b, *c;
  int64_t n;
} tx_sgemm_bufs;
int tx_sgemm_alloc(tx_sgemm_bufs *g, int64_t n); /* 0, or -1 out of memory */
void tx_sgemm_free(tx_sgemm_bufs *g);
double tx_sgemm_gflops(tx_sgemm_bufs *g, int threads, const tx_timing_opts *t);
/* What OpenBLAS says of itself: the core its kernels were chosen for, its build configuration, and
   whether it is the OpenMP build. */
const char *tx_openblas_corename(void);
const char *tx_openblas_config(void);
const char *tx_openblas_threading(void);
/* The machine's roofs as the floor of a call's time: the best FMA peak of one thread over the ISAs
   it can run (a team of threads has at most that many times as much), the read bandwidth of
   `threads` threads from arrays beyond the caches, and the caches' bytes together (reads that fit
   in them need not come from memory). A rate <= 0 is unknown. */
typedef struct tx_roof_ceiling {
  double gflops_1t, read_gbs;
  int threads; /* the read bandwidth's */
  double cache_bytes;
} tx_roof_ceiling;
/* 16-bit inputs may meet matrix units (AMX) that multiply them this many times faster than the
   FP32 FMA the peak measures. */
#define TX_ROOF_MATRIX_UNITS 16
/* Measures c (a fraction of a second; arrays of max(cache_bytes, 64 MiB) up to 512 MiB), with the
   loops of the ISAs of isa_mask (txattn_machine_info's). */
void tx_roof_ceiling_measure(unsigned isa_mask, int threads, double cache_bytes,
                             tx_roof_ceiling *c);
/* The least seconds a call of `flops` that must read `bytes` can take on `threads` threads with
   `slack` x the roofs: its flops at the peak (x TX_ROOF_MATRIX_UNITS with half_inputs), and its
   bytes beyond the caches at the read bandwidth, whichever is longer (0: no roof known); why says
   which, with the figures. */
double tx_roof_floor_s(const tx_roof_ceiling *c, int threads, double flops, double bytes,
                       int half_inputs, double slack, char *why, size_t size);
#endif
