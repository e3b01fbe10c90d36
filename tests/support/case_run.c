/* SPDX-License-Identifier: MIT */
#include "case_run.h"

#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/logging.h>

#include "txattn/plugin.h"

#include "case_check.h"
#include "test_context.h"

static void execute_and_check(struct attn_case *c, const txattn_plan *plan, const char *who,
                              const char *desc, int lse) {
  char msg[512];
  double err;
  txattn_tensors t = lse ? case_lse_tensors(c) : case_tensors(c);
  uint64_t inputs = case_input_hash(c);
  case_clear_output(c);
  if (lse) case_clear_lse(c);
  txattn_status s = txattn_plan_execute(plan, &t);
  cr_assert_eq(s, TXATTN_OK, "%s on %s%s: execute: %s: %s", who, desc, lse ? " with lse" : "",
               txattn_status_name(s), txattn_last_error());
  cr_assert_eq(case_input_hash(c), inputs, "%s on %s: wrote to its inputs", who, desc);
  cr_assert(case_check_output(c, &err, msg, sizeof msg), "%s on %s%s: %s", who, desc,
            lse ? " with lse" : "", msg);
  if (lse) cr_assert(case_check_lse(c, msg, sizeof msg), "%s on %s: %s", who, desc, msg);
}

/* Kernels that write lse (TXATTN_KERNEL_LSE) are run as a serving call (lse too) on every other
   case of the battery, chosen by a hash of its description, so that the battery checks both
   calls without running each kernel twice; only on inputs lse_ref was computed from. */
static int lse_for(const txattn_context *ctx, const struct attn_case *c, const char *kernel,
                   const char *desc) {
  if (kernel == NULL || c->lse_inputs == 0 || case_input_hash(c) != c->lse_inputs) return 0;
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *x = desc; *x; x++) h = (h ^ (unsigned char)*x) * 16777619u;
  if (!(h & 1u)) return 0;
  for (size_t i = 0; i < txattn_kernel_count(ctx); i++) {
    txattn_kernel_info k = TXATTN_KERNEL_INFO_INIT;
    if (txattn_kernel_get(ctx, i, &k) == TXATTN_OK && strcmp(k.name, kernel) == 0)
      return (k.flags & TXATTN_KERNEL_LSE) != 0;
  }
  return 0;
}

/* 1 if why is the host's refusal of one of c's types ("it does not take f16 k", "it does not make
   bf16 o", "it does not take f32 q" from the bf16-only tiled.avx512bf16: core/loader.c
   txattn__kernel_applicable). */
static int declines_the_types(const struct attn_case *c, const char *why) {
  const txattn_dtype types[4] = {c->full.q_type, c->full.k_type, c->full.v_type, c->full.o_type};
  static const char *const tensor[4] = {"take %s q", "take %s k", "take %s v", "make %s o"};
  char want[64], phrase[48];
  for (int i = 0; i < 4; i++) {
    snprintf(phrase, sizeof phrase, tensor[i], txattn_dtype_name(types[i]));
    snprintf(want, sizeof want, "does not %s", phrase);
    if (strstr(why, want) != NULL) return 1;
  }
  return 0;
}

enum outcome { RAN, DECLINED_SHAPE, DECLINED_TYPES };

