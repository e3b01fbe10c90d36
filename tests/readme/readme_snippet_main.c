/* SPDX-License-Identifier: MIT */
/* Calls the README's causal_gqa (extracted from README.md by CMakeLists.txt) on deterministic data
   of the shape its comment gives, and checks o against txattn_reference within txattn_error_bound. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <txattn/txattn.h>

int causal_gqa(const float *q, const float *k, const float *v, float *o);

static void fill(float *x, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)(seed >> 8) / (float)(1u << 23) - 1.0f;
  }
}

int main(void) {
  const size_t nq = 2 * 8 * 256 * 64, nkv = 2 * 2 * 256 * 64;
  float *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k), *v = malloc(nkv * sizeof *v);
  float *o = malloc(nq * sizeof *o), *ref = malloc(nq * sizeof *ref);
  if (!q || !k || !v || !o || !ref) return 2;
  fill(q, nq, 1), fill(k, nkv, 2), fill(v, nkv, 3);
  for (size_t i = 0; i < nq; i++) o[i] = NAN;
  if (causal_gqa(q, k, v, o) != 0) {
    fprintf(stderr, "readme_snippet: the README's causal_gqa returned non-zero\n");
    return 1;
  }
  txattn_problem p = {
      .batch = 2, .heads_q = 8, .heads_kv = 2, .n_q = 256, .d_qk = 64, .mask = TXATTN_MASK_CAUSAL};
  txattn_tensors t = {.q = q, .k = k, .v = v, .o = ref};
  double bound = 0;
  if (txattn_reference(&p, &t) != TXATTN_OK || txattn_error_bound(&p, &t, &bound) != TXATTN_OK) {
    fprintf(stderr, "readme_snippet: reference: %s\n", txattn_last_error());
    return 1;
  }
  double worst = 0;
  for (size_t i = 0; i < nq; i++) {
    double e = fabs((double)o[i] - (double)ref[i]);
    if (!(e <= worst)) worst = e; /* NaN propagates */
  }
  printf("readme_snippet: max|o - ref| = %.3g, bound %.3g\n", worst, bound);
  free(q), free(k), free(v), free(o), free(ref);
  return worst <= bound ? 0 : 1;
}
