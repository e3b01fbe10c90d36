/* SPDX-License-Identifier: MIT */
/* The serving calls of issue 20: log-sum-exp out (txattn_problem.lse), ragged batches
 * (txattn_problem.ragged with txattn_tensors.q_lens / kv_lens), txattn_merge, and how they keep
 * older callers' structs working. The reference is checked against the test oracle, ragged calls
 * against one call per sequence, merges against the whole, and every kernel that sets
 * TXATTN_KERNEL_LSE against the reference on ragged batches. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_case.h"
#include "case_check.h"
#include "elements.h"
#include "lse_tolerance.h"
#include "oracle.h"
#include "scratch.h"
#include "test_context.h"
#include "test_plugin_names.h"
#include "txattn/plugin.h"
#include "txattn/txattn.h"

static char dir[SCRATCH_PATH_MAX];

static void cleanup(void) {
  if (dir[0]) scratch_remove(dir);
  test_check_leaks();
}

TestSuite(serving, .init = test_env_clean, .fini = cleanup, .timeout = 120);

#define SENTINEL CASE_OUTPUT_SENTINEL /* NaN: what output buffers hold before a call */

static uint64_t next_random(uint64_t *state) { /* splitmix64 */
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* n floats uniform in [-1, 1) */
static float *randoms(size_t n, uint64_t *state) {
  float *x = malloc(n * sizeof *x);
  cr_assert(x != NULL, "out of memory");
  for (size_t i = 0; i < n; i++) x[i] = (float)((double)(next_random(state) >> 11) * 0x1p-52 - 1.0);
  return x;
}

static void *filled(size_t n, size_t elem) {
  void *x = malloc(n * elem);
  cr_assert(x != NULL, "out of memory");
  for (size_t i = 0; i < n; i++)
    elem_set_bits(x, elem == 4 ? TXATTN_DTYPE_F32 : TXATTN_DTYPE_F16, i,
                  elem == 4 ? SENTINEL : CASE_OUTPUT_SENTINEL16);
  return x;
}

static int is_sentinel(const float *x) {
  uint32_t bits;
  memcpy(&bits, x, sizeof bits);
  return bits == SENTINEL;
}

/* ---- the reference's lse against the oracle ---- */

/* The reference computes lse in fp64 and rounds it once: within 2^-23 |lse| (rounding, plus
   room for fp64's own error in the sum) of the oracle's, and -inf exactly where it is. */
static void check_reference_lse(const struct shape *s) {
  char desc[256];
  struct attn_case c;
  shape_describe(s, desc, sizeof desc);
  case_init(&c, s, 7);
  case_run_reference(&c);
  const txattn_problem *p = &c.full;
  size_t rows = (size_t)(p->batch * p->heads_q * p->n_q);
  double *want = malloc(rows * sizeof *want);
  cr_assert(want != NULL, "out of memory");
  txattn_tensors t = case_dense_tensors(&c);
  t.q_layout = (txattn_layout){p->heads_q * p->n_q * p->d_qk, p->n_q * p->d_qk, p->d_qk};
  t.k_layout = (txattn_layout){p->heads_kv * p->n_kv * p->d_qk, p->n_kv * p->d_qk, p->d_qk};
  t.v_layout = (txattn_layout){p->heads_kv * p->n_kv * p->d_v, p->n_kv * p->d_v, p->d_v};
  cr_assert(oracle_lse(p, &t, want) == 0, "out of memory");
  int empty = 0;
  for (size_t x = 0; x < rows; x++) {
    double got = c.lse_ref[x];
    if (want[x] == -INFINITY) {
      cr_assert(got == -INFINITY, "%s: lse[%zu] = %g for a row without keys", desc, x, got);
      empty++;
      continue;
    }
    cr_assert(fabs(got - want[x]) <= 0x1p-23 * fabs(want[x]) + 1e-9,
              "%s: lse[%zu] = %.9g, the oracle's %.17g", desc, x, got, want[x]);
  }
  cr_log_info("%s: %zu rows, %d without keys", desc, rows, empty);
  free(want);
  case_free(&c);
}

Test(serving, reference_lse_matches_the_oracle) {
  const struct shape shapes[] = {
      {.heads_q = 2, .n_q = 7, .n_kv = 13, .d_qk = 16, .mask = TXATTN_MASK_CAUSAL},
      {.batch = 2,
       .heads_q = 4,
       .heads_kv = 2,
       .n_q = 9,
       .n_kv = 5,
       .d_qk = 8,
       .d_v = 4,
       .mask = TXATTN_MASK_CAUSAL}, /* rows before the first key see none */
      {.heads_q = 3,
       .n_q = 11,
       .n_kv = 11,
       .d_qk = 8,
       .mask = TXATTN_MASK_WINDOW,
       .left = 2,
       .right = 1},
      {.heads_q = 4, .heads_kv = 1, .n_q = 3, .n_kv = 30, .d_qk = 32, .layout = LAYOUT_PADDED},
      {.heads_q = 2, .n_q = 5, .n_kv = 9, .d_qk = 16, .amplitude = 16, .fractional = 1},
      {.heads_q = 2,
       .n_q = 6,
       .n_kv = 6,
       .d_qk = 16,
       .mask = TXATTN_MASK_CAUSAL,
       .types = {TXATTN_DTYPE_F16, TXATTN_DTYPE_BF16, TXATTN_DTYPE_F16, TXATTN_DTYPE_BF16}},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) check_reference_lse(&shapes[i]);
}

/* ---- ragged batches ---- */

#define MAX_SEQ 8

/* A ragged call on contiguous f32 tensors of capacity n_q x n_kv per sequence. Keys past a
   sequence's kv_len hold NaN, so that a call reading one makes its rows NaN. */
struct ragged {
  txattn_problem p;
  int64_t q_lens[MAX_SEQ], kv_lens[MAX_SEQ];
  float *q, *k, *v, *o, *lse;
  size_t nq, nk, nv, no, nl; /* elements */
};

static void ragged_init(struct ragged *r, int64_t batch, int64_t heads_q, int64_t heads_kv,
                        int64_t n_q, int64_t n_kv, int64_t d, txattn_mask mask,
                        const int64_t *q_lens, const int64_t *kv_lens, uint64_t seed) {
  memset(r, 0, sizeof *r);
  r->p = (txattn_problem)TXATTN_PROBLEM_INIT;
  r->p.batch = batch;
  r->p.heads_q = heads_q;
  r->p.heads_kv = heads_kv;
  r->p.n_q = n_q;
  r->p.n_kv = n_kv;
  r->p.d_qk = d;
  r->p.mask = mask;
  r->p.window_left = 3;
  r->p.window_right = 1;
  r->p.ragged = 1;
  r->p.lse = 1;
  memcpy(r->q_lens, q_lens, (size_t)batch * sizeof *q_lens);
  memcpy(r->kv_lens, kv_lens, (size_t)batch * sizeof *kv_lens);
  r->nq = (size_t)(batch * heads_q * n_q * d);
  r->nk = r->nv = (size_t)(batch * heads_kv * n_kv * d);
  r->no = r->nq;
  r->nl = (size_t)(batch * heads_q * n_q);
  r->q = randoms(r->nq, &seed);
  r->k = randoms(r->nk, &seed);
  r->v = randoms(r->nv, &seed);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t h = 0; h < heads_kv; h++)
      for (int64_t j = kv_lens[b]; j < n_kv; j++)
        for (int64_t c = 0; c < d; c++) {
          size_t at = (size_t)(((b * heads_kv + h) * n_kv + j) * d + c);
          r->k[at] = r->v[at] = NAN;
        }
  r->o = filled(r->no, 4);
  r->lse = filled(r->nl, 4);
}

