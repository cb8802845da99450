// The Llama family from GGUF files written by llama.cpp: `llama` (Llama 2/3, SmolLM/SmolLM2,
// Mistral, TinyLlama), `qwen2` (Qwen2/2.5), `qwen3` (Qwen3 dense) and `smollm3`. The shared
// decoder (arch/decoder.h) with SwiGLU and no post-norms; a separate output.weight or a tied
// head; Q/K/V biases where the file has them (Qwen2). Qwen3 is Qwen2 without the biases and
// with QK-norm: llama.cpp's qwen3 graph RMS-normalizes each query and key head (attn_q_norm /
// attn_k_norm, [head_dim], stored as Hugging Face has them: no +1) before RoPE, as Gemma 3 does.
// Its heads need not split d_model: Qwen3-0.6B has d_model 1024 and 16 heads of 128
// (attention.key_length).
// SmolLM3 is Llama with no RoPE on q and k in every 4th layer (layers 3, 7, ...: llama.cpp's
// smollm3 graph skips it where (il + 1) % n_no_rope_layer_step == 0). The file has no key for
// the step: llama.cpp hard-codes 4 (HF's no_rope_layer_interval) and so do we.
//
// RoPE layout: llama.cpp runs `llama` files with its "norm" RoPE, which rotates adjacent pairs
// (x[2i], x[2i+1]); convert_hf_to_gguf.py permutes the rows of attn_q/attn_k so that this equals
// Hugging Face's rotate_half on the original weights. We keep the file's rows as they are and
// rotate adjacent pairs too (`smollm3` likewise). `qwen2` and `qwen3` files are not permuted and
// use NEOX RoPE (halves).
// Llama 3 frequency scaling arrives as the rope_freqs.weight tensor (per-pair divisors).
#include <string>

#include "converters/arch/arch.h"
#include "converters/arch/decoder.h"

namespace kestrel {

Status ConvertLlama(const gguf::File& f, const ConvertOptions& options, KesModel* m) {
  DecoderConfig c;
  KES_RETURN_IF_ERROR(f.GetString("general.architecture", &c.arch));
  const bool permuted = c.arch == "llama" || c.arch == "smollm3";
  KES_CHECK_OR_RETURN(permuted || c.arch == "qwen2" || c.arch == "qwen3",
                      "expected a llama, qwen2, qwen3 or smollm3 GGUF, found '" + c.arch + "'");
  KES_RETURN_IF_ERROR(ReadDecoderConfig(f, &c));
  c.activation = fb::Activation::Silu;
  c.rope_style = permuted ? fb::RopeStyle::Adjacent : fb::RopeStyle::Neox;
  c.qk_norm = c.arch == "qwen3";
  if (c.arch == "smollm3") {
    constexpr uint32_t kNoRopeLayerStep = 4;
    for (uint32_t l = 0; l < c.n_layers; ++l) c.no_rope[l] = (l + 1) % kNoRopeLayerStep == 0;
  }
  const std::string experts = c.arch + ".expert_count";
  if (f.Has(experts)) {
    int64_t n = 0;
    KES_RETURN_IF_ERROR(f.GetInt(experts, &n));
    KES_CHECK_OR_RETURN(n == 0, experts + " is " + std::to_string(n) +
                                    ": mixture-of-experts models (Mixtral) are not supported");
  }
  return ConvertDecoder(f, std::move(c), options, m);
}

}  // namespace kestrel
