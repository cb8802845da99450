// Constants of the .kes container shared by the converter (writer) and the runtime (reader).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kestrel_generated.h"

namespace kestrel {

// The 16-byte preamble before the FlatBuffer: "KESTREL\0", u32 format version, u32 FlatBuffer size.
inline constexpr char kKesMagic[8] = {'K', 'E', 'S', 'T', 'R', 'E', 'L', '\0'};
inline constexpr size_t kKesPreambleBytes = 16;
inline constexpr uint32_t kKesFormatVersion = 1;
// Weight blob start, every tensor in it and every arena buffer are aligned to this.
inline constexpr size_t kKesAlignment = 64;

inline constexpr uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Bytes per element; 0 for a dtype this build does not know.
inline size_t DTypeSize(fb::DType dtype) {
  switch (dtype) {
    case fb::DType::F32: return 4;
    case fb::DType::F16: return 2;
    case fb::DType::BF16: return 2;
    case fb::DType::I32: return 4;
  }
  return 0;
}

inline const char* DTypeName(fb::DType dtype) {
  switch (dtype) {
    case fb::DType::F32: return "f32";
    case fb::DType::F16: return "f16";
    case fb::DType::BF16: return "bf16";
    case fb::DType::I32: return "i32";
  }
  return "unknown";
}

}  // namespace kestrel
