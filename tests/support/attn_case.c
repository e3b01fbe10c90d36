/* SPDX-License-Identifier: MIT */
#include "attn_case.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "elements.h"
#include "oracle.h"

static txattn_problem shape_problem(const struct shape *s) {
  txattn_problem p = {.batch = s->batch,
                      .heads_q = s->heads_q,
                      .heads_kv = s->heads_kv,
                      .n_q = s->n_q,
                      .n_kv = s->n_kv,
                      .d_qk = s->d_qk,
                      .d_v = s->d_v,
                      .mask = s->mask,
                      .window_left = s->left,
                      .window_right = s->right,
                      .scale = s->scale,
                      .q_type = s->types.q,
                      .k_type = s->types.k,
                      .v_type = s->types.v,
                      .o_type = s->types.o};
  return p;
}

/* The defaults as txattn.h states them, worked out here rather than asked of the library. */
static txattn_problem fill_defaults(txattn_problem p) {
  if (p.batch == 0) p.batch = 1;
  if (p.heads_q == 0) p.heads_q = 1;
  if (p.heads_kv == 0) p.heads_kv = p.heads_q;
  if (p.n_kv == 0) p.n_kv = p.n_q;
  if (p.d_v == 0) p.d_v = p.d_qk;
  if (p.scale == 0.0f) p.scale = (float)(1.0 / sqrt((double)p.d_qk));
  return p;
}

static const char *mask_name(const struct shape *s) {
  static const char *names[] = {"none", "causal", "window"};
  return (unsigned)s->mask < 3 ? names[s->mask] : "bad-mask";
}

static const char *layout_name(enum layout_kind k) {
  static const char *names[] = {"contiguous", "interleaved", "padded",
                                "seq-major",  "explicit",    "mixed"};
  return names[k];
}

static void window_side(char *buf, size_t size, int64_t w) {
  if (w == TXATTN_UNBOUNDED)
    snprintf(buf, size, "inf");
  else
    snprintf(buf, size, "%lld", (long long)w);
}

void case_types_describe(struct case_types t, char *buf, size_t size) {
  snprintf(buf, size, "%s,%s,%s,%s", txattn_dtype_name(t.q), txattn_dtype_name(t.k),
           txattn_dtype_name(t.v), txattn_dtype_name(t.o));
}

int case_types_16_bit(struct case_types t) {
  return t.q != TXATTN_DTYPE_F32 || t.k != TXATTN_DTYPE_F32 || t.v != TXATTN_DTYPE_F32 ||
         t.o != TXATTN_DTYPE_F32;
}

void shape_describe(const struct shape *s, char *buf, size_t size) {
  static const char *poisons[] = {"", " nan-in-q", " nan-in-k", " nan-in-v", " nan-in-empty-q"};
  txattn_problem p = fill_defaults(shape_problem(s));
  char window[64] = "", l[24], r[24], scale[32] = "default";
  if (s->mask == TXATTN_MASK_WINDOW) {
    window_side(l, sizeof l, s->left);
    window_side(r, sizeof r, s->right);
    snprintf(window, sizeof window, "(%s,%s)", l, r);
  }
  if (s->scale != 0.0f) snprintf(scale, sizeof scale, "%g", (double)s->scale);
  char extra[48] = "", types[40] = "";
  if (s->outlier != 0.0f) snprintf(extra, sizeof extra, " q,k[0]=%g", (double)s->outlier);
  if (case_types_16_bit(s->types)) {
    types[0] = ' ';
    case_types_describe(s->types, types + 1, sizeof types - 1);
  }
  snprintf(buf, size, "b%lld h%lld/%lld n%lldx%lld d%lld/%lld %s%s scale=%s x%g%s%s %s%s%s",
           (long long)p.batch, (long long)p.heads_q, (long long)p.heads_kv, (long long)p.n_q,
           (long long)p.n_kv, (long long)p.d_qk, (long long)p.d_v, mask_name(s), window, scale,
           (double)(s->amplitude != 0.0f ? s->amplitude : 1.0f), s->fractional ? " real" : "",
           extra, layout_name(s->layout), poisons[s->poison], types);
}

