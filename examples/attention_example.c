/* SPDX-License-Identifier: MIT */
/* A program that uses the installed libtxattn: causal attention with grouped-query heads (GQA),
 * checked against the fp64 reference. Build it with examples/CMakeLists.txt (find_package) or with
 *   cc -std=c11 attention_example.c $(pkg-config --cflags --libs txattn) -lm \
 *     -Wl,-rpath,$(pkg-config --variable=libdir txattn) -o attention_example
 * (for an install in a PREFIX other than /usr, first export PKG_CONFIG_PATH=PREFIX/lib/pkgconfig;
 * the rpath lets the program find libtxattn there without LD_LIBRARY_PATH or ldconfig).
 * Exits non-zero if anything fails or the result is not exact.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <txattn/txattn.h>

static int failed(txattn_status s, const char *what) {
  if (s == TXATTN_OK) return 0;
  fprintf(stderr, "attention_example: %s: %s: %s\n", what, txattn_status_name(s),
          txattn_last_error());
  return 1;
}

/* Deterministic values in [-1, 1), so every run checks the same problem */
static void fill(float *x, size_t n, uint32_t *state) {
  for (size_t i = 0; i < n; i++) {
    *state = *state * 1664525u + 1013904223u;
    x[i] = (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
  }
}

/* Largest |x[i] - y[i]|, or NaN if any difference is NaN, so a NaN in the output fails the check. */
static double max_abs_diff(const float *x, const float *y, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double a = fabs((double)x[i] - (double)y[i]);
    if (!(a <= m)) m = a;
  }
  return m;
}

/* Which kernel the dispatcher picks for p, and why */
static int show_choice(txattn_context *ctx, const txattn_problem *p) {
  txattn_plan *plan = NULL;
  if (failed(txattn_plan_create(ctx, p, NULL, &plan), "txattn_plan_create")) return 1;
  printf("kernel: %s (%s)\n", txattn_plan_kernel(plan), txattn_plan_why(plan));
  txattn_plan_free(plan);
  return 0;
}

static int run(txattn_context *ctx) {
  /* 8 query heads share 2 key/value heads; 256 tokens attend to themselves and the tokens before
   * them */
  const txattn_problem p = {
      .batch = 2, .heads_q = 8, .heads_kv = 2, .n_q = 256, .d_qk = 64, .mask = TXATTN_MASK_CAUSAL};
  const size_t nq = 2 * 8 * 256 * 64, nkv = 2 * 2 * 256 * 64; /* n_kv and d_v take their defaults */
  float *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k), *v = malloc(nkv * sizeof *v);
  float *o = malloc(nq * sizeof *o), *o_ref = malloc(nq * sizeof *o_ref);
  int rc = 1;
  if (!q || !k || !v || !o || !o_ref) {
    fprintf(stderr, "attention_example: out of memory\n");
    goto out;
  }
  uint32_t state = 1;
  fill(q, nq, &state);
  fill(k, nkv, &state);
  fill(v, nkv, &state);

  txattn_tensors t = {.q = q, .k = k, .v = v, .o = o}; /* zero layouts: contiguous */
  if (show_choice(ctx, &p) || failed(txattn_attention(ctx, &p, &t), "txattn_attention")) goto out;
  t.o = o_ref;
  if (failed(txattn_reference(&p, &t), "txattn_reference")) goto out;

  double err = max_abs_diff(o, o_ref, nq), bound;
  if (failed(txattn_error_bound(&p, &t, &bound), "txattn_error_bound")) goto out;
  printf("max |O - O_ref| = %.3g (exact when <= %.3g, txattn_error_bound)\n", err, bound);
  rc = !(err <= bound); /* a NaN fails too */
  if (rc) fprintf(stderr, "attention_example: the result is not exact\n");
out:
  free(q), free(k), free(v), free(o), free(o_ref);
  return rc;
}

int main(void) {
  printf("libtxattn %s (built against %s)\n", txattn_version_string(), TXATTN_VERSION_STRING);
  if (txattn_version() / 100 != TXATTN_VERSION / 100) {
    fprintf(stderr,
            "attention_example: libtxattn %s differs in its minor version from the header\n",
            txattn_version_string());
    return 1;
  }
  txattn_context *ctx = NULL;
  if (failed(txattn_context_create(NULL, &ctx), "txattn_context_create")) return 1;
  printf("threads: %d, kernels loaded: %zu\n", txattn_context_threads(ctx),
         txattn_kernel_count(ctx));
  int rc = run(ctx);
  txattn_context_free(ctx);
  return rc;
}
