#include "converters/gguf_import.h"

#include <cstring>

#include "converters/gguf/dequantize.h"
#include "converters/store_weights.h"
#include "runtime/format.h"

namespace kestrel {

bool DTypeOfGgmlType(gguf::GgmlType type, fb::DType* dtype) {
  const DTypeRow* row = FindGgmlType(type);
  if (row == nullptr) return false;
  *dtype = row->dtype;
  return true;
}

bool HasQuantizedTensors(const gguf::File& file) {
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (gguf::BlockElements(t.type) > 1) return true;
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
      ", which --weights keep cannot keep (kept: " + gguf::GgmlTypeList(false) + ")" +
      (gguf::CanDequantize(info->type)
           ? "; convert with --weights q4_k_m, q4_k, q5_k, q6_k, q8, q4, f16, bf16 or f32 "
             "(the tensor is dequantized, then stored in that type)"
           : "; Kestrel cannot read this type yet, so no --weights choice converts the file"));
}

namespace {

// ImportTensor of one tensor's info (the whole tensor, or a run of its rows), stored as `name`.
Status ImportTensorInfo(const gguf::TensorInfo* info, const std::string& name, fb::DType dtype,
                        const std::vector<uint64_t>& expected_shape, KesModel* model,
                        uint32_t* id) {
  const std::vector<uint64_t> shape(info->ne.rbegin(), info->ne.rend());
  KES_CHECK_OR_RETURN(shape == expected_shape, "tensor '" + name + "': expected shape " +
                                                   ShapeString(expected_shape) + ", found " +
                                                   ShapeString(shape));
  // A tensor of this very block type moves, never requantized; any other is stored from the
  // values ggml's dequantization gives, as llama.cpp's quantize tool does.
  fb::DType source;
  ops::GgmlBlockType block_type;
  if (BlockTypeOf(dtype, &block_type) && DTypeOfGgmlType(info->type, &source) && source == dtype) {
    KES_CHECK_OR_RETURN(shape.size() == 2,
                        "tensor '" + name + "': only matrices can be stored as " +
                            DTypeName(dtype) + ", found shape " + ShapeString(shape));
    std::vector<uint8_t> bytes;
    KES_RETURN_IF_ERROR(PackBlocks(dtype, info->data, shape[0], shape[1], &bytes)
                            .WithContext("tensor '" + name + "'"));
    *id = model->AddTensor(name, dtype, shape, std::move(bytes));
    return OkStatus();
  }
  std::vector<float> values;
  KES_RETURN_IF_ERROR(gguf::DequantizeTensor(*info, &values).WithContext("tensor '" + name + "'"));
  return StoreWeights(name, values, dtype, shape, model, id);
}

}  // namespace

Status ImportTensor(const gguf::File& file, const std::string& name, fb::DType dtype,
                    const std::vector<uint64_t>& expected_shape, KesModel* model, uint32_t* id) {
  const gguf::TensorInfo* info = file.FindTensor(name);
  KES_CHECK_OR_RETURN(info != nullptr, "GGUF has no tensor '" + name + "'");
  return ImportTensorInfo(info, name, dtype, expected_shape, model, id);
}

Status ImportTensorRows(const gguf::File& file, const std::string& name, uint64_t total_rows,
                        uint64_t first_row, uint64_t rows, uint64_t cols, fb::DType dtype,
                        const std::string& stored_name, KesModel* model, uint32_t* id) {
  const gguf::TensorInfo* info = file.FindTensor(name);
  KES_CHECK_OR_RETURN(info != nullptr, "GGUF has no tensor '" + name + "'");
  const std::vector<uint64_t> shape(info->ne.rbegin(), info->ne.rend());
  KES_CHECK_OR_RETURN(shape == std::vector<uint64_t>({total_rows, cols}),
                      "tensor '" + name + "': expected shape " + ShapeString({total_rows, cols}) +
                          ", found " + ShapeString(shape));
  // Rows are whole runs of blocks in every ggml type, so a run of them is a tensor of its own.
  const uint64_t row_bytes = info->n_bytes / total_rows;
  gguf::TensorInfo part = *info;
  part.name = stored_name;
  part.ne = {cols, rows};
  part.n_elements = cols * rows;
  part.n_bytes = row_bytes * rows;
  part.offset += row_bytes * first_row;
  part.data += row_bytes * first_row;
  return ImportTensorInfo(&part, stored_name, dtype, {rows, cols}, model, id);
}

Status GetDimension(const gguf::File& file, const std::string& key, uint64_t max, uint32_t* out) {
  int64_t v;
  KES_RETURN_IF_ERROR(file.GetInt(key, &v));
  KES_CHECK_OR_RETURN(
      v >= 1 && static_cast<uint64_t>(v) <= max,
      key + ": expected 1.." + std::to_string(max) + ", found " + std::to_string(v));
  *out = static_cast<uint32_t>(v);
  return OkStatus();
}

}  // namespace kestrel
