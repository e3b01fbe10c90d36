/* SPDX-License-Identifier: MIT */
/* The size discipline of the public structs (txattn/txattn.h, "Public structs grow"): a caller
 * built against an older header (a smaller struct) or a newer one (a larger struct) works, and the
 * library reads and writes only the bytes struct_size covers. Each struct sits at the end of a page
 * followed by an inaccessible one, so a read or write past it faults instead of passing unseen. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "test_context.h"

TestSuite(struct_size, .init = test_env_clean, .fini = test_check_leaks);

/* size bytes that end where an inaccessible page begins */
struct fenced {
  unsigned char *map;
  size_t map_size;
  void *at;
};

static struct fenced fence(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  cr_assert(size % 8 == 0 && size <= page);
  struct fenced f = {.map_size = 2 * page};
  f.map = mmap(NULL, f.map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert(f.map != MAP_FAILED);
  cr_assert(mprotect(f.map + page, page, PROT_NONE) == 0);
  f.at = f.map + page - size;
  memset(f.at, 0, size);
  return f;
}

static void unfence(struct fenced *f) {
  munmap(f->map, f->map_size);
}

static txattn_context *context_with(const void *opts) {
  txattn_context *ctx = NULL;
  txattn_status s = txattn_context_create(opts, &ctx);
  cr_assert_eq(s, TXATTN_OK, "txattn_context_create: %s", txattn_last_error());
  return ctx;
}

/* A problem from 0.2's first header (before lse and ragged): the fields it lacks take their
   defaults and are never read. */
Test(struct_size, older_problems_are_read_only_as_far_as_they_reach) {
  struct fenced f = fence(TXATTN_PROBLEM_SIZE_0_2);
  txattn_problem *old = f.at;
  old->n_q = 5;
  old->d_qk = 8;
  old->struct_size = TXATTN_PROBLEM_SIZE_0_2;
  txattn_problem r = TXATTN_PROBLEM_INIT;
  cr_assert_eq(txattn_problem_resolve(old, &r), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(r.n_kv, 5);
  cr_assert_eq(r.lse, 0);
  cr_assert_eq(r.ragged, 0);
  cr_assert_eq(r.struct_size, sizeof r);
  unfence(&f);
}

/* An input struct whose struct_size no header had (an uninitialised one's garbage, in practice)
   is refused, naming the struct, and not read past its size field. */
static void expect_refused(txattn_status s, const char *what, size_t size) {
  char needle[96];
  snprintf(needle, sizeof needle, "%s.struct_size = %zu", what, size);
  cr_assert_eq(s, TXATTN_E_INVALID, "%s: %s", needle, txattn_status_name(s));
  cr_assert(strstr(txattn_last_error(), needle) != NULL, "%s", txattn_last_error());
  cr_assert(strstr(txattn_last_error(), "uninitialised") != NULL, "%s", txattn_last_error());
}

Test(struct_size, inputs_of_no_header_are_refused) {
  size_t wrong[] = {4,
                    9,
                    12,
                    offsetof(txattn_options, n_threads),
                    sizeof(txattn_options) - 1,
                    sizeof(txattn_options) + 4097,
                    (size_t)1 << 40,
                    (size_t)(uintptr_t)&wrong};
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    txattn_options o = {.struct_size = wrong[i], .table_path = ""};
    txattn_context *ctx = NULL;
    expect_refused(txattn_context_create(&o, &ctx), "txattn_options", wrong[i]);
    cr_assert_null(ctx);
  }
  txattn_problem r = TXATTN_PROBLEM_INIT;
  size_t wrong_problem[] = {12, TXATTN_PROBLEM_SIZE_0_2 - 8, sizeof(txattn_problem) - 1};
  for (size_t i = 0; i < 3; i++) {
    txattn_problem p = {.n_q = 2, .d_qk = 2, .struct_size = wrong_problem[i]};
    expect_refused(txattn_problem_resolve(&p, &r), "txattn_problem", wrong_problem[i]);
  }
  txattn_problem p = {.n_q = 3, .d_qk = 4};
  float in[12] = {0}, out[12];
  txattn_tensors t = {.q = in, .k = in, .v = in, .o = out, .struct_size = 9};
  expect_refused(txattn_reference(&p, &t), "txattn_tensors", 9);
  t.struct_size = TXATTN_TENSORS_SIZE_0_2 + 8; /* within this header, but no header's size */
  expect_refused(txattn_reference(&p, &t), "txattn_tensors", TXATTN_TENSORS_SIZE_0_2 + 8);
  t.struct_size = TXATTN_TENSORS_SIZE_0_2;
  cr_assert_eq(txattn_reference(&p, &t), TXATTN_OK, "%s", txattn_last_error());
}

/* A newer header's larger struct: unknown fields that are zero are fine; a set one is refused. */
Test(struct_size, newer_options_need_their_unknown_fields_zero) {
  size_t newer = sizeof(txattn_options) + 16;
  struct fenced f = fence(newer);
  txattn_options *o = f.at;
  o->struct_size = newer;
  o->table_path = "";
  o->n_threads = 1;
  txattn_context *ctx = context_with(o);
  cr_assert_eq(txattn_context_threads(ctx), 1);
  txattn_context_free(ctx);
  ((unsigned char *)f.at)[newer - 1] = 1;
  ctx = NULL;
  cr_assert_eq(txattn_context_create(o, &ctx), TXATTN_E_INVALID);
  cr_assert_null(ctx);
  cr_assert(strstr(txattn_last_error(), "txattn_options.struct_size") != NULL, "%s",
            txattn_last_error());
  cr_assert(strstr(txattn_last_error(), "newer header") != NULL, "%s", txattn_last_error());
  unfence(&f);
}

Test(struct_size, impossible_sizes_are_refused_with_the_struct_named) {
  txattn_options o = {.struct_size = 4, .table_path = ""};
  txattn_context *ctx = NULL;
  cr_assert_eq(txattn_context_create(&o, &ctx), TXATTN_E_INVALID);
  cr_assert(strstr(txattn_last_error(), "txattn_options.struct_size = 4") != NULL, "%s",
            txattn_last_error());
  cr_assert(strstr(txattn_last_error(), "TXATTN_OPTIONS_INIT") != NULL, "%s", txattn_last_error());
  o.struct_size = (size_t)1 << 40; /* garbage, not a header */
  cr_assert_eq(txattn_context_create(&o, &ctx), TXATTN_E_INVALID);
  o.struct_size = sizeof o;
  cr_assert_eq(txattn_context_create(&o, &ctx), TXATTN_OK, "%s", txattn_last_error());
  txattn_context_free(ctx);
}

/* Writes one output struct of type `what` every way its struct_size allows: as an older header's
   (`older`, a released size, at a fence), as a newer header's (the bytes past this header's
   untouched), and unset (struct_size 0: the `first` bytes of version 0.2's struct, and
   struct_size says so). Every other struct_size, garbage as an uninitialised struct has it, is
   refused with E_INVALID naming the struct, and the struct is left as it was. */
typedef txattn_status (*get_fn)(const void *source, void *out);

static void check_refusals(get_fn get, const void *source, const char *what, size_t cur,
                           const size_t *released, size_t n_released) {
  size_t first = released[0];
  size_t wrong[] = {4,
                    9,
                    12,
                    16,
                    first - 1,
                    first + 1,
                    cur - 1,
                    cur - 8,
                    (first + cur) / 2 + 3,
                    cur + 4097,
                    (size_t)1 << 40,
                    (size_t)(uintptr_t)&wrong};
  unsigned char *bytes = malloc(cur + 64), *before = malloc(cur + 64);
  cr_assert(bytes != NULL && before != NULL);
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    int known = 0;
    for (size_t k = 0; k < n_released; k++) known |= wrong[i] == released[k];
    if (known || (wrong[i] >= cur && wrong[i] - cur <= 4096)) continue; /* a newer header's */
    memset(bytes, 0x5a, cur + 64);
    memcpy(bytes, &wrong[i], sizeof wrong[i]);
    memcpy(before, bytes, cur + 64);
    char needle[96];
    snprintf(needle, sizeof needle, "%s.struct_size = %zu", what, wrong[i]);
    txattn_status s = get(source, bytes);
    cr_assert_eq(s, TXATTN_E_INVALID, "%s: %s", needle, txattn_status_name(s));
    cr_assert(strstr(txattn_last_error(), needle) != NULL, "%s", txattn_last_error());
    cr_assert(memcmp(bytes, before, cur + 64) == 0, "%s: the struct was written", needle);
  }
  free(before);
  free(bytes);
}

