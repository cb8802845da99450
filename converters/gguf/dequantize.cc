#include "converters/gguf/dequantize.h"

#include <cstring>
#include <limits>
#include <string>

#include "ops/ggml_blocks.h"
#include "runtime/dtype_table.h"

// Last: every product and sum rounded to f32 on its own, as ggml and gguf-py do.
#include "ops/fp_contract_off.h"

namespace kestrel::gguf {
namespace {

uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t LoadU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
float LoadHalf(const uint8_t* p) { return Fp16ToFp32(LoadU16(p)); }
float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

void ValueF32(const uint8_t* b, float* y) { *y = FromBits(LoadU32(b)); }
void ValueF16(const uint8_t* b, float* y) { *y = LoadHalf(b); }
void ValueBF16(const uint8_t* b, float* y) {
  *y = FromBits(static_cast<uint32_t>(LoadU16(b)) << 16);
}

// The dequantizer of one value of a plain type; nullptr for the others.
using ValueFn = void (*)(const uint8_t* bytes, float* value);
ValueFn PlainValue(fb::DType dtype) {
  switch (dtype) {
    case fb::DType::F32: return ValueF32;
    case fb::DType::F16: return ValueF16;
    case fb::DType::BF16: return ValueBF16;
    default: return nullptr;
  }
}

// The row of a type this file dequantizes: a plain one, or ggml blocks, which ops/ggml_blocks.h
// dequantizes for the runtime's embedding lookup too. nullptr for the others.
const DTypeRow* DequantizableRow(GgmlType t) {
  const DTypeRow* row = FindGgmlType(t);
  return row != nullptr && (row->block || PlainValue(row->dtype) != nullptr) ? row : nullptr;
}

std::string TypeLabel(GgmlType t) {
  return std::string(GgmlTypeName(t)) + " (" + std::to_string(static_cast<uint32_t>(t)) + ")";
}

}  // namespace

float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x03FF;
  if (exponent == 0x1F) return FromBits(sign | 0x7F800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return FromBits(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  if (mantissa == 0) return FromBits(sign);  // signed zero
  // Subnormal half: normalize, since every half subnormal is a normal float.
  uint32_t float_exponent = 127 - 15 + 1;
  while ((mantissa & 0x0400) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  return FromBits(sign | (float_exponent << 23) | ((mantissa & 0x03FF) << 13));
}

size_t BlockElements(GgmlType t) {
  const DTypeRow* row = FindGgmlType(t);
  return row == nullptr ? 0 : row->block_elems;
}
size_t BlockBytes(GgmlType t) {
  const DTypeRow* row = FindGgmlType(t);
  return row == nullptr ? 0 : row->block_bytes;
}
bool CanDequantize(GgmlType t) { return DequantizableRow(t) != nullptr; }

Status DequantizeRow(GgmlType t, const uint8_t* src, size_t n, float* dst) {
  const DTypeRow* row = DequantizableRow(t);
  if (row == nullptr) {
    return Status::Error("cannot dequantize ggml type " + TypeLabel(t) + ": expected one of " +
                         GgmlTypeList(false));
  }
  if (n % row->block_elems != 0) {
    return Status::Error("dequantize " + TypeLabel(t) + ": expected a multiple of " +
                         std::to_string(row->block_elems) + " values, found " + std::to_string(n));
  }
  const size_t blocks = n / row->block_elems;
  const ValueFn value = PlainValue(row->dtype);
  for (size_t i = 0; i < blocks; ++i) {
    const uint8_t* block = src + i * row->block_bytes;
    float* values = dst + i * row->block_elems;
    if (row->block) {
      ops::DequantizeGgmlBlock(*row->block, block, values);
    } else {
      value(block, values);
    }
  }
  return OkStatus();
}

Status DequantizeRows(const TensorInfo& t, uint64_t first_row, uint64_t n_rows, float* dst) {
  const std::string where = "tensor '" + t.name + "'";
  const DTypeRow* row = FindGgmlType(t.type);
  if (t.ne.empty() || row == nullptr || t.data == nullptr) {
    return Status::Error(where + ": expected a shape, a known type and mapped data");
  }
  uint64_t shape_elements = 1;
  for (const uint64_t d : t.ne) {
    if (__builtin_mul_overflow(shape_elements, d, &shape_elements)) shape_elements = 0;
  }
  if (shape_elements != t.n_elements) {
    return Status::Error(where + ": expected n_elements to be the product of the shape, " +
                         std::to_string(shape_elements) + ", found " +
                         std::to_string(t.n_elements));
  }
  const uint64_t row_length = t.ne[0];
  const uint64_t rows = row_length == 0 ? 0 : t.n_elements / row_length;
  if (first_row > rows || n_rows > rows - first_row) {
    return Status::Error(where + ": expected rows within [0, " + std::to_string(rows) +
                         "), asked for rows [" + std::to_string(first_row) + ", " +
                         std::to_string(first_row) + " + " + std::to_string(n_rows) + ")");
  }
  if (row_length % row->block_elems != 0 ||
      t.n_bytes != t.n_elements / row->block_elems * row->block_bytes) {
    return Status::Error(
        where + ": expected " + std::to_string(t.n_elements) + " " + GgmlTypeName(t.type) +
        " values in whole blocks of " + std::to_string(row->block_bytes) + " bytes, found " +
        std::to_string(t.n_bytes) + " bytes and row length " + std::to_string(row_length));
  }
  const uint64_t row_bytes = row_length / row->block_elems * row->block_bytes;
  if (n_rows * row_length > std::numeric_limits<size_t>::max()) {
    return Status::Error(where + ": " + std::to_string(n_rows * row_length) +
                         " values do not fit in memory");
  }
  return DequantizeRow(t.type, t.data + first_row * row_bytes,
                       static_cast<size_t>(n_rows * row_length), dst)
      .WithContext(where);
}

Status DequantizeTensor(const TensorInfo& t, std::vector<float>* out) {
  if (t.n_elements > out->max_size()) {
    return Status::Error("tensor '" + t.name + "': " + std::to_string(t.n_elements) +
                         " values do not fit in memory");
  }
  out->resize(static_cast<size_t>(t.n_elements));
  if (t.n_elements == 0) return OkStatus();
  const uint64_t rows = t.ne.empty() || t.ne[0] == 0 ? 0 : t.n_elements / t.ne[0];
  return DequantizeRows(t, 0, rows, out->data());
}

}  // namespace kestrel::gguf
