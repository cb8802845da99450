// The kept-type matmul's group tile (ops/matmul_blocks.h) for 64-bit ARM cores with sdot, in
// ACLE intrinsics for the reason ops/matmul_quant_dotprod.h gives; called only where
// CpuHasDotProd() holds.
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

}  // namespace kestrel::ops
