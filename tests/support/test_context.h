/* SPDX-License-Identifier: MIT */
/* Contexts and kernel lists as the tests need them, from a clean environment. */
#ifndef TXATTN_TEST_CONTEXT_H
#define TXATTN_TEST_CONTEXT_H

#include <stddef.h>

#include "txattn/txattn.h"

#define TEST_MAX_KERNELS 64

/* Criterion suite .init: clears every TXATTN_* variable a developer's shell might export, so each
   test starts from the defaults and sets only what it tests. Then TXATTN_TEST_MAX_ISA, when set,
   becomes TXATTN_MAX_ISA: CI runs the suites that hold under any ISA (kernels) with each lower cap.
   Suites that compare the usable kernels with the CPU (dispatch) fail under a cap by design. */
void test_env_clean(void);
/* Criterion suite .fini: in sanitizer builds, a leak in the test's process aborts it in teardown,
   since Criterion would otherwise count the test as passed and the leak report would scroll by
   unseen. */
void test_check_leaks(void);

/* A context over the default plugin directories (asserts on failure). No dispatch table, so a table
   on this machine cannot change which kernel runs. */
txattn_context *test_context(int n_threads);
/* The same over the given plugin path. */
txattn_context *test_context_at(const char *plugin_path, int n_threads);

struct kernel_list {
  size_t n;
  txattn_kernel_info k[TEST_MAX_KERNELS];
};
void test_kernel_list(const txattn_context *ctx, struct kernel_list *out);
const txattn_kernel_info *test_kernel_find(const struct kernel_list *l, const char *name);
/* The kernels of issue 2 must compute every valid problem; later kernels may decline some. */
int test_kernel_takes_every_problem(const char *name);
/* 1 if kernel k takes the element types of p (its txattn_kernel_info.dtypes; zero types are f32):
   a kernel is handed only problems of the types it declares (tiled.avx512bf16 takes bf16 q, k). */
int test_kernel_takes_types(const txattn_kernel_info *k, const txattn_problem *p);

/* A path longer than 200 bytes that leads to the directory `dir`: a symlink to it at the end of a
   new directory tree under /tmp. A checkout deep in a home directory has such paths, so the tests
   that give the library a path of the tree go through one, and depend on no place the tree sits.
   test_long_path_remove(out) takes the tree away again. */
void test_long_path_to(const char *dir, char *out, size_t size);
void test_long_path_remove(const char *path);
/* Expects m to name the topology file `path` (HWLOC_XMLFILE) whole: topology_file is path, and
   topology_source holds the whole path or a stand-in naming topology_file, never a cut one. */
void test_expect_topology_file(const txattn_machine_info *m, const char *path);

#endif
