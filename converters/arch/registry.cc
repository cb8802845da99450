#include "converters/arch/arch.h"

namespace kestrel {
namespace {

struct Entry {
  const char* name;
  ArchitectureConverter convert;
};
constexpr Entry kArchitectures[] = {
    {"gemma2", ConvertGemma2}, {"gemma3", ConvertGemma3}, {"llama", ConvertLlama},
    {"phi3", ConvertPhi3},     {"qwen2", ConvertLlama},   {"qwen3", ConvertLlama},
    {"smollm3", ConvertLlama},
};

}  // namespace

ArchitectureConverter FindArchitecture(std::string_view name) {
  for (const Entry& e : kArchitectures) {
    if (name == e.name) return e.convert;
  }
  return nullptr;
}

std::string SupportedArchitectures() {
  std::string names;
  for (const Entry& e : kArchitectures) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return names;
}

}  // namespace kestrel
