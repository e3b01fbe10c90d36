/* SPDX-License-Identifier: MIT */
/* The catalogue of real models (txattn.h, "The catalogue of real models"): each model's attention
 * layer kinds as its published configuration gives them. Conventions, the same for every entry:
 * a configuration's sliding window of W tokens is TXATTN_MASK_WINDOW with window_left W - 1 and
 * window_right 0 (a query sees itself and the W - 1 tokens before it, as Hugging Face's masks
 * read `sliding_window`); the scale is what the model multiplies q.k by, head_dim^-0.5 unless the
 * source says otherwise; a model's layers of one kind are counted from its layer list. */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "struct_size.h"
#include "txattn/txattn.h"

typedef struct model_entry {
  const char *name, *title, *source, *note;
  int n_kinds;
  txattn_model_layer_info kinds[TXATTN_MODEL_MAX_KINDS];
} model_entry;

/* A kind's common fields: struct_size, name, layer count, heads, head sizes, mask and scale; KIND
   runs for each generated token, ENCODER only once over the input. */
#define ENCODER(kind_, layers_, hq, hkv, dqk, dv, mask_, scale_)                                   \
  .struct_size = sizeof(txattn_model_layer_info), .kind = (kind_), .layers = (layers_),            \
  .heads_q = (hq), .heads_kv = (hkv), .d_qk = (dqk), .d_v = (dv), .mask = (mask_),                 \
  .scale = (float)(scale_)
#define KIND(...) ENCODER(__VA_ARGS__), .decode = 1
#define CAUSAL    TXATTN_MASK_CAUSAL
#define WINDOW    TXATTN_MASK_WINDOW
#define NONE      TXATTN_MASK_NONE
/* head_dim^-0.5 of the head sizes below */
#define RSQRT_64  0.125
#define RSQRT_96  0.10206207261596575
#define RSQRT_128 0.08838834764831845

static const model_entry models[] = {
    {"llama-3.1-8b",
     "Llama 3.1 8B",
     "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json: num_attention_heads "
     "32, "
     "num_key_value_heads 8, hidden_size 4096 (head 128), num_hidden_layers 32",
     "",
     1,
     {{KIND("self", 32, 32, 8, 128, 128, CAUSAL, RSQRT_128)}}},
    {"mistral-7b",
     "Mistral 7B v0.1",
     "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json: num_attention_heads "
     "32, num_key_value_heads 8, hidden_size 4096 (head 128), num_hidden_layers 32, sliding_window "
     "4096",
     "",
     1,
     {{KIND("local", 32, 32, 8, 128, 128, WINDOW, RSQRT_128), .window_left = 4095}}},
    {"gemma-2-9b",
     "Gemma 2 9B",
     "https://huggingface.co/google/gemma-2-9b/blob/main/config.json: num_attention_heads 16, "
     "num_key_value_heads 8, head_dim 256, num_hidden_layers 42 alternating local (sliding_window "
     "4096) and global, attn_logit_softcapping 50.0, query_pre_attn_scalar 256 (scale 256^-0.5 = "
     "1/16)",
     "",
     2,
     {{KIND("local", 21, 16, 8, 256, 256, WINDOW, 0.0625), .window_left = 4095, .softcap = 50.0f},
      {KIND("global", 21, 16, 8, 256, 256, CAUSAL, 0.0625), .softcap = 50.0f}}},
    {"gpt-oss-20b",
     "gpt-oss 20B",
     "https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json: num_attention_heads 64, "
     "num_key_value_heads 8, head_dim 64, num_hidden_layers 24, layer_types alternating "
     "sliding_attention (sliding_window 128) and full_attention; a learned sink logit per head "
     "(the model's attention sinks)",
     "",
     2,
     {{KIND("local", 12, 64, 8, 64, 64, WINDOW, RSQRT_64), .window_left = 127, .sinks = 1},
      {KIND("global", 12, 64, 8, 64, 64, CAUSAL, RSQRT_64), .sinks = 1}}},
    {"bloom-7b1",
     "BLOOM 7B1",
     "https://huggingface.co/bigscience/bloom-7b1/blob/main/config.json: n_head 32, hidden_size "
     "4096 (head 128), n_layer 30; ALiBi with the paper's slopes (build_alibi_tensor: max_bias 8)",
     "",
     1,
     {{KIND("self", 30, 32, 32, 128, 128, CAUSAL, RSQRT_128), .alibi = 1, .alibi_max_bias = 8.0f}}},
    {"qwen2.5-7b",
     "Qwen2.5 7B",
     "https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json: num_attention_heads 28, "
     "num_key_value_heads 4, hidden_size 3584 (head 128), num_hidden_layers 28, use_sliding_window "
     "false",
     "",
     1,
     {{KIND("self", 28, 28, 4, 128, 128, CAUSAL, RSQRT_128)}}},
    {"deepseek-v2-lite",
     "DeepSeek-V2-Lite",
     "https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite/blob/main/config.json: "
     "num_attention_heads 16, qk_nope_head_dim 128 + qk_rope_head_dim 64 (d_qk 192), v_head_dim "
     "128, num_hidden_layers 27, kv_lora_rank 512 (MLA, attention over the decompressed heads); "
     "scale 192^-0.5 mscale^2 with rope_scaling yarn factor 40, mscale_all_dim 0.707 (mscale = "
     "0.1 * 0.707 ln 40 + 1)",
     "",
     1,
     {{KIND("self", 27, 16, 16, 192, 128, CAUSAL, 0.1147213867929261)}}},
    {"phi-3-mini",
     "Phi-3-mini 4k",
     "https://huggingface.co/microsoft/Phi-3-mini-4k-instruct/blob/main/config.json: "
     "num_attention_heads 32, num_key_value_heads 32, hidden_size 3072 (head 96), "
     "num_hidden_layers 32, sliding_window 2047",
     "",
     1,
     {{KIND("local", 32, 32, 32, 96, 96, WINDOW, RSQRT_96), .window_left = 2046}}},
    {"whisper-base",
     "Whisper base",
     "https://huggingface.co/openai/whisper-base/blob/main/config.json: d_model 512, "
     "encoder_attention_heads 8 and decoder_attention_heads 8 (head 64), encoder_layers 6, "
     "decoder_layers 6, max_source_positions 1500 (encoder frames), max_target_positions 448",
     "",
     3,
     {{ENCODER("encoder", 6, 8, 8, 64, 64, NONE, RSQRT_64), .n_q = 1500, .n_kv = 1500},
      {KIND("decoder", 6, 8, 8, 64, 64, CAUSAL, RSQRT_64)},
      {KIND("cross", 6, 8, 8, 64, 64, NONE, RSQRT_64), .n_q = 448, .n_kv = 1500}}},
    {"bert-base",
     "BERT base (uncased)",
     "https://huggingface.co/google-bert/bert-base-uncased/blob/main/config.json: "
     "num_attention_heads 12, hidden_size 768 (head 64), num_hidden_layers 12, "
     "max_position_embeddings 512; batches padded to the longest sequence (a ragged batch here)",
     "",
     1,
     {{ENCODER("encoder", 12, 12, 12, 64, 64, NONE, RSQRT_64), .ragged = 1}}},
    {"t5-base",
     "T5 base",
     "https://huggingface.co/google-t5/t5-base/blob/main/config.json: num_heads 12, d_kv 64, "
     "num_layers 12 (encoder) and num_decoder_layers 12, relative_attention_num_buckets 32; no "
     "score scale (1, folded into the weights' initialisation)",
     "the relative position bias of the self-attention layers is a learned table of 32 buckets "
     "per head: pass it as an additive mask tensor [heads][n_q][n_kv] (txtune check/bench "
     "--model fill T5's buckets from a seeded table)",
     3,
     {{ENCODER("encoder", 12, 12, 12, 64, 64, NONE, 1.0), .relative_bias = 1},
      {KIND("decoder", 12, 12, 12, 64, 64, CAUSAL, 1.0), .relative_bias = 1},
      {KIND("cross", 12, 12, 12, 64, 64, NONE, 1.0)}}},
    {"streamingllm-llama",
     "StreamingLLM on Llama 3.1 8B",
     "https://arxiv.org/abs/2309.17453 (Xiao et al., Efficient Streaming Language Models with "
     "Attention Sinks): 4 initial tokens kept as attention sinks beside a window of recent ones, a "
     "cache of 1024 = 4 + 1020; heads and layers of "
     "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json",
     "",
     1,
     {{KIND("local", 32, 32, 8, 128, 128, WINDOW, RSQRT_128), .window_left = 1019,
       .sink_keys = 4}}},
};
enum { N_MODELS = sizeof models / sizeof models[0] };

