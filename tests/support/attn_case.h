/* SPDX-License-Identifier: MIT */
/* One attention problem with its inputs, laid out as a test shape says, plus contiguous copies of
 * the inputs and the fp64 reference output computed from those copies. Kernels run on the strided
 * tensors and are compared with the reference, so a kernel that mishandles a stride cannot agree by
 * accident. Every tensor, strided or contiguous, has the element type the shape gives it (f32
 * unless said); the reference's output is in o's type, as a kernel's is. */
#ifndef TXATTN_TEST_ATTN_CASE_H
#define TXATTN_TEST_ATTN_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "txattn/txattn.h"

enum layout_kind {
  LAYOUT_CONTIGUOUS,  /* all-zero layouts: the library's default [b][h][n][d] */
  LAYOUT_INTERLEAVED, /* [b][n][h][d], as a projection's output usually is */
  LAYOUT_PADDED,      /* [b][h][n][d] with gaps after every row, head and batch */
  LAYOUT_SEQ_MAJOR,   /* [n][b][h][d]: the batch stride is smaller than the row stride */
  LAYOUT_EXPLICIT,    /* [b][h][n][d], its strides given rather than left all-zero */
  LAYOUT_MIXED,       /* q interleaved, k padded, v explicit, o sequence-major */
};

enum poison_kind {
  POISON_NONE,
  POISON_Q,           /* one NaN in the q row of a query that sees keys */
  POISON_K,           /* one NaN in one k row */
  POISON_V,           /* one NaN in one v row */
  POISON_Q_EMPTY_ROW, /* a whole q row of NaN for a query that sees no key */
};

/* The element types of q, k, v and o; all zero is f32. */
struct case_types {
  txattn_dtype q, k, v, o;
};

/* Zero in batch, heads_kv, n_kv, d_v or scale means the library's default. No pointers: Criterion
   copies parameters into another process. */
struct shape {
  int64_t batch, heads_q, heads_kv, n_q, n_kv, d_qk, d_v;
  txattn_mask mask;
  int64_t left, right;
  float scale;
  /* inputs uniform in [-amplitude, amplitude); 0 means 1. Amplitudes above 1 give whole numbers, so
     that every fp32 dot product is exact: with a power-of-two scale the kernels' scores are then
     exact too, and large logits test overflow rather than the float rounding no fp32 kernel can
     avoid. */
  float amplitude;
  enum layout_kind layout;
  enum poison_kind poison;
  /* 1: amplitudes above 1 keep their fractions, so the fp32 scores round (large logits, judged by
     txattn_error_bound rather than the plain tolerance) */
  int fractional;
  /* not 0: channel 0 of every q and k row is this value, as in models with an outlier channel; every
     score then carries a large common term whose rounding differs per key */
  float outlier;
  /* Each input value is drawn as above, then rounded to its tensor's type (nearest even): the
     values a tensor holds are what the case computes with. case_init asserts they are finite, so an
     amplitude past a 16-bit type's range (f16: 65504) is a mistake in the shape, not an Inf. */
  struct case_types types;
};

struct tensor {
  union {
    float *data; /* an f32 tensor's elements */
    void *raw;   /* any type's */
  };
  txattn_dtype type;
  size_t len;           /* elements in data, gaps included */
  txattn_layout passed; /* as the library gets it (all-zero for LAYOUT_CONTIGUOUS) */
  txattn_layout layout; /* always explicit */
  int64_t batch, heads, rows, dim;
};

struct attn_case {
  struct shape shape;
  txattn_problem problem; /* as the library gets it */
  txattn_problem full;    /* every default filled in, by the test's own reading of txattn.h */
  struct tensor q, k, v, o;
  /* contiguous copies in the tensors' types (the float pointers only for f32 tensors) */
  union {
    float *q_dense;
    void *q_dense_data;
  };
  union {
    float *k_dense;
    void *k_dense_data;
  };
  union {
    float *v_dense;
    void *v_dense_data;
  };
  union {
    float *o_ref;
    void *o_ref_data;
  };
  /* the serving calls' log-sum-exp: lse as a kernel writes it (laid out as o is, one element per
     row), lse_ref [batch][heads_q][n_q] from txattn_reference (case_run_reference) */
  struct tensor lse;
  float *lse_ref;
  /* case_input_hash of the strided inputs when case_run_reference wrote lse_ref (0: never): a
     test that transforms them afterwards predicts o_ref, not lse_ref, so lse is judged only
     while they are unchanged */
  uint64_t lse_inputs;
  double tolerance; /* txattn_error_bound of the inputs: TXATTN_EXACT_TOLERANCE * max|V| unless
                       the logits are large */
  int64_t poison_b, poison_h, poison_i, poison_c; /* h is a kv head for POISON_K and POISON_V */
};

/* The bits the output buffer is filled with before a kernel runs, and the input gaps' bits: NaN in
   f32, and the 16-bit ones NaN in f16 and in bf16 alike. */
#define CASE_OUTPUT_SENTINEL   0x7fc0deadu
#define CASE_INPUT_GAP         0x7fc0beefu
#define CASE_OUTPUT_SENTINEL16 0x7fdeu
#define CASE_INPUT_GAP16       0x7fbeu

/* "f32,f16,f16,f32" (q, k, v, o, as txtune's --dtype spells them). */
void case_types_describe(struct case_types t, char *buf, size_t size);
/* 1 if any of the four is not f32. */
int case_types_16_bit(struct case_types t);
/* The shape's description; types other than all-f32 are appended. */
void shape_describe(const struct shape *s, char *buf, size_t size);
/* Builds the case (asserts on failure). The same shape and seed always give the same inputs. */
void case_init(struct attn_case *c, const struct shape *s, uint64_t seed);
void case_free(struct attn_case *c);
txattn_tensors case_tensors(const struct attn_case *c); /* strided inputs, output o */
/* The serving call of c: problem with lse = 1 (struct_size set), tensors with lse too. */
txattn_problem case_lse_problem(const struct attn_case *c);
txattn_tensors case_lse_tensors(const struct attn_case *c);
/* lse := CASE_OUTPUT_SENTINEL */
void case_clear_lse(struct attn_case *c);
/* The same with every layout explicit, as the host passes tensors to a kernel's run(). */
txattn_tensors case_kernel_tensors(const struct attn_case *c);
txattn_tensors case_dense_tensors(const struct attn_case *c); /* contiguous copies, output o_ref */
/* o := CASE_OUTPUT_SENTINEL (CASE_OUTPUT_SENTINEL16 in a 16-bit o) */
void case_clear_output(struct attn_case *c);
/* The index in t's buffer of element (b, h, i, x) under t's explicit layout. */
size_t case_offset(const struct tensor *t, int64_t b, int64_t h, int64_t i, int64_t x);
/* tolerance := txattn_error_bound of the strided inputs, after a test changed them. */
void case_bound_inputs(struct attn_case *c);
/* L of txattn.h's bound, |scale| * max over visible pairs of sum_c |q_c k_c|, worked out here from
   the contiguous copies (NaN products left out). */
double case_logit_scale(const struct attn_case *c);
/* Runs txattn_reference on the contiguous copies into o_ref and lse_ref (asserts it succeeds). */
void case_run_reference(struct attn_case *c);
/* A hash of every input buffer, gaps included: a kernel must not write to its inputs. */
uint64_t case_input_hash(const struct attn_case *c);
/* Row (b, h, i) of the output must be NaN because of the planted poison. */
int case_row_poisoned(const struct attn_case *c, int64_t b, int64_t h, int64_t i);

#endif
