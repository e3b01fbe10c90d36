/* SPDX-License-Identifier: MIT */
/* The masked kernel's thread plan.
 *
 * We link the OpenMP build of OpenBLAS (cmake/TxattnDeps.cmake), which runs on the same libgomp as
 * this file. With several tasks, the tasks are shared out in our own parallel region of at most
 * n_threads threads, each with its own slice of the workspace; OpenBLAS sees omp_in_parallel()
 * there and runs every sgemm single-threaded, so there are never more than n_threads busy threads.
 * With one thread or one task there is no region of ours, and BLAS itself gets the threads: its
 * count follows the calling thread's omp_get_max_threads(), which is set to n_threads for the call
 * and restored after (the ICV belongs to the calling thread, so other callers are not affected).
 */
#include <omp.h>

#include "masked.h"

txattn_status masked_run(const txattn_kernel_call *call) {
  const txattn_problem *p = call->problem;
  masked_geometry g;
  int64_t block = call->tunables ? call->tunables[0] : masked_default_block(p);
  if (!masked_geometry_init(&g, p, block)) return TXATTN_E_INTERNAL;
  int threads = masked_thread_count(&g, call->n_threads);
  if (call->workspace_size / sizeof(float) / (size_t)threads < g.scratch_floats)
    return TXATTN_E_INTERNAL;
  float *workspace = call->workspace;

  if (threads == 1) {
    int saved = omp_get_max_threads();
    omp_set_num_threads(call->n_threads);
    for (int64_t task = 0; task < g.tasks; task++) masked_block(call, &g, task, workspace);
    omp_set_num_threads(saved);
    return TXATTN_OK;
  }
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (int64_t task = 0; task < g.tasks; task++)
    masked_block(call, &g, task, workspace + (size_t)omp_get_thread_num() * g.scratch_floats);
  return TXATTN_OK;
}
