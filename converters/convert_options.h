// How a decoder's GGUF is converted: the weights' dtypes (kestrel-convert's --weights) and the
// plans' step sizes. Filled from kestrel-convert's flags (converters/convert_file.h) or
// kes_convert's params, read by every architecture's import (converters/arch/) and the weight
// import they share (converters/gguf_import.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "converters/gguf/gguf_file.h"
#include "kestrel_generated.h"

namespace kestrel {

struct ConvertOptions {
  fb::DType weight_dtype = fb::DType::F32;  // matmul and embedding weights; norms stay f32
  // --weights keep: every matmul and embedding weight keeps its GGUF type (weight_dtype unused).
  bool keep_types = false;
  // --weights q4_k_m, q4_k, q5_k, q6_k: the GGUF type of each weight, by name, as llama.cpp's
  // quantize tool would choose it (ChooseWeightTypes, converters/weight_recipe.h); a weight
  // absent from it keeps its own type, as llama.cpp keeps it. Used when not empty.
  std::map<std::string, gguf::GgmlType> tensor_types;
  uint32_t prefill_tokens = 512;  // max tokens per prefill step (the "chunk")
  uint32_t score_tokens = 8;      // max tokens per step of the all-logits "score" plan
  // Embedding models (BERT folders, GGUF embedders): texts per encode step (--max-batch).
  uint32_t max_batch = 32;
};

}  // namespace kestrel
