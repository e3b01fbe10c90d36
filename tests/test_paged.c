/* SPDX-License-Identifier: MIT */
/* Paged K/V (txattn_problem.page_size, txattn_tensors.block_table) and packed queries
 * (txattn_problem.packed, txattn_tensors.q_offsets). Each case is a ragged batch written twice: as
 * padded tensors (one sequence after another, the layout of issue 20) and as a server keeps it,
 * K/V in a pool of pages in shuffled order (shared pages too) and q, o, lse packed. The reference
 * must give the same bits on both; every kernel with TXATTN_KERNEL_PAGED must meet
 * txattn_error_bound and the lse bound on the paged form; every malformed table or offset list is
 * refused with E_INVALID naming the field, the outputs untouched. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elements.h"
#include "lse_tolerance.h"
#include "test_context.h"
#include "txattn/plugin.h"
#include "txattn/txattn.h"

TestSuite(paged, .init = test_env_clean, .fini = test_check_leaks, .timeout = 300);

#define MAXB 4

static uint64_t next_random(uint64_t *state) { /* splitmix64 */
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
static double uniform(uint64_t *s) {
  return (double)(next_random(s) >> 11) * 0x1p-52 * 2.0 - 1.0;
}

struct pcase {
  /* given */
  int64_t batch, heads_q, heads_kv, d, P;
  int64_t q_lens[MAXB], kv_lens[MAXB];
  int token_major, share; /* share: sequence 1's first page is sequence 0's */
  txattn_dtype type;      /* of q, k, v and o */
  txattn_problem base;    /* mask, modifiers, lse */
  /* made */
  int64_t n_q, n_kv, n_pages, max_pages, total;
  void *qd, *kd, *vd, *od, *qp, *kp, *vp, *op;
  float *lsed, *lsep, slopes[16], sinks[16];
  int32_t *table;
  int64_t offsets[MAXB + 1];
  txattn_problem dense_p, paged_p;
  txattn_tensors dense_t, paged_t;
};

static void *alloc_elems(int64_t n, txattn_dtype t) {
  void *x = calloc((size_t)n, elem_size(t));
  cr_assert(x != NULL, "out of memory");
  return x;
}

/* Element offset of row r of head h in page `page` of the pool. */
static int64_t pool_at(const struct pcase *c, int64_t page, int64_t h, int64_t r) {
  if (c->token_major) return ((page * c->P + r) * c->heads_kv + h) * c->d;
  return ((page * c->heads_kv + h) * c->P + r) * c->d;
}

