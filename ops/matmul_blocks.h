// Matrix multiplication with the kept GGUF types Q4_1, Q5_0, Q5_1, Q3_K, Q4_K, Q5_K and Q6_K
// (packed as ops/block_layout.h describes) against activations quantized to int8 by
// ops/quantize_rows.h: integer dot products per 32 elements (per 16 for Q6_K and Q3_K, whose
// scales change every 16), scaled and summed in f32. Same contract as ops/matmul_quant.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/block_layout.h"

namespace kestrel::ops {

#define KESTREL_DECLARE_BLOCK_MATMUL(T)                                                   \
  void MatMul##T(const uint8_t* w, const uint8_t* x, float* y, size_t n_tokens, size_t k, \
                 size_t n_out, size_t row_begin, size_t row_end);                         \
  decltype(&MatMul##T) ResolveMatMul##T();
KESTREL_BLOCK_TYPES(KESTREL_DECLARE_BLOCK_MATMUL)
#undef KESTREL_DECLARE_BLOCK_MATMUL

// Elements per activation scale these kernels run fastest with: 256 for the K-quants whose
// integer scales let a kernel sum a whole super-block in int32 (Q2_K to Q6_K: the
// AVX2 tiles of KQuantSuperTile4xN_Avx2; on AVX-512 VNNI the token panels of Q4_K-Q6_K and the
// decode tiles of Q2_K and Q3_K) when
// every block of a super-block shares its scale (QuantizeRowsQ8Super); 32 for the others. Every
// kernel is correct with either: those tiles run only where the activations have it, the others
// read each block's scale.
constexpr size_t PreferredActivationScaleBlock(GgmlBlockType type) {
  return type == GgmlBlockType::kQ2_K || type == GgmlBlockType::kQ3_K ||
                 type == GgmlBlockType::kQ4_K || type == GgmlBlockType::kQ5_K ||
                 type == GgmlBlockType::kQ6_K
             ? 256
             : 32;
}

// The kernel above for a kept type, resolved to this CPU's target; null for Q4_0 and Q8_0,
// which have their own layout and kernels (ops/matmul_quant.h).
decltype(&MatMulQ4_1) ResolveBlockMatMul(GgmlBlockType type);

}  // namespace kestrel::ops
