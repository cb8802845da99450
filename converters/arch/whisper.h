// Whisper's audio encoder as a .kes plan, whatever file the weights came from (a CTranslate2
// folder: converters/ct2/whisper_convert.cc; a Hugging Face checkpoint: converters/hf/whisper.cc):
// the readers store the tensors and fill WhisperEncoderWeights, this builds the rest.
#pragma once

#include <cstdint>
#include <vector>

#include "converters/convert_options.h"
#include "converters/kes_model.h"

namespace kestrel {

inline constexpr float kWhisperLayerNormEps = 1e-5f;  // Whisper's nn.LayerNorm default
inline constexpr uint32_t kWhisperConvKernel = 3;

struct WhisperShape {
  uint32_t n_mels = 0, d_model = 0, n_heads = 0, ffn = 0, n_positions = 0, vocab = 0;
  uint32_t n_layers = 0;
};

// Tensor ids; a bias may be PlanBuilder::kNone (Hugging Face's k_proj has none).
// An attention block: its pre-LayerNorm and the q, k, v and output projections.
struct WhisperAttentionWeights {
  uint32_t norm, norm_bias, q, q_bias, k, k_bias, v, v_bias, o, o_bias;
};
// A feed-forward block: its pre-LayerNorm, fc1 (up) and fc2 (down).
struct WhisperFeedForwardWeights {
  uint32_t norm, norm_bias, up, up_bias, down, down_bias;
};
struct WhisperEncoderLayerWeights {
  WhisperAttentionWeights attn;
  WhisperFeedForwardWeights ffn;
};
struct WhisperEncoderWeights {
  uint32_t conv1, conv1_bias, conv2, conv2_bias, positions, final_norm, final_norm_bias;
  std::vector<WhisperEncoderLayerWeights> layers;
};

// The decoder: token embeddings (tied to the output projection), learned positions, pre-LN
// blocks of causal self-attention, cross-attention over the encoder's states, and feed-forward.
struct WhisperDecoderShape {
  uint32_t n_layers = 0, n_heads = 0, ffn = 0, n_text_positions = 0;
};
struct WhisperDecoderLayerWeights {
  WhisperAttentionWeights self, cross;
  WhisperFeedForwardWeights ffn;
};
struct WhisperDecoderWeights {
  uint32_t embeddings, positions, final_norm, final_norm_bias;
  std::vector<WhisperDecoderLayerWeights> layers;
};

// Checks the shape's numbers (heads divide the width into head_dim <= 1024, positions
// 1..65536); the message says which is wrong.
Status CheckWhisperShape(const WhisperShape& shape);

// A Conv1d weight [out, in, kernel] (PyTorch's and CTranslate2's layout) as the matrix
// [out, kernel * in] that multiplies Im2Col's kernel-major rows.
std::vector<float> ConvolutionAsMatrix(const std::vector<float>& weight, size_t out_channels,
                                       size_t in_channels);
// The convolutions stay f16 (f32 panels with --weights f32): their rows are not whole blocks
// (80 mels x 3) and they are 1% of the weights.
fb::DType WhisperConvolutionDType(const ConvertOptions& options);

// How a Whisper matrix of `dtype` is stored: f32 in panels of 16 rows (ops/matmul_f32_panels.h),
// every other dtype as it is. The decoder's GEMVs (the tied 51,864-row output projection above
// all) then stream one linear read instead of four rows at a time, which is faster; the
// encoder's 1,500-position matmuls are faster on panels on an Intel Xeon with AVX-512 and no
// slower on Zen 4 (figures: docs/kernels.md).
// The tied table's token lookup reads its rows out of the panels (ops/embed.h).
fb::DType WhisperMatrixDType(fb::DType dtype);

// Sets the architecture, hyper-parameters and (empty) KV layout, and adds the "encode_audio"
// plan: one step is one 30-second window of n_positions positions, two log-mel frames each.
void BuildWhisperEncoder(const WhisperShape& shape, const WhisperEncoderWeights& w, KesModel* out);

// Adds the decoder: a KV layout of n_layers self-attention rings then n_layers cross-attention
// layers of the encoder's n_positions, the "cross_kv" plan (encoder states in, every layer's
// cross keys and values stored), and "prefill" (up to n_text_positions tokens) and "decode"
// plans (tokens in, the last token's logits out). The context becomes the decoder's
// n_text_positions. After BuildWhisperEncoder.
void BuildWhisperDecoder(const WhisperShape& shape, const WhisperDecoderShape& decoder,
                         const WhisperDecoderWeights& w, KesModel* out);

}  // namespace kestrel
