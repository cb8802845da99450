#include "converters/gguf_import.h"

#include <cstring>

#include "converters/float_convert.h"
#include "converters/gguf/dequantize.h"
#include "converters/quantize.h"
#include "runtime/format.h"

namespace kestrel {
namespace {

std::string ShapeString(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

Status ImportTensor(const gguf::File& file, const std::string& name, fb::DType dtype,
                    const std::vector<uint64_t>& expected_shape, KesModel* model, uint32_t* id) {
  const gguf::TensorInfo* info = file.FindTensor(name);
  KES_CHECK_OR_RETURN(info != nullptr, "GGUF has no tensor '" + name + "'");
  const std::vector<uint64_t> shape(info->ne.rbegin(), info->ne.rend());
  KES_CHECK_OR_RETURN(shape == expected_shape, "tensor '" + name + "': expected shape " +
                                                   ShapeString(expected_shape) + ", found " +
                                                   ShapeString(shape));
  std::vector<uint8_t> bytes;
  if (IsBlockQuantized(dtype)) {
    KES_CHECK_OR_RETURN(shape.size() == 2, "tensor '" + name + "': only matrices can be stored as " +
                                               DTypeName(dtype) + ", found shape " +
                                               ShapeString(shape));
    const uint64_t rows = shape[0], k = shape[1];
    const bool q4 = dtype == fb::DType::Q4_0;
    const gguf::GgmlType same = q4 ? gguf::GgmlType::Q4_0 : gguf::GgmlType::Q8_0;
    if (info->type == same) {
      // Already these exact blocks: move them, never requantize.
      KES_RETURN_IF_ERROR(PackGgmlBlocks(dtype, info->data, rows, k, &bytes)
                              .WithContext("tensor '" + name + "'"));
      *id = model->AddTensor(name, dtype, shape, std::move(bytes));
      return OkStatus();
    }
    KES_CHECK_OR_RETURN(k % kQuantBlock == 0,
                        "tensor '" + name + "': rows of " + std::to_string(k) +
                            " elements cannot be stored as " + DTypeName(dtype) +
                            " (blocks of " + std::to_string(kQuantBlock) + ")");
    std::vector<float> values;
    KES_RETURN_IF_ERROR(
        gguf::DequantizeTensor(*info, &values).WithContext("tensor '" + name + "'"));
    std::vector<uint8_t> blocks;
    blocks.reserve(rows * k / kQuantBlock * (q4 ? kGgmlQ4BlockBytes : kGgmlQ8BlockBytes));
    if (q4) {
      QuantizeQ4_0(values.data(), values.size(), &blocks);
    } else {
      QuantizeQ8_0(values.data(), values.size(), &blocks);
    }
    KES_RETURN_IF_ERROR(PackGgmlBlocks(dtype, blocks.data(), rows, k, &bytes));
    *id = model->AddTensor(name, dtype, shape, std::move(bytes));
    return OkStatus();
  }
  std::vector<float> values;
  KES_RETURN_IF_ERROR(gguf::DequantizeTensor(*info, &values).WithContext("tensor '" + name + "'"));
  bytes.resize(values.size() * DTypeSize(dtype));
  switch (dtype) {
    case fb::DType::F32:
      std::memcpy(bytes.data(), values.data(), bytes.size());
      break;
    case fb::DType::F16:
    case fb::DType::BF16: {
      uint16_t* out = reinterpret_cast<uint16_t*>(bytes.data());
      for (size_t i = 0; i < values.size(); ++i) {
        out[i] = dtype == fb::DType::F16 ? F16BitsFromF32(values[i]) : BF16BitsFromF32(values[i]);
      }
      break;
    }
    default:
      return Status::Error(std::string("tensor '") + name + "': cannot store weights as " +
                           DTypeName(dtype));
  }
  *id = model->AddTensor(name, dtype, shape, std::move(bytes));
  return OkStatus();
}

Status GetDimension(const gguf::File& file, const std::string& key, uint64_t max, uint32_t* out) {
  int64_t v;
  KES_RETURN_IF_ERROR(file.GetInt(key, &v));
  KES_CHECK_OR_RETURN(v >= 1 && static_cast<uint64_t>(v) <= max,
                      key + ": expected 1.." + std::to_string(max) + ", found " +
                          std::to_string(v));
  *out = static_cast<uint32_t>(v);
  return OkStatus();
}

}  // namespace kestrel
