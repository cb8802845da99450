// Whisper's audio encoder as a .kes plan, whatever file the weights came from (a CTranslate2
// folder: converters/ct2/whisper_convert.cc; a Hugging Face checkpoint: converters/hf/whisper.cc):
// the readers store the tensors and fill WhisperEncoderWeights, this builds the rest.
#pragma once

#include <cstdint>
#include <vector>

#include "converters/gguf_import.h"
#include "converters/kes_model.h"

namespace kestrel {

inline constexpr float kWhisperLayerNormEps = 1e-5f;  // Whisper's nn.LayerNorm default
inline constexpr uint32_t kWhisperConvKernel = 3;

struct WhisperShape {
  uint32_t n_mels = 0, d_model = 0, n_heads = 0, ffn = 0, n_positions = 0, vocab = 0;
  uint32_t n_layers = 0;
};

// Tensor ids; a bias may be PlanBuilder::kNone (Hugging Face's k_proj has none).
struct WhisperEncoderLayerWeights {
  uint32_t attn_norm, attn_norm_bias, q, q_bias, k, k_bias, v, v_bias, o, o_bias;
  uint32_t ffn_norm, ffn_norm_bias, up, up_bias, down, down_bias;
};
struct WhisperEncoderWeights {
  uint32_t conv1, conv1_bias, conv2, conv2_bias, positions, final_norm, final_norm_bias;
  std::vector<WhisperEncoderLayerWeights> layers;
};

// Checks the shape's numbers (heads divide the width into head_dim <= 1024, positions
// 1..65536); the message says which is wrong.
Status CheckWhisperShape(const WhisperShape& shape);

// A Conv1d weight [out, in, kernel] (PyTorch's and CTranslate2's layout) as the matrix
// [out, kernel * in] that multiplies Im2Col's kernel-major rows.
std::vector<float> ConvolutionAsMatrix(const std::vector<float>& weight, size_t out_channels,
                                       size_t in_channels);
// The convolutions stay f16 (f32 with --weights f32): their rows are not whole blocks (80 mels
// x 3) and they are 1% of the weights.
fb::DType WhisperConvolutionDType(const ConvertOptions& options);

// Sets the architecture, hyper-parameters and (empty) KV layout, and adds the "encode_audio"
// plan: one step is one 30-second window of n_positions positions, two log-mel frames each.
void BuildWhisperEncoder(const WhisperShape& shape, const WhisperEncoderWeights& w,
                         KesModel* out);

}  // namespace kestrel