static enum outcome run_kernel(txattn_context *ctx, struct attn_case *c, const char *kernel,
                               const char *desc) {
  txattn_plan *plan = NULL;
  const char *who = kernel ? kernel : "the dispatcher";
  int lse = lse_for(ctx, c, kernel, desc);
  txattn_problem serving = case_lse_problem(c);
  txattn_status s = txattn_plan_create(ctx, lse ? &serving : &c->problem, kernel, &plan);
  if (s == TXATTN_E_UNSUPPORTED && kernel && declines_the_types(c, txattn_last_error()))
    return DECLINED_TYPES; /* case_run_every_kernel_tally names them in one line */
  if (s == TXATTN_E_UNSUPPORTED && kernel && !test_kernel_takes_every_problem(kernel)) {
    cr_assert_neq(txattn_last_error()[0], '\0', "%s declines %s without a reason", kernel, desc);
    cr_log_info("%s declines %s: %s", kernel, desc, txattn_last_error());
    return DECLINED_SHAPE;
  }
  cr_assert_eq(s, TXATTN_OK, "%s on %s: plan_create: %s: %s", who, desc, txattn_status_name(s),
               txattn_last_error());
  cr_assert(plan != NULL, "%s on %s: plan_create gave OK and no plan", who, desc);
  const char *chosen = txattn_plan_kernel(plan);
  cr_assert(chosen != NULL, "%s on %s: txattn_plan_kernel is NULL", who, desc);
  if (kernel) cr_assert_str_eq(chosen, kernel, "forced %s, the plan runs %s", kernel, chosen);
  char label[160];
  snprintf(label, sizeof label, "%s%s%s", who, kernel ? "" : " picking ", kernel ? "" : chosen);
  execute_and_check(c, plan, label, desc, lse);
  txattn_plan_free(plan);
  return RAN;
}

int case_run_kernel(txattn_context *ctx, struct attn_case *c, const char *kernel,
                    const char *desc) {
  return run_kernel(ctx, c, kernel, desc) == RAN;
}

static void add_name(char *list, size_t size, const char *name) {
  size_t n = strlen(list);
  snprintf(list + n, size - n, "%s%s", n ? ", " : "", name);
}

int case_run_every_kernel_tally(txattn_context *ctx, struct attn_case *c, const char *desc,
                                struct case_tally *tally) {
  struct kernel_list kernels;
  memset(tally, 0, sizeof *tally);
  test_kernel_list(ctx, &kernels);
  for (size_t i = 0; i < kernels.n; i++) {
    const txattn_kernel_info *k = &kernels.k[i];
    if (!k->usable) {
      cr_log_info("%s is not usable here: %s", k->name, k->why_unusable ? k->why_unusable : "?");
      add_name(tally->unusable, sizeof tally->unusable, k->name);
      continue;
    }
    switch (run_kernel(ctx, c, k->name, desc)) {
    case RAN:
      tally->ran++;
      tally->naive_ran |= strcmp(k->name, "naive.scalar") == 0;
      add_name(tally->ran_names, sizeof tally->ran_names, k->name);
      break;
    case DECLINED_TYPES:
      add_name(tally->declined_types, sizeof tally->declined_types, k->name);
      break;
    case DECLINED_SHAPE:
      add_name(tally->declined_shape, sizeof tally->declined_shape, k->name);
      break;
    }
  }
  run_kernel(ctx, c, NULL, desc);
  if (case_types_16_bit(c->shape.types))
    cr_log_info("%s: ran %s; do not take the types: %s; declined the problem: %s", desc,
                tally->ran_names[0] ? tally->ran_names : "none",
                tally->declined_types[0] ? tally->declined_types : "none",
                tally->declined_shape[0] ? tally->declined_shape : "none");
  return tally->ran;
}

int case_run_every_kernel(txattn_context *ctx, struct attn_case *c, const char *desc) {
  struct case_tally tally;
  return case_run_every_kernel_tally(ctx, c, desc, &tally);
}

void case_run_attention(txattn_context *ctx, struct attn_case *c, const char *desc) {
  char msg[512];
  double err;
  txattn_tensors t = case_tensors(c);
  uint64_t inputs = case_input_hash(c);
  case_clear_output(c);
  txattn_status s = txattn_attention(ctx, &c->problem, &t);
  cr_assert_eq(s, TXATTN_OK, "txattn_attention on %s: %s: %s", desc, txattn_status_name(s),
               txattn_last_error());
  cr_assert_eq(case_input_hash(c), inputs, "txattn_attention on %s: wrote to its inputs", desc);
  cr_assert(case_check_output(c, &err, msg, sizeof msg), "txattn_attention on %s: %s", desc, msg);
}