/* Whether bytes 8..n of a and b agree, but for the struct_size at `inner` (0: none) of a struct
   held last, which a must set to the bytes of it that n covers. */
static int same_fields(const unsigned char *a, const unsigned char *b, size_t n, size_t inner) {
  if (inner == 0) return memcmp(a + 8, b + 8, n - 8) == 0;
  size_t held;
  memcpy(&held, a + inner, sizeof held);
  return held == n - inner && memcmp(a + 8, b + 8, inner - 8) == 0 &&
         memcmp(a + inner + 8, b + inner + 8, n - inner - 8) == 0;
}

static void check_output(get_fn get, const void *source, size_t cur, size_t first, size_t older,
                         size_t check_at, size_t inner) {
  struct fenced f = fence(older);
  memcpy(f.at, &older, sizeof older);
  cr_assert_eq(get(source, f.at), TXATTN_OK, "%s", txattn_last_error());
  size_t written;
  memcpy(&written, f.at, sizeof written);
  cr_assert_eq(written, older, "struct_size after an older caller's call: %zu, want %zu", written,
               older);
  unsigned char *full = calloc(1, cur + 64);
  cr_assert(full != NULL);
  size_t newer = cur + 64;
  memset(full, 0xa5, cur + 64);
  memcpy(full, &newer, sizeof newer);
  cr_assert_eq(get(source, full), TXATTN_OK, "%s", txattn_last_error());
  memcpy(&written, full, sizeof written);
  cr_assert_eq(written, cur);
  for (size_t i = cur; i < cur + 64; i++)
    cr_assert_eq(full[i], 0xa5, "byte %zu past the struct was written", i - cur);
  cr_assert(same_fields(f.at, full, older, inner),
            "the older caller's fields (%zu bytes) differ from the newer's", older);
  cr_assert(check_at < older && full[check_at] != 0xa5, "the field at %zu was not written",
            check_at);
  unsigned char *unset = malloc(cur);
  cr_assert(unset != NULL);
  memset(unset, 0, sizeof(size_t)); /* struct_size 0: a zero-initialised struct */
  memset(unset + sizeof(size_t), 0x5a, cur - sizeof(size_t));
  cr_assert_eq(get(source, unset), TXATTN_OK);
  memcpy(&written, unset, sizeof written);
  cr_assert_eq(written, first, "struct_size 0 wrote %zu bytes, not version 0.2's %zu", written,
               first);
  cr_assert(same_fields(unset, full, first, inner),
            "a struct with struct_size 0 is not written as version 0.2's");
  for (size_t i = first; i < cur; i++)
    cr_assert_eq(unset[i], 0x5a, "byte %zu, past version 0.2's struct, was written", i);
  free(unset);
  free(full);
  unfence(&f);
}

