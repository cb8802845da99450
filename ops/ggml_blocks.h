// ggml's block-quantized formats as GGUF files store them (ggml-common.h) and their
// dequantization, bit-exact with ggml's dequantize_row_* and gguf-py's gguf.quants.dequantize.
// Shared by the converter, which imports GGUF tensors, and the embedding lookup of kept types,
// which unpacks a packed row back into these blocks (ops/block_layout.h) and dequantizes it
// here, so a kept tensor reads back exactly as the GGUF file's values. Scalar code.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel::ops {

// ggml's type ids (ggml.h's enum ggml_type) as GGUF files store them, for the types Kestrel
// keeps; runtime/dtype_table.h says which .kes dtype holds each.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  BF16 = 30,
};

// The block formats, for kernels templated on them.
enum class GgmlBlockType : uint8_t {
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ8_0,
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K
};

inline constexpr size_t kGgmlSubBlockElems = 32;
inline constexpr size_t kGgmlSuperBlockElems = 256;  // the K-quants' block

// Values per block (32, or 256 for K-quants) and bytes per block as GGUF stores them.
constexpr size_t GgmlBlockElems(GgmlBlockType t) {
  return t == GgmlBlockType::kQ2_K || t == GgmlBlockType::kQ3_K || t == GgmlBlockType::kQ4_K ||
                 t == GgmlBlockType::kQ5_K || t == GgmlBlockType::kQ6_K
             ? kGgmlSuperBlockElems
             : kGgmlSubBlockElems;
}
constexpr size_t GgmlBlockBytes(GgmlBlockType t) {
  switch (t) {
    case GgmlBlockType::kQ4_0: return 18;
    case GgmlBlockType::kQ4_1: return 20;
    case GgmlBlockType::kQ5_0: return 22;
    case GgmlBlockType::kQ5_1: return 24;
    case GgmlBlockType::kQ8_0: return 34;
    case GgmlBlockType::kQ2_K: return 84;
    case GgmlBlockType::kQ3_K: return 110;
    case GgmlBlockType::kQ4_K: return 144;
    case GgmlBlockType::kQ5_K: return 176;
    case GgmlBlockType::kQ6_K: return 210;
  }
  return 0;
}

// One block's GgmlBlockElems(t) values into y.
void DequantizeGgmlBlock(GgmlBlockType t, const uint8_t* block, float* y);

// The 6-bit scale and min of sub-block j (0..7) packed in the 12 scale bytes of Q4_K and Q5_K.
inline void ScaleMinK4(size_t j, const uint8_t* s, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Scale j (0..15) of a Q3_K block as stored, 0..63 (it means scale - 32), from the block's 12
// bytes of packed scales: the low 4 bits from byte j % 8 (its low nibble for j < 8, high
// otherwise), the high 2 bits from byte 8 + j % 4 at bit 2 * (j / 4).
inline int ScaleQ3K(size_t j, const uint8_t* s) {
  const int low = (j < 8 ? s[j] : s[j - 8] >> 4) & 0x0F;
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

}  // namespace kestrel::ops