static void ragged_free(struct ragged *r) {
  free(r->q);
  free(r->k);
  free(r->v);
  free(r->o);
  free(r->lse);
}

static txattn_tensors ragged_tensors(const struct ragged *r, float *o, float *lse) {
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = r->q;
  t.k = r->k;
  t.v = r->v;
  t.o = o;
  t.lse = lse;
  t.q_lens = r->q_lens;
  t.kv_lens = r->kv_lens;
  return t;
}

/* The rows of o and lse past each sequence's q_len still hold the sentinel; a sequence without
   keys has o rows of +0 and lse -inf. */
static void check_ragged_rows(const struct ragged *r, const float *o, const float *lse,
                              const char *who) {
  const txattn_problem *p = &r->p;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++) {
        size_t row = (size_t)((b * p->heads_q + h) * p->n_q + i);
        const float *orow = o + row * (size_t)p->d_qk;
        if (i >= r->q_lens[b]) {
          cr_assert(is_sentinel(&lse[row]), "%s: wrote lse of (b%lld h%lld i%lld) past q_len %lld",
                    who, (long long)b, (long long)h, (long long)i, (long long)r->q_lens[b]);
          for (int64_t c = 0; c < p->d_qk; c++)
            cr_assert(is_sentinel(&orow[c]), "%s: wrote o of (b%lld h%lld i%lld) past q_len", who,
                      (long long)b, (long long)h, (long long)i);
        } else if (r->kv_lens[b] == 0) {
          cr_assert(lse[row] == -INFINITY, "%s: lse of a sequence without keys is %g", who,
                    lse[row]);
          for (int64_t c = 0; c < p->d_qk; c++)
            cr_assert(orow[c] == 0.0f && !signbit(orow[c]),
                      "%s: o of a sequence without keys is %g", who, orow[c]);
        }
      }
}

static void ragged_reference_case(txattn_mask mask) {
  const int64_t q_lens[5] = {4, 2, 0, 3, 4}, kv_lens[5] = {11, 0, 5, 1, 2};
  struct ragged r;
  ragged_init(&r, 5, 4, 2, 4, 11, 8, mask, q_lens, kv_lens, 11 + (uint64_t)mask);
  txattn_tensors t = ragged_tensors(&r, r.o, r.lse);
  txattn_status s = txattn_reference(&r.p, &t);
  cr_assert_eq(s, TXATTN_OK, "ragged reference: %s", txattn_last_error());
  check_ragged_rows(&r, r.o, r.lse, "ragged reference");
  /* each sequence alone, as a plain call on its own lengths */
  const txattn_problem *p = &r.p;
  size_t qs = (size_t)(p->heads_q * p->n_q * p->d_qk),
         ks = (size_t)(p->heads_kv * p->n_kv * p->d_qk), ls = (size_t)(p->heads_q * p->n_q);
  float *o1 = malloc(qs * sizeof *o1), *lse1 = malloc(ls * sizeof *lse1);
  cr_assert(o1 && lse1, "out of memory");
  for (int64_t b = 0; b < p->batch; b++) {
    if (q_lens[b] == 0 || kv_lens[b] == 0) continue;
    txattn_problem one = *p;
    one.batch = 1;
    one.ragged = 0;
    one.n_q = q_lens[b];
    one.n_kv = kv_lens[b];
    txattn_tensors t1 = TXATTN_TENSORS_INIT;
    t1.q = r.q + (size_t)b * qs;
    t1.k = r.k + (size_t)b * ks;
    t1.v = r.v + (size_t)b * ks;
    t1.o = o1;
    t1.lse = lse1;
    t1.q_layout = t1.o_layout = (txattn_layout){0, p->n_q * p->d_qk, p->d_qk};
    t1.k_layout = t1.v_layout = (txattn_layout){0, p->n_kv * p->d_qk, p->d_qk};
    t1.lse_layout = (txattn_layout){0, p->n_q, 1};
    s = txattn_reference(&one, &t1);
    cr_assert_eq(s, TXATTN_OK, "sequence %lld alone: %s", (long long)b, txattn_last_error());
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < q_lens[b]; i++) {
        size_t at = (size_t)(h * p->n_q + i);
        cr_assert(memcmp(&lse1[at], &r.lse[(size_t)b * ls + at], sizeof(float)) == 0,
                  "mask %d, sequence %lld, h%lld i%lld: ragged lse %.9g, alone %.9g", (int)mask,
                  (long long)b, (long long)h, (long long)i, r.lse[(size_t)b * ls + at], lse1[at]);
        cr_assert(memcmp(o1 + at * (size_t)p->d_qk, r.o + (size_t)b * qs + at * (size_t)p->d_qk,
                         (size_t)p->d_qk * sizeof(float)) == 0,
                  "mask %d, sequence %lld, h%lld i%lld: ragged o differs from the sequence alone",
                  (int)mask, (long long)b, (long long)h, (long long)i);
      }
  }
  /* the bound reads only the keys each sequence has: past kv_len, V and K now hold huge values,
     which would make it about 1e30 */
  for (size_t x = 0; x < r.nk; x++)
    if (isnan(r.k[x])) r.k[x] = r.v[x] = 1e30f;
  double bound = -1;
  s = txattn_error_bound(&r.p, &t, &bound);
  cr_assert_eq(s, TXATTN_OK, "ragged error bound: %s", txattn_last_error());
  cr_assert(bound > 0 && bound <= 2 * TXATTN_EXACT_TOLERANCE, "ragged bound %g", bound);
  free(o1);
  free(lse1);
  ragged_free(&r);
}

Test(serving, ragged_reference_equals_one_call_per_sequence) {
  ragged_reference_case(TXATTN_MASK_NONE);
  ragged_reference_case(TXATTN_MASK_CAUSAL);
  ragged_reference_case(TXATTN_MASK_WINDOW);
}

