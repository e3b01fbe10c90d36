/* SPDX-License-Identifier: MIT */
/* txattn_merge: the result over a union of disjoint key sets from the results over each, as the
 * online softmax combines blocks. Per row, in fp32: m = the largest finite-or-+inf lse_i,
 * e_i = exp(lse_i - m) (with m +inf: 1 for the parts at +inf, 0 for the others), s = sum e_i,
 * o = sum (e_i / s) o_i, lse = m + log(s). Parts with lse -inf are skipped whole (their o rows are
 * never read into the sum); a NaN lse, or a NaN in a part's o row that is read, makes the row NaN.
 * The row is summed in a scratch row and written last, so o may be parts[0]'s. With p->sinks the
 * parts were computed without them and the whole's o is scaled by 1 / (1 + exp(t_h - lse)), in
 * fp64. docs/error_bound.md, "Merging", derives the bound and the +inf case. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "error.h"
#include "problem.h"
#include "struct_size.h"
#include "tensors.h"

typedef struct part {
  txattn_tensors t; /* the caller's, read by its struct_size */
  txattn__tensor o, lse;
  char where[48]; /* "txattn_merge: parts[12]." */
} part;

/* With packed rows (a packed problem seen as one sequence of all its rows), a zero layout means
   [rows][heads][d]. */
static void packed_layouts(txattn_tensors *t, const txattn_problem *r) {
  txattn__packed_layout(&t->o_layout, r->heads_q, r->d_v);
  txattn__packed_layout(&t->lse_layout, r->heads_q, 1);
}

static txattn_status check_part(const txattn_problem *r, int packed, const txattn_tensors *given,
                                size_t i, part *p) {
  snprintf(p->where, sizeof p->where, "txattn_merge: parts[%zu].", i);
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_IN(txattn_tensors, given, &p->t));
  if (packed) packed_layouts(&p->t, r);
  p->o = (txattn__tensor){"o",
                          p->t.o_data,
                          &p->t.o_layout,
                          {r->batch, r->heads_q, r->n_q, r->d_v},
                          0,
                          (int64_t)txattn_dtype_size(r->o_type),
                          p->where};
  p->lse = (txattn__tensor){"lse", p->t.lse, &p->t.lse_layout, {r->batch, r->heads_q, r->n_q, 1},
                            0,     4,        p->where};
  TXATTN_FORWARD_IF_ERROR(txattn__tensor_check(&p->o));
  return txattn__tensor_check(&p->lse);
}

static int same_tensor(const txattn__tensor *a, const txattn__tensor *b) {
  return a->base == b->base && a->layout->batch == b->layout->batch &&
         a->layout->head == b->layout->head && a->layout->row == b->layout->row;
}

/* out's o and lse against every part: o may be exactly parts[0]'s o, nothing else may overlap. */
static txattn_status check_overlaps(const part *parts, size_t n, const part *out) {
  const txattn__tensor *outs[2] = {&out->o, out->t.lse ? &out->lse : NULL};
  TXATTN_RETURN_IF(outs[1] && txattn__tensors_overlap(outs[0], outs[1]), TXATTN_E_INVALID,
                   "txattn_merge: out.lse overlaps out.o");
  for (int w = 0; w < 2; w++) {
    if (outs[w] == NULL) continue;
    for (size_t i = 0; i < n; i++) {
      const txattn__tensor *in[2] = {&parts[i].o, &parts[i].lse};
      for (int k = 0; k < 2; k++) {
        if (!txattn__tensors_overlap(outs[w], in[k])) continue;
        if (w == 0 && k == 0 && i == 0 && same_tensor(outs[0], in[0])) continue; /* in place */
        return txattn__fail(TXATTN_E_INVALID,
                            "txattn_merge: out.%s overlaps parts[%zu].%s (only out.o may be "
                            "parts[0].o, with the same layout)",
                            outs[w]->name, i, in[k]->name);
      }
    }
  }
  return TXATTN_OK;
}

static float lse_of(const txattn_tensors *t, int64_t b, int64_t h, int64_t i) {
  return t->lse[b * t->lse_layout.batch + h * t->lse_layout.head + i * t->lse_layout.row];
}

/* The weight e_i of part k's lse l against the row's largest, m (finite or +inf): parts with lse
   +inf share the row equally (their true lse are beyond fp32, unknown, and every finite one is
   below them by more than fp32 can tell); the others then weigh 0 but are still read, so that a
   NaN in their o reaches the row. */
static float weight(float l, float m) {
  return m == INFINITY ? (l == INFINITY ? 1.0f : 0.0f) : expf(l - m);
}