static void tensor_layout(struct tensor *t, enum layout_kind kind) {
  int64_t B = t->batch, H = t->heads, N = t->rows, D = t->dim;
  txattn_layout dense = {H * N * D, N * D, D};
  t->passed = (txattn_layout){0, 0, 0};
  t->layout = dense;
  t->len = (size_t)(B * H * N * D);
  switch (kind) {
  case LAYOUT_CONTIGUOUS:
    return;
  case LAYOUT_INTERLEAVED:
    t->layout = (txattn_layout){N * H * D, D, H * D};
    break;
  case LAYOUT_PADDED:
    t->layout.row = D + 3;
    t->layout.head = N * t->layout.row + 5;
    t->layout.batch = H * t->layout.head + 7;
    t->len = (size_t)(B * t->layout.batch);
    break;
  case LAYOUT_SEQ_MAJOR:
    t->layout = (txattn_layout){H * D, D, B * H * D};
    break;
  case LAYOUT_EXPLICIT:
  case LAYOUT_MIXED: /* case_init picks one of the others per tensor */
    break;
  }
  t->passed = t->layout;
}

/* gap: the bits of every element that is not the tensor's (CASE_INPUT_GAP, CASE_OUTPUT_SENTINEL),
   gap16 the same for a 16-bit type. */
static void tensor_alloc(struct tensor *t, txattn_dtype type, int64_t batch, int64_t heads,
                         int64_t rows, int64_t dim, enum layout_kind kind, uint32_t gap,
                         uint32_t gap16) {
  t->type = type;
  t->batch = batch;
  t->heads = heads;
  t->rows = rows;
  t->dim = dim;
  tensor_layout(t, kind);
  t->raw = malloc(t->len * elem_size(type));
  cr_assert(t->raw != NULL, "out of memory for a test tensor");
  for (size_t x = 0; x < t->len; x++)
    elem_set_bits(t->raw, type, x, type == TXATTN_DTYPE_F32 ? gap : gap16);
}

size_t case_offset(const struct tensor *t, int64_t b, int64_t h, int64_t i, int64_t x) {
  return (size_t)(b * t->layout.batch + h * t->layout.head + i * t->layout.row + x);
}

static size_t dense_elements(const struct tensor *t) {
  return (size_t)(t->batch * t->heads * t->rows * t->dim);
}