Test(serving, ragged_lengths_default_to_the_capacity) {
  const int64_t lens[2] = {3, 3};
  struct ragged r;
  ragged_init(&r, 2, 2, 2, 3, 6, 4, TXATTN_MASK_CAUSAL, lens, (int64_t[]){6, 6}, 5);
  txattn_tensors t = ragged_tensors(&r, r.o, r.lse);
  t.q_lens = t.kv_lens = NULL; /* every sequence: n_q and n_kv */
  cr_assert_eq(txattn_reference(&r.p, &t), TXATTN_OK, "%s", txattn_last_error());
  float *o2 = filled(r.no, 4), *lse2 = filled(r.nl, 4);
  txattn_problem dense = r.p;
  dense.ragged = 0;
  txattn_tensors t2 = ragged_tensors(&r, o2, lse2);
  cr_assert_eq(txattn_reference(&dense, &t2), TXATTN_OK, "%s", txattn_last_error());
  cr_assert(memcmp(r.o, o2, r.no * sizeof(float)) == 0, "ragged without lengths differs");
  cr_assert(memcmp(r.lse, lse2, r.nl * sizeof(float)) == 0, "ragged lse without lengths differs");
  free(o2);
  free(lse2);
  ragged_free(&r);
}

/* ---- merging ---- */

/* One attention over n_kv keys and its partials over key slices, all by txattn_reference: q, k, v
   contiguous f32, outputs of type o_type. */
struct merge_case {
  txattn_problem whole;
  float *q, *k, *v, *lse, *part_lse[9];
  void *o, *part_o[9];
  size_t no, nl;
  int n_parts;
  double max_v, max_lse;
};

static void merge_case_init(struct merge_case *m, int64_t n_q, txattn_mask mask, int n_parts,
                            const int *cuts, txattn_dtype o_type) {
  const int64_t batch = 2, heads_q = 4, heads_kv = 2, n_kv = 40, d_qk = 16, d_v = 8;
  uint64_t seed = 99 + (uint64_t)n_parts;
  memset(m, 0, sizeof *m);
  m->whole = (txattn_problem)TXATTN_PROBLEM_INIT;
  txattn_problem *p = &m->whole;
  *p = (txattn_problem){.batch = batch,
                        .heads_q = heads_q,
                        .heads_kv = heads_kv,
                        .n_q = n_q,
                        .n_kv = n_kv,
                        .d_qk = d_qk,
                        .d_v = d_v,
                        .mask = mask,
                        .o_type = o_type,
                        .struct_size = sizeof(txattn_problem),
                        .lse = 1};
  m->n_parts = n_parts;
  m->q = randoms((size_t)(batch * heads_q * n_q * d_qk), &seed);
  m->k = randoms((size_t)(batch * heads_kv * n_kv * d_qk), &seed);
  m->v = randoms((size_t)(batch * heads_kv * n_kv * d_v), &seed);
  for (size_t i = 0; i < (size_t)(batch * heads_kv * n_kv * d_v); i++)
    if (fabs(m->v[i]) > m->max_v) m->max_v = fabs(m->v[i]);
  m->no = (size_t)(batch * heads_q * n_q * d_v);
  m->nl = (size_t)(batch * heads_q * n_q);
  size_t esz = elem_size(o_type);
  m->o = filled(m->no, esz);
  m->lse = filled(m->nl, 4);
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = m->q;
  t.k = m->k;
  t.v = m->v;
  t.o_data = m->o;
  t.lse = m->lse;
  cr_assert_eq(txattn_reference(p, &t), TXATTN_OK, "whole: %s", txattn_last_error());
  for (int i = 0; i < n_parts; i++) {
    txattn_problem part = *p;
    part.n_kv = cuts[i + 1] - cuts[i];
    m->part_o[i] = filled(m->no, esz);
    m->part_lse[i] = filled(m->nl, 4);
    txattn_tensors pt = t;
    pt.k = m->k + (size_t)cuts[i] * (size_t)d_qk;
    pt.v = m->v + (size_t)cuts[i] * (size_t)d_v;
    pt.k_layout = (txattn_layout){heads_kv * n_kv * d_qk, n_kv * d_qk, d_qk};
    pt.v_layout = (txattn_layout){heads_kv * n_kv * d_v, n_kv * d_v, d_v};
    pt.o_data = m->part_o[i];
    pt.lse = m->part_lse[i];
    cr_assert_eq(txattn_reference(&part, &pt), TXATTN_OK, "part %d: %s", i, txattn_last_error());
    for (size_t x = 0; x < m->nl; x++)
      if (isfinite(m->part_lse[i][x]) && fabs(m->part_lse[i][x]) > m->max_lse)
        m->max_lse = fabs(m->part_lse[i][x]);
  }
}

static void merge_case_free(struct merge_case *m) {
  free(m->q);
  free(m->k);
  free(m->v);
  free(m->o);
  free(m->lse);
  for (int i = 0; i < m->n_parts; i++) {
    free(m->part_o[i]);
    free(m->part_lse[i]);
  }
}

static void merge_parts(const struct merge_case *m, txattn_tensors *parts) {
  for (int i = 0; i < m->n_parts; i++) {
    parts[i] = (txattn_tensors)TXATTN_TENSORS_INIT;
    parts[i].o_data = m->part_o[i];
    parts[i].lse = m->part_lse[i];
  }
}

/* docs/error_bound.md, "Merging": with parts off by eps_i in o and delta_i in lse, the merge is
   within max eps_i + 2 max|delta_i| max|V| + (3n + 2) 2^-24 max|V| of O, and its lse within
   max|delta_i| + (2n + 2) 2^-24 + 2^-24 |L|. The parts here are the reference's, rounded once:
   eps_i <= 2^-25 max|V| (a 16-bit o: half its ulp) and delta_i <= 2^-25 |lse_i|; O (the whole
   reference) is rounded once more. So, over f32 with n parts:
     o:   2^-24 max|V| (3n + 3 + max|lse_i|)   (+ 1.5 ulp of a 16-bit o at max|V|)
     lse: 2^-24 (2n + 3 + max|lse_i| + 2|L|). */
static void check_merged(const struct merge_case *m, const void *o, const float *lse,
                         const char *desc) {
  const txattn_problem *p = &m->whole;
  double n = m->n_parts;
  double o_tol = 0x1p-24 * m->max_v * (3 * n + 3 + m->max_lse);
  if (p->o_type != TXATTN_DTYPE_F32) {
    int bits = p->o_type == TXATTN_DTYPE_F16 ? 11 : 8;
    o_tol += 1.5 * ldexp(1.0, (int)floor(log2(m->max_v)) - bits + 1);
  }
  double worst = 0;
  for (size_t x = 0; x < m->no; x++) {
    double got = elem_load(o, p->o_type, x), want = elem_load(m->o, p->o_type, x);
    double err = fabs(got - want);
    cr_assert(err <= o_tol, "%s: o[%zu] = %.9g, whole %.9g: error %.3g > %.3g", desc, x, got, want,
              err, o_tol);
    if (err > worst) worst = err;
  }
  for (size_t x = 0; lse != NULL && x < m->nl; x++) {
    double tol = 0x1p-24 * (2 * n + 3 + m->max_lse + 2 * fabs(m->lse[x]));
    cr_assert(fabs(lse[x] - m->lse[x]) <= tol, "%s: lse[%zu] = %.9g, whole %.9g (bound %.3g)", desc,
              x, lse[x], m->lse[x], tol);
  }
  cr_log_info("%s: max error %.3g (bound %.3g)", desc, worst, o_tol);
}

