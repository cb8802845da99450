#include "converters/store_weights.h"

#include <cstring>

#include "converters/float_convert.h"
#include "converters/quantize.h"
#include "ops/block_layout.h"
#include "ops/matmul_f32_panels.h"
#include "runtime/format.h"

namespace kestrel {

bool BlockTypeOf(fb::DType dtype, ops::GgmlBlockType* type) {
  const DTypeRow* row = FindDType(dtype);
  if (row == nullptr || !row->block) return false;
  *type = *row->block;
  return true;
}

Status PackBlocks(fb::DType dtype, const uint8_t* blocks, size_t rows, size_t k,
                  std::vector<uint8_t>* packed) {
  if (dtype == fb::DType::Q8_0 || dtype == fb::DType::Q4_0) {
    return PackGgmlBlocks(dtype, blocks, rows, k, packed);
  }
  ops::GgmlBlockType type;
  KES_CHECK_OR_RETURN(BlockTypeOf(dtype, &type),
                      std::string("no block packing for dtype ") + DTypeName(dtype));
  // The kept GGUF types: exactly ggml's block bytes, rows grouped (ops/block_layout.h).
  const ops::BlockLayout layout(type, rows, k);
  packed->assign(layout.TotalBytes(), 0);
  const size_t block_bytes = ops::GgmlBlockBytes(type);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < layout.blocks_per_row; ++b) {
      ops::PackGgmlBlock(type, layout, blocks + (r * layout.blocks_per_row + b) * block_bytes, r, b,
                         packed->data());
    }
  }
  return OkStatus();
}

Status StoreWeights(const std::string& name, const std::vector<float>& values, fb::DType dtype,
                    const std::vector<uint64_t>& shape, KesModel* model, uint32_t* id) {
  const std::string where = "tensor '" + name + "'";
  uint64_t elements = 1;
  for (uint64_t dim : shape) elements *= dim;
  KES_CHECK_OR_RETURN(elements == values.size(), where + ": shape " + ShapeString(shape) +
                                                     " does not hold " +
                                                     std::to_string(values.size()) + " values");
  std::vector<uint8_t> bytes;
  ops::GgmlBlockType block_type;
  if (BlockTypeOf(dtype, &block_type)) {
    KES_CHECK_OR_RETURN(shape.size() == 2, where + ": only matrices can be stored as " +
                                               DTypeName(dtype) + ", found shape " +
                                               ShapeString(shape));
    KES_CHECK_OR_RETURN(
        block_type != ops::GgmlBlockType::kQ3_K && block_type != ops::GgmlBlockType::kQ2_K,
        where + ": Kestrel has no " + DTypeName(dtype) +
            " quantizer (Q2_K and Q3_K tensors are kept from a GGUF file, never made from other "
            "values)");
    const uint64_t rows = shape[0], k = shape[1];
    const size_t block_elems = ops::GgmlBlockElems(block_type);
    KES_CHECK_OR_RETURN(k % block_elems == 0, where + ": rows of " + std::to_string(k) +
                                                  " elements cannot be stored as " +
                                                  DTypeName(dtype) + " (blocks of " +
                                                  std::to_string(block_elems) + ")");
    std::vector<uint8_t> blocks;
    QuantizeGgml(block_type, values.data(), values.size(), &blocks);
    KES_RETURN_IF_ERROR(PackBlocks(dtype, blocks.data(), rows, k, &bytes).WithContext(where));
  } else {
    bytes.resize(values.size() * DTypeSize(dtype));
    switch (dtype) {
      case fb::DType::F32: std::memcpy(bytes.data(), values.data(), bytes.size()); break;
      case fb::DType::F32_PANELS: {
        KES_CHECK_OR_RETURN(shape.size() == 2, where + ": only matrices can be stored as " +
                                                   DTypeName(dtype) + ", found shape " +
                                                   ShapeString(shape));
        bytes.resize(ops::F32PanelFloats(shape[0], shape[1]) * sizeof(float));
        ops::PackF32Panels(values.data(), shape[0], shape[1],
                           reinterpret_cast<float*>(bytes.data()));
        break;
      }
      case fb::DType::F16:
      case fb::DType::BF16: {
        uint16_t* out = reinterpret_cast<uint16_t*>(bytes.data());
        for (size_t i = 0; i < values.size(); ++i) {
          out[i] = dtype == fb::DType::F16 ? F16BitsFromF32(values[i]) : BF16BitsFromF32(values[i]);
        }
        break;
      }
      default: return Status::Error(where + ": cannot store weights as " + DTypeName(dtype));
    }
  }
  *id = model->AddTensor(name, dtype, shape, std::move(bytes));
  return OkStatus();
}

}  // namespace kestrel
