// Constants of the .kes container shared by the converter (writer) and the runtime (reader).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kestrel_generated.h"

namespace kestrel {

// The 16-byte preamble before the FlatBuffer: "KESTREL\0", u32 format version, u32 FlatBuffer size.
inline constexpr char kKesMagic[8] = {'K', 'E', 'S', 'T', 'R', 'E', 'L', '\0'};
inline constexpr size_t kKesPreambleBytes = 16;
// 2: typed op parameters (OpParams union) and named plan inputs and outputs.
inline constexpr uint32_t kKesFormatVersion = 2;
// Weight blob start, every tensor in it and every arena buffer are aligned to this.
inline constexpr size_t kKesAlignment = 64;

inline constexpr uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Elements per quantization block of the block-quantized dtypes.
inline constexpr size_t kQuantBlock = 32;

inline bool IsBlockQuantized(fb::DType dtype) {
  return dtype == fb::DType::Q8_0 || dtype == fb::DType::Q4_0 || dtype == fb::DType::Q8_ACT;
}

// Bytes per element of the plain dtypes; 0 for block-quantized ones and unknown codes.
inline size_t DTypeSize(fb::DType dtype) {
  switch (dtype) {
    case fb::DType::F32: return 4;
    case fb::DType::F16: return 2;
    case fb::DType::BF16: return 2;
    case fb::DType::I32: return 4;
    default: return 0;
  }
}

// Bytes of one row of `elems` elements; 0 when the dtype is unknown or a block-quantized row is
// not a whole number of blocks.
inline uint64_t RowBytes(fb::DType dtype, uint64_t elems) {
  if (!IsBlockQuantized(dtype)) return elems * DTypeSize(dtype);
  if (elems % kQuantBlock != 0) return 0;
  const uint64_t blocks = elems / kQuantBlock;
  switch (dtype) {
    case fb::DType::Q8_0: return blocks * (kQuantBlock + 2);      // quants + f16 scale
    case fb::DType::Q4_0: return blocks * (kQuantBlock / 2 + 2);  // nibbles + f16 scale
    case fb::DType::Q8_ACT: return blocks * (kQuantBlock + 8);    // quants + f32 scale + f32 sum
    default: return 0;
  }
}

inline const char* DTypeName(fb::DType dtype) {
  switch (dtype) {
    case fb::DType::F32: return "f32";
    case fb::DType::F16: return "f16";
    case fb::DType::BF16: return "bf16";
    case fb::DType::I32: return "i32";
    case fb::DType::Q8_0: return "q8";
    case fb::DType::Q4_0: return "q4";
    case fb::DType::Q8_ACT: return "q8-activations";
  }
  return "unknown";
}

}  // namespace kestrel