static uint64_t next_random(uint64_t *state) { /* splitmix64 */
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Fills the strided tensor and its contiguous copy with the same values, drawn as floats and then
   rounded to the tensor's type (f32: as they are). */
static void *fill_input(struct tensor *t, float amplitude, int fractional, float outlier,
                        uint64_t *state) {
  void *dense = malloc(dense_elements(t) * elem_size(t->type));
  cr_assert(dense != NULL, "out of memory for a test tensor");
  size_t x = 0;
  for (int64_t b = 0; b < t->batch; b++)
    for (int64_t h = 0; h < t->heads; h++)
      for (int64_t i = 0; i < t->rows; i++)
        for (int64_t c = 0; c < t->dim; c++) {
          double u = (double)(next_random(state) >> 40) / (double)(1u << 24); /* [0, 1) */
          float value = (float)((2.0 * u - 1.0) * amplitude);
          if (amplitude > 1.0f && !fractional) value = rintf(value);
          if (outlier != 0.0f && c == 0) value = outlier;
          elem_store(dense, t->type, x, (double)value);
          cr_assert(isfinite(elem_load(dense, t->type, x)),
                    "the test input %g is past the range of %s: scale the shape down",
                    (double)value, txattn_dtype_name(t->type));
          elem_set_bits(t->raw, t->type, case_offset(t, b, h, i, c), elem_bits(dense, t->type, x));
          x++;
        }
  return dense;
}

static void poison(struct tensor *t, void *dense, int64_t b, int64_t h, int64_t i, int64_t c) {
  size_t x = (size_t)(((b * t->heads + h) * t->rows + i) * t->dim + c);
  elem_store(t->raw, t->type, case_offset(t, b, h, i, c), NAN);
  elem_store(dense, t->type, x, NAN);
}

/* A query row that sees keys (want_empty = 0) or none (1), searched from the middle out. */
static int64_t find_row(const txattn_problem *p, int want_empty) {
  for (int64_t step = 0; step < p->n_q; step++) {
    int64_t i = (p->n_q / 2 + step) % p->n_q;
    if ((oracle_visible_count(p, i) == 0) == want_empty) return i;
  }
  cr_assert_fail("the shape has no query row that %s", want_empty ? "sees no key" : "sees a key");
  return -1;
}

static void plant_poison(struct attn_case *c) {
  const txattn_problem *p = &c->full;
  c->poison_b = c->poison_h = c->poison_i = c->poison_c = -1;
  switch (c->shape.poison) {
  case POISON_NONE:
    return;
  case POISON_Q:
  case POISON_Q_EMPTY_ROW:
    c->poison_b = p->batch - 1;
    c->poison_h = p->heads_q - 1;
    c->poison_i = find_row(p, c->shape.poison == POISON_Q_EMPTY_ROW);
    c->poison_c = 0;
    for (int64_t x = 0; x < (c->shape.poison == POISON_Q ? 1 : p->d_qk); x++)
      poison(&c->q, c->q_dense_data, c->poison_b, c->poison_h, c->poison_i, x);
    return;
  case POISON_K:
    c->poison_b = 0, c->poison_h = p->heads_kv - 1, c->poison_i = p->n_kv / 2;
    c->poison_c = p->d_qk - 1;
    poison(&c->k, c->k_dense_data, c->poison_b, c->poison_h, c->poison_i, c->poison_c);
    return;
  case POISON_V:
    c->poison_b = p->batch - 1, c->poison_h = 0, c->poison_i = p->n_kv / 2;
    c->poison_c = p->d_v / 2;
    poison(&c->v, c->v_dense_data, c->poison_b, c->poison_h, c->poison_i, c->poison_c);
    return;
  }
}

void case_init(struct attn_case *c, const struct shape *s, uint64_t seed) {
  const txattn_problem *p = &c->full;
  int mixed = s->layout == LAYOUT_MIXED;
  memset(c, 0, sizeof *c);
  c->shape = *s;
  c->problem = shape_problem(s);
  c->full = fill_defaults(c->problem);
  tensor_alloc(&c->q, s->types.q, p->batch, p->heads_q, p->n_q, p->d_qk,
               mixed ? LAYOUT_INTERLEAVED : s->layout, CASE_INPUT_GAP, CASE_INPUT_GAP16);
  tensor_alloc(&c->k, s->types.k, p->batch, p->heads_kv, p->n_kv, p->d_qk,
               mixed ? LAYOUT_PADDED : s->layout, CASE_INPUT_GAP, CASE_INPUT_GAP16);
  tensor_alloc(&c->v, s->types.v, p->batch, p->heads_kv, p->n_kv, p->d_v,
               mixed ? LAYOUT_EXPLICIT : s->layout, CASE_INPUT_GAP, CASE_INPUT_GAP16);
  tensor_alloc(&c->o, s->types.o, p->batch, p->heads_q, p->n_q, p->d_v,
               mixed ? LAYOUT_SEQ_MAJOR : s->layout, CASE_OUTPUT_SENTINEL, CASE_OUTPUT_SENTINEL16);
  tensor_alloc(&c->lse, TXATTN_DTYPE_F32, p->batch, p->heads_q, p->n_q, 1,
               mixed ? LAYOUT_SEQ_MAJOR : s->layout, CASE_OUTPUT_SENTINEL, CASE_OUTPUT_SENTINEL16);
  c->lse_ref = malloc((size_t)(p->batch * p->heads_q * p->n_q) * sizeof *c->lse_ref);
  cr_assert(c->lse_ref != NULL, "out of memory for a test tensor");
  uint64_t state = seed;
  float amplitude = s->amplitude != 0.0f ? s->amplitude : 1.0f;
  c->q_dense_data = fill_input(&c->q, amplitude, s->fractional, s->outlier, &state);
  c->k_dense_data = fill_input(&c->k, amplitude, s->fractional, s->outlier, &state);
  c->v_dense_data = fill_input(&c->v, amplitude, s->fractional, 0.0f, &state);
  c->o_ref_data = malloc(dense_elements(&c->o) * elem_size(c->o.type));
  cr_assert(c->o_ref_data != NULL, "out of memory for a test tensor");
  plant_poison(c);
  txattn_tensors dense = case_dense_tensors(c);
  txattn_status st = txattn_error_bound(&c->problem, &dense, &c->tolerance);
  cr_assert_eq(st, TXATTN_OK, "txattn_error_bound failed: %s: %s", txattn_status_name(st),
               txattn_last_error());
}

void case_bound_inputs(struct attn_case *c) {
  txattn_tensors t = case_tensors(c);
  txattn_status st = txattn_error_bound(&c->problem, &t, &c->tolerance);
  cr_assert_eq(st, TXATTN_OK, "txattn_error_bound failed: %s: %s", txattn_status_name(st),
               txattn_last_error());
}

double case_logit_scale(const struct attn_case *c) {
  const txattn_problem *p = &c->full;
  double l = 0.0;
  for (int64_t b = 0; b < p->batch; b++)
    for (int64_t h = 0; h < p->heads_q; h++)
      for (int64_t i = 0; i < p->n_q; i++)
        for (int64_t j = 0; j < p->n_kv; j++) {
          if (!oracle_visible(p, i, j)) continue;
          size_t q = (size_t)(((b * p->heads_q + h) * p->n_q + i) * p->d_qk);
          size_t k = (size_t)(((b * p->heads_kv + h / (p->heads_q / p->heads_kv)) * p->n_kv + j) *
                              p->d_qk);
          double sum = 0.0;
          for (int64_t x = 0; x < p->d_qk; x++)
            sum += fabs(elem_load(c->q_dense_data, c->q.type, q + (size_t)x) *
                        elem_load(c->k_dense_data, c->k.type, k + (size_t)x));
          if (sum > l) l = sum;
        }
  return fabs((double)p->scale) * l;
}

void case_free(struct attn_case *c) {
  free(c->q.raw);
  free(c->k.raw);
  free(c->v.raw);
  free(c->o.raw);
  free(c->q_dense_data);
  free(c->k_dense_data);
  free(c->v_dense_data);
  free(c->o_ref_data);
  free(c->lse.raw);
  free(c->lse_ref);
  memset(c, 0, sizeof *c);
}

static txattn_tensors tensors_as(const struct attn_case *c, int explicit_layouts) {
  txattn_tensors t = {.q_data = c->q.raw,
                      .k_data = c->k.raw,
                      .v_data = c->v.raw,
                      .o_data = c->o.raw,
                      .q_layout = explicit_layouts ? c->q.layout : c->q.passed,
                      .k_layout = explicit_layouts ? c->k.layout : c->k.passed,
                      .v_layout = explicit_layouts ? c->v.layout : c->v.passed,
                      .o_layout = explicit_layouts ? c->o.layout : c->o.passed};
  return t;
}

txattn_tensors case_tensors(const struct attn_case *c) {
  return tensors_as(c, 0);
}

txattn_tensors case_kernel_tensors(const struct attn_case *c) {
  return tensors_as(c, 1);
}

txattn_tensors case_dense_tensors(const struct attn_case *c) {
  txattn_tensors t = {.q_data = c->q_dense_data,
                      .k_data = c->k_dense_data,
                      .v_data = c->v_dense_data,
                      .o_data = c->o_ref_data};
  return t;
}

txattn_problem case_lse_problem(const struct attn_case *c) {
  txattn_problem p = c->problem;
  p.struct_size = sizeof p;
  p.lse = 1;
  return p;
}

txattn_tensors case_lse_tensors(const struct attn_case *c) {
  txattn_tensors t = case_tensors(c);
  t.struct_size = sizeof t;
  t.lse = c->lse.data;
  t.lse_layout = c->lse.passed;
  return t;
}

void case_clear_lse(struct attn_case *c) {
  for (size_t x = 0; x < c->lse.len; x++)
    elem_set_bits(c->lse.raw, TXATTN_DTYPE_F32, x, CASE_OUTPUT_SENTINEL);
}

void case_clear_output(struct attn_case *c) {
  uint32_t bits = c->o.type == TXATTN_DTYPE_F32 ? CASE_OUTPUT_SENTINEL : CASE_OUTPUT_SENTINEL16;
  for (size_t x = 0; x < c->o.len; x++) elem_set_bits(c->o.raw, c->o.type, x, bits);
}

void case_run_reference(struct attn_case *c) {
  txattn_tensors t = case_dense_tensors(c);
  txattn_problem p = case_lse_problem(c);
  t.struct_size = sizeof t;
  t.lse = c->lse_ref;
  txattn_status s = txattn_reference(&p, &t);
  cr_assert_eq(s, TXATTN_OK, "txattn_reference failed: %s: %s", txattn_status_name(s),
               txattn_last_error());
  c->lse_inputs = case_input_hash(c);
}

int case_row_poisoned(const struct attn_case *c, int64_t b, int64_t h, int64_t i) {
  const txattn_problem *p = &c->full;
  if (b != c->poison_b) return 0;
  switch (c->shape.poison) {
  case POISON_Q:
    return h == c->poison_h && i == c->poison_i;
  case POISON_K:
  case POISON_V:
    return h / (p->heads_q / p->heads_kv) == c->poison_h && oracle_visible(p, i, c->poison_i);
  default:
    return 0;
  }
}

static uint64_t hash_bytes(uint64_t h, const void *data, size_t len) { /* FNV-1a */
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3u;
  return h;
}

uint64_t case_input_hash(const struct attn_case *c) {
  uint64_t h = 0xcbf29ce484222325u;
  h = hash_bytes(h, c->q.raw, c->q.len * elem_size(c->q.type));
  h = hash_bytes(h, c->k.raw, c->k.len * elem_size(c->k.type));
  return hash_bytes(h, c->v.raw, c->v.len * elem_size(c->v.type));
}
