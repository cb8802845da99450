// Pieces every architecture's import shares: weights from GGUF tensors into .kes dtypes, and
// hyper-parameters (the tokenizer: converters/gguf_tokenizer.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "converters/convert_options.h"
#include "converters/gguf/gguf_file.h"
#include "converters/kes_model.h"
#include "runtime/status.h"

namespace kestrel {

// Stores GGUF tensor `name` as `dtype` with the .kes shape (outermost first, i.e. GGUF's ne
// reversed); expected_shape (outermost first) must match. Returns the tensor id. A tensor already
// of the quantized dtype asked for (a row of runtime/dtype_table.h with a ggml block) is
// repacked losslessly; anything else is dequantized exactly as ggml does, then converted
// (rounded to nearest, or quantized with ggml's reference quantizer, converters/quantize.h).
Status ImportTensor(const gguf::File& file, const std::string& name, fb::DType dtype,
                    const std::vector<uint64_t>& expected_shape, KesModel* model, uint32_t* id);

// Rows [first_row, first_row + rows) of the [total_rows, cols] matrix `name`, stored as its own
// tensor `stored_name` ([rows, cols]) as ImportTensor stores a whole one: how fused matrices
// (Phi-3's attn_qkv and gate-and-up ffn_up) become the separate ones the plans multiply by.
Status ImportTensorRows(const gguf::File& file, const std::string& name, uint64_t total_rows,
                        uint64_t first_row, uint64_t rows, uint64_t cols, fb::DType dtype,
                        const std::string& stored_name, KesModel* model, uint32_t* id);
// The dtype weight matrix `name` is stored as: options.weight_dtype; with keep_types the GGUF
// tensor's own type, or an error naming the type and the --weights choices that work; with
// tensor_types the type chosen there.
Status WeightDType(const gguf::File& file, const std::string& name, const ConvertOptions& options,
                   fb::DType* dtype);

// The .kes dtype that holds a GGUF type unchanged; false when there is none.
bool DTypeOfGgmlType(gguf::GgmlType type, fb::DType* dtype);

// Whether any tensor of the file is block-quantized (the default is then --weights keep).
bool HasQuantizedTensors(const gguf::File& file);

// Reads an integer hyper-parameter that must be in [1, max].
Status GetDimension(const gguf::File& file, const std::string& key, uint64_t max, uint32_t* out);

}  // namespace kestrel
