// The quantized matmul's inner tile for 64-bit ARM cores with the dot-product instructions
// (sdot: four int8 products summed into each int32 lane; Armv8.2's optional dotprod, standard
// from Armv8.4, and on every core with SVE). Highway 1.0.3 has no int8 dot product (its
// SumOfMulQuadAccumulate came later), so this file uses the ACLE intrinsics directly, compiled
// for +dotprod in its own translation unit and called only when the CPU reports the feature.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel::ops {

// True on aarch64 when the CPU (HWCAP_ASIMDDP) has sdot; false elsewhere (ops/cpu_features.cc).
bool CpuHasDotProd();

// One full group of 4 rows (ops/quant_layout.h) x `tokens` (1..4) tokens, as the x86 kernel in
// ops/matmul_quant.cc: w is the group's block 0, scales its first row's scale of block 0,
// x the first token's Q8_ACT row; y[t * n_out + r] receives the 4 outputs of token t.
void Q8Q4Tile4xN_NeonDotProd(bool q4, size_t tokens, const uint8_t* w, const uint16_t* scales,
                             const uint8_t* x, size_t x_row_bytes, size_t k, float* y,
                             size_t n_out);

}  // namespace kestrel::ops