int64_t txattn_model_count(void) {
  return N_MODELS;
}

static txattn_status model_index(const char *fn, int64_t i, const void *out) {
  TXATTN_RETURN_IF(out == NULL, TXATTN_E_INVALID, "%s: out is NULL", fn);
  TXATTN_RETURN_IF(i < 0 || i >= N_MODELS, TXATTN_E_INVALID,
                   "%s: model %lld is past the catalogue's %d models (txattn_model_count)", fn,
                   (long long)i, N_MODELS);
  return TXATTN_OK;
}

txattn_status txattn_model_get(int64_t i, txattn_model_info *out) {
  TXATTN_FORWARD_IF_ERROR(model_index("txattn_model_get", i, out));
  const model_entry *m = &models[i];
  txattn_model_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.name = m->name;
  info.title = m->title;
  info.source = m->source;
  info.note = m->note;
  info.n_kinds = m->n_kinds;
  for (int k = 0; k < m->n_kinds; k++) info.layers += m->kinds[k].layers;
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_model_info, out, &info));
  return txattn__ok();
}

txattn_status txattn_model_layer(int64_t i, int64_t kind, txattn_model_layer_info *out) {
  TXATTN_FORWARD_IF_ERROR(model_index("txattn_model_layer", i, out));
  TXATTN_RETURN_IF(kind < 0 || kind >= models[i].n_kinds, TXATTN_E_INVALID,
                   "txattn_model_layer: %s has %d kinds of layer, not kind %lld", models[i].name,
                   models[i].n_kinds, (long long)kind);
  txattn_model_layer_info info;
  memset(&info, 0, sizeof info); /* padding too: callers may compare */
  info = models[i].kinds[kind];
  TXATTN_FORWARD_IF_ERROR(TXATTN__STRUCT_OUT(txattn_model_layer_info, out, &info));
  return txattn__ok();
}

txattn_status txattn_model_find(const char *name, int64_t *index) {
  TXATTN_RETURN_IF(name == NULL || index == NULL, TXATTN_E_INVALID,
                   "txattn_model_find: name and index must not be NULL");
  for (int i = 0; i < N_MODELS; i++)
    if (strcmp(models[i].name, name) == 0) {
      *index = i;
      return txattn__ok();
    }
  char names[512] = "";
  size_t used = 0;
  for (int i = 0; i < N_MODELS && used < sizeof names; i++)
    used +=
        (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", models[i].name);
  return txattn__fail(TXATTN_E_NOT_FOUND, "no model '%s' in the catalogue; it has %s", name, names);
}