/* check_output for each released size of the struct and this header's, then check_refusals. */
static void check_outputs(get_fn get, const void *source, const char *what, size_t cur,
                          const size_t *released, size_t n_released, size_t check_at,
                          size_t inner) {
  for (size_t k = 0; k < n_released; k++)
    check_output(get, source, cur, released[0], released[k], check_at, inner);
  check_output(get, source, cur, released[0], cur, check_at, inner);
  check_refusals(get, source, what, cur, released, n_released);
}
#define RELEASED(...)                                                                              \
  (const size_t[]){__VA_ARGS__}, sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t)

static txattn_status get_kernel(const void *ctx, void *out) {
  return txattn_kernel_get(ctx, 0, out);
}
static txattn_status get_machine(const void *ctx, void *out) {
  return txattn_context_machine(ctx, out);
}
static txattn_status get_kernel_tunable(const void *ctx, void *out) {
  for (size_t k = 0; k < txattn_kernel_count(ctx); k++)
    if (txattn_kernel_tunable_count(ctx, k) > 0) return txattn_kernel_tunable_get(ctx, k, 0, out);
  cr_assert_fail("no loaded kernel declares a tunable");
  return TXATTN_E_INTERNAL;
}
static txattn_status get_plan_tunable(const void *plan, void *out) {
  return txattn_plan_tunable_info(plan, 0, out);
}