static const int cuts2[3] = {0, 17, 40}, cuts8[9] = {0, 3, 4, 9, 17, 18, 30, 33, 40};

static void merge_into_new(int64_t n_q, txattn_mask mask, int n_parts, txattn_dtype o_type) {
  struct merge_case m;
  char desc[96];
  snprintf(desc, sizeof desc, "%d parts, n_q %lld, %s, o %s", n_parts, (long long)n_q,
           txattn_mask_name(mask), txattn_dtype_name(o_type));
  merge_case_init(&m, n_q, mask, n_parts, n_parts == 2 ? cuts2 : cuts8, o_type);
  txattn_tensors parts[9] = {0}, out = TXATTN_TENSORS_INIT;
  merge_parts(&m, parts);
  void *o = filled(m.no, elem_size(o_type));
  float *lse = filled(m.nl, 4);
  out.o_data = o;
  out.lse = lse;
  txattn_status s = txattn_merge(&m.whole, parts, (size_t)n_parts, &out);
  cr_assert_eq(s, TXATTN_OK, "%s: %s", desc, txattn_last_error());
  check_merged(&m, o, lse, desc);
  /* in place: into parts[0]'s o, without lse */
  out.o_data = m.part_o[0];
  out.lse = NULL;
  s = txattn_merge(&m.whole, parts, (size_t)n_parts, &out);
  cr_assert_eq(s, TXATTN_OK, "%s in place: %s", desc, txattn_last_error());
  cr_assert(memcmp(o, m.part_o[0], m.no * elem_size(o_type)) == 0,
            "%s: merging in place differs from merging into a new buffer", desc);
  free(o);
  free(lse);
  merge_case_free(&m);
}

Test(serving, merge_of_key_slices_equals_the_whole) {
  merge_into_new(3, TXATTN_MASK_NONE, 2, TXATTN_DTYPE_F32);
  merge_into_new(3, TXATTN_MASK_NONE, 8, TXATTN_DTYPE_F32);
}

Test(serving, merge_of_decode_partials_equals_the_whole) {
  merge_into_new(1, TXATTN_MASK_CAUSAL, 2, TXATTN_DTYPE_F32);
  merge_into_new(1, TXATTN_MASK_CAUSAL, 8, TXATTN_DTYPE_F32);
}

Test(serving, merge_makes_16_bit_o) {
  merge_into_new(3, TXATTN_MASK_NONE, 8, TXATTN_DTYPE_F16);
  merge_into_new(1, TXATTN_MASK_CAUSAL, 2, TXATTN_DTYPE_BF16);
}

Test(serving, merge_ignores_parts_without_keys) {
  struct merge_case m;
  merge_case_init(&m, 3, TXATTN_MASK_NONE, 2, cuts2, TXATTN_DTYPE_F32);
  txattn_tensors parts[3] = {0}, out = TXATTN_TENSORS_INIT;
  merge_parts(&m, parts);
  float *o = filled(m.no, 4), *lse = filled(m.nl, 4), *o3 = filled(m.no, 4),
        *lse3 = filled(m.nl, 4);
  float *none_o = filled(m.no, 4), *none_lse = malloc(m.nl * sizeof(float));
  cr_assert(none_lse != NULL, "out of memory");
  for (size_t x = 0; x < m.nl; x++) none_lse[x] = -INFINITY; /* its o stays NaN: never read */
  out.o = o;
  out.lse = lse;
  cr_assert_eq(txattn_merge(&m.whole, parts, 2, &out), TXATTN_OK, "%s", txattn_last_error());
  parts[2] = parts[1];
  parts[1] = (txattn_tensors)TXATTN_TENSORS_INIT;
  parts[1].o = none_o;
  parts[1].lse = none_lse;
  out.o = o3;
  out.lse = lse3;
  cr_assert_eq(txattn_merge(&m.whole, parts, 3, &out), TXATTN_OK, "%s", txattn_last_error());
  cr_assert(memcmp(o, o3, m.no * sizeof(float)) == 0, "a part with lse -inf changed o");
  cr_assert(memcmp(lse, lse3, m.nl * sizeof(float)) == 0, "a part with lse -inf changed lse");
  /* every part without keys: o = +0, lse -inf */
  parts[0] = parts[1];
  cr_assert_eq(txattn_merge(&m.whole, parts, 2, &out), TXATTN_OK, "%s", txattn_last_error());
  for (size_t x = 0; x < m.no; x++)
    cr_assert(o3[x] == 0.0f && !signbit(o3[x]), "o[%zu] = %g of parts without keys", x, o3[x]);
  for (size_t x = 0; x < m.nl; x++) cr_assert(lse3[x] == -INFINITY, "lse[%zu] = %g", x, lse3[x]);
  free(o);
  free(lse);
  free(o3);
  free(lse3);
  free(none_o);
  free(none_lse);
  merge_case_free(&m);
}

/* One decode row (d 4) against 4 keys in two parts of two, by txattn_reference, at a scale where
   scores overflow fp32: lse_out[p] and o_out[p] for each part, and the whole's. */
struct overflow_case {
  float o[3][4], lse[3]; /* parts 0 and 1, then the whole */
};

static void overflow_case_run(const float k[4][4], const float v[4][4], struct overflow_case *c) {
  static const float q[4] = {1, 1, 1, 1};
  txattn_problem p = {.n_q = 1, .n_kv = 4, .d_qk = 4, .scale = 2e38f, .lse = 1};
  p.struct_size = sizeof p;
  for (int part = 0; part < 3; part++) {
    txattn_problem pp = p;
    pp.n_kv = part == 2 ? 4 : 2;
    txattn_tensors t = TXATTN_TENSORS_INIT;
    t.q = q;
    t.k = k[part == 1 ? 2 : 0];
    t.v = v[part == 1 ? 2 : 0];
    t.o = c->o[part];
    t.lse = &c->lse[part];
    cr_assert_eq(txattn_reference(&pp, &t), TXATTN_OK, "%s", txattn_last_error());
  }
}

static txattn_status merge_overflow(struct overflow_case *c, float *o, float *lse) {
  txattn_problem p = {.n_q = 1, .n_kv = 4, .d_qk = 4, .lse = 1};
  p.struct_size = sizeof p;
  txattn_tensors parts[2] = {0}, out = TXATTN_TENSORS_INIT;
  for (int i = 0; i < 2; i++) {
    parts[i] = (txattn_tensors)TXATTN_TENSORS_INIT;
    parts[i].o = c->o[i];
    parts[i].lse = &c->lse[i];
  }
  out.o = o;
  out.lse = lse;
  return txattn_merge(&p, parts, 2, &out);
}

