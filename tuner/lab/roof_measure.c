/* SPDX-License-Identifier: MIT */
/* The roofs of `txtune bench --roofline` (roof_measure.h). The FMA peak per ISA the CPU and OS
   can run (the library's answer, txattn_machine_info.isa_mask: txtune must not call a loop the OS
   does not enable). Memory bandwidth, STREAM style: arrays far larger than the last-level cache,
   each thread streaming its own contiguous slice; portable C the compiler vectorises for the
   baseline ISA (memory, not the load units, bounds it: an AVX2 build is no faster,
   docs/measurements.md). OpenBLAS sgemm as a practical compute roof, with the core type OpenBLAS
   selected (OPENBLAS_CORETYPE can force one).
   And the least time a call can take on this machine: no kernel computes faster than the machine
   can. */
#define _GNU_SOURCE /* cblas.h declares the affinity calls with cpu_set_t */

#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include "big_alloc.h"
#include "roof_measure.h"

size_t tx_peak_isas(unsigned isa_mask, tx_peak_isa *out) {
  static const struct {
    const tx_peak_loop *loop;
    txattn_isa isa;
  } loops[] = {
    {&tx_peak_scalar, TXATTN_ISA_SCALAR},
#if defined(__x86_64__)
    {&tx_peak_avx2, TXATTN_ISA_AVX2},
    {&tx_peak_avx512, TXATTN_ISA_AVX512},
#elif defined(__aarch64__)
    {&tx_peak_neon, TXATTN_ISA_NEON},
#endif
  };
  size_t n = sizeof loops / sizeof loops[0];
  for (size_t i = 0; i < n; i++) {
    int usable = loops[i].isa == TXATTN_ISA_SCALAR || (isa_mask & (1u << loops[i].isa));
    out[i] = (tx_peak_isa){loops[i].loop, loops[i].isa, usable, ""};
    if (!usable)
      snprintf(out[i].why, sizeof out[i].why,
               "not available: this CPU and OS do not enable %s (libtxattn's machine info)",
               txattn_isa_name(loops[i].isa));
  }
  return n;
}

/* Iterations that last at least min_run_s on one thread (the first calls also warm the core up). */
static int64_t calibrate(const tx_peak_loop *l, double min_run_s, volatile float *sink) {
  for (int64_t iters = 1 << 12;; iters *= 2) {
    double t0 = tx_clock();
    *sink = l->run(iters, 1.0f);
    if (tx_clock() - t0 >= min_run_s || iters >= (INT64_C(1) << 40)) return iters;
  }
}

/* Every thread times its own loop and the rates are summed: a core that another process shares
   then lowers the sum by what it loses, instead of stalling the whole team at a barrier. */
static double team_gflops(const tx_peak_loop *l, int64_t iters, int threads, volatile float *sink) {
  double sum = 0;
  float s = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum, s) if (threads > 1)
  {
#pragma omp barrier
    double t0 = tx_clock();
    s += l->run(iters, 1.0f + (float)omp_get_thread_num());
    sum += 1e-9 * l->flops_per_iter * (double)iters / (tx_clock() - t0);
  }
  *sink = s;
  return sum;
}

double tx_peak_gflops(const tx_peak_loop *l, int threads, const tx_timing_opts *t) {
  volatile float sink;
  int64_t iters = calibrate(l, t->min_run_s, &sink);
  double best = -1, start = tx_clock();
  for (int run = 0; run < t->runs && (run == 0 || tx_clock() - start <= t->limit_s); run++) {
    double g = team_gflops(l, iters, threads, &sink);
    if (g > best) best = g;
  }
  return best;
}

int tx_stream_alloc(tx_stream_arrays *s, size_t bytes_each) {
  s->n = bytes_each / sizeof(float) / 64 * 64;
  size_t bytes = s->n * sizeof(float);
  s->a = tx_alloc_big(bytes); /* in the pages the benchmarked tensors get */
  s->b = tx_alloc_big(bytes);
  s->c = tx_alloc_big(bytes);
  if (!s->a || !s->b || !s->c) {
    tx_stream_free(s);
    return -1;
  }
  /* first touch here, not in the timed runs: a fresh page costs far more than streaming it */
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < s->n; i++) {
    s->a[i] = 0.0f;
    s->b[i] = 1.0f;
    s->c[i] = 2.0f;
  }
  return 0;
}

