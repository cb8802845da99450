// The kept-type matmul's group tiles (ops/matmul_blocks.h) for 64-bit ARM cores, in ACLE
// intrinsics for the reason ops/matmul_quant_dotprod.h gives: sdot's
// (ops/matmul_blocks_dotprod.cc), called only where CpuHasDotProd() holds, and the prefill tile
// of smmla's 2x2 tiles of two rows by two tokens (ops/matmul_blocks_i8mm.cc), twice sdot's
// multiply-adds per instruction, for the reason and on the cores ops/matmul_quant_i8mm.h gives,
// called only where CpuHasI8mm() holds.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/block_layout.h"

namespace kestrel::ops {

// One full group of 4 rows starting at row r0 x `tokens` (1..4) tokens; x: the first token's
// Q8_ACT row; y[t * n_out + r] receives the 4 outputs of token t.
void BlocksTile4xN_NeonDotProd(GgmlBlockType type, size_t tokens, const uint8_t* w,
                               const BlockLayout& layout, size_t r0, const uint8_t* x,
                               size_t x_row_bytes, size_t k, float* y, size_t n_out);

// Q4_1 ... Q6_K 4x8 i8mm: one full group of 4 rows starting at row r0 x `tokens`
// (1..kI8mmTokenTile of ops/matmul_quant_i8mm.h) tokens, with the arguments of
// BlocksTile4xN_NeonDotProd. An odd last token is paired with itself and written once.
void BlocksTile4xN_NeonI8mm(GgmlBlockType type, size_t tokens, const uint8_t* w,
                            const BlockLayout& layout, size_t r0, const uint8_t* x,
                            size_t x_row_bytes, size_t k, float* y, size_t n_out);

}  // namespace kestrel::ops
