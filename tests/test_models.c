/* SPDX-License-Identifier: MIT */
/* The catalogue of real models (txattn_model_count, _get, _layer, _find): every model the catalogue
 * promises is there with its published numbers, every kind of layer is a valid problem, and the
 * two output structs follow the struct_size rules (0 and released sizes taken, garbage refused
 * with the output untouched, a newer header's larger struct filled as far as this one knows). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "test_context.h"
#include "txattn/txattn.h"

static int64_t find(const char *name) {
  int64_t i = -1;
  cr_assert_eq(txattn_model_find(name, &i), TXATTN_OK, "%s: %s", name, txattn_last_error());
  cr_assert(i >= 0 && i < txattn_model_count());
  return i;
}

static txattn_model_layer_info layer(int64_t model, int64_t kind) {
  txattn_model_layer_info k = TXATTN_MODEL_LAYER_INFO_INIT;
  cr_assert_eq(txattn_model_layer(model, kind, &k), TXATTN_OK, "%s", txattn_last_error());
  return k;
}

Test(models, the_catalogue_has_every_model_it_promises) {
  static const char *const names[] = {"llama-3.1-8b",     "mistral-7b", "gemma-2-9b",
                                      "gpt-oss-20b",      "bloom-7b1",  "qwen2.5-7b",
                                      "deepseek-v2-lite", "phi-3-mini", "whisper-base",
                                      "bert-base",        "t5-base",    "streamingllm-llama"};
  cr_assert_geq(txattn_model_count(), 12);
  for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
    txattn_model_info m = TXATTN_MODEL_INFO_INIT;
    cr_assert_eq(txattn_model_get(find(names[n]), &m), TXATTN_OK);
    cr_assert_str_eq(m.name, names[n]);
    cr_assert(strstr(m.source, "https://") != NULL, "%s: source '%s' has no address", m.name,
              m.source);
  }
}

/* The numbers the published configurations give (docs/models.md cites each). */
Test(models, the_numbers_are_the_published_ones) {
  txattn_model_layer_info k = layer(find("llama-3.1-8b"), 0);
  cr_assert(k.heads_q == 32 && k.heads_kv == 8 && k.d_qk == 128 && k.layers == 32);
  cr_assert(k.mask == TXATTN_MASK_CAUSAL && k.decode && k.softcap == 0.0f);
  k = layer(find("mistral-7b"), 0);
  cr_assert(k.mask == TXATTN_MASK_WINDOW && k.window_left == 4095 && k.window_right == 0);
  int64_t g = find("gemma-2-9b");
  for (int j = 0; j < 2; j++) {
    k = layer(g, j);
    cr_assert(k.heads_q == 16 && k.heads_kv == 8 && k.d_qk == 256 && k.d_v == 256);
    cr_assert(k.softcap == 50.0f && k.scale == 0.0625f && k.layers == 21);
  }
  cr_assert(layer(g, 0).window_left == 4095 && layer(g, 1).mask == TXATTN_MASK_CAUSAL);
  int64_t o = find("gpt-oss-20b");
  cr_assert(layer(o, 0).sinks && layer(o, 1).sinks && layer(o, 0).window_left == 127);
  cr_assert(layer(o, 0).heads_q == 64 && layer(o, 0).heads_kv == 8 && layer(o, 0).d_qk == 64);
  k = layer(find("bloom-7b1"), 0);
  cr_assert(k.alibi && k.alibi_max_bias == 8.0f && k.heads_q == 32 && k.heads_kv == 32);
  k = layer(find("qwen2.5-7b"), 0);
  cr_assert(k.heads_q == 28 && k.heads_kv == 4 && k.d_qk == 128);
  k = layer(find("deepseek-v2-lite"), 0);
  cr_assert(k.heads_q == 16 && k.d_qk == 192 && k.d_v == 128);
  k = layer(find("phi-3-mini"), 0);
  cr_assert(k.d_qk == 96 && k.window_left == 2046);
  int64_t w = find("whisper-base");
  k = layer(w, 2);
  cr_assert(k.n_q == 448 && k.n_kv == 1500 && k.mask == TXATTN_MASK_NONE && k.decode);
  cr_assert(!layer(w, 0).decode, "the encoder runs once, not per token");
  cr_assert(layer(find("bert-base"), 0).ragged);
  int64_t t = find("t5-base");
  txattn_model_info m = TXATTN_MODEL_INFO_INIT;
  cr_assert_eq(txattn_model_get(t, &m), TXATTN_OK);
  cr_assert(layer(t, 0).relative_bias && !layer(t, 2).relative_bias && m.note[0] != '\0');
  k = layer(find("streamingllm-llama"), 0);
  cr_assert(k.sink_keys == 4 && k.window_left + 1 == 1020);
}