static void pcase_make(struct pcase *c, uint64_t seed) {
  uint64_t st = seed;
  const txattn_dtype t = c->type;
  c->n_q = c->n_kv = 1;
  for (int64_t b = 0; b < c->batch; b++) {
    if (c->q_lens[b] > c->n_q) c->n_q = c->q_lens[b];
    if (c->kv_lens[b] > c->n_kv) c->n_kv = c->kv_lens[b];
  }
  const int64_t hq = c->heads_q, hk = c->heads_kv, d = c->d;
  c->qd = alloc_elems(c->batch * hq * c->n_q * d, t);
  c->kd = alloc_elems(c->batch * hk * c->n_kv * d, t);
  c->vd = alloc_elems(c->batch * hk * c->n_kv * d, t);
  c->od = alloc_elems(c->batch * hq * c->n_q * d, t);
  c->lsed = calloc((size_t)(c->batch * hq * c->n_q), sizeof(float));
  for (int64_t i = 0; i < c->batch * hq * c->n_q * d; i++)
    elem_store(c->qd, t, (size_t)i, uniform(&st));
  for (int64_t i = 0; i < c->batch * hk * c->n_kv * d; i++) {
    elem_store(c->kd, t, (size_t)i, uniform(&st));
    elem_store(c->vd, t, (size_t)i, uniform(&st));
  }
  /* pages: each sequence's in a shuffled pool, two spare pages never named */
  c->max_pages = (c->n_kv + c->P - 1) / c->P + 1;
  int64_t need[MAXB], sum = 0;
  for (int64_t b = 0; b < c->batch; b++) sum += need[b] = (c->kv_lens[b] + c->P - 1) / c->P;
  c->n_pages = sum + 2;
  int64_t *perm = malloc((size_t)c->n_pages * sizeof *perm);
  for (int64_t i = 0; i < c->n_pages; i++) perm[i] = i;
  for (int64_t i = c->n_pages - 1; i > 0; i--) {
    int64_t j = (int64_t)(next_random(&st) % (uint64_t)(i + 1)), x = perm[i];
    perm[i] = perm[j];
    perm[j] = x;
  }
  c->table = malloc((size_t)(c->batch * c->max_pages) * sizeof *c->table);
  for (int64_t i = 0; i < c->batch * c->max_pages; i++) c->table[i] = -7; /* never read */
  int64_t used = 0;
  for (int64_t b = 0; b < c->batch; b++)
    for (int64_t i = 0; i < need[b]; i++) c->table[b * c->max_pages + i] = (int32_t)perm[used++];
  free(perm);
  if (c->share && c->batch > 1 && need[0] > 0 && need[1] > 0 && c->kv_lens[0] >= c->P &&
      c->kv_lens[1] >= c->P) { /* sequence 1's first page is sequence 0's: same keys densely */
    c->table[c->max_pages] = c->table[0];
    for (int64_t h = 0; h < hk; h++)
      for (int64_t j = 0; j < c->P; j++)
        for (int64_t x = 0; x < d; x++) {
          size_t from = (size_t)((h * c->n_kv + j) * d + x),
                 to = (size_t)(((hk + h) * c->n_kv + j) * d + x);
          elem_set_bits(c->kd, t, to, elem_bits(c->kd, t, from));
          elem_set_bits(c->vd, t, to, elem_bits(c->vd, t, from));
        }
  }
  c->kp = alloc_elems(c->n_pages * c->P * hk * d, t);
  c->vp = alloc_elems(c->n_pages * c->P * hk * d, t);
  for (int64_t b = 0; b < c->batch; b++)
    for (int64_t h = 0; h < hk; h++)
      for (int64_t j = 0; j < c->kv_lens[b]; j++)
        for (int64_t x = 0; x < d; x++) {
          size_t from = (size_t)(((b * hk + h) * c->n_kv + j) * d + x);
          size_t to = (size_t)(pool_at(c, c->table[b * c->max_pages + j / c->P], h, j % c->P) + x);
          elem_set_bits(c->kp, t, to, elem_bits(c->kd, t, from));
          elem_set_bits(c->vp, t, to, elem_bits(c->vd, t, from));
        }
  /* packed q, o, lse: [rows][heads][d] */
  c->offsets[0] = 0;
  for (int64_t b = 0; b < c->batch; b++) c->offsets[b + 1] = c->offsets[b] + c->q_lens[b];
  c->total = c->offsets[c->batch];
  const int64_t rows = c->total > 0 ? c->total : 1;
  c->qp = alloc_elems(rows * hq * d, t);
  c->op = alloc_elems(rows * hq * d, t);
  c->lsep = calloc((size_t)(rows * hq), sizeof(float));
  for (int64_t b = 0; b < c->batch; b++)
    for (int64_t h = 0; h < hq; h++)
      for (int64_t i = 0; i < c->q_lens[b]; i++)
        for (int64_t x = 0; x < d; x++)
          elem_set_bits(c->qp, t, (size_t)(((c->offsets[b] + i) * hq + h) * d + x),
                        elem_bits(c->qd, t, (size_t)(((b * hq + h) * c->n_q + i) * d + x)));
  for (int64_t h = 0; h < hq; h++) {
    c->slopes[h] = (float)(0.05 * (double)(h + 1));
    c->sinks[h] = h % 2 ? -INFINITY : (float)uniform(&st);
  }
  c->dense_p = c->base;
  c->dense_p.batch = c->batch;
  c->dense_p.heads_q = hq;
  c->dense_p.heads_kv = hk;
  c->dense_p.n_q = c->n_q;
  c->dense_p.n_kv = c->n_kv;
  c->dense_p.d_qk = d;
  c->dense_p.q_type = c->dense_p.k_type = c->dense_p.v_type = c->dense_p.o_type = t;
  c->dense_p.ragged = 1;
  c->dense_p.struct_size = sizeof(txattn_problem);
  c->paged_p = c->dense_p;
  c->paged_p.ragged = 0; /* packed implies it */
  c->paged_p.packed = 1;
  c->paged_p.page_size = c->P;
  c->paged_p.max_pages = c->max_pages;
  c->paged_p.n_pages = c->n_pages;
  txattn_tensors dt = TXATTN_TENSORS_INIT, pt = TXATTN_TENSORS_INIT;
  dt.q_data = c->qd;
  dt.k_data = c->kd;
  dt.v_data = c->vd;
  dt.o_data = c->od;
  dt.lse = c->base.lse ? c->lsed : NULL;
  dt.q_lens = c->q_lens;
  dt.kv_lens = c->kv_lens;
  dt.alibi_slopes = c->slopes;
  dt.sinks = c->sinks;
  pt = dt;
  pt.q_lens = NULL;
  pt.q_data = c->qp;
  pt.k_data = c->kp;
  pt.v_data = c->vp;
  pt.o_data = c->op;
  pt.lse = c->base.lse ? c->lsep : NULL;
  pt.block_table = c->table;
  pt.q_offsets = c->offsets;
  if (c->token_major) {
    const txattn_layout l = {c->P * hk * d, d, hk * d};
    pt.k_layout = pt.v_layout = l;
  }
  c->dense_t = dt;
  c->paged_t = pt;
}