Test(struct_size, outputs_are_written_as_far_as_the_callers_struct_reaches) {
  txattn_context *ctx = test_context(1);
  check_outputs(get_kernel, ctx, "txattn_kernel_info", sizeof(txattn_kernel_info),
                RELEASED(TXATTN_KERNEL_INFO_SIZE_0_2), offsetof(txattn_kernel_info, name), 0);
  check_outputs(get_machine, ctx, "txattn_machine_info", sizeof(txattn_machine_info),
                RELEASED(TXATTN_MACHINE_INFO_SIZE_0_2), offsetof(txattn_machine_info, vendor), 0);
  check_outputs(get_kernel_tunable, ctx, "txattn_tunable_info", sizeof(txattn_tunable_info),
                RELEASED(TXATTN_TUNABLE_INFO_SIZE_0_2), offsetof(txattn_tunable_info, name), 0);
  txattn_problem p = {.n_q = 64, .d_qk = 32};
  txattn_plan *plan = NULL;
  cr_assert_eq(txattn_plan_create(ctx, &p, "tiled.scalar", &plan), TXATTN_OK, "%s",
               txattn_last_error());
  check_outputs(get_plan_tunable, plan, "txattn_tunable_info", sizeof(txattn_tunable_info),
                RELEASED(TXATTN_TUNABLE_INFO_SIZE_0_2), offsetof(txattn_tunable_info, value), 0);
  txattn_plan_free(plan);
  txattn_context_free(ctx);
}

/* The usual C idiom, an output struct declared without its INIT macro: whatever the stack holds
   in struct_size, the call either fills the struct as some header's or refuses it. */
Test(struct_size, an_uninitialised_output_is_filled_whole_or_refused) {
  txattn_context *ctx = test_context(1);
  const size_t cur = sizeof(txattn_kernel_info);
  for (size_t garbage = 1; garbage < 2 * cur; garbage++) {
    txattn_kernel_info info = TXATTN_KERNEL_INFO_INIT; /* then as the stack might leave it */
    memset(&info, 0x77, sizeof info);
    info.struct_size = garbage;
    txattn_status s = txattn_kernel_get(ctx, 0, &info);
    if (garbage == TXATTN_KERNEL_INFO_SIZE_0_2 || garbage >= cur) {
      cr_assert_eq(s, TXATTN_OK, "struct_size %zu: %s", garbage, txattn_last_error());
      cr_assert(info.name != NULL && strchr(info.name, '.') != NULL, "struct_size %zu", garbage);
    } else {
      cr_assert_eq(s, TXATTN_E_INVALID, "struct_size %zu was taken", garbage);
      cr_assert_eq(info.struct_size, garbage);
    }
  }
  txattn_context_free(ctx);
}

static txattn_status get_rejected(const void *ctx, void *out) {
  return txattn_rejected_get(ctx, 0, out);
}