/* Every kind, with n tokens, is a problem the library takes, and the kinds' layers add up. */
/* Kind k's problem with n_q queries over its fixed n_kv, else over n_kv keys. */
static txattn_problem kind_problem(const txattn_model_layer_info *k, int64_t n_q, int64_t n_kv) {
  txattn_problem p = TXATTN_PROBLEM_INIT;
  p.heads_q = k->heads_q;
  p.heads_kv = k->heads_kv;
  p.d_qk = k->d_qk;
  p.d_v = k->d_v;
  p.mask = k->mask;
  p.window_left = k->window_left;
  p.window_right = k->window_right;
  p.scale = k->scale;
  p.softcap = k->softcap;
  p.alibi = k->alibi;
  p.sinks = k->sinks;
  p.sink_keys = k->sink_keys;
  p.n_q = n_q;
  p.n_kv = k->n_kv > 0 ? k->n_kv : n_kv;
  return p;
}

Test(models, every_kind_is_a_valid_problem) {
  for (int64_t i = 0; i < txattn_model_count(); i++) {
    txattn_model_info m = TXATTN_MODEL_INFO_INIT;
    cr_assert_eq(txattn_model_get(i, &m), TXATTN_OK);
    cr_assert(m.n_kinds >= 1 && m.n_kinds <= TXATTN_MODEL_MAX_KINDS, "%s", m.name);
    int64_t layers = 0;
    for (int64_t j = 0; j < m.n_kinds; j++) {
      txattn_model_layer_info k = layer(i, j);
      layers += k.layers;
      txattn_problem p = kind_problem(&k, k.n_q > 0 ? k.n_q : 64, 64), r = TXATTN_PROBLEM_INIT;
      cr_assert_eq(txattn_problem_resolve(&p, &r), TXATTN_OK, "%s %s: %s", m.name, k.kind,
                   txattn_last_error());
      cr_assert(isfinite(k.scale) && k.scale > 0.0f, "%s %s: scale %g", m.name, k.kind,
                (double)k.scale);
    }
    cr_assert_eq(layers, m.layers, "%s: the kinds have %lld layers, the model %lld", m.name,
                 (long long)layers, (long long)m.layers);
  }
}

Test(models, bad_arguments_are_refused_and_leave_the_output_untouched) {
  txattn_model_info m = TXATTN_MODEL_INFO_INIT;
  memset(&m, 0x5a, sizeof m);
  m.struct_size = 7; /* garbage: no header gave it this size */
  txattn_model_info before = m;
  cr_assert_eq(txattn_model_get(0, &m), TXATTN_E_INVALID);
  cr_assert(strstr(txattn_last_error(), "txattn_model_info.struct_size") != NULL, "%s",
            txattn_last_error());
  cr_assert(memcmp(&m, &before, sizeof m) == 0, "a refused call wrote its output");
  txattn_model_layer_info k = TXATTN_MODEL_LAYER_INFO_INIT;
  k.struct_size = 3;
  cr_assert_eq(txattn_model_layer(0, 0, &k), TXATTN_E_INVALID);
  cr_assert_eq(k.struct_size, 3u);
  k.struct_size = sizeof k;
  cr_assert_eq(txattn_model_get(-1, &m), TXATTN_E_INVALID);
  cr_assert_eq(txattn_model_get(txattn_model_count(), &m), TXATTN_E_INVALID);
  cr_assert_eq(txattn_model_get(0, NULL), TXATTN_E_INVALID);
  cr_assert_eq(txattn_model_layer(0, 99, &k), TXATTN_E_INVALID);
  cr_assert_eq(k.struct_size, sizeof k);
  int64_t i = 42;
  cr_assert_eq(txattn_model_find("no-such-model", &i), TXATTN_E_NOT_FOUND);
  cr_assert_eq(i, 42);
  cr_assert(strstr(txattn_last_error(), "llama-3.1-8b") != NULL, "the message lists the names: %s",
            txattn_last_error());
  cr_assert_eq(txattn_model_find(NULL, &i), TXATTN_E_INVALID);
}

