// Weight quantization for the converter: ggml's reference quantizers (quantize_row_*_ref in
// ggml-quants.c, what llama.cpp's quantize tool runs when no importance matrix is given), bit for
// bit, and packing of ggml blocks into the kernels' layout (ops/quant_layout.h). The 32-value
// types live here; the K-quants' 256-value super-blocks in converters/quantize_k.h. The tests
// compare every one against ggml itself (tests/py/ggml_oracle.py) and the 32-value ones also
// against gguf-py's gguf.quants.quantize. Converter-side scalar code: it runs once per weight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kestrel_generated.h"
#include "ops/ggml_blocks.h"
#include "runtime/status.h"

namespace kestrel {

// ggml block sizes: an f16 scale followed by the quants.
inline constexpr size_t kGgmlQ8BlockBytes = ops::GgmlBlockBytes(ops::GgmlBlockType::kQ8_0);
inline constexpr size_t kGgmlQ4BlockBytes = ops::GgmlBlockBytes(ops::GgmlBlockType::kQ4_0);

// One block of type t (ops::GgmlBlockBytes(t) bytes) from its ops::GgmlBlockElems(t) values.
// 32-value types, with scale d (and min m for the _1 types) stored as f16:
//   Q8_0: d = max|x| / 127, q = round-half-away(x / d);
//   Q4_0, Q5_0: d = -(the value of largest magnitude) / 8 or 16, q = min(15 or 31,
//               trunc(x / d + 8.5 or 16.5));
//   Q4_1, Q5_1: m = min x, d = (max x - m) / 15 or 31, q = trunc((x - m) / d + 0.5).
// The K-quants: converters/quantize_k.h.
void QuantizeGgmlBlock(ops::GgmlBlockType t, const float* x, uint8_t* block);

// n values (a multiple of ops::GgmlBlockElems(t)) -> n / GgmlBlockElems(t) blocks appended to
// *out. Rows are independent blocks, so a tensor quantizes in one call whatever its row length.
void QuantizeGgml(ops::GgmlBlockType t, const float* x, size_t n, std::vector<uint8_t>* out);
inline void QuantizeQ8_0(const float* x, size_t n, std::vector<uint8_t>* out) {
  QuantizeGgml(ops::GgmlBlockType::kQ8_0, x, n, out);
}
inline void QuantizeQ4_0(const float* x, size_t n, std::vector<uint8_t>* out) {
  QuantizeGgml(ops::GgmlBlockType::kQ4_0, x, n, out);
}

// Rearranges a [rows, k] tensor of ggml blocks (row-major, as GGUF stores it) into the packed
// .kes layout of dtype Q8_0 or Q4_0. Moves bytes only: values are unchanged.
Status PackGgmlBlocks(fb::DType dtype, const uint8_t* blocks, size_t rows, size_t k,
                      std::vector<uint8_t>* packed);

}  // namespace kestrel
