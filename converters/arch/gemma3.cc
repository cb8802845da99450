// Gemma 3 (text) from a GGUF file written by llama.cpp: the shared decoder (arch/decoder.h) with
// QK-norm, RMSNorm after attention and after the FFN, GeGLU (gelu tanh), NEOX RoPE, embeddings
// scaled by sqrt(d_model), a tied LM head, and sliding-window layers (every sixth layer global
// unless the file gives the pattern) with their own RoPE theta. Norm weights in the GGUF already
// include Gemma's +1.
#include <cmath>
#include <string>

#include "converters/arch/arch.h"
#include "converters/arch/decoder.h"

namespace kestrel {

Status ConvertGemma3(const gguf::File& f, const ConvertOptions& options, KesModel* m) {
  DecoderConfig c;
  c.arch = "gemma3";
  KES_RETURN_IF_ERROR(ReadDecoderConfig(f, &c));
  KES_RETURN_IF_ERROR(GetDimension(f, "gemma3.attention.sliding_window", 1 << 24, &c.window));
  KES_RETURN_IF_ERROR(ReadSlidingLayers(f, 6, &c));
  // llama.cpp's default for Gemma 3's local layers when the file does not say.
  double theta_local = 10000.0;
  if (f.Has("gemma3.rope.freq_base_swa")) {
    KES_RETURN_IF_ERROR(f.GetFloat("gemma3.rope.freq_base_swa", &theta_local));
  }
  KES_CHECK_OR_RETURN(theta_local > 0, "gemma3.rope.freq_base_swa must be positive");
  c.rope_theta_local = static_cast<float>(theta_local);
  c.embed_scale = std::sqrt(static_cast<float>(c.d_model));
  c.activation = fb::Activation::GeluTanh;
  c.rope_style = fb::RopeStyle::Neox;
  c.qk_norm = true;
  c.post_norms = true;
  // As llama.cpp: Gemma 3 27B (62 layers) scales queries by 1/sqrt(d_model / heads), the others
  // by 1/sqrt(head_dim); a file's attention.scale (read above) wins over both.
  if (!f.Has("gemma3.attention.scale") && c.n_layers == 62) {
    c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.d_model / c.n_heads));
  }
  return ConvertDecoder(f, std::move(c), options, m);
}

}  // namespace kestrel