void tx_stream_free(tx_stream_arrays *s) {
  free(s->a);
  free(s->b);
  free(s->c);
  s->a = s->b = s->c = NULL;
}

static txattn_status triad(void *arg) {
  tx_stream_run *p = arg;
  float *restrict a = p->s->a;
  const float *restrict b = p->s->b, *restrict c = p->s->c;
  const float q = 3.0f;
#pragma omp parallel for schedule(static) num_threads(p->threads) if (p->threads > 1)
  for (size_t i = 0; i < p->s->n; i++) a[i] = b[i] + q * c[i];
  return TXATTN_OK;
}

/* Several partial sums, so the adds' latency does not bound the loop (a float sum is not
   reassociated by the compiler on its own). Two streams, as attention reads K and V side by side;
   one stream alone gets less from the prefetchers. */
#define LANES 16

static float sum_slices(const float *x, const float *y, size_t n) {
  float acc[2][LANES] = {{0}};
  for (size_t i = 0; i + LANES <= n; i += LANES)
    for (int k = 0; k < LANES; k++) {
      acc[0][k] += x[i + k];
      acc[1][k] += y[i + k];
    }
  float s = 0;
  for (int k = 0; k < LANES; k++) s += acc[0][k] + acc[1][k];
  return s;
}

txattn_status tx_stream_read_pass(void *arg) {
  tx_stream_run *p = arg;
  size_t n = p->s->n / LANES;
  float s = 0;
#pragma omp parallel num_threads(p->threads) reduction(+ : s) if (p->threads > 1)
  {
    size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
    size_t lo = n * t / nt * LANES, hi = n * (t + 1) / nt * LANES;
    s += sum_slices(p->s->b + lo, p->s->c + lo, hi - lo);
  }
  p->sink = s;
  return TXATTN_OK;
}

static double rate(tx_run_fn fn, tx_stream_arrays *s, int threads, const tx_timing_opts *t,
                   double bytes_per_element) {
  tx_stream_run p = {.s = s, .threads = threads};
  tx_timing tm;
  txattn_status st;
  void *arg = &p;
  tx_time(fn, &arg, 1, t, &tm, &st, NULL);
  if (st != TXATTN_OK) return -1;
  return 1e-9 * bytes_per_element * (double)s->n / tm.min_s;
}

double tx_stream_triad_gbs(tx_stream_arrays *s, int threads, const tx_timing_opts *t) {
  return rate(triad, s, threads, t, 3.0 * sizeof(float));
}

double tx_stream_read_gbs(tx_stream_arrays *s, int threads, const tx_timing_opts *t) {
  return rate(tx_stream_read_pass, s, threads, t, 2.0 * sizeof(float));
}

double tx_stream_read_bytes(const tx_stream_arrays *s) {
  return 2.0 * sizeof(float) * (double)s->n;
}

int tx_sgemm_alloc(tx_sgemm_bufs *g, int64_t n) {
  size_t len = (size_t)n * (size_t)n, bytes = len * sizeof(float);
  g->n = n;
  g->a = aligned_alloc(64, bytes);
  g->b = aligned_alloc(64, bytes);
  g->c = aligned_alloc(64, bytes);
  if (!g->a || !g->b || !g->c) {
    tx_sgemm_free(g);
    return -1;
  }
  for (size_t i = 0; i < len; i++) { /* small values: no overflow, no subnormals */
    g->a[i] = (float)(i % 7) * 0.125f;
    g->b[i] = (float)(i % 5) * 0.25f;
    g->c[i] = 0.0f;
  }
  return 0;
}

void tx_sgemm_free(tx_sgemm_bufs *g) {
  free(g->a);
  free(g->b);
  free(g->c);
  g->a = g->b = g->c = NULL;
}

static txattn_status sgemm(void *arg) {
  tx_sgemm_bufs *g = arg;
  int n = (int)g->n;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, g->a, n, g->b, n, 0.0f,
              g->c, n);
  return TXATTN_OK;
}

