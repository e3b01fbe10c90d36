/* SPDX-License-Identifier: MIT */
/* A well-formed plugin with one exact kernel. CMake builds it several times with different
 * TEST_PLUGIN_NAME / TEST_KERNEL_NAME / TEST_KERNEL_ISA / TEST_APPLICABLE / TEST_SPEED_HINT, giving
 * the good plugin, its spare copy, the kernel for an ISA this CPU lacks, the picky kernel, the
 * duplicate, kernels that count their work (TEST_PAIRS_SCALE), one with an ABI 1.0 descriptor
 * (TEST_DESC_SIZE), kernels that fit a tunable to the problem (TEST_FIT, TEST_FIT_BAD), one whose
 * calls take as long as a tunable says (TEST_SPIN), and broken ones the dispatcher must get past:
 * a default outside its declared range (TEST_BAD_DEFAULT), a workspace no machine has
 * (TEST_WORKSPACE), a run that fails (TEST_RUN_STATUS). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <time.h>

#include "exact_kernel.h"
#include "test_plugin_names.h"

#if defined(TEST_FOREIGN_ISA)
#define TEST_KERNEL_NAME TEST_FOREIGN_KERNEL
#define TEST_KERNEL_ISA  TEST_FOREIGN_ISA_ENUM
#endif

#ifndef TEST_PLUGIN_NAME
#error "TEST_PLUGIN_NAME must be defined"
#endif
#ifndef TEST_KERNEL_NAME
#error "TEST_KERNEL_NAME must be defined"
#endif
#ifndef TEST_KERNEL_ISA
#define TEST_KERNEL_ISA TXATTN_ISA_SCALAR
#endif
#ifndef TEST_APPLICABLE
#define TEST_APPLICABLE test_exact_applicable
#endif
#ifndef TEST_SPEED_HINT
#define TEST_SPEED_HINT 0.1f
#endif

#ifndef TEST_DESC_SIZE
#define TEST_DESC_SIZE sizeof(txattn_kernel_desc)
#endif

#ifdef TEST_PAIRS_SCALE
/* What the kernel claims to compute, as a multiple of the visible pairs: the dispatcher's estimate
   must follow the claim (and ignore it when TEST_DESC_SIZE says the field is not there). */
static double test_cost_pairs(const txattn_problem *p, const int64_t *tunables) {
  (void)tunables;
  double pairs = 0;
  for (int64_t i = 0; i < p->n_q; i++) {
    int64_t lo, hi;
    txattn_visible_range(p, i, &lo, &hi);
    pairs += (double)(hi - lo);
  }
  return TEST_PAIRS_SCALE * pairs * (double)p->batch * (double)p->heads_q;
}
#define TEST_PAIRS_FN test_cost_pairs
#else
#define TEST_PAIRS_FN NULL
#endif

#if defined(TEST_FIT)
/* One tunable, which the kernel ignores, fitted to the problem (ABI 1.3 fit_tunables): cut to n_q,
   or (TEST_FIT_BAD) grown by one, which the host must refuse. */
#define TEST_TUNABLE                                                                               \
  { sizeof(txattn_tunable), TEST_FIT_TUNABLE, "rows per block (ignored)", 1, 64, 1 }
#define TEST_TUNABLE_INIT 64
static void test_fit_tunables(const txattn_problem *p, int64_t *values) {
#ifdef TEST_FIT_BAD
  (void)p;
  values[0] += 1;
#else
  if (values[0] > p->n_q) values[0] = p->n_q;
#endif
}
#define TEST_FIT_FN test_fit_tunables
#elif defined(TEST_SPIN)
/* A kernel whose call takes as long as its one tunable says (it computes the exact output, then
   spins until that many microseconds have passed since it started): the tuner's timing meets
   candidates whose times are known. */
#define TEST_TUNABLE                                                                               \
  { sizeof(txattn_tunable), TEST_SPIN_TUNABLE, "microseconds a call takes", 1, 1000000, 1 }
