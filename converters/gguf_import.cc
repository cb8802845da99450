#include "converters/gguf_import.h"

#include <cstring>

#include "converters/float_convert.h"
#include "converters/gguf/dequantize.h"
#include "converters/quantize.h"
#include "ops/block_layout.h"
#include "runtime/format.h"

namespace kestrel {
namespace {

std::string ShapeString(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The ggml block type a block-quantized .kes dtype holds.
bool BlockTypeOf(fb::DType dtype, ops::GgmlBlockType* type) {
  if (dtype == fb::DType::Q8_0) {
    *type = ops::GgmlBlockType::kQ8_0;
  } else if (dtype == fb::DType::Q4_0) {
    *type = ops::GgmlBlockType::kQ4_0;
  } else {
    return KeptBlockType(dtype, type);
  }
  return true;
}

// Moves the ggml blocks of a kept type into the packing of ops/block_layout.h.
void PackKeptBlocks(ops::GgmlBlockType type, const uint8_t* blocks, size_t rows, size_t k,
                    std::vector<uint8_t>* packed) {
  const ops::BlockLayout layout(type, rows, k);
  packed->assign(layout.TotalBytes(), 0);
  const size_t block_bytes = ops::GgmlBlockBytes(type);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < layout.blocks_per_row; ++b) {
      ops::PackGgmlBlock(type, layout, blocks + (r * layout.blocks_per_row + b) * block_bytes, r,
                         b, packed->data());
    }
  }
}

}  // namespace

bool DTypeOfGgmlType(gguf::GgmlType type, fb::DType* dtype) {
  switch (type) {
    case gguf::GgmlType::F32: *dtype = fb::DType::F32; return true;
    case gguf::GgmlType::F16: *dtype = fb::DType::F16; return true;
    case gguf::GgmlType::BF16: *dtype = fb::DType::BF16; return true;
    case gguf::GgmlType::Q8_0: *dtype = fb::DType::Q8_0; return true;
    case gguf::GgmlType::Q4_0: *dtype = fb::DType::Q4_0; return true;
    case gguf::GgmlType::Q4_1: *dtype = fb::DType::Q4_1; return true;
    case gguf::GgmlType::Q5_0: *dtype = fb::DType::Q5_0; return true;
    case gguf::GgmlType::Q5_1: *dtype = fb::DType::Q5_1; return true;
    case gguf::GgmlType::Q4_K: *dtype = fb::DType::Q4_K; return true;
    case gguf::GgmlType::Q5_K: *dtype = fb::DType::Q5_K; return true;
    case gguf::GgmlType::Q6_K: *dtype = fb::DType::Q6_K; return true;
    default: return false;
  }
}

bool HasQuantizedTensors(const gguf::File& file) {
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.type != gguf::GgmlType::F32 && t.type != gguf::GgmlType::F16 &&
        t.type != gguf::GgmlType::BF16) {
      return true;
    }
  }
  return false;
}

Status WeightDType(const gguf::File& file, const std::string& name, const ConvertOptions& options,
                   fb::DType* dtype) {
  if (!options.keep_types && options.tensor_types.empty()) {
    *dtype = options.weight_dtype;
    return OkStatus();
  }
  const gguf::TensorInfo* info = file.FindTensor(name);
  KES_CHECK_OR_RETURN(info != nullptr, "GGUF has no tensor '" + name + "'");
  const auto chosen = options.tensor_types.find(name);
  if (chosen != options.tensor_types.end()) {
    KES_CHECK_OR_RETURN(DTypeOfGgmlType(chosen->second, dtype),
                        std::string("tensor '") + name + "': no .kes type holds " +
                            gguf::GgmlTypeName(chosen->second));
    return OkStatus();
  }
  if (DTypeOfGgmlType(info->type, dtype)) return OkStatus();
  return Status::Error(
      "tensor '" + name + "' is " + gguf::GgmlTypeName(info->type) +
      ", which --weights keep cannot keep (kept: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
      "Q4_K, Q5_K, Q6_K)" +
      (gguf::CanDequantize(info->type)
           ? "; convert with --weights q4_k_m, q4_k, q5_k, q6_k, q8, q4, f16, bf16 or f32 "
             "(the tensor is dequantized, then stored in that type)"
           : "; Kestrel cannot read this type yet, so no --weights choice converts the file"));
}

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
    ops::GgmlBlockType block_type;
    KES_CHECK_OR_RETURN(BlockTypeOf(dtype, &block_type),
                        std::string("tensor '") + name + "': cannot store weights as " +
                            DTypeName(dtype));
    const size_t block_elems = ops::GgmlBlockElems(block_type);
    KES_CHECK_OR_RETURN(k % block_elems == 0,
                        "tensor '" + name + "': rows of " + std::to_string(k) +
                            " elements cannot be stored as " + DTypeName(dtype) +
                            " (blocks of " + std::to_string(block_elems) + ")");
    // A tensor of this very type moves, never requantized; any other is quantized from the
    // values ggml's dequantization gives, as llama.cpp's quantize tool does.
    fb::DType source;
    const uint8_t* blocks = info->data;
    std::vector<uint8_t> quantized;
    if (!DTypeOfGgmlType(info->type, &source) || source != dtype) {
      std::vector<float> values;
      KES_RETURN_IF_ERROR(
          gguf::DequantizeTensor(*info, &values).WithContext("tensor '" + name + "'"));
      QuantizeGgml(block_type, values.data(), values.size(), &quantized);
      blocks = quantized.data();
    }
    if (dtype == fb::DType::Q8_0 || dtype == fb::DType::Q4_0) {
      KES_RETURN_IF_ERROR(PackGgmlBlocks(dtype, blocks, rows, k, &bytes));
    } else {
      PackKeptBlocks(block_type, blocks, rows, k, &bytes);
    }
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
