/* txattn_error_bound: the bound on max|O - O_ref| every kernel meets, as a formula in the inputs.
 *
 *   bound = max|V| * max(TXATTN_EXACT_TOLERANCE, (3 + sqrt(d_qk)) * 2^-24 * L),
 *   L = |scale| * max over visible (query row, key) pairs of sum_c |q_c k_c|.
 *
 * Each fp32 score is off by at most (3 + sqrt(d_qk)) u L (u = 2^-24): the product and scale
 * roundings (3 u L) plus the d_qk - 1 additions of the dot product, whose rounding errors grow as
 * sqrt(d_qk) u L (the probabilistic analysis of Higham and Mary, lambda = 1). Score errors of at
 * most delta move a softmax-weighted average of V rows by at most delta * max|V| to first order.
 * Everything else (exp, sums, P V, the running max) does not grow with L and fits in the tolerance.
 * 16-bit inputs are exact in fp32, so they change nothing. A 16-bit o is rounded to its type twice,
 * by the kernel and by the reference, each by at most half an ulp of the largest |O|: the bound adds
 * one ulp of max|V| + the fp32 bound (|O| <= max|V|, a convex combination of V rows).
 * docs/error_bound.md has the derivation and the measurements behind the constant. In a ragged
 * batch, max|V| and L are taken over each sequence's own visible pairs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "error.h"
#include "problem.h"
#include "tensors.h"
#include "txattn/plugin.h"

/* sum_c |q_c k_c| in double (each product of two floats is exact in double); NaN if it is not
   finite, so that a NaN or infinite input never counts (its rows follow the NaN rule). */
static double abs_dot(const txattn_problem *p, const void *q, const void *k) {
  double s = 0.0;
  for (int64_t c = 0; c < p->d_qk; c++)
    s += fabs(txattn__load(q, p->q_type, c) * txattn__load(k, p->k_type, c));
  return isfinite(s) ? s : NAN;
}

/* seen[j] = 1 for every key some query row sees (the same for every batch and head). */
static void mark_visible_keys(const txattn_problem *p, unsigned char *seen) {
  memset(seen, 0, (size_t)p->n_kv);
  int64_t next = 0; /* keys below next are marked: lo and hi never decrease with i */
  for (int64_t i = 0; i < p->n_q; i++) {
    int64_t lo, hi;
    txattn_visible_range(p, i, &lo, &hi);
    for (int64_t j = lo > next ? lo : next; j < hi; j++) seen[j] = 1;
    if (hi > next) next = hi;
  }
}

static double max_abs_visible_v(const txattn_problem *p, const txattn_tensors *t,
                                const unsigned char *seen) {
  double m = 0.0;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_kv; h++)
      for (int64_t j = 0; j < p->n_kv; j++) {
        if (!seen[j]) continue;
        const void *v = txattn_row_of(t->v_data, p->v_type, &t->v_layout, b, h, j);
        for (int64_t c = 0; c < p->d_v; c++) {
          double x = fabs(txattn__load(v, p->v_type, c));
          if (isfinite(x) && x > m) m = x;
        }
      }
  return m;
}

static double max_visible_abs_dot(const txattn_problem *p, const txattn_tensors *t) {
  double m = 0.0;
  int64_t group = p->heads_q / p->heads_kv;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++) {
        int64_t lo, hi;
        txattn_visible_range(p, i, &lo, &hi);
        const void *q = txattn_row_of(t->q_data, p->q_type, &t->q_layout, b, h, i);
        for (int64_t j = lo; j < hi; j++) {
          double s =
              abs_dot(p, q, txattn_row_of(t->k_data, p->k_type, &t->k_layout, b, h / group, j));
          if (s > m) m = s; /* NaN compares false: left out */
        }
      }
  return m;
}

txattn_status txattn_error_bound(const txattn_problem *p, const txattn_tensors *t, double *bound) {
  txattn_problem r;
  txattn_tensors x;
  TXATTN_RETURN_IF(bound == NULL, TXATTN_E_INVALID, "txattn_error_bound: bound is NULL");
  TXATTN_FORWARD_IF_ERROR(txattn__problem_resolve(p, &r));
  TXATTN_FORWARD_IF_ERROR(txattn__tensors_check(&r, t, &x));
  unsigned char *seen = malloc((size_t)r.n_kv);
  TXATTN_RETURN_IF(seen == NULL, TXATTN_E_NOMEM,
                   "txattn_error_bound: cannot allocate %lld bytes for the visible keys",
                   (long long)r.n_kv);
  /* the maxima over every sequence (one, unless ragged), each with its own lengths */
  double max_v = 0.0, dot = 0.0;
  int64_t sequences = r.ragged ? r.batch : 1;
  for (int64_t b = 0; b < sequences; b++) {
    txattn_problem sub;
    txattn_tensors st;
    txattn__sequence(&r, &x, b, &sub, &st);
    if (!r.ragged) {
      sub = r;
      st = x;
    }
    mark_visible_keys(&sub, seen);
    double v = max_abs_visible_v(&sub, &st, seen), d = max_visible_abs_dot(&sub, &st);
    if (v > max_v) max_v = v;
    if (d > dot) dot = d;
  }
  free(seen);
  double l = fabs((double)r.scale) * dot;
  double c = 3.0 + sqrt((double)r.d_qk), rel = c * 0x1p-24 * l;
  double e = max_v * (rel > TXATTN_EXACT_TOLERANCE ? rel : TXATTN_EXACT_TOLERANCE);
  if (r.o_type != TXATTN_DTYPE_F32) e += txattn__ulp(r.o_type, max_v + e);
  *bound = e;
  return txattn__ok();
}
