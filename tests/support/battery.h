/* SPDX-License-Identifier: MIT */
/* The kernel battery shared by the suites that build their own problems (tests/test_modifiers.c,
 * tests/test_masks.c): seeded inputs, and one kernel's call judged against the reference by the
 * derived bounds (txattn_error_bound, txattn_lse_error_bound). */
#ifndef TXATTN_TEST_BATTERY_H
#define TXATTN_TEST_BATTERY_H

#include <stddef.h>
#include <stdint.h>

#include "txattn/txattn.h"

uint64_t battery_random(uint64_t *state); /* splitmix64 */
double battery_uniform(uint64_t *state);  /* [-1, 1) */
/* a * b * c * d elements */
size_t battery_count(int64_t a, int64_t b, int64_t c, int64_t d);
/* n elements of type t, uniform in [-amp, amp) from state, or NaN if state is NULL (asserts the
   allocation). */
void *battery_buffer(size_t n, txattn_dtype t, uint64_t *state, double amp);

/* The tensors of one battery problem p (batch, heads, lengths, d_qk = d_v, element type, ragged),
   contiguous: q and k uniform in [-amp, amp) and v in [-1, 1) from state (in that order), o, o_ref,
   lse and lse_ref NaN, slopes and sinks heads_q floats for the caller to fill; sequence b has
   q_lens[b] rows and kv_lens[b] keys (ragged: n_q - b % n_q and n_kv - 2 b, at least 0). */
struct battery_data {
  void *q, *k, *v, *o, *o_ref;
  float *lse, *lse_ref, *slopes, *sinks;
  int64_t *q_lens, *kv_lens;
};
void battery_data_init(struct battery_data *d, const txattn_problem *p, uint64_t *state,
                       double amp);
void battery_data_free(struct battery_data *d);
/* d's tensors: the kernel's o and lse, or (ref) o_ref and lse_ref; no mask tensor. */
txattn_tensors battery_tensors(const struct battery_data *d, int ref);

/* One call with contiguous o [batch][heads_q][n_q][d_v] and lse, and the reference's o_ref and
   lse_ref; sequence b has q_lens[b] rows. */
struct battery_call {
  const txattn_problem *p;
  txattn_tensors t; /* the kernel's: t.o_data and t.lse are written */
  const void *o_ref;
  const float *lse_ref;
  const int64_t *q_lens;
};

/* Runs kernel k on c (o poisoned with NaN first) and judges every row: o within
   txattn_error_bound of o_ref, lse within txattn_lse_error_bound of lse_ref, and a row that sees
   no key (lse_ref -inf) with o +0 and lse -inf. need: the kernel flags the problem needs; a kernel
   lacking one must refuse the plan (E_UNSUPPORTED), and then the result is -1 (the caller may
   judge the message). Returns 0 if the kernel declined the shape itself, 1 if it ran; *worst is
   raised to the largest error over the bound. */
int battery_check_kernel(txattn_context *ctx, const txattn_kernel_info *k, unsigned need,
                         const struct battery_call *c, const char *name, double *worst);

#endif
