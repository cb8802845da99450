// Turning weight values into the bytes of a .kes dtype, for every importer (GGUF, Hugging Face).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converters/kes_model.h"
#include "converters/message_format.h"  // ShapeString, for the importers' messages
#include "ops/ggml_blocks.h"
#include "runtime/status.h"

namespace kestrel {

// The ggml block type a block-quantized .kes dtype holds; false for the others.
bool BlockTypeOf(fb::DType dtype, ops::GgmlBlockType* type);

// Rearranges a [rows, k] tensor of ggml blocks of `dtype`'s type (row-major, as GGUF stores them)
// into the .kes packing of that dtype. Moves bytes only: values are unchanged.
Status PackBlocks(fb::DType dtype, const uint8_t* blocks, size_t rows, size_t k,
                  std::vector<uint8_t>* packed);

// Adds tensor `name` of `shape` (outermost first) holding `values` as `dtype`: rounded to nearest
// for f16/bf16, quantized with ggml's reference quantizer for block types (matrices whose rows
// are whole blocks only). Returns the tensor id.
Status StoreWeights(const std::string& name, const std::vector<float>& values, fb::DType dtype,
                    const std::vector<uint64_t>& shape, KesModel* model, uint32_t* id);

}  // namespace kestrel
