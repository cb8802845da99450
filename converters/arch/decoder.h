// The decoder-only transformer every GGUF decoder family shares: hyper-parameters read under the
// file's own architecture prefix, one per-layer weight importer, and the plan builder
// (prefill, decode, score). A family module (gemma3.cc, llama.cc) reads what is particular to
// it into DecoderConfig and calls these.
//
// Per layer, in order (optional parts in brackets):
//   h = attn_norm(x); q, k, v = h Wq [+ bq], h Wk [+ bk], h Wv [+ bv]; [q, k = q_norm(q),
//   k_norm(k)] [q, k = rope(q), rope(k)]; store k, v; a = attention(q) Wo; [a = post_attn_norm(a)];
//   x = x + a h = ffn_norm(x); f = (act(h Wgate) * h Wup) Wdown; [f = post_ffn_norm(f)]; x = x + f
// then logits = output_norm(x) Wout (Wout: output.weight, or the embedding table when tied),
// [logits = c tanh(logits / c)].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converters/gguf/gguf_file.h"
#include "converters/gguf_import.h"
#include "converters/kes_model.h"
#include "runtime/status.h"

namespace kestrel {

struct DecoderConfig {
  std::string arch;  // GGUF general.architecture: the prefix of its hyper-parameter keys
  uint32_t n_layers = 0, d_model = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, ffn_dim = 0;
  uint32_t vocab = 0, context = 0;
  float norm_eps = 0;
  float embed_scale = 1.0f;   // Gemma: sqrt(d_model)
  float attention_scale = 0;  // multiplies q.k
  fb::Activation activation = fb::Activation::Silu;
  fb::RopeStyle rope_style = fb::RopeStyle::Neox;
  float rope_theta = 10000.0f;     // global-attention layers
  float rope_freq_scale = 1.0f;    // global-attention layers: 1 / linear scaling factor
  float rope_theta_local = 0;      // sliding-window layers (0: no such layers)
  bool rope_freq_factors = false;  // rope_freqs.weight divides the frequencies (Llama 3)
  // Partial rotary (rope.dimension_count below the head size: Phi-4-mini): each head's first
  // rotary_dims elements turn, the rest pass through; 0: the whole head.
  uint32_t rotary_dims = 0;
  // Multiplies q's and k's rotated elements (Phi-3's rope.scaling.attn_factor, which llama.cpp
  // applies to its cosines and sines).
  float rope_magnitude = 1.0f;
  // LongRoPE (Phi-3): rope_factors_short/long.weight divide the frequencies, the long ones in a
  // session of more than this many tokens (the model's original context); 0: no such factors.
  uint32_t long_rope_above = 0;
  bool fused_gate_up = false;  // ffn_up is [gate; up] and there is no ffn_gate (Phi-3)
  uint32_t window = 0;         // sliding window of local layers
  std::vector<bool> sliding;   // per layer
  std::vector<bool> no_rope;   // per layer: q, k not rotated (SmolLM3's every 4th)
  bool qk_norm = false;        // RMSNorm of q and k per head before RoPE (Gemma 3, Qwen3)
  bool post_norms = false;     // RMSNorm of the attention and FFN outputs (Gemma 2/3)
  float attn_softcap = 0;      // > 0: scores = c tanh(scores / c) (Gemma 2)
  float final_softcap = 0;     // > 0: logits = c tanh(logits / c) (Gemma 2)
  // An embedding model (<arch>.pooling_type mean, cls or last: Qwen3-Embedding): the layers run
  // over each text of a batch (causally unless `causal` is false) and output_norm's rows are
  // pooled and L2-normalized into one embedding per text (an "encode" plan), instead of
  // generating.
  bool embedding = false;
  fb::PoolMode pooling = fb::PoolMode::Last;
  bool causal = true;  // <arch>.attention.causal: false only in an embedding model
};

inline constexpr uint32_t kNoTensor = PlanBuilder::kNone;

struct DecoderLayerWeights {
  uint32_t attn_norm, q, k, v, o, ffn_norm, gate, up, down;
  uint32_t q_bias = kNoTensor, k_bias = kNoTensor, v_bias = kNoTensor;
  uint32_t q_norm = kNoTensor, k_norm = kNoTensor;
  uint32_t post_attn_norm = kNoTensor, post_ffn_norm = kNoTensor;
};

struct DecoderWeights {
  uint32_t embedding, output_norm;
  uint32_t output;                       // the embedding table when the head is tied
  uint32_t rope_freqs = kNoTensor;       // [rotary / 2] with config.rope_freq_factors, or the
                                         // short LongRoPE factors with config.long_rope_above
  uint32_t rope_long_freqs = kNoTensor;  // the long LongRoPE factors
  std::vector<DecoderLayerWeights> layers;
};

// Reads the keys every decoder family shares, under config->arch: block_count,
// embedding_length, attention.head_count(_kv), attention.key_length / value_length (default
// embedding_length / head_count), feed_forward_length, context_length,
// attention.layer_norm_rms_epsilon, rope.freq_base (default 10000), rope.dimension_count (the
// head size, or fewer: partial rotary), attention.scale (when present), and
// rope.scaling (none or linear here; a family that supports more reads it itself first and
// passes allow_scaling), pooling_type (an embedding model when mean, cls or last).
// attention_scale defaults to 1/sqrt(head_dim), all layers global.
Status ReadDecoderConfig(const gguf::File& file, DecoderConfig* config);

// config->sliding from <arch>.attention.sliding_window_pattern: one flag per layer (an array),
// or a period N whose every Nth layer is global (default_pattern when the key is absent: Gemma 2
// alternates, 2; Gemma 3 has five sliding layers per global one, 6).
Status ReadSlidingLayers(const gguf::File& file, int64_t default_pattern, DecoderConfig* config);

// Imports token_embd, output_norm, output (or ties it to token_embd when absent) and every
// layer's blk.N.* tensors: the ones every decoder has, plus attn_q/k/v biases when the file has
// them, attn_q_norm/attn_k_norm with config.qk_norm, post_attention_norm/post_ffw_norm with
// config.post_norms, rope_freqs with config.rope_freq_factors, rope_factors_short/long with
// config.long_rope_above. A fused attn_qkv (where the file has one) and, with
// config.fused_gate_up, a fused ffn_up are split by rows into the separate matrices.
Status ImportDecoderWeights(const gguf::File& file, const DecoderConfig& config,
                            const ConvertOptions& options, KesModel* model,
                            DecoderWeights* weights);

// Writes the hyper-parameters, the KV layout and the prefill, decode and score plans; for an
// embedding model (config.embedding) the hyper-parameters and the encode plan, whose texts are
// at most options.prefill_tokens long (the step's tokens).
void AddDecoderPlans(const DecoderConfig& config, const DecoderWeights& weights,
                     const ConvertOptions& options, KesModel* model);

// The whole conversion once a family has filled config (tokenizer, weights, plans, name).
Status ConvertDecoder(const gguf::File& file, DecoderConfig config, const ConvertOptions& options,
                      KesModel* model);

}  // namespace kestrel
