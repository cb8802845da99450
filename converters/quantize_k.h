// ggml's reference K-quant quantizers (quantize_row_q4_K_ref, _q5_K_ref, _q6_K_ref in
// ggml-quants.c: what llama.cpp's quantize tool runs without an importance matrix), one
// 256-value super-block at a time, bit for bit. Block layouts: ops/ggml_blocks.h. Used through
// QuantizeGgmlBlock / QuantizeGgml (converters/quantize.h); tests/quantize_k_test.cc compares
// them against ggml itself.
//
// Q4_K and Q5_K: each sub-block of 32 gets a scale and a min (x ~ scale * q - min) fitted by a
// weighted least-squares search over candidate scales (ggml's make_qkx2_quants, weights
// sqrt(mean x^2) + |x|); the 8 scales and 8 mins are then quantized to 6 bits against the
// block's largest (f16 d and dmin), and the quants recomputed with those. Q6_K: each sub-block of
// 16 gets a signed scale from a search weighted by x^2 (make_qx_quants), quantized to int8
// against the block's largest (f16 d), quants q - 32 in [-32, 31].
#pragma once

#include <cstdint>

namespace kestrel {

void QuantizeBlockQ4_K(const float* x, uint8_t* block);  // 256 values -> 144 bytes
void QuantizeBlockQ5_K(const float* x, uint8_t* block);  // 256 values -> 176 bytes
void QuantizeBlockQ6_K(const float* x, uint8_t* block);  // 256 values -> 210 bytes

}  // namespace kestrel
