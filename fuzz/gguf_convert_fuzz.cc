// Fuzz target: the GGUF reader and the whole conversion from it. Any bytes are parsed as a GGUF
// file; an accepted file is converted with the architecture it names, with weights as the last
// byte picks (keep, f32, f16, q8, q4, or the q4_k_m recipe); a conversion that succeeds must
// give a model the runtime accepts (fuzz::CheckConvertedModel), which is then run.
// Seeds: tiny GGUFs of each architecture and quant type (fuzz/corpus/gguf_convert).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "converters/arch/arch.h"
#include "converters/gguf/gguf_file.h"
#include "converters/gguf_import.h"
#include "converters/weight_recipe.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  const fuzz::AlignedCopy bytes(data, size);
  std::unique_ptr<gguf::File> file;
  if (!gguf::File::OpenFromMemory(bytes.data(), bytes.size(), &file).ok()) return 0;
  std::string arch;
  if (!file->GetString("general.architecture", &arch).ok()) return 0;
  const ArchitectureConverter convert = FindArchitecture(arch);
  if (!convert) return 0;

  const uint8_t choice = size > 0 ? data[size - 1] : 0;
  ConvertOptions options;
  options.prefill_tokens = 16;
  switch (choice % 6) {
    case 0: options.keep_types = HasQuantizedTensors(*file); break;
    case 1: options.weight_dtype = fb::DType::F32; break;
    case 2: options.weight_dtype = fb::DType::F16; break;
    case 3: options.weight_dtype = fb::DType::Q8_0; break;
    case 4: options.weight_dtype = fb::DType::Q4_0; break;
    case 5:
      if (!ChooseWeightTypes(*file, WeightRecipe::kQ4_K_M, &options.tensor_types).ok()) return 0;
      break;
  }
  KesModel model;
  if (!convert(*file, options, &model).ok()) return 0;
  fuzz::CheckConvertedModel(&model, choice / 6);
  return 0;
}
