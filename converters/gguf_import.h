// Pieces every architecture's import shares: weights from GGUF tensors into .kes dtypes, and
// hyper-parameters (the tokenizer: converters/gguf_tokenizer.h).
#pragma once

#include <cstdint>
#include <string>

#include "converters/gguf/gguf_file.h"
#include "converters/kes_model.h"
#include "runtime/status.h"

namespace kestrel {

struct ConvertOptions {
  fb::DType weight_dtype = fb::DType::F32;  // matmul and embedding weights; norms stay f32
  uint32_t prefill_tokens = 128;            // max tokens per prefill step (the "chunk")
  uint32_t score_tokens = 8;                // max tokens per step of the all-logits "score" plan
};

// Stores GGUF tensor `name` as `dtype` with the .kes shape (outermost first, i.e. GGUF's ne
// reversed); expected_shape (outermost first) must match. Returns the tensor id. A tensor already
// in ggml's Q8_0 / Q4_0 and asked for as the same dtype is repacked losslessly; anything else is
// dequantized exactly as ggml does, then converted (rounded to nearest, or quantized with ggml's
// reference quantizer).
Status ImportTensor(const gguf::File& file, const std::string& name, fb::DType dtype,
                    const std::vector<uint64_t>& expected_shape, KesModel* model, uint32_t* id);

// Reads an integer hyper-parameter that must be in [1, max].
Status GetDimension(const gguf::File& file, const std::string& key, uint64_t max, uint32_t* out);

}  // namespace kestrel
