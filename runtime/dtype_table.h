// Kestrel's dtypes in one table: a row per fb::DType (schema/kestrel.fbs) with its name, block
// size, bytes, the GGUF type it holds and the kernels that read it. The .kes format (row bytes),
// the loader's and the steps' checks, the matmul and embedding binding, the GGUF importer and
// their messages all read it, so a new dtype is a schema enumerator, a row here and its kernels.
// tests/dtype_table_test.cc checks the rows against the schema, ggml and each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "kestrel_generated.h"
#include "ops/ggml_blocks.h"
#include "ops/quantize_rows.h"

namespace kestrel {

// Elements per block of the activations quantized for the integer kernels (ops/quantize_rows.h)
// and of the 32-element block types.
inline constexpr size_t kQuantBlock = 32;

// The matmul kernels and embedding lookup that read a weight dtype: each family has both
// (runtime/steps/matmul_step.cc and embed_step.cc bind them).
enum class KernelFamily : uint8_t {
  kNone,        // not a weight dtype: activations only
  kF32,         // ops/matmul.h, ops/embed.h
  kF32Panels,   // ops/matmul_f32_panels.h
  kF16,         // ops/matmul.h, ops/embed.h
  kBF16,        // ops/matmul.h, ops/embed.h
  kQ8_0,        // ops/matmul_quant.h in ops/quant_layout.h's layout
  kQ4_0,        // ops/matmul_quant.h in ops/quant_layout.h's layout
  kKeptBlocks,  // ops/matmul_blocks.h, one kernel per ggml block type, ops/block_layout.h
};

struct DTypeRow {
  fb::DType dtype;
  const char* name;    // as `kestrel inspect` and the error messages print it
  size_t block_elems;  // elements per block: 32, 256 (the K-quants); 1 for the plain types
  size_t block_bytes;  // bytes per block; per element for the plain types
  // The GGUF type it holds unchanged; its ggml name is the schema's enumerator name.
  std::optional<ops::GgmlType> gguf;
  std::optional<ops::GgmlBlockType> block;  // the ggml block its values are, bit for bit
  KernelFamily kernels;
};

namespace dtype_rows {

using D = fb::DType;
using G = ops::GgmlType;
using B = ops::GgmlBlockType;
using K = KernelFamily;

// A type of one value per element, `bytes` each.
constexpr DTypeRow Plain(D dtype, const char* name, size_t bytes, std::optional<G> gguf, K k) {
  return {dtype, name, 1, bytes, gguf, std::nullopt, k};
}
// A type of ggml blocks, sized as ggml sizes them (ops/ggml_blocks.h).
constexpr DTypeRow Blocks(D dtype, const char* name, G gguf, B block, K k) {
  return {dtype, name, ops::GgmlBlockElems(block), ops::GgmlBlockBytes(block), gguf, block, k};
}

// In the order messages list them.
inline constexpr DTypeRow kDTypeTable[] = {
    Plain(D::F32, "f32", 4, G::F32, K::kF32),
    // f32 in panels of 16 rows (ops/matmul_f32_panels.h); the padding rows are the tensor's.
    Plain(D::F32_PANELS, "f32-panels", 4, std::nullopt, K::kF32Panels),
    Plain(D::F16, "f16", 2, G::F16, K::kF16),
    Plain(D::BF16, "bf16", 2, G::BF16, K::kBF16),
    Blocks(D::Q8_0, "q8", G::Q8_0, B::kQ8_0, K::kQ8_0),
    Blocks(D::Q4_0, "q4", G::Q4_0, B::kQ4_0, K::kQ4_0),
    Blocks(D::Q4_1, "q4_1", G::Q4_1, B::kQ4_1, K::kKeptBlocks),
    Blocks(D::Q5_0, "q5_0", G::Q5_0, B::kQ5_0, K::kKeptBlocks),
    Blocks(D::Q5_1, "q5_1", G::Q5_1, B::kQ5_1, K::kKeptBlocks),
    Blocks(D::Q2_K, "q2_k", G::Q2_K, B::kQ2_K, K::kKeptBlocks),
    Blocks(D::Q3_K, "q3_k", G::Q3_K, B::kQ3_K, K::kKeptBlocks),
    Blocks(D::Q4_K, "q4_k", G::Q4_K, B::kQ4_K, K::kKeptBlocks),
    Blocks(D::Q5_K, "q5_k", G::Q5_K, B::kQ5_K, K::kKeptBlocks),
    Blocks(D::Q6_K, "q6_k", G::Q6_K, B::kQ6_K, K::kKeptBlocks),
    Plain(D::I32, "i32", 4, std::nullopt, K::kNone),
    // Activations quantized per 32 for the integer kernels, in their own layout.
    {D::Q8_ACT, "q8-activations", kQuantBlock, ops::Q8ActRowBytes(kQuantBlock), std::nullopt,
     std::nullopt, K::kNone},
};

}  // namespace dtype_rows

using dtype_rows::kDTypeTable;

// The row of a dtype; nullptr for a code no row has (a corrupt or newer file).
constexpr const DTypeRow* FindDType(fb::DType dtype) {
  for (const DTypeRow& row : kDTypeTable) {
    if (row.dtype == dtype) return &row;
  }
  return nullptr;
}

// A schema enumerator without a row fails here, at compile time (the codes run from MIN to MAX);
// tests/dtype_table_test.cc checks there is exactly one. By index, not FindDType's pointers:
// GCC's -fsanitize=undefined makes a pointer compared with null no constant expression.
constexpr bool EveryDTypeHasARow() {
  for (auto code = static_cast<uint32_t>(fb::DType::MIN);
       code <= static_cast<uint32_t>(fb::DType::MAX); ++code) {
    const auto dtype = static_cast<fb::DType>(code);
    bool found = false;
    for (const DTypeRow& row : kDTypeTable) found = found || row.dtype == dtype;
    if (!found) return false;
  }
  return true;
}
static_assert(EveryDTypeHasARow(), "a fb::DType has no row in kDTypeTable");

// The row holding a GGUF type unchanged; nullptr when none does.
constexpr const DTypeRow* FindGgmlType(ops::GgmlType type) {
  for (const DTypeRow& row : kDTypeTable) {
    if (row.gguf == type) return &row;
  }
  return nullptr;
}

inline const char* DTypeName(fb::DType dtype) {
  const DTypeRow* row = FindDType(dtype);
  return row == nullptr ? "unknown" : row->name;
}

// The dtypes a weight tensor may hold: those some matmul kernel and embedding lookup read.
constexpr bool IsWeightDType(fb::DType dtype) {
  const DTypeRow* row = FindDType(dtype);
  return row != nullptr && row->kernels != KernelFamily::kNone;
}

// The GGUF types kept as they are (ops/block_layout.h): their ggml block type, or false.
constexpr bool KeptBlockType(fb::DType dtype, ops::GgmlBlockType* type) {
  const DTypeRow* row = FindDType(dtype);
  if (row == nullptr || row->kernels != KernelFamily::kKeptBlocks) return false;
  *type = *row->block;
  return true;
}

// Weights the matmuls read with int8 activations (Q8_ACT), and Q8_ACT itself.
constexpr bool IsBlockQuantized(fb::DType dtype) {
  const DTypeRow* row = FindDType(dtype);
  return row != nullptr && row->block_elems > 1;
}

// Elements per block of a block-quantized dtype (32, or 256 for the K-quants); 0 otherwise.
constexpr size_t BlockElems(fb::DType dtype) {
  return IsBlockQuantized(dtype) ? FindDType(dtype)->block_elems : 0;
}

// Bytes per element of the plain dtypes; 0 for block-quantized ones and unknown codes.
constexpr size_t DTypeSize(fb::DType dtype) {
  const DTypeRow* row = FindDType(dtype);
  return row != nullptr && row->block_elems == 1 ? row->block_bytes : 0;
}

// Bytes of one row of `elems` elements; 0 when the dtype is unknown or a block-quantized row is
// not a whole number of blocks.
constexpr uint64_t RowBytes(fb::DType dtype, uint64_t elems) {
  const DTypeRow* row = FindDType(dtype);
  if (row == nullptr || elems % row->block_elems != 0) return 0;
  return elems / row->block_elems * row->block_bytes;
}

// "a, b, c" of the dtypes `keep` selects, in table order; `last` joins the last two.
inline std::string DTypeNames(bool (*keep)(fb::DType), const char* last = ", ") {
  std::string names;
  size_t left = 0;
  for (const DTypeRow& row : kDTypeTable) left += keep(row.dtype);
  for (const DTypeRow& row : kDTypeTable) {
    if (!keep(row.dtype)) continue;
    names += row.name;
    --left;
    if (left > 0) names += left == 1 ? last : ", ";
  }
  return names;
}

}  // namespace kestrel
