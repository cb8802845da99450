// Gemma 2 from a GGUF file written by llama.cpp: Gemma 3's decoder (arch/decoder.h) without
// QK-norm and with one RoPE base, plus two soft-caps: of the attention scores before the softmax
// (attn_logit_softcapping, 50 in the released models) and of the final logits
// (final_logit_softcapping, 30). Sliding-window layers alternate with global ones, the even
// layers sliding, unless the file gives the pattern. Like llama.cpp, queries are scaled by
// 1/sqrt(head_dim), or 1/sqrt(d_model / heads) for the 27B model (46 layers): llama.cpp does not
// read attention.scale for Gemma 2, and neither does this. Norm weights already include the +1.
#include <cmath>
#include <string>
#include <vector>

#include "converters/arch/arch.h"
#include "converters/arch/decoder.h"

namespace kestrel {
namespace {

// A soft-cap from the file, or llama.cpp's default when it has none; 0 turns it off.
Status ReadSoftCap(const gguf::File& f, const std::string& key, double fallback, float* out) {
  double v = fallback;
  if (f.Has(key)) KES_RETURN_IF_ERROR(f.GetFloat(key, &v));
  KES_CHECK_OR_RETURN(std::isfinite(v) && v >= 0,
                      key + ": expected 0 (off) or a positive cap, found " + std::to_string(v));
  *out = static_cast<float>(v);
  return OkStatus();
}

}  // namespace

Status ConvertGemma2(const gguf::File& f, const ConvertOptions& options, KesModel* m) {
  DecoderConfig c;
  c.arch = "gemma2";
  KES_RETURN_IF_ERROR(ReadDecoderConfig(f, &c));
  c.window = 4096;  // llama.cpp's default for Gemma 2
  if (f.Has("gemma2.attention.sliding_window")) {
    KES_RETURN_IF_ERROR(GetDimension(f, "gemma2.attention.sliding_window", 1 << 24, &c.window));
  }
  KES_RETURN_IF_ERROR(ReadSlidingLayers(f, 2, &c));
  double theta_local = c.rope_theta;
  if (f.Has("gemma2.rope.freq_base_swa")) {
    KES_RETURN_IF_ERROR(f.GetFloat("gemma2.rope.freq_base_swa", &theta_local));
  }
  KES_CHECK_OR_RETURN(theta_local > 0, "gemma2.rope.freq_base_swa must be positive");
  c.rope_theta_local = static_cast<float>(theta_local);
  // llama.cpp's defaults (those of the released models) when the file has no key.
  KES_RETURN_IF_ERROR(ReadSoftCap(f, "gemma2.attn_logit_softcapping", 50.0, &c.attn_softcap));
  KES_RETURN_IF_ERROR(ReadSoftCap(f, "gemma2.final_logit_softcapping", 30.0, &c.final_softcap));
  c.embed_scale = std::sqrt(static_cast<float>(c.d_model));
  c.activation = fb::Activation::GeluTanh;
  c.rope_style = fb::RopeStyle::Neox;
  c.post_norms = true;
  c.attention_scale = c.n_layers == 46 ? 1.0f / std::sqrt(static_cast<float>(c.d_model / c.n_heads))
                                       : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return ConvertDecoder(f, std::move(c), options, m);
}

}  // namespace kestrel