static void pcase_free(struct pcase *c) {
  void *all[] = {c->qd, c->kd, c->vd,   c->od,   c->qp,   c->kp,
                 c->vp, c->op, c->lsed, c->lsep, c->table};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

/* Packed row (b, h, i) of o against padded row (b, h, i) of the dense o: the same bits. */
static void expect_same_rows(const struct pcase *c) {
  const int64_t hq = c->heads_q, d = c->d;
  for (int64_t b = 0; b < c->batch; b++)
    for (int64_t h = 0; h < hq; h++)
      for (int64_t i = 0; i < c->q_lens[b]; i++) {
        for (int64_t x = 0; x < d; x++) {
          uint32_t a = elem_bits(c->op, c->type, (size_t)(((c->offsets[b] + i) * hq + h) * d + x));
          uint32_t e = elem_bits(c->od, c->type, (size_t)(((b * hq + h) * c->n_q + i) * d + x));
          cr_assert_eq(a, e, "P %lld: o of sequence %lld head %lld row %lld col %lld: %x != %x",
                       (long long)c->P, (long long)b, (long long)h, (long long)i, (long long)x, a,
                       e);
        }
        if (c->base.lse) {
          float a = c->lsep[(c->offsets[b] + i) * hq + h], e = c->lsed[(b * hq + h) * c->n_q + i];
          cr_assert(memcmp(&a, &e, sizeof a) == 0, "lse of sequence %lld row %lld: %g != %g",
                    (long long)b, (long long)i, (double)a, (double)e);
        }
      }
}

/* The reference on the paged, packed form equals the reference on the padded one, bit for bit. */
static void reference_case(struct pcase *c, uint64_t seed) {
  pcase_make(c, seed);
  cr_assert_eq(txattn_reference(&c->dense_p, &c->dense_t), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(txattn_reference(&c->paged_p, &c->paged_t), TXATTN_OK, "%s", txattn_last_error());
  expect_same_rows(c);
}

static const int64_t page_sizes[] = {1, 3, 16, 128};

static struct pcase mixed(int64_t P, int token_major, txattn_dtype t) {
  struct pcase c = {.batch = 4,
                    .heads_q = 4,
                    .heads_kv = 2,
                    .d = 16,
                    .P = P,
                    .q_lens = {1, 37, 0, 2},
                    .kv_lens = {300, 333, 5, 0},
                    .token_major = token_major,
                    .share = 1,
                    .type = t};
  c.base.lse = 1;
  return c;
}

Test(paged, reference_over_pages_equals_the_padded_batch) {
  const txattn_mask masks[] = {TXATTN_MASK_NONE, TXATTN_MASK_CAUSAL, TXATTN_MASK_WINDOW};
  for (size_t pi = 0; pi < sizeof page_sizes / sizeof page_sizes[0]; pi++)
    for (int tm = 0; tm < 2; tm++)
      for (int m = 0; m < 3; m++) {
        struct pcase c = mixed(page_sizes[pi], tm, TXATTN_DTYPE_F32);
        c.base.mask = masks[m];
        c.base.window_left = 40;
        c.base.window_right = 3;
        reference_case(&c, 11 + (uint64_t)m);
        pcase_free(&c);
      }
}

Test(paged, reference_over_pages_with_every_modifier) {
  for (size_t pi = 0; pi < sizeof page_sizes / sizeof page_sizes[0]; pi++) {
    struct pcase c = mixed(page_sizes[pi], (int)pi % 2, TXATTN_DTYPE_BF16);
    c.base.mask = TXATTN_MASK_WINDOW;
    c.base.window_left = 20;
    c.base.softcap = 5.0f;
    c.base.alibi = c.base.sinks = 1;
    c.base.sink_keys = 4;
    reference_case(&c, 5);
    pcase_free(&c);
  }
}

/* Every kernel with TXATTN_KERNEL_PAGED on the paged, packed form: within txattn_error_bound of
   the reference and lse within its bound; a kernel without the flag is refused. */
static void kernels_case(struct pcase *c, uint64_t seed, int threads) {
  pcase_make(c, seed);
  txattn_problem *p = &c->paged_p;
  cr_assert_eq(txattn_reference(p, &c->paged_t), TXATTN_OK, "%s", txattn_last_error());
  const int64_t rows = (c->total > 0 ? c->total : 1) * c->heads_q;
  void *want = alloc_elems(rows * c->d, c->type);
  float *want_lse = malloc((size_t)rows * sizeof *want_lse);
  memcpy(want, c->op, (size_t)(rows * c->d) * elem_size(c->type));
  memcpy(want_lse, c->lsep, (size_t)rows * sizeof *want_lse);
  double bound = 0.0;
  cr_assert_eq(txattn_error_bound(p, &c->paged_t, &bound), TXATTN_OK, "%s", txattn_last_error());
  lse_tolerance tol = lse_tolerance_of(p, &c->paged_t);
  txattn_context *ctx = test_context(threads);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  int ran = 0;
  for (size_t k = 0; k <= l.n; k++) {
    const char *name = k < l.n ? l.k[k].name : NULL; /* NULL: the dispatcher */
    if (k < l.n && (!l.k[k].usable || !test_kernel_takes_types(&l.k[k], p))) continue;
    txattn_plan *plan = NULL;
    txattn_status s = txattn_plan_create(ctx, p, name, &plan);
    if (k < l.n && !(l.k[k].flags & TXATTN_KERNEL_PAGED)) {
      cr_expect_eq(s, TXATTN_E_UNSUPPORTED, "%s planned a paged problem without the flag", name);
      txattn_plan_free(plan);
      continue;
    }
    if (s == TXATTN_E_UNSUPPORTED) continue; /* declines the shape (not the pages) */
    cr_assert_eq(s, TXATTN_OK, "%s: %s", name ? name : "dispatcher", txattn_last_error());
    memset(c->op, 0xff, (size_t)(rows * c->d) * elem_size(c->type));
    for (int64_t i = 0; i < rows; i++) c->lsep[i] = NAN;
    cr_assert_eq(txattn_plan_execute(plan, &c->paged_t), TXATTN_OK, "%s: %s",
                 txattn_plan_kernel(plan), txattn_last_error());
    double worst = 0.0;
    for (int64_t i = 0; i < rows * c->d; i++) {
      double e = fabs(elem_load(c->op, c->type, (size_t)i) - elem_load(want, c->type, (size_t)i));
      cr_assert(e <= bound, "%s P %lld: element %lld off by %g > bound %g",
                txattn_plan_kernel(plan), (long long)c->P, (long long)i, e, bound);
      if (e > worst) worst = e;
    }
    for (int64_t i = 0; c->base.lse && i < rows; i++) {
      if (isinf(want_lse[i])) {
        cr_assert_eq(c->lsep[i], want_lse[i], "%s: lse row %lld", txattn_plan_kernel(plan),
                     (long long)i);
        continue;
      }
      cr_assert(fabs((double)c->lsep[i] - want_lse[i]) <= lse_tolerance_at(tol, want_lse[i]),
                "%s P %lld: lse row %lld %g, want %g", txattn_plan_kernel(plan), (long long)c->P,
                (long long)i, (double)c->lsep[i], (double)want_lse[i]);
    }
    ran++;
    txattn_plan_free(plan);
  }
  cr_assert(ran >= 2, "no paged kernel besides the dispatcher ran");
  txattn_context_free(ctx);
  free(want);
  free(want_lse);
}

Test(paged, every_paged_kernel_meets_the_bound_on_pages) {
  const txattn_dtype types[] = {TXATTN_DTYPE_F32, TXATTN_DTYPE_F16, TXATTN_DTYPE_BF16};
  for (size_t pi = 0; pi < sizeof page_sizes / sizeof page_sizes[0]; pi++)
    for (int tm = 0; tm < 2; tm++)
      for (size_t ti = 0; ti < 3; ti++) {
        struct pcase c = mixed(page_sizes[pi], tm, types[ti]);
        c.base.mask = pi % 2 ? TXATTN_MASK_CAUSAL : TXATTN_MASK_NONE;
        kernels_case(&c, 3 + pi, 1 + (int)(ti % 2));
        pcase_free(&c);
      }
}

/* Decode rows against long pages: the direct path, which reads pages of every size in place, its
   chunks of 64 keys spanning pages smaller than that, and prefetches across pages. */
Test(paged, decode_rows_on_every_page_size) {
  const txattn_dtype types[] = {TXATTN_DTYPE_F32, TXATTN_DTYPE_F16, TXATTN_DTYPE_BF16};
  for (size_t pi = 0; pi < sizeof page_sizes / sizeof page_sizes[0]; pi++)
    for (size_t ti = 0; ti < 3; ti++) {
      struct pcase c = {.batch = 3,
                        .heads_q = 8,
                        .heads_kv = 2,
                        .d = 64,
                        .P = page_sizes[pi],
                        .q_lens = {1, 1, 1},
                        .kv_lens = {700, 129, 1000},
                        .token_major = (int)ti % 2,
                        .share = 1,
                        .type = types[ti]};
      c.base.lse = 1;
      kernels_case(&c, 17 + ti, 2);
      pcase_free(&c);
    }
}

Test(paged, modifiers_and_sink_keys_on_pages) {
  for (size_t pi = 0; pi < sizeof page_sizes / sizeof page_sizes[0]; pi++) {
    struct pcase c = mixed(page_sizes[pi], 1, TXATTN_DTYPE_F32);
    c.base.mask = TXATTN_MASK_WINDOW;
    c.base.window_left = 30;
    c.base.softcap = 4.0f;
    c.base.alibi = c.base.sinks = 1;
    c.base.sink_keys = 3;
    kernels_case(&c, 23, 2);
    pcase_free(&c);
  }
}

/* A call refused: E_INVALID with `needle` in the message, o and lse as they were. */
static void expect_refused(struct pcase *c, const char *needle) {
  const int64_t rows = (c->total > 0 ? c->total : 1) * c->heads_q;
  memset(c->op, 0x5a, (size_t)(rows * c->d) * elem_size(c->type));
  txattn_context *ctx = test_context(1);
  cr_assert_eq(txattn_attention(ctx, &c->paged_p, &c->paged_t), TXATTN_E_INVALID, "accepted (%s)",
               needle);
  cr_assert(strstr(txattn_last_error(), needle) != NULL, "\"%s\" does not name %s",
            txattn_last_error(), needle);
  cr_assert_eq(txattn_reference(&c->paged_p, &c->paged_t), TXATTN_E_INVALID);
  for (int64_t i = 0; i < rows * c->d * (int64_t)elem_size(c->type); i++)
    cr_assert_eq(((unsigned char *)c->op)[i], 0x5a, "o written on a refused call (%s)", needle);
  txattn_context_free(ctx);
}

Test(paged, malformed_tables_and_offsets_are_refused) {
  struct pcase c = mixed(16, 0, TXATTN_DTYPE_F32);
  pcase_make(&c, 1);
  int32_t saved = c.table[c.max_pages + 2];
  c.table[c.max_pages + 2] = (int32_t)c.n_pages; /* one past the pool */
  expect_refused(&c, "block_table[1 * max_pages + 2]");
  c.table[c.max_pages + 2] = -1;
  expect_refused(&c, "block_table[1 * max_pages + 2] = -1");
  c.table[c.max_pages + 2] = saved;
  c.paged_p.max_pages = 1; /* 333 keys need 21 pages of 16 */
  expect_refused(&c, "txattn_tensors.block_table: sequence 0 has 300 keys, which need 19 pages");
  c.paged_p.max_pages = c.max_pages;
  c.offsets[2] = c.offsets[1] - 1;
  expect_refused(&c, "txattn_tensors.q_offsets[2]");
  c.offsets[2] = c.offsets[1];
  c.offsets[0] = 1;
  expect_refused(&c, "txattn_tensors.q_offsets[0] = 1 must be 0");
  c.offsets[0] = 0;
  c.paged_t.block_table = NULL;
  expect_refused(&c, "txattn_tensors.block_table is NULL");
  c.paged_t.block_table = c.table;
  c.paged_t.q_offsets = NULL;
  expect_refused(&c, "txattn_tensors.q_offsets is NULL");
  c.paged_t.q_offsets = c.offsets;
  c.paged_t.q_lens = c.q_lens;
  expect_refused(&c, "q_lens must be NULL");
  c.paged_t.q_lens = NULL;
  c.paged_p.n_pages = 0;
  expect_refused(&c, "txattn_problem.n_pages = 0");
  c.paged_p.n_pages = c.n_pages;
  c.paged_p.page_size = -2;
  expect_refused(&c, "txattn_problem.page_size = -2");
  c.paged_p.page_size = 0;
  expect_refused(&c, "are for paged K/V, but page_size is 0");
  c.paged_p.page_size = c.P;
  c.paged_p.packed = 2;
  expect_refused(&c, "txattn_problem.packed = 2");
  c.paged_p.packed = 1;
  /* and the well-formed call runs */
  txattn_context *ctx = test_context(1);
  cr_assert_eq(txattn_attention(ctx, &c.paged_p, &c.paged_t), TXATTN_OK, "%s", txattn_last_error());
  txattn_context_free(ctx);
  pcase_free(&c);
}

/* Without the problem's asking, the new fields are not read; an older caller's struct stops
   before them. */
Test(paged, older_structs_have_no_pages) {
  struct pcase c = mixed(16, 0, TXATTN_DTYPE_F32);
  pcase_make(&c, 2);
  txattn_problem p = c.dense_p;
  txattn_tensors t = c.dense_t;
  p.struct_size = TXATTN_PROBLEM_SIZE_0_2_MODIFIERS;
  t.struct_size = TXATTN_TENSORS_SIZE_0_2_MODIFIERS;
  t.block_table = (const int32_t *)8; /* past the caller's struct: never read */
  t.q_offsets = (const int64_t *)8;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
  txattn_problem r = TXATTN_PROBLEM_INIT;
  cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK);
  cr_assert_eq(r.page_size, 0);
  cr_assert_eq(r.packed, 0);
  pcase_free(&c);
}

/* Merging partials of a packed batch over two halves of each sequence's pages equals the whole. */
Test(paged, merge_of_packed_partials_equals_the_whole) {
  struct pcase c = mixed(16, 1, TXATTN_DTYPE_F32);
  c.kv_lens[3] = 40;
  pcase_make(&c, 9);
  cr_assert_eq(txattn_reference(&c.paged_p, &c.paged_t), TXATTN_OK, "%s", txattn_last_error());
  const int64_t rows = c.total * c.heads_q;
  float *whole = malloc((size_t)(rows * c.d) * sizeof(float));
  float *whole_lse = malloc((size_t)rows * sizeof(float));
  memcpy(whole, c.op, (size_t)(rows * c.d) * sizeof(float));
  memcpy(whole_lse, c.lsep, (size_t)rows * sizeof(float));
  /* part 0: each sequence's first 2 pages; part 1: the rest, as its own sequences of pages */
  float *o[2], *l[2];
  txattn_tensors parts[2] = {TXATTN_TENSORS_INIT, TXATTN_TENSORS_INIT};
  for (int part = 0; part < 2; part++) {
    txattn_problem p = c.paged_p;
    p.mask = TXATTN_MASK_NONE;
    int64_t kv[MAXB];
    int32_t *tab = malloc((size_t)(c.batch * c.max_pages) * sizeof *tab);
    for (int64_t b = 0; b < c.batch; b++) {
      int64_t first = c.kv_lens[b] < 2 * c.P ? c.kv_lens[b] : 2 * c.P;
      kv[b] = part == 0 ? first : c.kv_lens[b] - first;
      for (int64_t i = 0; i < c.max_pages; i++)
        tab[b * c.max_pages + i] = part == 0 || i + 2 >= c.max_pages
                                       ? c.table[b * c.max_pages + i]
                                       : c.table[b * c.max_pages + i + 2];
    }
    txattn_tensors t = c.paged_t;
    o[part] = malloc((size_t)(rows * c.d) * sizeof(float));
    l[part] = malloc((size_t)rows * sizeof(float));
    t.o = o[part];
    t.lse = l[part];
    t.kv_lens = kv;
    t.block_table = tab;
    cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
    free(tab);
    parts[part] = t;
  }
  txattn_tensors out = c.paged_t;
  memset(c.op, 0, (size_t)(rows * c.d) * sizeof(float));
  cr_assert_eq(txattn_merge(&c.paged_p, parts, 2, &out), TXATTN_OK, "%s", txattn_last_error());
  for (int64_t i = 0; i < rows * c.d; i++)
    cr_assert(fabsf(((float *)c.op)[i] - whole[i]) <= 1e-5f, "o element %lld: %g, want %g",
              (long long)i, (double)((float *)c.op)[i], (double)whole[i]);
  for (int64_t i = 0; i < rows; i++)
    cr_assert(isinf(whole_lse[i]) ? c.lsep[i] == whole_lse[i]
                                  : fabsf(c.lsep[i] - whole_lse[i]) <= 1e-5f,
              "lse row %lld: %g, want %g", (long long)i, (double)c.lsep[i], (double)whole_lse[i]);
  for (int part = 0; part < 2; part++) {
    free(o[part]);
    free(l[part]);
  }
  free(whole);
  free(whole_lse);
  pcase_free(&c);
}

/* A plan made for one problem is not reused for another that differs only in pages, packing or a
   score modifier (the plan cache of txattn_attention compares them). */
Test(paged, the_plan_cache_tells_problems_apart) {
  struct pcase c = mixed(16, 0, TXATTN_DTYPE_F32);
  pcase_make(&c, 4);
  txattn_context *ctx = test_context(1);
  cr_assert_eq(txattn_attention(ctx, &c.dense_p, &c.dense_t), TXATTN_OK, "%s", txattn_last_error());
  txattn_problem capped = c.dense_p;
  capped.softcap = 0.5f; /* scores of |s| <= 4 capped hard: o differs */
  float *o1 = malloc((size_t)(c.batch * c.heads_q * c.n_q * c.d) * sizeof(float));
  memcpy(o1, c.od, (size_t)(c.batch * c.heads_q * c.n_q * c.d) * sizeof(float));
  cr_assert_eq(txattn_attention(ctx, &capped, &c.dense_t), TXATTN_OK, "%s", txattn_last_error());
  float *o2 = c.od;
  double bound = 0.0;
  cr_assert_eq(txattn_error_bound(&capped, &c.dense_t, &bound), TXATTN_OK);
  float *want = malloc((size_t)(c.batch * c.heads_q * c.n_q * c.d) * sizeof(float));
  txattn_tensors t = c.dense_t;
  t.o = want;
  cr_assert_eq(txattn_reference(&capped, &t), TXATTN_OK);
  for (int64_t b = 0; b < c.batch; b++)
    for (int64_t i = 0; i < c.q_lens[b] * c.d; i++) {
      int64_t at = b * c.heads_q * c.n_q * c.d + i;
      cr_assert(fabsf(o2[at] - want[at]) <= bound, "softcap ignored by a cached plan at %lld",
                (long long)at);
    }
  free(o1);
  free(want);
  txattn_context_free(ctx);
  pcase_free(&c);
}

/* ---- 8-bit K and V ----
   Caches of q8_0, e4m3 and e5m2 rows (random values of each format, |x| up to about 4 with the
   scales, fp8 with a scale per KV head), read contiguously and from a shuffled pool of pages of P
   keys. Every kernel that takes the types must be within txattn_error_bound and the lse bound of
   the reference on the f32 problem of the values the 8-bit rows hold (txattn_row_to_f32: the
   values every kernel computes on), bounds derived for f32 K and V: a kernel is exact on the
   dequantized values. */
struct kv8case {
  /* given */
  int64_t batch, heads_q, heads_kv, d, P, n_q;
  int64_t kv_lens[MAXB];
  txattn_dtype kt, vt;
  txattn_problem base; /* mask, modifiers, lse */
  double qmul, kmul;   /* q's values and K's scales times these [1] */
  /* made */
  int64_t n_kv, n_pages, max_pages;
  float *q, *kf, *vf, *o, *want, *lse, *want_lse, kscale[8], vscale[8], slopes[16];
  unsigned char *k8, *v8, *kp, *vp; /* contiguous [b][h][n_kv][d] and the pool [page][h][P][d] */
  void *raw[4];                     /* their allocations */
  int32_t *table;
};

/* n zero bytes at an address that is a multiple of 64 and of a q8_0 block's 34 bytes (*raw: what
   to free). */
static unsigned char *kv8_alloc(size_t n, void **raw) {
  enum { ALIGN = 1088 };
  *raw = calloc(n + ALIGN, 1);
  cr_assert(*raw != NULL, "out of memory");
  return (unsigned char *)*raw + (ALIGN - (uintptr_t)*raw % ALIGN) % ALIGN;
}

/* n rows of d random values of type t into dst (row after row) and their values into deq: q8_0
   int8 in [-127, 127] times an f16 scale in [2^-7, 2^-6) per block; fp8 bytes of exponent field
   up to 8 (e4m3, |x| < 4) or 16 (e5m2), times scale; f16 values in [-2, 2]. */
static void kv8_rows(txattn_dtype t, int64_t n, int64_t d, float scale, uint64_t *st,
                     unsigned char *dst, float *deq) {
  const int64_t rb = txattn_dtype_bytes(t, d);
  for (int64_t j = 0; j < n; j++) {
    unsigned char *row = dst + j * rb;
    for (int64_t c = 0; c < d; c++) {
      const uint64_t r = next_random(st);
      if (t == TXATTN_DTYPE_Q8_0) {
        unsigned char *bp = row + c / 32 * (int64_t)sizeof(txattn_block_q8_0);
        txattn_block_q8_0 blk;
        memcpy(&blk, bp, sizeof blk);
        if (c % 32 == 0) blk.d = (uint16_t)(0x2000 | (r >> 20 & 0x3ff));
        blk.qs[c % 32] = (int8_t)((int)(r % 255) - 127);
        memcpy(bp, &blk, sizeof blk);
      } else if (t == TXATTN_DTYPE_E4M3) {
        row[c] = (unsigned char)((r & 0x80) | (r >> 8) % 9 << 3 | (r >> 16 & 7));
      } else if (t == TXATTN_DTYPE_E5M2) {
        row[c] = (unsigned char)((r & 0x80) | (r >> 8) % 17 << 2 | (r >> 16 & 3));
      } else {
        const uint16_t h = elem_narrow(2.0 * uniform(st), 10, 5);
        memcpy(row + 2 * c, &h, 2);
      }
    }
    txattn_row_to_f32(row, t, scale, d, deq + j * d);
  }
}

static void kv8_make(struct kv8case *c, uint64_t seed) {
  uint64_t st = seed;
  const int64_t hq = c->heads_q, hk = c->heads_kv, d = c->d;
  c->n_kv = 1;
  for (int64_t b = 0; b < c->batch; b++)
    if (c->kv_lens[b] > c->n_kv) c->n_kv = c->kv_lens[b];
  const int64_t nq = c->batch * hq * c->n_q * d, nkv = c->batch * hk * c->n_kv * d;
  const int64_t kb = txattn_dtype_bytes(c->kt, d), vb = txattn_dtype_bytes(c->vt, d);
  c->q = malloc((size_t)nq * sizeof(float));
  c->o = malloc((size_t)nq * sizeof(float));
  c->want = malloc((size_t)nq * sizeof(float));
  c->lse = malloc((size_t)(c->batch * hq * c->n_q) * sizeof(float));
  c->want_lse = malloc((size_t)(c->batch * hq * c->n_q) * sizeof(float));
  c->kf = malloc((size_t)nkv * sizeof(float));
  c->vf = malloc((size_t)nkv * sizeof(float));
  c->k8 = kv8_alloc((size_t)(c->batch * hk * c->n_kv * kb), &c->raw[0]);
  c->v8 = kv8_alloc((size_t)(c->batch * hk * c->n_kv * vb), &c->raw[1]);
  cr_assert(c->q && c->o && c->want && c->lse && c->want_lse && c->kf && c->vf, "out of memory");
  for (int64_t i = 0; i < nq; i++) c->q[i] = (float)(2.0 * uniform(&st) * (c->qmul ? c->qmul : 1));
  for (int kvs = 0; kvs < 2; kvs++) {
    const txattn_dtype t = kvs ? c->vt : c->kt;
    const int64_t rb = kvs ? vb : kb;
    for (int64_t b = 0; b < c->batch; b++)
      for (int64_t h = 0; h < hk; h++) {
        float *sc = kvs ? &c->vscale[h] : &c->kscale[h];
        *sc = (float)((0.5 + 0.25 * (double)h) * (!kvs && c->kmul ? c->kmul : 1));
        const int64_t at = (b * hk + h) * c->n_kv;
        kv8_rows(t, c->n_kv, d, *sc, &st, (kvs ? c->v8 : c->k8) + at * rb,
                 (kvs ? c->vf : c->kf) + at * d);
      }
  }
  for (int64_t h = 0; h < hq; h++) c->slopes[h] = (float)(0.03 * (double)(h + 1));
  if (c->P == 0) return;
  /* the pool: each sequence's pages in shuffled order, heads-major */
  c->max_pages = (c->n_kv + c->P - 1) / c->P;
  c->n_pages = c->batch * c->max_pages + 1;
  int64_t *perm = malloc((size_t)c->n_pages * sizeof *perm);
  for (int64_t i = 0; i < c->n_pages; i++) perm[i] = i;
  for (int64_t i = c->n_pages - 1; i > 0; i--) {
    int64_t j = (int64_t)(next_random(&st) % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  c->table = malloc((size_t)(c->batch * c->max_pages) * sizeof *c->table);
  for (int64_t i = 0; i < c->batch * c->max_pages; i++) c->table[i] = (int32_t)perm[i];
  free(perm);
  c->kp = kv8_alloc((size_t)(c->n_pages * hk * c->P * kb), &c->raw[2]);
  c->vp = kv8_alloc((size_t)(c->n_pages * hk * c->P * vb), &c->raw[3]);
  cr_assert(c->table != NULL, "out of memory");
  for (int64_t b = 0; b < c->batch; b++)
    for (int64_t h = 0; h < hk; h++)
      for (int64_t j = 0; j < c->kv_lens[b]; j++) {
        const int64_t page = c->table[b * c->max_pages + j / c->P],
                      at = (page * hk + h) * c->P + j % c->P, from = (b * hk + h) * c->n_kv + j;
        memcpy(c->kp + at * kb, c->k8 + from * kb, (size_t)kb);
        memcpy(c->vp + at * vb, c->v8 + from * vb, (size_t)vb);
      }
}

static void kv8_free(struct kv8case *c) {
  void *all[] = {c->q,  c->o,      c->want,   c->lse,    c->want_lse, c->kf,
                 c->vf, c->raw[0], c->raw[1], c->raw[2], c->raw[3],   c->table};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

/* The problem with K and V of types kt, vt (f32: the dequantized values), paged if P. */
static txattn_problem kv8_problem(const struct kv8case *c, txattn_dtype kt, txattn_dtype vt,
                                  int paged) {
  txattn_problem p = c->base;
  p.struct_size = sizeof p;
  p.batch = c->batch;
  p.heads_q = c->heads_q;
  p.heads_kv = c->heads_kv;
  p.n_q = c->n_q;
  p.n_kv = c->n_kv;
  p.d_qk = c->d;
  p.q_type = TXATTN_DTYPE_F32;
  p.k_type = kt;
  p.v_type = vt;
  p.o_type = TXATTN_DTYPE_F32;
  p.ragged = 1;
  if (paged) {
    p.page_size = c->P;
    p.max_pages = c->max_pages;
    p.n_pages = c->n_pages;
  }
  return p;
}
static txattn_tensors kv8_tensors(struct kv8case *c, int deq, int paged, float *o, float *lse) {
  txattn_tensors t = TXATTN_TENSORS_INIT;
  t.q_data = c->q;
  t.k_data = deq ? (const void *)c->kf : paged ? (const void *)c->kp : (const void *)c->k8;
  t.v_data = deq ? (const void *)c->vf : paged ? (const void *)c->vp : (const void *)c->v8;
  t.o_data = o;
  t.lse = c->base.lse ? lse : NULL;
  t.kv_lens = c->kv_lens;
  t.alibi_slopes = c->slopes;
  if (!deq && (c->kt == TXATTN_DTYPE_E4M3 || c->kt == TXATTN_DTYPE_E5M2)) t.k_scale = c->kscale;
  if (!deq && (c->vt == TXATTN_DTYPE_E4M3 || c->vt == TXATTN_DTYPE_E5M2)) t.v_scale = c->vscale;
  if (paged) t.block_table = c->table;
  /* strides in values, every type alike */
  const int64_t n = paged ? c->P : c->n_kv, d = c->d;
  const txattn_layout kvl = {c->heads_kv * n * d, n * d, d};
  t.k_layout = t.v_layout = kvl;
  return t;
}

/* Every kernel taking the 8-bit types on c (contiguous, and paged when c->P): within the f32
   problem's bounds. Returns how many kernel runs there were. */
static int kv8_case(struct kv8case *c, uint64_t seed, int threads) {
  kv8_make(c, seed);
  const int64_t rows = c->batch * c->heads_q * c->n_q;
  txattn_problem pf = kv8_problem(c, TXATTN_DTYPE_F32, TXATTN_DTYPE_F32, 0);
  txattn_tensors tf = kv8_tensors(c, 1, 0, c->want, c->want_lse);
  cr_assert_eq(txattn_reference(&pf, &tf), TXATTN_OK, "%s", txattn_last_error());
  double bound = 0.0;
  cr_assert_eq(txattn_error_bound(&pf, &tf, &bound), TXATTN_OK, "%s", txattn_last_error());
  lse_tolerance tol = lse_tolerance_of(&pf, &tf);
  txattn_context *ctx = test_context(threads);
  struct kernel_list l;
  test_kernel_list(ctx, &l);
  int ran = 0;
  for (int paged = 0; paged < 1 + (c->P > 0); paged++) {
    txattn_problem p = kv8_problem(c, c->kt, c->vt, paged);
    txattn_tensors t = kv8_tensors(c, 0, paged, c->o, c->lse);
    for (size_t k = 0; k < l.n; k++) {
      if (!l.k[k].usable || !test_kernel_takes_types(&l.k[k], &p)) continue;
      if (paged && !(l.k[k].flags & TXATTN_KERNEL_PAGED)) continue;
      txattn_plan *plan = NULL;
      txattn_status s = txattn_plan_create(ctx, &p, l.k[k].name, &plan);
      if (s == TXATTN_E_UNSUPPORTED) continue;
      cr_assert_eq(s, TXATTN_OK, "%s: %s", l.k[k].name, txattn_last_error());
      memset(c->o, 0xff, (size_t)(rows * c->d) * sizeof(float));
      for (int64_t i = 0; i < rows; i++) c->lse[i] = NAN;
      cr_assert_eq(txattn_plan_execute(plan, &t), TXATTN_OK, "%s: %s", l.k[k].name,
                   txattn_last_error());
      const char *kn = txattn_plan_kernel(plan), *kt = txattn_dtype_name(c->kt),
                 *vt = txattn_dtype_name(c->vt);
      for (int64_t b = 0; b < c->batch; b++)
        for (int64_t hi = 0; hi < c->heads_q * c->n_q; hi++)
          for (int64_t x = 0; x < c->d; x++) {
            const int64_t at = (b * c->heads_q * c->n_q + hi) * c->d + x;
            const double e = fabs((double)c->o[at] - (double)c->want[at]);
            cr_assert(e <= bound, "%s, k %s, v %s, P %lld%s: element %lld off by %g > bound %g", kn,
                      kt, vt, (long long)c->P, paged ? " paged" : "", (long long)at, e, bound);
          }
      for (int64_t i = 0; c->base.lse && i < rows; i++) {
        if (isinf(c->want_lse[i]))
          cr_assert_eq(c->lse[i], c->want_lse[i], "%s: lse row %lld", kn, (long long)i);
        else
          cr_assert(fabs((double)c->lse[i] - c->want_lse[i]) <=
                        lse_tolerance_at(tol, c->want_lse[i]),
                    "%s, k %s, v %s: lse row %lld %g, want %g", kn, kt, vt, (long long)i,
                    (double)c->lse[i], (double)c->want_lse[i]);
      }
      txattn_plan_free(plan);
      ran++;
    }
  }
  txattn_context_free(ctx);
  kv8_free(c);
  return ran;
}

static const txattn_dtype kv8_types[][2] = {
    {TXATTN_DTYPE_Q8_0, TXATTN_DTYPE_Q8_0}, {TXATTN_DTYPE_E4M3, TXATTN_DTYPE_E4M3},
    {TXATTN_DTYPE_E5M2, TXATTN_DTYPE_E5M2}, {TXATTN_DTYPE_Q8_0, TXATTN_DTYPE_E4M3},
    {TXATTN_DTYPE_E5M2, TXATTN_DTYPE_F16},
};
enum { N_KV8 = sizeof kv8_types / sizeof kv8_types[0] };

/* Decode (the direct path, its rows read in place or, for two types, copied), GQA 4, on every
   page size and contiguously, with lse. */
Test(paged, decode_on_8_bit_caches) {
  const int64_t sizes[] = {0, 3, 16, 128};
  for (size_t ti = 0; ti < N_KV8; ti++)
    for (size_t pi = 0; pi < sizeof sizes / sizeof sizes[0]; pi++) {
      struct kv8case c = {.batch = 3,
                          .heads_q = 8,
                          .heads_kv = 2,
                          .d = 64,
                          .P = sizes[pi],
                          .n_q = 1,
                          .kv_lens = {700, 129, 1000},
                          .kt = kv8_types[ti][0],
                          .vt = kv8_types[ti][1]};
      c.base.lse = 1;
      cr_assert(kv8_case(&c, 41 + ti, 1 + (int)(pi % 2)) >= 2, "no kernel took k %s, v %s",
                txattn_dtype_name(c.kt), txattn_dtype_name(c.vt));
    }
}

/* e4m3 K of scales near the largest (2^117, 1.5 2^117) with queries up to 32: q times K's factor
   (2^8 k_scale) overflows fp32 where every q . k is finite (about 2^124), so the direct path cannot
   fold K's factor into the queries and widens each k instead. The softmax scale 2^-124 keeps the
   scores near 1. */
Test(paged, decode_where_k_scale_times_q_overflows) {
  struct kv8case c = {.batch = 2,
                      .heads_q = 4,
                      .heads_kv = 2,
                      .d = 32,
                      .P = 16,
                      .n_q = 1,
                      .kv_lens = {300, 41},
                      .kt = TXATTN_DTYPE_E4M3,
                      .vt = TXATTN_DTYPE_E4M3,
                      .qmul = 16.0,
                      .kmul = 0x1p118};
  c.base.scale = 0x1p-124f;
  c.base.lse = 1;
  cr_assert(kv8_case(&c, 5, 1) >= 2, "no kernel took the decode");
}

/* A causal chunk of 37 rows after its prefix (the tiled path, K and V dequantized as they are
   packed), MHA and GQA 2, and decode with every modifier (softcap, ALiBi, a window). */
Test(paged, prefill_and_modifiers_on_8_bit_caches) {
  for (size_t ti = 0; ti < N_KV8; ti++) {
    struct kv8case c = {.batch = 2,
                        .heads_q = 4,
                        .heads_kv = 2,
                        .d = 32,
                        .P = 16,
                        .n_q = 37,
                        .kv_lens = {300, 333},
                        .kt = kv8_types[ti][0],
                        .vt = kv8_types[ti][1]};
    c.base.mask = TXATTN_MASK_CAUSAL;
    cr_assert(kv8_case(&c, 7 + ti, 2) >= 2, "no kernel took the chunk");
    struct kv8case m = {.batch = 2,
                        .heads_q = 4,
                        .heads_kv = 1,
                        .d = 96,
                        .P = 32,
                        .n_q = 1,
                        .kv_lens = {500, 77},
                        .kt = kv8_types[ti][0],
                        .vt = kv8_types[ti][1]};
    m.base.mask = TXATTN_MASK_WINDOW;
    m.base.window_left = 200;
    m.base.softcap = 6.0f;
    m.base.alibi = 1;
    m.base.lse = 1;
    cr_assert(kv8_case(&m, 13 + ti, 1) >= 2, "no kernel took the modified decode");
  }
}
