/* SPDX-License-Identifier: MIT */
/* OpenBLAS sgemm as a practical compute roof: what a tuned dense kernel reaches on this machine
   with the core type OpenBLAS selected (OPENBLAS_CORETYPE can force one). */
#define _GNU_SOURCE /* cblas.h declares the affinity calls with cpu_set_t */
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>

#include "roof_measure.h"

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