double tx_sgemm_gflops(tx_sgemm_bufs *g, int threads, const tx_timing_opts *t) {
  /* The OpenMP build takes its thread count from this thread's OpenMP setting at each call. */
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  tx_timing tm;
  txattn_status s;
  void *arg = g;
  tx_time(sgemm, &arg, 1, t, &tm, &s, NULL);
  omp_set_num_threads(saved);
  if (s != TXATTN_OK) return -1;
  double n = (double)g->n;
  return 1e-9 * 2.0 * n * n * n / tm.min_s;
}

const char *tx_openblas_corename(void) {
  return openblas_get_corename();
}
const char *tx_openblas_config(void) {
  return openblas_get_config();
}

const char *tx_openblas_threading(void) {
  switch (openblas_get_parallel()) {
  case OPENBLAS_SEQUENTIAL:
    return "serial";
  case OPENBLAS_THREAD:
    return "pthreads";
  case OPENBLAS_OPENMP:
    return "OpenMP";
  }
  return "unknown";
}

/* Each roof is the best of many short runs: on a busy machine some of them get a core (or the
   memory) to themselves, and a roof measured low would refuse honest kernels. */
#define CEILING_MIN_RUN_S 0.002
#define CEILING_RUNS      30
#define CEILING_LIMIT_S   0.15
#define MIB               (1024.0 * 1024.0)

void tx_roof_ceiling_measure(unsigned isa_mask, int threads, double cache_bytes,
                             tx_roof_ceiling *c) {
  tx_timing_opts t = {
      .min_run_s = CEILING_MIN_RUN_S, .runs = CEILING_RUNS, .limit_s = CEILING_LIMIT_S};
  tx_peak_isa isas[TX_PEAK_MAX_ISAS];
  size_t n = tx_peak_isas(isa_mask, isas);
  *c = (tx_roof_ceiling){
      .gflops_1t = -1, .read_gbs = -1, .threads = threads, .cache_bytes = cache_bytes};
  /* every loop, the scalar one too: under an emulator (qemu) it may outrun the SIMD ones */
  for (size_t i = 0; i < n; i++)
    if (isas[i].usable) c->gflops_1t = fmax(c->gflops_1t, tx_peak_gflops(isas[i].loop, 1, &t));
  /* arrays beyond the caches, so that the reads come from memory */
  double bytes = fmin(fmax(cache_bytes, 64 * MIB), 512 * MIB);
  tx_stream_arrays s;
  if (tx_stream_alloc(&s, (size_t)bytes) != 0) return;
  c->read_gbs = tx_stream_read_gbs(&s, threads, &t);
  tx_stream_free(&s);
}

double tx_roof_floor_s(const tx_roof_ceiling *c, int threads, double flops, double bytes,
                       int half_inputs, double slack, char *why, size_t size) {
  const double units = half_inputs ? TX_ROOF_MATRIX_UNITS : 1;
  const double peak = c->gflops_1t * (double)threads * units; /* GFLOP/s */
  const double beyond = bytes - c->cache_bytes;
  const double t_flop = c->gflops_1t > 0 ? flops / (slack * peak * 1e9) : 0;
  const double t_read = c->read_gbs > 0 && beyond > 0 ? beyond / (slack * c->read_gbs * 1e9) : 0;
  if (t_flop <= 0 && t_read <= 0)
    snprintf(why, size, "(no roof of this machine is known)");
  else if (t_flop >= t_read)
    snprintf(why, size,
             "a call of %.3g GFLOP needs at %g x this machine's peak: %d thread%s x %.3g GFLOP/s "
             "(the best FMA peak of one thread, measured)%s",
             1e-9 * flops, slack, threads, threads == 1 ? "" : "s", c->gflops_1t,
             half_inputs ? " x 16 (matrix units, for 16-bit inputs)" : "");
  else
    snprintf(why, size,
             "a call that reads %.3g MB beyond the caches' %.3g MB needs at %g x this machine's "
             "read bandwidth (%.3g GB/s on %d threads, measured)",
             1e-6 * beyond, 1e-6 * c->cache_bytes, slack, c->read_gbs, c->threads);
  return fmax(t_flop, t_read);
}
