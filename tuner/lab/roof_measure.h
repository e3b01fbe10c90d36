/* SPDX-License-Identifier: MIT */
/* The three measurements behind `txtune bench --roofline`: the FMA peak of each ISA, OpenBLAS sgemm
   and memory bandwidth, each for a given number of threads. Rates are the best of several runs (as
   STREAM reports them): a roof is what the machine can reach, not what it usually does. */
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

#endif