/* A row whose scores overflow fp32 has lse +inf, and its o is still exact. Merged with a part of
   finite lse, that part dominates whole: the merge is the whole's own attention, bit for bit. */
Test(serving, merge_of_a_part_whose_scores_overflow_is_that_part) {
  /* scale 2e38: q.k = 4 (key 0) is 8e38, past FLT_MAX; keys 2 and 3 score 2e38 and -2e38 */
  const float k[4][4] = {{1, 1, 1, 1},
                         {0.5f, 0.5f, 0.5f, 0.5f},
                         {.25f, .25f, .25f, .25f},
                         {-.25f, -.25f, -.25f, -.25f}};
  const float v[4][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}, {-1, -2, -3, -4}, {9, 9, 9, 9}};
  struct overflow_case c;
  overflow_case_run(k, v, &c);
  cr_assert(c.lse[0] == INFINITY && isfinite(c.lse[1]) && c.lse[2] == INFINITY,
            "lse of the parts %g %g, whole %g", c.lse[0], c.lse[1], c.lse[2]);
  float o[4], lse;
  cr_assert_eq(merge_overflow(&c, o, &lse), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(lse, INFINITY);
  for (int i = 0; i < 4; i++)
    cr_assert(o[i] == c.o[2][i] && o[i] == v[0][i], "o[%d] = %g, the whole's %g", i, o[i],
              c.o[2][i]);
}

/* Two parts at +inf share the row equally: exact when their true lse agree, as here (the same key
   in each, with other values). */
