/* SPDX-License-Identifier: MIT */
/* FMA peak per ISA: which loops this CPU and OS can run (the library's answer,
   txattn_machine_info.isa_mask: txtune must not call a loop the OS does not enable), and their
   rate on a team of threads. */
#include <omp.h>
#include <stdio.h>

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
