// Phi-3 / Phi-3.5 from GGUF files written by llama.cpp (architecture `phi3`): the shared
// decoder (arch/decoder.h) with SwiGLU, NEOX RoPE and no biases, stored fused: attn_qkv holds
// the q, k and v rows one after another, ffn_up the gate's rows then the up projection's (no
// ffn_gate). Both are split by rows at conversion, losslessly for every weight type (a row is a
// whole run of blocks).
//
// LongRoPE (the 128k models): rope_factors_short and rope_factors_long divide the frequencies,
// the long ones when the session's context is longer than rope.scaling.original_context_length,
// as llama.cpp chooses (llama_model::get_rope_factors); the runtime picks them per session. The
// file's rope.scaling.attn_factor multiplies the cosines and sines of both q and k in llama.cpp:
// the Rope ops' magnitude here. (Not the attention scale: with partial rotary the elements that
// do not turn are not scaled.)
//
// Sliding window: llama.cpp reads attention.sliding_window for phi3 and then turns it off ("Phi
// SWA is currently disabled"); every layer attends to the whole context here too, so both give
// the same logits. Partial rotary (Phi-4-mini: rope.dimension_count 96 of head_dim 128) turns
// each head's first 96 elements, its LongRoPE factors 48 long (ReadDecoderConfig).
#include <cmath>
#include <string>

#include "converters/arch/arch.h"
#include "converters/arch/decoder.h"

namespace kestrel {

Status ConvertPhi3(const gguf::File& f, const ConvertOptions& options, KesModel* m) {
  DecoderConfig c;
  KES_RETURN_IF_ERROR(f.GetString("general.architecture", &c.arch));
  KES_CHECK_OR_RETURN(c.arch == "phi3", "expected a phi3 GGUF, found '" + c.arch + "'");
  KES_RETURN_IF_ERROR(ReadDecoderConfig(f, &c));
  c.activation = fb::Activation::Silu;
  c.rope_style = fb::RopeStyle::Neox;
  c.fused_gate_up = true;

  const bool has_long = f.FindTensor("rope_factors_long.weight") != nullptr;
  const bool has_short = f.FindTensor("rope_factors_short.weight") != nullptr;
  KES_CHECK_OR_RETURN(has_long == has_short,
                      "expected both rope_factors_long.weight and rope_factors_short.weight "
                      "(LongRoPE) or neither, found only " +
                          std::string(has_long ? "the long" : "the short") + " factors");
  if (has_long) {
    KES_CHECK_OR_RETURN(!c.rope_freq_factors,
                        "expected LongRoPE factors or rope_freqs.weight, found both");
    c.long_rope_above = c.context;
    const std::string original = c.arch + ".rope.scaling.original_context_length";
    if (f.Has(original)) {
      KES_RETURN_IF_ERROR(GetDimension(f, original, c.context, &c.long_rope_above));
    }
  }
  const std::string attn_factor_key = c.arch + ".rope.scaling.attn_factor";
  if (f.Has(attn_factor_key)) {
    double attn_factor = 0;
    KES_RETURN_IF_ERROR(f.GetFloat(attn_factor_key, &attn_factor));
    KES_CHECK_OR_RETURN(
        attn_factor > 0 && std::isfinite(attn_factor),
        attn_factor_key + ": expected a positive number, found " + std::to_string(attn_factor));
    c.rope_magnitude = static_cast<float>(attn_factor);
  }
  return ConvertDecoder(f, std::move(c), options, m);
}

}  // namespace kestrel