Test(serving, merge_of_two_overflowing_parts_is_their_mean) {
  const float k[4][4] = {{1, 1, 1, 1}, {-1, -1, -1, -1}, {1, 1, 1, 1}, {-1, -1, -1, -1}};
  const float v[4][4] = {{1, 2, 3, 4}, {50, 60, 70, 80}, {3, 2, 1, 0}, {-50, -60, -70, -80}};
  struct overflow_case c;
  overflow_case_run(k, v, &c);
  cr_assert(c.lse[0] == INFINITY && c.lse[1] == INFINITY, "lse %g %g", c.lse[0], c.lse[1]);
  float o[4], lse;
  cr_assert_eq(merge_overflow(&c, o, &lse), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(lse, INFINITY);
  for (int i = 0; i < 4; i++)
    cr_assert(o[i] == 2.0f && o[i] == c.o[2][i], "o[%d] = %g, the whole's %g", i, o[i], c.o[2][i]);
}

/* The NaN rule, of the whole: a part whose lse is NaN (its keys or q read a NaN) makes o and lse
   NaN; a part whose o row holds a NaN (a NaN in its V) makes o NaN whatever its weight, lse
   staying what the keys give. */
Test(serving, merge_follows_the_nan_rule) {
  const float k[4][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
  const float v[4][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}, {-1, -2, -3, -4}, {9, 9, 9, 9}};
  struct overflow_case c;
  overflow_case_run(k, v, &c);
  struct overflow_case nan_lse = c, nan_o = c, nan_o_at_inf = c;
  nan_lse.lse[1] = NAN;
  float o[4], lse;
  cr_assert_eq(merge_overflow(&nan_lse, o, &lse), TXATTN_OK, "%s", txattn_last_error());
  cr_assert(isnan(lse), "lse %g", lse);
  for (int i = 0; i < 4; i++) cr_assert(isnan(o[i]), "o[%d] = %g", i, o[i]);
  nan_o.o[1][2] = NAN;
  cr_assert_eq(merge_overflow(&nan_o, o, &lse), TXATTN_OK, "%s", txattn_last_error());
  cr_assert(isfinite(lse), "lse %g", lse);
  for (int i = 0; i < 4; i++) cr_assert(isnan(o[i]), "o[%d] = %g", i, o[i]);
  /* the NaN part weighs 0 next to one at +inf, and still makes the row NaN */
  nan_o_at_inf.lse[0] = INFINITY;
  nan_o_at_inf.o[1][0] = NAN;
  cr_assert_eq(merge_overflow(&nan_o_at_inf, o, &lse), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(lse, INFINITY);
  for (int i = 0; i < 4; i++) cr_assert(isnan(o[i]), "o[%d] = %g", i, o[i]);
}

Test(serving, merge_of_a_ragged_batch_writes_q_len_rows) {
  struct merge_case m;
  merge_case_init(&m, 3, TXATTN_MASK_NONE, 2, cuts2, TXATTN_DTYPE_F32);
  txattn_tensors parts[2] = {0}, out = TXATTN_TENSORS_INIT;
  merge_parts(&m, parts);
  float *o = filled(m.no, 4), *lse = filled(m.nl, 4);
  const int64_t q_lens[2] = {1, 3};
  txattn_problem p = m.whole;
  p.ragged = 1;
  out.o = o;
  out.lse = lse;
  out.q_lens = q_lens;
  cr_assert_eq(txattn_merge(&p, parts, 2, &out), TXATTN_OK, "%s", txattn_last_error());
  for (int64_t b = 0; b < 2; b++)
    for (int64_t h = 0; h < 4; h++)
      for (int64_t i = 0; i < 3; i++) {
        size_t row = (size_t)((b * 4 + h) * 3 + i);
        cr_assert_eq(is_sentinel(&lse[row]), i >= q_lens[b], "lse row (%lld %lld %lld)",
                     (long long)b, (long long)h, (long long)i);
        cr_assert_eq(is_sentinel(&o[row * 8]), i >= q_lens[b], "o row (%lld %lld %lld)",
                     (long long)b, (long long)h, (long long)i);
      }
  free(o);
  free(lse);
  merge_case_free(&m);
}

static void expect_invalid(txattn_status s, const char *needle, const char *what) {
  cr_assert_eq(s, TXATTN_E_INVALID, "%s: %s (%s)", what, txattn_status_name(s),
               txattn_last_error());
  cr_assert(strstr(txattn_last_error(), needle) != NULL, "%s: message \"%s\" lacks \"%s\"", what,
            txattn_last_error(), needle);
}

Test(serving, merge_validates_and_leaves_out_alone_on_error) {
  struct merge_case m;
  merge_case_init(&m, 3, TXATTN_MASK_NONE, 2, cuts2, TXATTN_DTYPE_F32);
  txattn_tensors parts[2] = {0}, out = TXATTN_TENSORS_INIT;
  merge_parts(&m, parts);
  float *o = filled(m.no, 4), *lse = filled(m.nl, 4);
  out.o = o;
  out.lse = lse;
  expect_invalid(txattn_merge(&m.whole, parts, 0, &out), "n_parts is 0", "no parts");
  expect_invalid(txattn_merge(&m.whole, NULL, 2, &out), "parts is NULL", "parts NULL");
  expect_invalid(txattn_merge(&m.whole, parts, 2, NULL), "out is NULL", "out NULL");
  parts[1].lse = NULL;
  expect_invalid(txattn_merge(&m.whole, parts, 2, &out), "parts[1].lse is NULL", "part lse");
  merge_parts(&m, parts);
  parts[1].struct_size = TXATTN_TENSORS_SIZE_0_2; /* an older caller's part has no lse */
  expect_invalid(txattn_merge(&m.whole, parts, 2, &out), "parts[1].lse is NULL", "old part");
  merge_parts(&m, parts);
  parts[0].o_layout.row = 1; /* rows overlap: fine for an input, but the span is checked */
  parts[0].o_layout.head = 1;
  parts[0].o_layout.batch = -1;
  expect_invalid(txattn_merge(&m.whole, parts, 2, &out), "parts[0].o_layout.batch", "stride");
  merge_parts(&m, parts);
  out.o = m.part_o[1];
  expect_invalid(txattn_merge(&m.whole, parts, 2, &out), "overlaps parts[1].o", "out o");
  out.o = o;
  out.lse = m.part_lse[0];
  expect_invalid(txattn_merge(&m.whole, parts, 2, &out), "overlaps parts[0].lse", "out lse");
  out.lse = (float *)o + 1;
  expect_invalid(txattn_merge(&m.whole, parts, 2, &out), "out.lse overlaps out.o", "lse in o");
  out.lse = lse;
  out.o_layout = (txattn_layout){96, 24, 1}; /* rows of out.o would share elements */
  expect_invalid(txattn_merge(&m.whole, parts, 2, &out), "out.o_layout.row = 1", "self alias");
  out.o_layout = (txattn_layout){0, 0, 0};
  const int64_t bad[2] = {1, 4};
  txattn_problem rp = m.whole;
  rp.ragged = 1;
  out.q_lens = bad;
  expect_invalid(txattn_merge(&rp, parts, 2, &out), "q_lens[1] = 4", "q_lens");
  txattn_problem bp = m.whole;
  bp.n_q = 0;
  expect_invalid(txattn_merge(&bp, parts, 2, &out), "n_q", "problem");
  for (size_t x = 0; x < m.no; x++) cr_assert(is_sentinel(&o[x]), "o[%zu] written on error", x);
  for (size_t x = 0; x < m.nl; x++) cr_assert(is_sentinel(&lse[x]), "lse[%zu] written", x);
  free(o);
  free(lse);
  merge_case_free(&m);
}

/* ---- the struct_size discipline and validation of the new fields ---- */

Test(serving, an_older_callers_structs_have_no_serving_fields) {
  txattn_problem p = TXATTN_PROBLEM_INIT, r = TXATTN_PROBLEM_INIT;
  p.n_q = 4;
  p.d_qk = 8;
  p.struct_size = TXATTN_PROBLEM_SIZE_0_2;
  p.lse = 7; /* past the caller's struct: never read */
  p.ragged = 9;
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK, "%s", txattn_last_error());
  cr_assert(r.lse == 0 && r.ragged == 0, "an old caller's problem resolved to lse %d ragged %d",
            r.lse, r.ragged);
  /* an old caller's tensors have no lse: the reference leaves the would-be pointer alone */
  float q[32], k[32], v[32], o[32];
  for (int i = 0; i < 32; i++) q[i] = k[i] = v[i] = (float)i / 32.0f;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = q;
  t.k = k;
  t.v = v;
  t.o = o;
  t.struct_size = TXATTN_TENSORS_SIZE_0_2;
  t.lse = (float *)1; /* misaligned garbage past the struct */
  t.q_lens = (const int64_t *)3;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
  /* a new problem asking for lse from an old caller's tensors */
  p.struct_size = sizeof p;
  p.lse = 1;
  p.ragged = 0;
  expect_invalid(txattn_reference(&p, &t), "txattn_tensors.lse is NULL", "old tensors");
  p.struct_size = 0; /* 0 means version 0.2's struct */
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
}

Test(serving, the_new_fields_are_validated) {
  float q[64], k[64], v[64], o[64], lse[16];
  for (int i = 0; i < 64; i++) q[i] = k[i] = v[i] = (float)i / 64.0f;
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.batch = 2;
  p.n_q = 4;
  p.d_qk = 8;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = q;
  t.k = k;
  t.v = v;
  t.o = o;
  t.lse = lse;
  p.lse = 2;
  expect_invalid(txattn_reference(&p, &t), "txattn_problem.lse = 2 must be 0 or 1", "lse 2");
  p.lse = 0;
  p.ragged = -1;
  expect_invalid(txattn_reference(&p, &t), "txattn_problem.ragged = -1", "ragged -1");
  p.ragged = 1;
  const int64_t q_bad[2] = {4, 5}, kv_bad[2] = {-1, 2}, ok_lens[2] = {1, 4};
  t.q_lens = q_bad;
  expect_invalid(txattn_reference(&p, &t), "q_lens[1] = 5 is outside 0..n_q = 4", "q_lens");
  cr_assert(strstr(txattn_last_error(), "sequence 1") != NULL, "%s", txattn_last_error());
  t.q_lens = ok_lens;
  t.kv_lens = kv_bad;
  expect_invalid(txattn_reference(&p, &t), "kv_lens[0] = -1", "kv_lens");
  t.kv_lens = ok_lens;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
  p.lse = 1;
  t.lse = o + 3;
  expect_invalid(txattn_reference(&p, &t), "txattn_tensors.lse overlaps o", "lse in o");
  t.lse = (float *)(void *)q;
  expect_invalid(txattn_reference(&p, &t), "txattn_tensors.lse overlaps q", "lse in q");
  t.lse = lse;
  t.lse_layout = (txattn_layout){4, 4, 0}; /* every row of a head on one float */
  expect_invalid(txattn_reference(&p, &t), "txattn_tensors.lse_layout.", "lse self alias");
  t.lse_layout = (txattn_layout){INT64_C(1) << 60, 4, 1};
  expect_invalid(txattn_reference(&p, &t), "txattn_tensors.lse_layout.batch", "lse stride");
  t.lse_layout = (txattn_layout){-4, 4, 1};
  expect_invalid(txattn_reference(&p, &t), "lse_layout.batch = -4 must be >= 0", "negative");
  t.lse_layout = (txattn_layout){4, 4, 1};
  t.lse = (float *)(void *)((char *)lse + 2);
  expect_invalid(txattn_reference(&p, &t), "txattn_tensors.lse = ", "misaligned");
  t.lse = lse;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
}

/* ---- kernels ---- */

/* Runs kernel (NULL: txattn_attention) on a ragged case and compares o and lse with the
   reference's: o within txattn_error_bound, lse within txattn_lse_error_bound (lse_tolerance.h).
   Returns 0 if the kernel declined. */
static int ragged_kernel_case(txattn_context *ctx, const char *kernel, txattn_mask mask,
                              int threads) {
  const int64_t q_lens[6] = {6, 3, 1, 6, 6, 2}, kv_lens[6] = {40, 0, 1, 17, 5, 33};
  struct ragged r;
  char who[160];
  snprintf(who, sizeof who, "%s, %s, %d thread%s", kernel ? kernel : "txattn_attention",
           txattn_mask_name(mask), threads, threads > 1 ? "s" : "");
  ragged_init(&r, 6, 4, 2, 6, 40, 32, mask, q_lens, kv_lens, 31 + (uint64_t)mask);
  float *o_ref = filled(r.no, 4), *lse_ref = filled(r.nl, 4);
  txattn_tensors tr = ragged_tensors(&r, o_ref, lse_ref);
  cr_assert_eq(txattn_reference(&r.p, &tr), TXATTN_OK, "%s", txattn_last_error());
  double bound = 0;
  cr_assert_eq(txattn_error_bound(&r.p, &tr, &bound), TXATTN_OK, "%s", txattn_last_error());
  const lse_tolerance lse_tol = lse_tolerance_of(&r.p, &tr);
  txattn_tensors t = ragged_tensors(&r, r.o, r.lse);
  txattn_status s;
  if (kernel) {
    txattn_plan *plan = NULL;
    s = txattn_plan_create(ctx, &r.p, kernel, &plan);
    if (s == TXATTN_E_UNSUPPORTED && !test_kernel_takes_every_problem(kernel)) {
      cr_log_info("%s declines the ragged case: %s", who, txattn_last_error());
      free(o_ref);
      free(lse_ref);
      ragged_free(&r);
      return 0;
    }
    cr_assert_eq(s, TXATTN_OK, "%s: plan: %s", who, txattn_last_error());
    s = txattn_plan_execute(plan, &t);
    txattn_plan_free(plan);
  } else {
    s = txattn_attention(ctx, &r.p, &t);
  }
  cr_assert_eq(s, TXATTN_OK, "%s: %s: %s", who, txattn_status_name(s), txattn_last_error());
  check_ragged_rows(&r, r.o, r.lse, who);
  for (int64_t b = 0; b < r.p.batch; b++)
    for (int64_t h = 0; h < r.p.heads_q; h++)
      for (int64_t i = 0; i < q_lens[b]; i++) {
        size_t row = (size_t)((b * r.p.heads_q + h) * r.p.n_q + i);
        double want = lse_ref[row], got = r.lse[row];
        if (want == -INFINITY)
          cr_assert(got == -INFINITY, "%s: lse (b%lld h%lld i%lld) = %g for a row without keys",
                    who, (long long)b, (long long)h, (long long)i, got);
        else
          cr_assert(fabs(got - want) <= lse_tolerance_at(lse_tol, want),
                    "%s: lse (b%lld h%lld i%lld) = %.9g, reference %.9g (tolerance %.3g)", who,
                    (long long)b, (long long)h, (long long)i, got, want,
                    lse_tolerance_at(lse_tol, want));
        for (int64_t c = 0; c < r.p.d_qk; c++) {
          double g = r.o[row * 32 + (size_t)c], w = o_ref[row * 32 + (size_t)c];
          cr_assert(fabs(g - w) <= bound, "%s: o (b%lld h%lld i%lld)[%lld] = %.9g, reference %.9g",
                    who, (long long)b, (long long)h, (long long)i, (long long)c, g, w);
        }
      }
  free(o_ref);
  free(lse_ref);
  ragged_free(&r);
  return 1;
}

/* A batch mixing a prefill sequence (8 queries) with a decode one (1 query): a kernel may take
   another path for the few rows, which asks for more workspace than the largest sequence (tiled's
   direct path at d 512 did, and the call failed with E_PLUGIN). Every kernel runs it exactly. */
Test(serving, a_ragged_batch_of_prefill_and_decode_runs_on_every_kernel) {
  const int64_t q_lens[2] = {8, 1}, kv_lens[2] = {16, 16}, d = 512;
  txattn_context *ctx = test_context(1);
  struct kernel_list kernels;
  test_kernel_list(ctx, &kernels);
  struct ragged r;
  ragged_init(&r, 2, 1, 1, 8, 16, d, TXATTN_MASK_CAUSAL, q_lens, kv_lens, 77);
  r.p.lse = 0;
  float *o_ref = filled(r.no, 4);
  txattn_tensors tr = ragged_tensors(&r, o_ref, NULL);
  cr_assert_eq(txattn_reference(&r.p, &tr), TXATTN_OK, "%s", txattn_last_error());
  double bound = 0;
  cr_assert_eq(txattn_error_bound(&r.p, &tr, &bound), TXATTN_OK, "%s", txattn_last_error());
  int ran = 0;
  for (size_t i = 0; i < kernels.n; i++) {
    const txattn_kernel_info *k = &kernels.k[i];
    if (!k->usable) continue;
    txattn_plan *plan = NULL;
    txattn_status s = txattn_plan_create(ctx, &r.p, k->name, &plan);
    if (s == TXATTN_E_UNSUPPORTED && !test_kernel_takes_every_problem(k->name)) continue;
    cr_assert_eq(s, TXATTN_OK, "%s: plan: %s", k->name, txattn_last_error());
    for (size_t x = 0; x < r.no; x++) r.o[x] = 4.0f;
    txattn_tensors t = ragged_tensors(&r, r.o, NULL);
    s = txattn_plan_execute(plan, &t);
    txattn_plan_free(plan);
    cr_assert_eq(s, TXATTN_OK, "%s: %s: %s", k->name, txattn_status_name(s), txattn_last_error());
    for (int64_t b = 0; b < 2; b++)
      for (int64_t row = b * 8; row < b * 8 + q_lens[b]; row++)
        for (int64_t c = 0; c < d; c++) {
          const double g = r.o[row * d + c], w = o_ref[row * d + c];
          cr_assert(fabs(g - w) <= bound, "%s: o (b%lld row %lld)[%lld] = %.9g, reference %.9g",
                    k->name, (long long)b, (long long)(row - b * 8), (long long)c, g, w);
        }
    ran++;
  }
  cr_assert(ran > 0, "no kernel ran the mixed batch");
  free(o_ref);
  ragged_free(&r);
  txattn_context_free(ctx);
}

Test(serving, kernels_that_write_lse_agree_on_ragged_batches) {
  int naive_flagged = 0, naive_ran = 0, ran = 0;
  char names[1024] = "";
  for (int threads = 1; threads <= 2; threads++) {
    txattn_context *ctx = test_context(threads);
    struct kernel_list kernels;
    test_kernel_list(ctx, &kernels);
    for (size_t i = 0; i < kernels.n; i++) {
      const txattn_kernel_info *k = &kernels.k[i];
      if (!k->usable || !(k->flags & TXATTN_KERNEL_LSE)) continue;
      if (threads == 2 && !(k->flags & TXATTN_KERNEL_THREADED)) continue;
      int is_naive = strcmp(k->name, "naive.scalar") == 0;
      naive_flagged |= is_naive;
      int any = 0;
      for (int m = TXATTN_MASK_NONE; m <= TXATTN_MASK_WINDOW; m++)
        any |= ragged_kernel_case(ctx, k->name, (txattn_mask)m, threads);
      if (any && threads == 1) {
        size_t n = strlen(names);
        snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", k->name);
      }
      ran += any;
      naive_ran |= is_naive && any;
    }
    for (int m = TXATTN_MASK_NONE; m <= TXATTN_MASK_WINDOW; m++) {
      int has_lse = 0;
      for (size_t i = 0; i < kernels.n; i++)
        has_lse |= kernels.k[i].usable && (kernels.k[i].flags & TXATTN_KERNEL_LSE);
      if (has_lse) {
        ragged_kernel_case(ctx, NULL, (txattn_mask)m, threads);
        continue;
      }
      /* no kernel writes lse (yet): the dispatcher has none to choose */
      txattn_problem p = TXATTN_PROBLEM_INIT;
      txattn_plan *plan = NULL;
      p.n_q = 2;
      p.d_qk = 8;
      p.mask = (txattn_mask)m;
      p.lse = 1;
      cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_E_UNSUPPORTED,
                   "a plan with lse though no kernel writes it");
    }
    txattn_context_free(ctx);
  }
  cr_log_info("kernels that write lse, checked on ragged batches: %s", names[0] ? names : "none");
  if (naive_flagged) cr_assert(naive_ran, "naive.scalar writes lse but declined the ragged case");
}

