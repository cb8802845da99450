#include "converters/arch/arch.h"

namespace kestrel {
namespace {

struct Entry {
  const char* name;
  ArchitectureConverter convert;
};
constexpr Entry kArchitectures[] = {
    {"gemma3", ConvertGemma3},
};

}  // namespace

ArchitectureConverter FindArchitecture(std::string_view name) {
  for (const Entry& e : kArchitectures) {
    if (name == e.name) return e.convert;
  }
  return nullptr;
}

const char* SupportedArchitectures() { return "gemma3"; }

}  // namespace kestrel
