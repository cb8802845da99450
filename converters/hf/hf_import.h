// Hugging Face checkpoint folders -> .kes: config.json, model.safetensors (or its shards), the
// tokenizer files and, when present, the sentence-transformers modules that say how token
// states become one embedding per text.
#pragma once

#include <string>

#include "converters/convert_options.h"
#include "converters/kes_model.h"
#include "runtime/status.h"

namespace kestrel {

// Conversion choices that only encoders have.
struct HfEncoderOptions {
  uint32_t max_seq_length = 0;  // 0: sentence_bert_config.json's, else max_position_embeddings
  // Tokens per encode step (the arena holds their activations), raised to one longest sequence
  // and capped at ConvertOptions::max_batch of them. 512 keeps a step's activations in the caches:
  // a full 32 x 128-token step spills them to memory and runs slower, with an arena of 72 MiB
  // instead of 4.5 (figures: docs/kernels.md).
  uint32_t step_tokens = 512;
  // q8 and q4 only: how the activations' outlier channels are smoothed (SmoothQuant,
  // converters/hf/smooth_quant.h), calibrated on the converter's own texts (empty), on a file of
  // texts, one per line, or "none": no smoothing.
  std::string calibration;
};

// Whether `path` is a folder (a checkpoint) rather than a file.
bool IsDirectory(const std::string& path);
// Whether anything exists at `path`.
bool PathExists(const std::string& path);

// Converts the encoder checkpoint in `folder` by its config.json model_type (supported: bert,
// whisper; decoder folders go through converters/hf/decoder_gguf.h instead).
// Weight dtypes: options.weight_dtype (f32, f16, bf16, q8, q4) for the matmul and word-embedding
// weights; keep_types stores them as the checkpoint has them (F32, F16 or BF16).
Status ConvertHfCheckpoint(const std::string& folder, const ConvertOptions& options,
                           const HfEncoderOptions& encoder, KesModel* out);

}  // namespace kestrel
