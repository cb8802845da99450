// Constants of the .kes container shared by the converter (writer) and the runtime (reader).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kestrel_generated.h"
#include "ops/ggml_blocks.h"
#include "ops/quantize_rows.h"

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

// The GGUF types kept as they are (ops/block_layout.h): their ggml block type, or false.
inline bool KeptBlockType(fb::DType dtype, ops::GgmlBlockType* type) {
  switch (dtype) {
    case fb::DType::Q4_1: *type = ops::GgmlBlockType::kQ4_1; return true;
    case fb::DType::Q5_0: *type = ops::GgmlBlockType::kQ5_0; return true;
    case fb::DType::Q5_1: *type = ops::GgmlBlockType::kQ5_1; return true;
    case fb::DType::Q2_K: *type = ops::GgmlBlockType::kQ2_K; return true;
    case fb::DType::Q3_K: *type = ops::GgmlBlockType::kQ3_K; return true;
    case fb::DType::Q4_K: *type = ops::GgmlBlockType::kQ4_K; return true;
    case fb::DType::Q5_K: *type = ops::GgmlBlockType::kQ5_K; return true;
    case fb::DType::Q6_K: *type = ops::GgmlBlockType::kQ6_K; return true;
    default: return false;
  }
}

// Weights the matmuls read with int8 activations (Q8_ACT), and Q8_ACT itself.
inline bool IsBlockQuantized(fb::DType dtype) {
  ops::GgmlBlockType kept;
  return dtype == fb::DType::Q8_0 || dtype == fb::DType::Q4_0 || dtype == fb::DType::Q8_ACT ||
         KeptBlockType(dtype, &kept);
}

// Elements per block of a block-quantized dtype (32, or 256 for the K-quants); 0 otherwise.
inline size_t BlockElems(fb::DType dtype) {
  ops::GgmlBlockType kept;
  if (KeptBlockType(dtype, &kept)) return ops::GgmlBlockElems(kept);
  return IsBlockQuantized(dtype) ? kQuantBlock : 0;
}

// Bytes per element of the plain dtypes; 0 for block-quantized ones and unknown codes.
inline size_t DTypeSize(fb::DType dtype) {
  switch (dtype) {
    case fb::DType::F32: return 4;
    case fb::DType::F32_PANELS: return 4;
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
  if (elems % BlockElems(dtype) != 0) return 0;
  ops::GgmlBlockType kept;
  if (KeptBlockType(dtype, &kept)) {
    return elems / ops::GgmlBlockElems(kept) * ops::GgmlBlockBytes(kept);
  }
  const uint64_t blocks = elems / kQuantBlock;
  switch (dtype) {
    case fb::DType::Q8_0: return ops::GgmlBlockBytes(ops::GgmlBlockType::kQ8_0) * blocks;
    case fb::DType::Q4_0: return ops::GgmlBlockBytes(ops::GgmlBlockType::kQ4_0) * blocks;
    case fb::DType::Q8_ACT: return ops::Q8ActRowBytes(elems);  // the kernels' own layout
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
    case fb::DType::Q4_1: return "q4_1";
    case fb::DType::Q5_0: return "q5_0";
    case fb::DType::Q5_1: return "q5_1";
    case fb::DType::Q2_K: return "q2_k";
    case fb::DType::Q3_K: return "q3_k";
    case fb::DType::Q4_K: return "q4_k";
    case fb::DType::Q5_K: return "q5_k";
    case fb::DType::Q6_K: return "q6_k";
    case fb::DType::F32_PANELS: return "f32-panels";
  }
  return "unknown";
}

}  // namespace kestrel
