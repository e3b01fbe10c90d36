#include "case_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "oracle.h"

static int fail(char *msg, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, size, fmt, ap);
  va_end(ap);
  return 0;
}

static int all_zero_bits(const float *x, int64_t n, int64_t stride) {
  for (int64_t c = 0; c < n; c++) {
    uint32_t bits;
    memcpy(&bits, &x[c * stride], sizeof bits);
    if (bits != 0) return 0;
  }
  return 1;
}

static int any_nan(const float *x, int64_t n) {
  for (int64_t c = 0; c < n; c++)
    if (isnan(x[c])) return 1;
  return 0;
}

static const float *dense_row(const struct attn_case *c, const float *base, int64_t b, int64_t h,
                              int64_t i) {
  const txattn_problem *p = &c->full;
  return base + ((b * p->heads_q + h) * p->n_q + i) * p->d_v;
}

/* What the contract says of one reference row, before any tolerance comes in. */
static int check_reference_row(const struct attn_case *c, int64_t b, int64_t h, int64_t i,
                               char *msg, size_t size) {
  const txattn_problem *p = &c->full;
  const float *row = dense_row(c, c->o_ref, b, h, i);
  if (oracle_visible_count(p, i) == 0) {
    if (!all_zero_bits(row, p->d_v, 1))
      return fail(msg, size,
                  "reference row (b%lld h%lld i%lld) sees no key but is not exactly +0.0",
                  (long long)b, (long long)h, (long long)i);
    return 1;
  }
  if (case_row_poisoned(c, b, h, i)) {
    for (int64_t x = 0; x < p->d_v; x++)
      if (!isnan(row[x]))
        return fail(msg, size, "reference row (b%lld h%lld i%lld) reads a NaN but [%lld] = %g",
                    (long long)b, (long long)h, (long long)i, (long long)x, (double)row[x]);
    return 1;
  }
  for (int64_t x = 0; x < p->d_v; x++)
    if (!isfinite(row[x]))
      return fail(msg, size, "reference row (b%lld h%lld i%lld) reads no NaN but [%lld] = %g",
                  (long long)b, (long long)h, (long long)i, (long long)x, (double)row[x]);
  return 1;
}

static int compare_dense(const struct attn_case *c, const float *want, const float *got, char *msg,
                         size_t size) {
  const txattn_problem *p = &c->full;
  size_t n = (size_t)(p->batch * p->heads_q * p->n_q * p->d_v);
  for (size_t x = 0; x < n; x++) {
    if (isnan(want[x]) && isnan(got[x])) continue;
    double err = fabs((double)got[x] - (double)want[x]);
    if (!(err <= c->tolerance))
      return fail(msg, size,
                  "reference [%zu] = %.9g but the test oracle gives %.9g (tolerance %.3g)", x,
                  (double)got[x], (double)want[x], c->tolerance);
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
  float *oracle = malloc(n * sizeof *oracle);
  cr_assert(oracle != NULL, "out of memory");
  txattn_tensors t = case_dense_tensors(c);
  t.o = oracle;
  t.q_layout = (txattn_layout){p->heads_q * p->n_q * p->d_qk, p->n_q * p->d_qk, p->d_qk};
  t.k_layout = (txattn_layout){p->heads_kv * p->n_kv * p->d_qk, p->n_kv * p->d_qk, p->d_qk};
  t.v_layout = (txattn_layout){p->heads_kv * p->n_kv * p->d_v, p->n_kv * p->d_v, p->d_v};
  t.o_layout = (txattn_layout){p->heads_q * p->n_q * p->d_v, p->n_q * p->d_v, p->d_v};
  cr_assert(oracle_attention(p, &t) == 0, "out of memory");
  int ok = compare_dense(c, oracle, c->o_ref, msg, size);
  free(oracle);
  return ok;
}

/* One output row against the reference: exact zeros, NaN where the reference has NaN, else within
   the tolerance. */
static int check_output_row(const struct attn_case *c, int64_t b, int64_t h, int64_t i,
                            double *max_err, char *msg, size_t size) {
  const txattn_problem *p = &c->full;
  const float *want = dense_row(c, c->o_ref, b, h, i);
  const float *got = c->o.data + b * c->o.layout.batch + h * c->o.layout.head + i * c->o.layout.row;
  if (oracle_visible_count(p, i) == 0) {
    if (!all_zero_bits(got, p->d_v, 1))
      return fail(msg, size, "row (b%lld h%lld i%lld) sees no key: want exact +0.0, [0] = %g",
                  (long long)b, (long long)h, (long long)i, (double)got[0]);
    return 1;
  }
  if (any_nan(want, p->d_v)) {
    for (int64_t x = 0; x < p->d_v; x++)
      if (!isnan(got[x]))
        return fail(msg, size, "row (b%lld h%lld i%lld) reads a NaN but [%lld] = %g is not NaN",
                    (long long)b, (long long)h, (long long)i, (long long)x, (double)got[x]);
    return 1;
  }
  for (int64_t x = 0; x < p->d_v; x++) {
    double err = fabs((double)got[x] - (double)want[x]);
    if (!(err <= c->tolerance))
      return fail(msg, size,
                  "row (b%lld h%lld i%lld)[%lld] = %.9g, reference %.9g: error %.3g > %.3g",
                  (long long)b, (long long)h, (long long)i, (long long)x, (double)got[x],
                  (double)want[x], err, c->tolerance);
    if (err > *max_err) *max_err = err;
  }
  return 1;
}

/* Every float of the output buffer that is not an element must still hold the sentinel. */
static int check_output_gaps(const struct attn_case *c, char *msg, size_t size) {
  const struct tensor *o = &c->o;
  unsigned char *element = calloc(o->len, 1);
  cr_assert(element != NULL, "out of memory");
  for (int64_t b = 0; b < o->batch; b++)
    for (int64_t h = 0; h < o->heads; h++)
      for (int64_t i = 0; i < o->rows; i++)
        for (int64_t x = 0; x < o->dim; x++)
          element[b * o->layout.batch + h * o->layout.head + i * o->layout.row + x] = 1;
  int ok = 1;
  for (size_t x = 0; x < o->len && ok; x++) {
    uint32_t bits;
    memcpy(&bits, &o->data[x], sizeof bits);
    if (!element[x] && bits != CASE_OUTPUT_SENTINEL)
      ok = fail(msg, size, "wrote to o[%zu], which is a gap between elements of the o layout", x);
  }
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
