/* SPDX-License-Identifier: MIT */
#include "case_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "elements.h"
#include "lse_tolerance.h"
#include "oracle.h"

static int fail(char *msg, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, size, fmt, ap);
  va_end(ap);
  return 0;
}

/* Elements [at, at + n) of base (of type t) are all +0.0. */
static int all_zero_bits(const void *base, txattn_dtype t, size_t at, int64_t n) {
  for (int64_t c = 0; c < n; c++)
    if (elem_bits(base, t, at + (size_t)c) != 0) return 0;
  return 1;
}

static int any_nan(const void *base, txattn_dtype t, size_t at, int64_t n) {
  for (int64_t c = 0; c < n; c++)
    if (isnan(elem_load(base, t, at + (size_t)c))) return 1;
  return 0;
}

/* The index of row (b, h, i) of o in the contiguous o_ref. */
static size_t dense_row(const struct attn_case *c, int64_t b, int64_t h, int64_t i) {
  const txattn_problem *p = &c->full;
  return (size_t)(((b * p->heads_q + h) * p->n_q + i) * p->d_v);
}

/* |got - want|, 0 when they are equal (the infinities of a 16-bit o's overflow included). */
static double error_of(double got, double want) {
  return got == want ? 0.0 : fabs(got - want);
}

/* What the contract says of one reference row, before any tolerance comes in. A 16-bit o may hold
   an infinity where O is past its range (IEEE's overflow); the comparison with the test oracle
   judges whether it should. */
static int check_reference_row(const struct attn_case *c, int64_t b, int64_t h, int64_t i,
                               char *msg, size_t size) {
  const txattn_problem *p = &c->full;
  txattn_dtype ot = c->o.type;
  size_t row = dense_row(c, b, h, i);
  if (oracle_visible_count(p, i) == 0) {
    if (!all_zero_bits(c->o_ref_data, ot, row, p->d_v))
      return fail(msg, size,
                  "reference row (b%lld h%lld i%lld) sees no key but is not exactly +0.0",
                  (long long)b, (long long)h, (long long)i);
    return 1;
  }
  if (case_row_poisoned(c, b, h, i)) {
    for (int64_t x = 0; x < p->d_v; x++)
      if (!isnan(elem_load(c->o_ref_data, ot, row + (size_t)x)))
        return fail(msg, size, "reference row (b%lld h%lld i%lld) reads a NaN but [%lld] = %g",
                    (long long)b, (long long)h, (long long)i, (long long)x,
                    elem_load(c->o_ref_data, ot, row + (size_t)x));
    return 1;
  }
  for (int64_t x = 0; x < p->d_v; x++) {
    double v = elem_load(c->o_ref_data, ot, row + (size_t)x);
    if (ot == TXATTN_DTYPE_F32 ? !isfinite(v) : isnan(v))
      return fail(msg, size, "reference row (b%lld h%lld i%lld) reads no NaN but [%lld] = %g",
                  (long long)b, (long long)h, (long long)i, (long long)x, v);
  }
  return 1;
}

static int compare_dense(const struct attn_case *c, const void *want, const void *got, char *msg,
                         size_t size) {
  const txattn_problem *p = &c->full;
  txattn_dtype ot = c->o.type;
  size_t n = (size_t)(p->batch * p->heads_q * p->n_q * p->d_v);
  for (size_t x = 0; x < n; x++) {
    double w = elem_load(want, ot, x), g = elem_load(got, ot, x);
    if (isnan(w) && isnan(g)) continue;
    double err = error_of(g, w);
    if (!(err <= c->tolerance))
      return fail(msg, size,
                  "reference [%zu] = %.9g but the test oracle gives %.9g (tolerance %.3g)", x, g, w,
                  c->tolerance);
  }
  return 1;
}

int case_check_reference(const struct attn_case *c, char *msg, size_t size) {
  const txattn_problem *p = &c->full;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++)
        if (!check_reference_row(c, b, h, i, msg, size)) return 0;
  size_t n = (size_t)(p->batch * p->heads_q * p->n_q * p->d_v);
  void *oracle = malloc(n * elem_size(c->o.type));
  cr_assert(oracle != NULL, "out of memory");
  txattn_tensors t = case_dense_tensors(c);
  t.o_data = oracle;
  t.q_layout = (txattn_layout){p->heads_q * p->n_q * p->d_qk, p->n_q * p->d_qk, p->d_qk};
  t.k_layout = (txattn_layout){p->heads_kv * p->n_kv * p->d_qk, p->n_kv * p->d_qk, p->d_qk};
  t.v_layout = (txattn_layout){p->heads_kv * p->n_kv * p->d_v, p->n_kv * p->d_v, p->d_v};
  t.o_layout = (txattn_layout){p->heads_q * p->n_q * p->d_v, p->n_q * p->d_v, p->d_v};
  cr_assert(oracle_attention(p, &t) == 0, "out of memory");
  int ok = compare_dense(c, oracle, c->o_ref_data, msg, size);
  free(oracle);
  return ok;
}

/* One output row against the reference: exact zeros, NaN where the reference has NaN, else within
   the tolerance (both widened exactly from o's type). */