Test(struct_size, rejected_entries_follow_the_same_rule) {
  char dir[] = "/tmp/txattn-struct-size-XXXXXX";
  cr_assert(mkdtemp(dir) != NULL);
  char path[sizeof dir + 32];
  snprintf(path, sizeof path, "%s/libtxattn_bogus.so", dir);
  FILE *bogus = fopen(path, "w");
  cr_assert(bogus != NULL);
  fputs("not a shared object\n", bogus);
  fclose(bogus);
  txattn_context *ctx = test_context_at(dir, 1);
  cr_assert_eq(txattn_rejected_count(ctx), 1);
  check_outputs(get_rejected, ctx, "txattn_rejected_info", sizeof(txattn_rejected_info),
                RELEASED(TXATTN_REJECTED_INFO_SIZE_0_2), offsetof(txattn_rejected_info, path), 0);
  txattn_rejected_info now = TXATTN_REJECTED_INFO_INIT;
  cr_assert_eq(txattn_rejected_get(ctx, 0, &now), TXATTN_OK);
  cr_assert_str_eq(now.path, path);
  cr_assert(now.reason != NULL && now.reason[0] != '\0');
  txattn_context_free(ctx);
  remove(path);
  rmdir(dir);
}

/* txattn_problem and txattn_tensors carry struct_size after their 0.2 fields. */
Test(struct_size, problems_and_tensors_of_a_newer_header) {
  size_t newer = sizeof(txattn_problem) + 8;
  struct fenced f = fence(newer);
  txattn_problem *p = f.at;
  *p = (txattn_problem){.n_q = 5, .d_qk = 8, .struct_size = newer};
  txattn_problem r = TXATTN_PROBLEM_INIT;
  cr_assert_eq(txattn_problem_resolve(p, &r), TXATTN_OK, "%s", txattn_last_error());
  cr_assert_eq(r.n_kv, 5);
  cr_assert_eq(r.struct_size, sizeof r);
  ((unsigned char *)f.at)[newer - 3] = 7;
  cr_assert_eq(txattn_problem_resolve(p, &r), TXATTN_E_INVALID);
  cr_assert(strstr(txattn_last_error(), "txattn_problem.struct_size") != NULL, "%s",
            txattn_last_error());
  p->struct_size = sizeof(size_t); /* smaller than any txattn_problem with struct_size */
  cr_assert_eq(txattn_problem_resolve(p, &r), TXATTN_E_INVALID);
  unfence(&f);

  txattn_problem q = {.n_q = 3, .d_qk = 4};
  float in[12] = {0}, out[12];
  txattn_tensors t = {.q = in, .k = in, .v = in, .o = out, .struct_size = sizeof t + 16};
  unsigned char padded[sizeof t + 16];
  memset(padded, 0, sizeof padded);
  memcpy(padded, &t, sizeof t);
  cr_assert_eq(txattn_reference(&q, (const txattn_tensors *)padded), TXATTN_OK, "%s",
               txattn_last_error());
  padded[sizeof t + 15] = 1;
  cr_assert_eq(txattn_reference(&q, (const txattn_tensors *)padded), TXATTN_E_INVALID);
  cr_assert(strstr(txattn_last_error(), "txattn_tensors.struct_size") != NULL, "%s",
            txattn_last_error());
}

/* txattn_problem_resolve writes its output by the same rule: a newer caller's tail is untouched. */
Test(struct_size, resolve_writes_no_further_than_this_header) {
  txattn_problem p = {.n_q = 2, .d_qk = 2};
  unsigned char out[sizeof(txattn_problem) + 32];
  memset(out, 0xa5, sizeof out);
  size_t newer = sizeof out;
  memcpy(out + offsetof(txattn_problem, struct_size), &newer, sizeof newer);
  cr_assert_eq(txattn_problem_resolve(&p, (txattn_problem *)out), TXATTN_OK);
  for (size_t i = sizeof(txattn_problem); i < sizeof out; i++) cr_assert_eq(out[i], 0xa5);
  txattn_problem r = TXATTN_PROBLEM_INIT;
  memcpy(&r, out, sizeof r);
  cr_assert_eq(r.struct_size, sizeof r);
  cr_assert_eq(r.d_v, 2);
}
