// Fuzz target: the CTranslate2 model.bin reader (converters/ct2/ct2_file.h), the weights file of
// the Whisper folders faster-whisper runs. Any bytes are opened as a model.bin; an accepted file
// must hold what the reader promises: every variable's bytes inside the input and equal to its
// shape times its dtype's size, every alias resolving to a variable; every float variable is
// read as floats and every scalar integer as an integer. Then the whole Whisper conversion runs on
// it (weights as the last byte chooses), with the tokenizer files of fuzz/ct2_tokenizer (a tiny
// Whisper's, 287 pieces): a conversion that succeeds must give a model the runtime accepts, whose
// audio encoder then runs (fuzz::CheckConvertedModel).
// Seeds: tiny WhisperSpec-like files of each dtype and a tiny Whisper of 16 positions
// (fuzz/corpus/ct2_model, fuzz/make_seeds.py).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "converters/ct2/ct2_file.h"
#include "converters/ct2/whisper_convert.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  const fuzz::AlignedCopy bytes(data, size);
  std::unique_ptr<ct2::File> file;
  if (!ct2::File::OpenFromMemory(bytes.data(), bytes.size(), "model.bin", &file).ok()) return 0;
  const uint8_t* begin = bytes.data();
  const uint8_t* end = begin + bytes.size();
  std::vector<float> values;
  for (const ct2::Variable& v : file->variables()) {
    if (v.bytes != v.n_elements * ct2::DTypeBytes(v.dtype)) {
      fuzz::Die("variable '" + v.name + "' has " + std::to_string(v.bytes) + " bytes for " +
                std::to_string(v.n_elements) + " elements");
    }
    if (v.bytes > 0 && (v.data < begin || v.data + v.bytes > end)) {
      fuzz::Die("variable '" + v.name + "' lies outside the input");
    }
    if (file->Find(v.name) != &v) fuzz::Die("Find does not return variable '" + v.name + "'");
    int64_t scalar = 0;
    const bool is_float =
        v.dtype == ct2::DType::F32 || v.dtype == ct2::DType::F16 || v.dtype == ct2::DType::BF16;
    if (file->ReadF32(v, &values).ok() != is_float) {
      fuzz::Die("ReadF32 on '" + v.name + "' disagrees with its dtype");
    }
    if (is_float && values.size() != v.n_elements) fuzz::Die("ReadF32 returned a wrong count");
    const bool is_scalar_int = !is_float && v.shape.empty();
    if (file->ReadScalarInt(v, &scalar).ok() != is_scalar_int) {
      fuzz::Die("ReadScalarInt on '" + v.name + "' disagrees with its shape and dtype");
    }
  }
  for (const auto& [alias, target] : file->aliases()) {
    if (file->Find(alias) == nullptr || file->Find(alias) != file->Find(target)) {
      fuzz::Die("alias '" + alias + "' does not resolve to '" + target + "'");
    }
  }

  const uint8_t choice = size > 0 ? data[size - 1] : 0;
  ConvertOptions options = fuzz::FloatWeightsChoice(choice);
  KesModel model;
  if (!ct2::ConvertWhisper(KESTREL_SOURCE_DIR "/fuzz/ct2_tokenizer", *file, options, &model).ok()) {
    return 0;
  }
  fuzz::CheckConvertedModel(&model, choice / 5);
  return 0;
}