#define TEST_TUNABLE_INIT 100
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static txattn_status test_spin_run(const txattn_kernel_call *call) {
  const double end = now_s() + 1e-6 * (double)call->tunables[0];
  txattn_status st = test_exact_run(call);
  while (now_s() < end) {
  }
  return st;
}
#define TEST_RUN          test_spin_run
#elif defined(TEST_BAD_DEFAULT)
/* One tunable whose default lies outside the kernel's own declared range: the host refuses it. */
#define TEST_TUNABLE                                                                               \
  { sizeof(txattn_tunable), TEST_BAD_DEFAULT_TUNABLE, "rows per block (ignored)", 1, 64, 1 }
#define TEST_TUNABLE_INIT 1000
#endif

#ifdef TEST_WORKSPACE
/* A workspace of TEST_WORKSPACE bytes, which the kernel never touches. */
static size_t test_big_workspace(const txattn_problem *p, int n_threads, const int64_t *tunables) {
  (void)p;
  (void)n_threads;
  (void)tunables;
  return TEST_WORKSPACE;
}
#define TEST_WORKSPACE_FN test_big_workspace
#else
#define TEST_WORKSPACE_FN test_exact_workspace
#endif

#ifdef TEST_RUN_STATUS
/* A run that fails with TEST_RUN_STATUS after writing a wrong value to the output, which the kernel
   that stands in must overwrite. */
static txattn_status test_failing_run(const txattn_kernel_call *call) {
  call->tensors->o[0] = 1e30f;
  return TEST_RUN_STATUS;
}
#define TEST_RUN test_failing_run
#endif

#ifdef TEST_TUNABLE
static const txattn_tunable test_tunables[] = {TEST_TUNABLE};
static void test_default_tunables(const txattn_problem *p, const txattn_machine *m,
                                  int64_t *values) {
  (void)p;
  (void)m;
  values[0] = TEST_TUNABLE_INIT;
}
#define TEST_N_TUNABLES 1
#define TEST_TUNABLES   test_tunables
#define TEST_DEFAULTS   test_default_tunables
#else
#define TEST_N_TUNABLES 0
#define TEST_TUNABLES   NULL
#define TEST_DEFAULTS   NULL
#endif
#ifndef TEST_FIT_FN
#define TEST_FIT_FN NULL
#endif
#ifndef TEST_RUN
#define TEST_RUN test_exact_run
#endif

static const txattn_kernel_desc kernel = {
    .struct_size = TEST_DESC_SIZE,
    .name = TEST_KERNEL_NAME,
    .summary = "test kernel: exact attention by the test oracle",
    .isa = TEST_KERNEL_ISA,
    /* claims both flags so that a cost estimate finds it attractive: the tests check that being
       attractive is not enough when the kernel is unusable or not applicable */
    .flags = TXATTN_KERNEL_THREADED | TXATTN_KERNEL_SPARSE,
    .speed_hint = TEST_SPEED_HINT,
    .applicable = TEST_APPLICABLE,
    .workspace_size = TEST_WORKSPACE_FN,
    .run = TEST_RUN,
    .n_tunables = TEST_N_TUNABLES,
    .tunables = TEST_TUNABLES,
    .default_tunables = TEST_DEFAULTS,
    .cost_pairs = TEST_PAIRS_FN,
    .fit_tunables = TEST_FIT_FN,
};

static const txattn_kernel_desc *const kernels[] = {&kernel};

static const txattn_plugin_desc plugin = {
    .struct_size = sizeof(txattn_plugin_desc),
    .abi_version = TXATTN_PLUGIN_ABI_VERSION,
    .name = TEST_PLUGIN_NAME,
    .version = "1.0.0",
    .summary = "txattn test plugin",
    .n_kernels = 1,
    .kernels = kernels,
};

TXATTN_PLUGIN_DEFINE(plugin)