/* struct_size 0 means the first released size (this one); a newer header's larger struct is
   filled as far as this library knows and its struct_size says so. */
Test(models, struct_size_zero_and_larger_structs) {
  txattn_model_info m = TXATTN_MODEL_INFO_INIT;
  m.struct_size = 0;
  cr_assert_eq(txattn_model_get(0, &m), TXATTN_OK);
  cr_assert_eq(m.struct_size, TXATTN_MODEL_INFO_SIZE_0_2_MODELS);
  cr_assert(m.name != NULL && m.n_kinds >= 1);
  struct {
    txattn_model_layer_info k;
    char newer[32];
  } big;
  memset(&big, 0, sizeof big);
  big.k.struct_size = sizeof big;
  cr_assert_eq(txattn_model_layer(0, 0, &big.k), TXATTN_OK);
  cr_assert_eq(big.k.struct_size, sizeof(txattn_model_layer_info));
  cr_assert(big.k.heads_q > 0);
  for (size_t c = 0; c < sizeof big.newer; c++) cr_assert_eq(big.newer[c], 0);
}

/* Without a dispatch table, the estimate gives every kind of every model, prefill and decode, a
   tiled, banded or (their threaded twins) kernel: never masked.scalar, the dense BLAS baseline that
   pays for every key and a GEMV's overheads at decode, nor naive.scalar. Asserted where tiled.avx2
   runs (x86-64 with AVX2), whose speed hint puts it clear of masked.scalar's in the estimate; a
   decode call with a mask tensor counts as tiled's direct path, one row per query (no padding to a
   register block, no packing). No timing: the estimate's ranking only. */
Test(models, the_estimate_picks_no_baseline_for_any_kind) {
  for (int threads = 1; threads <= 2; threads++) {
    txattn_context *ctx = test_context(threads);
    struct kernel_list l;
    test_kernel_list(ctx, &l);
    const txattn_kernel_info *avx2 = test_kernel_find(&l, "tiled.avx2");
    if (!avx2 || !avx2->usable) {
      txattn_context_free(ctx);
      cr_skip_test("tiled.avx2 cannot run here");
    }
    for (int64_t i = 0; i < txattn_model_count(); i++) {
      txattn_model_info m = TXATTN_MODEL_INFO_INIT;
      cr_assert_eq(txattn_model_get(i, &m), TXATTN_OK);
      for (int64_t j = 0; j < m.n_kinds; j++) {
        txattn_model_layer_info k = layer(i, j);
        for (int decode = 0; decode <= k.decode; decode++) {
          txattn_problem p = kind_problem(&k, decode ? 1 : k.n_q > 0 ? k.n_q : 1024, 4096);
          p.batch = k.ragged ? 4 : 1;
          p.ragged = k.ragged;
          if (k.relative_bias) p.mask_tensor = TXATTN_MASK_TENSOR_ADDITIVE;
          txattn_plan *plan = NULL;
          cr_assert_eq(txattn_plan_create(ctx, &p, NULL, &plan), TXATTN_OK, "%s %s: %s", m.name,
                       k.kind, txattn_last_error());
          const char *name = txattn_plan_kernel(plan);
          cr_assert(strncmp(name, "masked.", 7) != 0 && strncmp(name, "naive.", 6) != 0,
                    "%s %s %s, %d threads: the estimate picked %s", m.name, k.kind,
                    decode ? "decode" : "prefill", threads, name);
          txattn_plan_free(plan);
        }
      }
    }
    txattn_context_free(ctx);
  }
}
