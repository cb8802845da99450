// Reading a float tensor of a safetensors or CTranslate2 file as floats. Both readers' DType
// enums name F32, F16 and BF16 and have a DTypeName (found by argument-dependent lookup), so one
// template serves both; the values go through the GGUF dequantizer's rows for those types, which
// convert exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converters/gguf/dequantize.h"
#include "runtime/status.h"

namespace kestrel {

// The n_elements values at `data` (inside a checked file), row-major; other dtypes are an error
// naming the dtype. `where` names the file and tensor in messages.
template <class DType>
Status ReadFloatTensor(DType dtype, const uint8_t* data, uint64_t n_elements,
                       const std::string& where, std::vector<float>* out) {
  gguf::GgmlType type;
  switch (dtype) {
    case DType::F32: type = gguf::GgmlType::F32; break;
    case DType::F16: type = gguf::GgmlType::F16; break;
    case DType::BF16: type = gguf::GgmlType::BF16; break;
    default:
      return Status::Error(where + ": cannot read " + DTypeName(dtype) +
                           " values as floats (expected " + DTypeName(DType::F32) + ", " +
                           DTypeName(DType::F16) + " or " + DTypeName(DType::BF16) + ")");
  }
  // Fits size_t: the bytes lie inside the file.
  out->resize(static_cast<size_t>(n_elements));
  if (out->empty()) return OkStatus();
  return gguf::DequantizeRow(type, data, out->size(), out->data()).WithContext(where);
}

}  // namespace kestrel