/* One output row (b, h, i); acc holds d_v floats. */
static void merge_row(const txattn_problem *r, const part *parts, size_t n, const part *out,
                      int64_t b, int64_t h, int64_t i, float *acc) {
  float m = -INFINITY;
  int nan = 0;
  for (size_t k = 0; k < n; k++) {
    float l = lse_of(&parts[k].t, b, h, i);
    nan |= isnan(l);
    if (l > m) m = l;
  }
  for (int64_t c = 0; c < r->d_v; c++) acc[c] = 0.0f;
  float lse;
  if (nan) {
    lse = NAN;
    for (int64_t c = 0; c < r->d_v; c++) acc[c] = NAN;
  } else if (m == -INFINITY) {
    lse = -INFINITY; /* no part saw a key: o stays 0 */
  } else {
    float s = 0.0f;
    for (size_t k = 0; k < n; k++) {
      float l = lse_of(&parts[k].t, b, h, i);
      if (l != -INFINITY) s += weight(l, m);
    }
    for (size_t k = 0; k < n; k++) {
      float l = lse_of(&parts[k].t, b, h, i);
      if (l == -INFINITY) continue;
      float w = weight(l, m) / s;
      const void *o = txattn_row_of(parts[k].t.o_data, r->o_type, &parts[k].t.o_layout, b, h, i);
      if (r->o_type == TXATTN_DTYPE_F32) {
        const float *f = o;
        for (int64_t c = 0; c < r->d_v; c++) acc[c] += w * f[c];
      } else {
        for (int64_t c = 0; c < r->d_v; c++) acc[c] += w * (float)txattn__load(o, r->o_type, c);
      }
    }
    lse = m + logf(s); /* +inf when m is */
    if (r->sinks) {    /* the sink of the whole, once: o (Z / (Z + exp(t))) with Z = exp(lse) */
      double keep = 1.0 / (1.0 + exp((double)out->t.sinks[h] - ((double)m + log((double)s))));
      for (int64_t c = 0; c < r->d_v; c++) acc[c] = (float)(acc[c] * keep);
    }
    txattn_row_spread_nan(acc, r->d_v); /* a part's row with a NaN, whatever its weight */
  }
  void *o = txattn_row_of_mut(out->t.o_data, r->o_type, &out->t.o_layout, b, h, i);
  if (r->o_type == TXATTN_DTYPE_F32)
    memcpy(o, acc, (size_t)r->d_v * sizeof *acc);
  else
    for (int64_t c = 0; c < r->d_v; c++) txattn__store(o, r->o_type, c, (double)acc[c]);
  if (out->t.lse != NULL)
    out->t
        .lse[b * out->t.lse_layout.batch + h * out->t.lse_layout.head + i * out->t.lse_layout.row] =
        lse;
}

txattn_status txattn_merge(const txattn_problem *p, const txattn_tensors *parts, size_t n_parts,
                           const txattn_tensors *out) {
  txattn_problem r = TXATTN_PROBLEM_INIT;
  TXATTN_FORWARD_IF_ERROR(txattn__problem_resolve(p, &r));
  TXATTN_RETURN_IF(n_parts == 0, TXATTN_E_INVALID, "txattn_merge: n_parts is 0");
  TXATTN_RETURN_IF(parts == NULL, TXATTN_E_INVALID, "txattn_merge: parts is NULL");
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "txattn_merge: out is NULL");
  TXATTN_RETURN_IF(n_parts > SIZE_MAX / sizeof(part) - 1, TXATTN_E_INVALID,
                   "txattn_merge: n_parts = %zu is too large", n_parts);
  /* packed rows merge as one sequence of all of them: the merge is row by row */
  const int packed = r.packed;
  if (packed) {
    txattn_tensors x = TXATTN_TENSORS_INIT;
    int64_t total = 0;
    TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_IN(txattn_tensors, out, &x));
    TXATTN_FORWARD_IF_ERROR(txattn__q_offsets_check(&r, &x, &total));
    if (total == 0) return txattn__ok();
    r.batch = 1;
    r.n_q = total;
    r.ragged = r.packed = 0;
  }
  part *ps = malloc((n_parts + 1) * sizeof *ps);
  float *acc = malloc((size_t)r.d_v * sizeof *acc);
  txattn_status s = TXATTN_OK;
  if (ps == NULL || acc == NULL)
    s = txattn__fail(TXATTN_E_NOMEM, "txattn_merge: out of memory for %zu parts", n_parts);
  for (size_t i = 0; s == TXATTN_OK && i < n_parts; i++)
    s = check_part(&r, packed, &parts[i], i, &ps[i]);
  part *o = ps ? &ps[n_parts] : NULL;
  if (s == TXATTN_OK) {
    strcpy(o->where, "txattn_merge: out.");
    s = TXATTN__STRUCT_IN(txattn_tensors, out, &o->t);
    if (packed) packed_layouts(&o->t, &r);
  }
  if (s == TXATTN_OK) {
    o->o = (txattn__tensor){"o",
                            o->t.o_data,
                            &o->t.o_layout,
                            {r.batch, r.heads_q, r.n_q, r.d_v},
                            0,
                            (int64_t)txattn_dtype_size(r.o_type),
                            o->where};
    o->lse = (txattn__tensor){"lse", o->t.lse, &o->t.lse_layout, {r.batch, r.heads_q, r.n_q, 1},
                              0,     4,        o->where};
    s = txattn__tensor_check(&o->o);
    if (s == TXATTN_OK) s = txattn__tensor_no_self_alias(&o->o);
    if (s == TXATTN_OK && o->t.lse != NULL) s = txattn__tensor_check(&o->lse);
    if (s == TXATTN_OK && o->t.lse != NULL) s = txattn__tensor_no_self_alias(&o->lse);
    if (s == TXATTN_OK && r.ragged)
      s = txattn__lens_check("q_lens", o->t.q_lens, r.batch, r.n_q, "n_q");
    if (s == TXATTN_OK) s = check_overlaps(ps, n_parts, o);
    if (s == TXATTN_OK && r.sinks) s = txattn__head_floats_check("sinks", o->t.sinks, r.heads_q, 1);
  }
  if (s == TXATTN_OK) {
    for (int64_t b = 0; b < r.batch; b++) {
      int64_t rows = r.ragged && o->t.q_lens ? o->t.q_lens[b] : r.n_q;
      for (int64_t h = 0; h < r.heads_q; h++)
        for (int64_t i = 0; i < rows; i++) merge_row(&r, ps, n_parts, o, b, h, i, acc);
    }
    s = txattn__ok();
  }
  free(acc);
  free(ps);
  return s;
}