/* A context over a scratch directory holding only the given test plugin. */
static txattn_context *only(const char *file) {
  scratch_dir(dir, sizeof dir, 0755);
  scratch_copy_plugin(dir, file, NULL, 0644);
  return test_context_at(dir, 1);
}

Test(serving, a_kernel_that_does_not_write_lse_is_never_handed_lse) {
  txattn_context *ctx = only(TEST_GOOD_FILE); /* ABI 1.0: no TXATTN_KERNEL_LSE */
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.n_q = 4;
  p.d_qk = 8;
  p.lse = 1;
  txattn_plan *plan = NULL;
  txattn_status s = txattn_plan_create(ctx, &p, TEST_GOOD_KERNEL, &plan);
  cr_assert_eq(s, TXATTN_E_UNSUPPORTED, "%s", txattn_status_name(s));
  cr_assert(strstr(txattn_last_error(), "it does not write lse") != NULL, "%s",
            txattn_last_error());
  s = txattn_plan_create(ctx, &p, NULL, &plan);
  cr_assert_eq(s, TXATTN_E_UNSUPPORTED, "the dispatcher: %s", txattn_status_name(s));
  cr_assert(strstr(txattn_last_error(), "it does not write lse") != NULL, "%s",
            txattn_last_error());
  /* the plan cache keys on lse: a cached plan without lse does not answer a call with it */
  float q[32], o[32], lse[4];
  for (int i = 0; i < 32; i++) q[i] = (float)i / 32.0f;
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q = t.k = t.v = q;
  t.o = o;
  t.lse = lse;
  p.lse = 0;
  cr_assert_eq(txattn_attention(ctx, &p, &t), TXATTN_OK, "%s", txattn_last_error());
  p.lse = 1;
  cr_assert_eq(txattn_attention(ctx, &p, &t), TXATTN_E_UNSUPPORTED, "cached plan reused");
  txattn_context_free(ctx);
  /* and so for every shipped kernel that does not (yet) set the flag */
  ctx = test_context(1);
  struct kernel_list kernels;
  test_kernel_list(ctx, &kernels);
  for (size_t i = 0; i < kernels.n; i++) {
    const txattn_kernel_info *k = &kernels.k[i];
    if (!k->usable || (k->flags & TXATTN_KERNEL_LSE)) continue;
    s = txattn_plan_create(ctx, &p, k->name, &plan);
    cr_assert_eq(s, TXATTN_E_UNSUPPORTED, "%s: %s", k->name, txattn_status_name(s));
    cr_assert(strstr(txattn_last_error(), "does not write lse") != NULL, "%s: %s", k->name,
              txattn_last_error());
  }
  txattn_context_free(ctx);
}

