// Dequantization of ggml tensor blocks to f32, bit-exact with ggml's dequantize_row_* (and with
// gguf-py's gguf.quants.dequantize, which the tests compare against). Converter-side scalar code:
// it runs once per weight, so clarity beats speed here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "converters/gguf/gguf_file.h"
#include "runtime/status.h"

namespace kestrel::gguf {

// Values per block: 1 for F32/F16/BF16, 32 for Q4_0..Q8_0, 256 for K-quants; 0 for a type
// runtime/dtype_table.h has no row for.
size_t BlockElements(GgmlType t);
// Bytes per block (e.g. 18 for Q4_0, 144 for Q4_K); 0 for a type the table has no row for.
size_t BlockBytes(GgmlType t);
// The types of the table's rows (GgmlTypeList); others, e.g. the IQ ones, cannot be dequantized.
bool CanDequantize(GgmlType t);

// IEEE half to float, exact for every input: subnormals are kept (never flushed), infinities
// stay infinite and NaN payloads are shifted into place, as numpy's float16 -> float32 does.
float Fp16ToFp32(uint16_t h);

// n must be a multiple of BlockElements(t); src holds n / BlockElements(t) * BlockBytes(t) bytes.
// dst receives n floats.
Status DequantizeRow(GgmlType t, const uint8_t* src, size_t n, float* dst);

// Rows [first_row, first_row + n_rows) of a tensor, a row being ne[0] values; dst receives
// n_rows * ne[0] floats. Lets callers convert big tensors without holding all of them as f32.
Status DequantizeRows(const TensorInfo& t, uint64_t first_row, uint64_t n_rows, float* dst);

// The whole tensor, row-major ([ne[n-1], ..., ne[0]]), into *out (resized to n_elements).
Status DequantizeTensor(const TensorInfo& t, std::vector<float>* out);

}  // namespace kestrel::gguf
