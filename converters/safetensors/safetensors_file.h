// Reader for .safetensors files, the format Hugging Face checkpoints store tensors in:
//   8 bytes   little-endian u64 N, the header length
//   N bytes   JSON object: {"name": {"dtype": "F32", "shape": [d0, d1], "data_offsets": [b, e]},
//             ..., "__metadata__": {"key": "value", ...}}  (the metadata is optional)
//   the rest  the data section; each tensor's bytes are [b, e) of it, row-major, little-endian.
//
// The file is untrusted input: Open parses the whole header and checks every entry (fields,
// JSON types, dtype, shape, sizes, offsets) and that the tensors tile the data section exactly,
// as the format requires (no overlaps, no holes, no trailing bytes), before anything is handed
// out. After a successful Open every TensorInfo::data range lies inside the file. Every error
// names the file, the tensor, what was expected and what was found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "converters/mapped_input.h"
#include "runtime/status.h"

namespace kestrel::safetensors {

// Every fixed-size dtype of the format. Files holding any of them open; ReadF32 reads F32, F16
// and BF16.
enum class DType : uint8_t {
  BOOL,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64
};
const char* DTypeName(DType t);  // as the header spells it: "BF16"
size_t DTypeBytes(DType t);

// Headers above this are refused before parsing, as the format's reference reader (the Rust
// safetensors crate, MAX_HEADER_SIZE) refuses them; real checkpoints use well under 1 MiB.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct TensorInfo {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;  // row-major, the last dimension contiguous (PyTorch's order)
  uint64_t begin = 0;           // data_offsets, relative to the data section
  uint64_t end = 0;
  uint64_t n_elements = 0;        // product of shape; 1 for a scalar (shape [])
  const uint8_t* data = nullptr;  // end - begin bytes inside the file, checked at Open
};

// Opened, and validated whole, by Open or OpenFromMemory (converters/mapped_input.h).
class File : public MappedInput<File> {
 public:
  uint64_t data_offset() const { return data_offset_; }                // 8 + N
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in header order
  const TensorInfo* Find(std::string_view name) const;                 // nullptr if absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // All values of `t` (a tensor of this file) as floats, row-major: F32 as is, F16 and BF16
  // converted exactly. Other dtypes are an error naming the dtype.
  Status ReadF32(const TensorInfo& t, std::vector<float>* out) const;

 private:
  friend class MappedInput<File>;
  File() = default;
  Status Parse();
  Status ParseTensor(const std::string& name, const nlohmann::json& entry, TensorInfo* t) const;
  Status CheckTiling() const;

  uint64_t data_offset_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
};

}  // namespace kestrel::safetensors
