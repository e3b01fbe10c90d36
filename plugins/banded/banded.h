/* Internal to the banded plugin: the split between the row loop and the per-ISA inner loops.
 *
 * banded_rows.c walks the rows and their visible key ranges and is compiled without ISA flags; the
 * vector work of one row (scores, max, exponentials, weighted sum) goes through a banded_ops table,
 * one per ISA file, so an AVX2/AVX-512/NEON variant is one new file plus one kernel descriptor.
 */
#ifndef TXATTN_BANDED_H
#define TXATTN_BANDED_H

#include "txattn/plugin.h"

/* Keys per float partial sum (see banded_rows.c). */
#define BANDED_CHUNK 64

typedef struct banded_ops {
  /* s[j] = scale * (q . k_j) for j < n, where key row k_j = k + j * k_row holds d floats. */
  void (*scores)(const float *q, const float *k, int64_t k_row, int64_t n, int64_t d, float scale,
                 float *s);
  /* The max of s[0..n), NaN if any s[j] is NaN (n >= 1). */
  float (*max)(const float *s, int64_t n);
  /* s[j] = exp(s[j] - max) in place; returns the sum of the new s[j] (n <= BANDED_CHUNK). */
  float (*exp_sum)(float *s, int64_t n, float max);
  /* o[c] = sum_j w[j] * v_j[c] for c < d, where value row v_j = v + j * v_row; o overlaps no v_j
     (n <= BANDED_CHUNK). */
  void (*weighted_sum)(const float *w, const float *v, int64_t v_row, int64_t n, int64_t d,
                       float *o);
} banded_ops;

extern const banded_ops banded_scalar_ops;

/* The widest visible range of any row, in keys. */
int64_t banded_max_range(const txattn_problem *p);
/* The scratch one row needs: scores of the widest range and the partial sums of one output row. */
size_t banded_workspace_bytes(const txattn_problem *p);
/* Runs the whole problem on one thread with the given inner loops. */
txattn_status banded_run(const txattn_kernel_call *call, const banded_ops *ops);

#endif
