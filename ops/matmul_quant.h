// Matrix multiplication with block-quantized weights (Q8_0, Q4_0; see ops/quant_layout.h) and
// activations quantized to int8 by ops/quantize_rows.h: integer dot products per 32-element
// block, scaled and summed in f32.
//
// Same contract as ops/matmul.h: w holds [n_out, k], x holds n_tokens Q8_ACT rows of k
// elements, y is [n_tokens, n_out] f32; only rows [row_begin, row_end) of w are read and only
// those columns of y written. k % 32 == 0. Callers that split rows over threads should cut at
// multiples of kQuantGroupRows so every tile is full.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel::ops {

void MatMulQ8(const uint8_t* w, const uint8_t* x, float* y, size_t n_tokens, size_t k, size_t n_out,
              size_t row_begin, size_t row_end);
void MatMulQ4(const uint8_t* w, const uint8_t* x, float* y, size_t n_tokens, size_t k, size_t n_out,
              size_t row_begin, size_t row_end);

// Each kernel above resolved to this CPU's target once (ops/targets.h, KESTREL_DEFINE_RESOLVE).
decltype(&MatMulQ8) ResolveMatMulQ8();
decltype(&MatMulQ4) ResolveMatMulQ4();

}  // namespace kestrel::ops
