// kestrel-convert's work on one input, shared by the program (converters/convert_main.cc) and
// kes_convert (capi/convert_c.cc) so that the two write the same bytes and refuse the same
// inputs with the same words: the output checked before any work, the GGUF file, Hugging Face
// checkpoint or CTranslate2 folder imported, the .kes file written, verified by opening it, and
// only then put in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "converters/convert_options.h"
#include "converters/hf/hf_import.h"
#include "converters/weight_recipe.h"
#include "runtime/model.h"

namespace kestrel {

// The values of kestrel-convert's --weights (kes_convert_params.weights), for messages.
extern const char kWeightChoices[];

// What kestrel-convert's flags choose.
struct ConvertChoices {
  ConvertOptions convert;
  HfEncoderOptions encoder;
  bool weights_given = false;
  bool recipe_given = false;  // a K-quant mix, for GGUF input only
  WeightRecipe recipe = WeightRecipe::kQ4_K_M;
};

// Sets the weights `value` (one of kWeightChoices) chooses, replacing an earlier choice; false
// for any other value (the caller then stops with its message).
bool SetWeights(const std::string& value, ConvertChoices* choices);

// What the caller hears while converting; any may be empty.
struct ConvertHooks {
  std::function<void(size_t total)> on_total;  // a GGUF file's tensor count, once it is read
  // Tensors converted so far, and their bytes in the .kes.
  std::function<void(size_t done, uint64_t bytes)> on_tensor;
  std::function<void()> on_imported;  // before the file is planned and written
};

// Which kind of failure a conversion's is (kes_convert's status codes tell them apart).
enum class ConvertFailure {
  kNone,
  kBadArgument,  // the output would replace the input; a K-quant mix for a folder
  kIo,           // the output cannot be written, or the input cannot be opened at all
  kBadInput,     // the input is not a model the converter reads
  kUnsupported,  // a GGUF architecture the converter has no plan builder for
  kInternal,     // the written file fails the runtime's checks
};

struct ConvertResult {
  ConvertFailure failure = ConvertFailure::kNone;
  std::string message;  // kestrel-convert's error message when failure != kNone
  // On success: the model's architecture and tensor count, and the written file as opened to
  // verify it (kestrel-convert's summary line reads its sizes).
  std::string architecture;
  size_t tensors = 0;
  std::unique_ptr<Model> written;

  bool ok() const { return failure == ConvertFailure::kNone; }
};

// Converts `input` into `output` with `choices` (whose ConvertOptions the input's kind may
// complete). `weights_option` names the weights choice in messages ("--weights").
ConvertResult ConvertFile(const std::string& input, const std::string& output,
                          ConvertChoices* choices, const char* weights_option,
                          const ConvertHooks& hooks);

}  // namespace kestrel
