// Architectures the converter knows. Each builds the plans and imports the weights of one model
// family from a GGUF file; the runtime knows only ops.
#pragma once

#include <string>
#include <string_view>

#include "converters/gguf/gguf_file.h"
#include "converters/convert_options.h"
#include "converters/kes_model.h"
#include "runtime/status.h"

namespace kestrel {

using ArchitectureConverter = Status (*)(const gguf::File& file, const ConvertOptions& options,
                                         KesModel* out);

// By GGUF general.architecture; nullptr when unsupported.
ArchitectureConverter FindArchitecture(std::string_view name);
// Supported names, comma-separated, for error messages.
std::string SupportedArchitectures();

Status ConvertGemma2(const gguf::File& file, const ConvertOptions& options, KesModel* out);
Status ConvertGemma3(const gguf::File& file, const ConvertOptions& options, KesModel* out);
// GGUF architectures llama, qwen2, qwen3 and smollm3.
Status ConvertLlama(const gguf::File& file, const ConvertOptions& options, KesModel* out);
// GGUF architecture phi3 (Phi-3, Phi-3.5 mini).
Status ConvertPhi3(const gguf::File& file, const ConvertOptions& options, KesModel* out);

}  // namespace kestrel
