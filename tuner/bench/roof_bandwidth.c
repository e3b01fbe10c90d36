/* SPDX-License-Identifier: MIT */
/* Memory bandwidth, STREAM style: arrays far larger than the last-level cache, each thread streaming
   its own contiguous slice, the best of several runs. Portable C: the compiler vectorises both
   loops for the baseline ISA; memory, not the load units, bounds them (an AVX2 build is no
   faster: docs/measurements.md). */
#include <omp.h>
#include <stdlib.h>

#include "roof_measure.h"

int tx_stream_alloc(tx_stream_arrays *s, size_t bytes_each) {
  s->n = bytes_each / sizeof(float) / 64 * 64;
  size_t bytes = s->n * sizeof(float);
  s->a = aligned_alloc(64, bytes);
  s->b = aligned_alloc(64, bytes);
  s->c = aligned_alloc(64, bytes);
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
