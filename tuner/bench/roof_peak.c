/* SPDX-License-Identifier: MIT */
/* FMA peak per ISA: which loops this CPU and OS can run, and their rate on a team of threads.
   The check is the library's (core/cpu.c), redone here because txtune must not call an ISA's loop
   that the OS does not enable, whatever plugins happen to be installed: cpuid says what the CPU
   has, XGETBV whether the OS saves the registers (a hypervisor may hide the latter). */
#include <omp.h>
#include <stdio.h>

#include "roof_measure.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#if defined(__x86_64__)
static uint64_t read_xcr0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0)); /* _xgetbv would need -mxsave */
  return ((uint64_t)hi << 32) | lo;
}

static void check_x86(tx_peak_isa *avx2, tx_peak_isa *avx512) {
  uint32_t a, b, c = 0, d, ebx7 = 0, ecx7, edx7;
  __get_cpuid(1, &a, &b, &c, &d);
  if (__get_cpuid_max(0, NULL) >= 7) __cpuid_count(7, 0, a, ebx7, ecx7, edx7);
  int osxsave = (c >> 27) & 1u;
  uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  if (!((c >> 28) & 1u) || !((c >> 12) & 1u) || !((ebx7 >> 5) & 1u))
    snprintf(avx2->why, sizeof avx2->why, "CPU lacks AVX, FMA or AVX2 (cpuid)");
  else if ((xcr0 & 0x6) != 0x6)
    snprintf(avx2->why, sizeof avx2->why, "OS has not enabled YMM state (XCR0=0x%llx)",
             (unsigned long long)xcr0);
  else
    avx2->usable = 1;
  if (!((ebx7 >> 16) & 1u))
    snprintf(avx512->why, sizeof avx512->why,
             "not available on this CPU: it lacks AVX-512F (cpuid leaf 7 ebx bit 16)");
  else if (!avx2->usable)
    snprintf(avx512->why, sizeof avx512->why, "needs AVX2 too: %.100s", avx2->why);
  else if ((xcr0 & 0xe0) != 0xe0)
    snprintf(avx512->why, sizeof avx512->why,
             "not available: the OS has not enabled ZMM state (XCR0=0x%llx)",
             (unsigned long long)xcr0);
  else
    avx512->usable = 1;
}
#endif

size_t tx_peak_isas(tx_peak_isa *out) {
  size_t n = 0;
  out[n++] = (tx_peak_isa){&tx_peak_scalar, TXATTN_ISA_SCALAR, 1, ""};
#if defined(__x86_64__)
  out[n++] = (tx_peak_isa){&tx_peak_avx2, TXATTN_ISA_AVX2, 0, ""};
  out[n++] = (tx_peak_isa){&tx_peak_avx512, TXATTN_ISA_AVX512, 0, ""};
  check_x86(&out[1], &out[2]);
#elif defined(__aarch64__)
  out[n] = (tx_peak_isa){&tx_peak_neon, TXATTN_ISA_NEON, 1, ""};
  if (!(getauxval(AT_HWCAP) & HWCAP_ASIMD)) {
    out[n].usable = 0;
    snprintf(out[n].why, sizeof out[n].why, "CPU lacks Advanced SIMD (HWCAP_ASIMD)");
  }
  n++;
#endif
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
