// A Hugging Face checkpoint opened for conversion: config.json with typed, range-checked reads,
// the safetensors weights, and the sentence-transformers pipeline around the model.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "converters/gguf_import.h"
#include "converters/hf/hf_import.h"
#include "converters/hf/sentence_transformers.h"
#include "converters/hf/smooth_quant.h"
#include "converters/kes_model.h"
#include "converters/safetensors/checkpoint.h"
#include "runtime/status.h"

namespace kestrel {

class HfConfig {
 public:
  Status Read(const std::string& path);
  const std::string& path() const { return path_; }
  bool Has(const std::string& key) const { return json_.contains(key); }
  // Errors name the file, the key, what was expected and what was found.
  Status Uint(const std::string& key, uint64_t max, uint32_t* out, uint64_t min = 1) const;
  Status String(const std::string& key, std::string* out) const;
  Status PositiveFloat(const std::string& key, double* out) const;

 private:
  std::string path_;
  nlohmann::json json_;
};

struct HfCheckpoint {
  std::string folder;
  HfConfig config;
  SentenceEmbeddingConfig sentence;
  std::unique_ptr<safetensors::Checkpoint> weights;

  // The .kes dtype a weight matrix is stored as: options.weight_dtype, or with keep_types its
  // own (F32, F16 or BF16).
  Status WeightDType(const std::string& name, const ConvertOptions& options,
                     fb::DType* dtype) const;
  // The values of tensor `name`, which must have `shape`, as f32.
  Status Read(const std::string& name, const std::vector<uint64_t>& shape,
              std::vector<float>* values) const;
  // Adds tensor `name`, which must have `shape`, to the model as `dtype`.
  Status Import(const std::string& name, fb::DType dtype, const std::vector<uint64_t>& shape,
                KesModel* model, uint32_t* id) const;
};

// input_maxima: nullptr, or the calibrated inputs of the f32 model's matmuls (by weight name),
// with which block-quantized matmuls are smoothed (converters/hf/smooth_quant.h).
Status ConvertBert(const HfCheckpoint& checkpoint, const ConvertOptions& options,
                   const HfEncoderOptions& encoder, const ChannelMaxima* input_maxima,
                   KesModel* out);
// Whisper's audio encoder and tokenizer (converters/hf/whisper.cc).
Status ConvertWhisperCheckpoint(const HfCheckpoint& checkpoint, const ConvertOptions& options,
                                KesModel* out);

}  // namespace kestrel
