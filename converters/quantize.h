// Weight quantization for --weights q8 / q4: ggml's Q8_0 and Q4_0 reference quantizers (bit-exact
// with ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref and gguf-py's gguf.quants.quantize,
// which the tests compare against), and packing of ggml blocks into the kernels' layout
// (ops/quant_layout.h). Converter-side scalar code: it runs once per weight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kestrel_generated.h"
#include "runtime/status.h"

namespace kestrel {

// ggml block sizes: an f16 scale followed by the quants.
inline constexpr size_t kGgmlQ8BlockBytes = 34;
inline constexpr size_t kGgmlQ4BlockBytes = 18;

// n values (a multiple of 32) -> n / 32 ggml blocks appended to *out.
// Q8_0: scale = max|x| / 127, q = round-half-away(x / scale).
// Q4_0: scale = -(the value of largest magnitude) / 8, q = min(15, trunc(x / scale + 8.5)).
void QuantizeQ8_0(const float* x, size_t n, std::vector<uint8_t>* out);
void QuantizeQ4_0(const float* x, size_t n, std::vector<uint8_t>* out);

// Rearranges a [rows, k] tensor of ggml blocks (row-major, as GGUF stores it) into the packed
// .kes layout of dtype Q8_0 or Q4_0. Moves bytes only: values are unchanged.
Status PackGgmlBlocks(fb::DType dtype, const uint8_t* blocks, size_t rows, size_t k,
                      std::vector<uint8_t>* packed);

}  // namespace kestrel
