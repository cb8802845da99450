// The quantized matmul's prefill tile for 64-bit ARM cores with the int8 matrix multiply
// (smmla: Armv8.6's I8MM, optional from Armv8.2; Graviton 3/4, Neoverse V1/V2/N2, Cortex-A710/X2
// and later). One smmla multiplies a 2x8 int8 block of two weight rows by an 8x2 block of two
// tokens into a 2x2 int32 tile: 32 multiply-adds per instruction, twice sdot's 16, so a tile of
// two or more tokens runs here and a decode step (one token) stays on sdot. ACLE intrinsics in
// their own translation unit, as ops/matmul_quant_dotprod.h explains, called only where
// CpuHasI8mm() holds.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel::ops {

// True on aarch64 when the CPU (HWCAP2_I8MM) has smmla; false elsewhere (ops/cpu_features.cc).
bool CpuHasI8mm();

// Tokens per i8mm tile: 4 pairs of tokens against a group's 4 rows, 8 f32 accumulators of
// 2x2 outputs, the group's decoded block reused for 32 smmla.
inline constexpr size_t kI8mmTokenTile = 8;

// Q8_0 / Q4_0 4x8 i8mm: one full group of 4 rows (ops/quant_layout.h) x `tokens`
// (1..kI8mmTokenTile) tokens, with the arguments of Q8Q4Tile4xN_NeonDotProd. An odd last token is
// paired with itself and written once.
void Q8Q4Tile4xN_NeonI8mm(bool q4, size_t tokens, const uint8_t* w, const uint16_t* scales,
                          const uint8_t* x, size_t x_row_bytes, size_t k, float* y, size_t n_out);

}  // namespace kestrel::ops