/* A kernel without TXATTN_KERNEL_RAGGED gets one call per sequence from the host, with its
   tunables fitted to each (testfit cuts its one to n_q); sequences without keys are written by
   the host. */
static void per_sequence_case(const char *file, const char *kernel, txattn_mask mask) {
  txattn_context *ctx = only(file);
  const int64_t q_lens[4] = {5, 0, 2, 5}, kv_lens[4] = {9, 4, 0, 3};
  struct ragged r;
  ragged_init(&r, 4, 2, 1, 5, 9, 8, mask, q_lens, kv_lens, 3);
  r.p.lse = 0;
  float *o_ref = filled(r.no, 4), *lse_ref = filled(r.nl, 4);
  txattn_tensors t = ragged_tensors(&r, r.o, r.lse), tr = ragged_tensors(&r, o_ref, lse_ref);
  cr_assert_eq(txattn_reference(&r.p, &tr), TXATTN_OK, "%s", txattn_last_error());
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &r.p, kernel, &plan), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK, "%s", txattn_last_error());
  txattn_plan_free(plan);
  for (int64_t b = 0; b < r.p.batch; b++)
    for (int64_t h = 0; h < r.p.heads_q; h++)
      for (int64_t i = 0; i < r.p.n_q; i++)
        for (int64_t c = 0; c < r.p.d_qk; c++) {
          size_t at = (size_t)(((b * r.p.heads_q + h) * r.p.n_q + i) * r.p.d_qk + c);
          if (i >= q_lens[b])
            cr_assert(is_sentinel(&r.o[at]), "%s: wrote past q_len", kernel);
          else if (kv_lens[b] == 0)
            cr_assert(r.o[at] == 0.0f && !signbit(r.o[at]), "%s: kv_len 0 gave %g", kernel,
                      r.o[at]);
          else
            cr_assert(fabs(r.o[at] - o_ref[at]) <= 2 * TXATTN_EXACT_TOLERANCE,
                      "%s, mask %d: o[%zu] = %.9g, reference %.9g", kernel, (int)mask, at, r.o[at],
                      o_ref[at]);
        }
  free(o_ref);
  free(lse_ref);
  ragged_free(&r);
  txattn_context_free(ctx);
  scratch_remove(dir);
  dir[0] = '\0';
}

Test(serving, the_host_runs_a_ragged_batch_one_sequence_at_a_time) {
  per_sequence_case(TEST_FIT_FILE, TEST_FIT_KERNEL, TXATTN_MASK_CAUSAL);
  per_sequence_case(TEST_GOOD_FILE, TEST_GOOD_KERNEL, TXATTN_MASK_NONE);
  per_sequence_case(TEST_GOOD_FILE, TEST_GOOD_KERNEL, TXATTN_MASK_WINDOW);
}