static int check_output_row(const struct attn_case *c, int64_t b, int64_t h, int64_t i,
                            double *max_err, char *msg, size_t size) {
  const txattn_problem *p = &c->full;
  txattn_dtype ot = c->o.type;
  size_t want = dense_row(c, b, h, i), got = case_offset(&c->o, b, h, i, 0);
  if (oracle_visible_count(p, i) == 0) {
    if (!all_zero_bits(c->o.raw, ot, got, p->d_v))
      return fail(msg, size, "row (b%lld h%lld i%lld) sees no key: want exact +0.0, [0] = %g",
                  (long long)b, (long long)h, (long long)i, elem_load(c->o.raw, ot, got));
    return 1;
  }
  if (any_nan(c->o_ref_data, ot, want, p->d_v)) {
    for (int64_t x = 0; x < p->d_v; x++)
      if (!isnan(elem_load(c->o.raw, ot, got + (size_t)x)))
        return fail(msg, size, "row (b%lld h%lld i%lld) reads a NaN but [%lld] = %g is not NaN",
                    (long long)b, (long long)h, (long long)i, (long long)x,
                    elem_load(c->o.raw, ot, got + (size_t)x));
    return 1;
  }
  for (int64_t x = 0; x < p->d_v; x++) {
    double g = elem_load(c->o.raw, ot, got + (size_t)x);
    double w = elem_load(c->o_ref_data, ot, want + (size_t)x);
    double err = error_of(g, w);
    if (!(err <= c->tolerance))
      return fail(msg, size,
                  "row (b%lld h%lld i%lld)[%lld] = %.9g, reference %.9g: error %.3g > %.3g",
                  (long long)b, (long long)h, (long long)i, (long long)x, g, w, err, c->tolerance);
    if (err > *max_err) *max_err = err;
  }
  return 1;
}

/* Every element of the output buffer that is not an element of o must still hold the sentinel. */
static int check_output_gaps(const struct attn_case *c, char *msg, size_t size) {
  const struct tensor *o = &c->o;
  uint32_t sentinel = o->type == TXATTN_DTYPE_F32 ? CASE_OUTPUT_SENTINEL : CASE_OUTPUT_SENTINEL16;
  unsigned char *element = calloc(o->len, 1);
  cr_assert(element != NULL, "out of memory");
  for (int64_t b = 0; b < o->batch; b++)
    for (int64_t h = 0; h < o->heads; h++)
      for (int64_t i = 0; i < o->rows; i++)
        for (int64_t x = 0; x < o->dim; x++) element[case_offset(o, b, h, i, x)] = 1;
  int ok = 1;
  for (size_t x = 0; x < o->len && ok; x++)
    if (!element[x] && elem_bits(o->raw, o->type, x) != sentinel)
      ok = fail(msg, size, "wrote to o[%zu], which is a gap between elements of the o layout", x);
  free(element);
  return ok;
}

int case_check_output(const struct attn_case *c, double *max_err, char *msg, size_t size) {
  const txattn_problem *p = &c->full;
  *max_err = 0.0;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++)
        if (!check_output_row(c, b, h, i, max_err, msg, size)) return 0;
  return check_output_gaps(c, msg, size);
}

/* The lse tolerance of c's inputs, computed once per problem and inputs (c->lse_inputs, the hash
   lse_ref was computed at): every kernel of the battery is judged against the same case. */
static lse_tolerance lse_tolerance_of_case(const struct attn_case *c) {
  static struct {
    txattn_problem problem;
    uint64_t inputs;
    lse_tolerance tol;
  } last;
  if (last.inputs == 0 || last.inputs != c->lse_inputs ||
      memcmp(&last.problem, &c->problem, sizeof last.problem) != 0) {
    txattn_tensors dense = case_dense_tensors(c);
    last.tol = lse_tolerance_of(&c->problem, &dense);
    last.problem = c->problem;
    last.inputs = c->lse_inputs;
  }
  return last.tol;
}

int case_check_lse(struct attn_case *c, char *msg, size_t size) {
  const txattn_problem *p = &c->full;
  const lse_tolerance lse_tol = lse_tolerance_of_case(c);
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++) {
        double want = c->lse_ref[(b * p->heads_q + h) * p->n_q + i];
        double got = c->lse.data[case_offset(&c->lse, b, h, i, 0)];
        if (want == -INFINITY) {
          if (got != -INFINITY)
            return fail(msg, size, "lse (b%lld h%lld i%lld) = %.9g for a row that sees no key",
                        (long long)b, (long long)h, (long long)i, got);
          continue;
        }
        if (isnan(want) || any_nan(c->o_ref_data, c->o.type, dense_row(c, b, h, i), p->d_v))
          continue; /* the contract says nothing of lse in a NaN row */
        double tol = lse_tolerance_at(lse_tol, want);
        if (!(fabs(got - want) <= tol))
          return fail(msg, size,
                      "lse (b%lld h%lld i%lld) = %.9g, reference %.9g: error %.3g > %.3g",
                      (long long)b, (long long)h, (long long)i, got, want, fabs(got - want), tol);
      }
  const struct tensor *l = &c->lse;
  unsigned char *element = calloc(l->len, 1);
  cr_assert(element != NULL, "out of memory");
  for (int64_t b = 0; b < l->batch; b++)
    for (int64_t h = 0; h < l->heads; h++)
      for (int64_t i = 0; i < l->rows; i++) element[case_offset(l, b, h, i, 0)] = 1;
  int ok = 1;
  for (size_t x = 0; x < l->len && ok; x++)
    if (!element[x] && elem_bits(l->raw, TXATTN_DTYPE_F32, x) != CASE_OUTPUT_SENTINEL)
      ok = fail(msg, size, "wrote to lse[%zu], which is a gap between elements of its layout", x);
  free(element);
  return ok;
}
