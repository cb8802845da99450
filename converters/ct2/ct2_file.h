// Reader for CTranslate2's model.bin, the weights file of a CTranslate2 model folder (the format
// faster-whisper runs), binary versions 4 to 6. All integers little-endian; a string is a u16
// byte count followed by that many bytes, the last of them a NUL:
//   u32      binary version
//   string   model specification, e.g. "WhisperSpec"
//   u32      specification revision
//   u32      variable count, then per variable:
//              string  name, scopes separated by '/' ("encoder/layer_0/ffn/linear_0/weight")
//              u8      rank, then rank u32 dimensions (row-major, the last contiguous)
//              u8      dtype id (DType below)
//              u32     byte count, then the bytes
//   u32      alias count, then per alias: string alias, string name of the variable it shares
// (CTranslate2's python/ctranslate2/specs/model_spec.py writes it; its models/model.cc reads it.)
//
// The file is untrusted input. Open reads the whole layout before handing anything out and
// refuses what CTranslate2 itself would trip on and what it lets through: a version outside
// 4..6, strings without their NUL or with one inside, duplicate names, byte counts that are not
// the shape times the dtype's size, data past the end, aliases naming no variable or clashing
// with one, bytes after the aliases. After a successful Open every Variable::data range lies
// inside the file. Every error names the file, the variable, what was expected and what was
// found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "converters/mapped_input.h"
#include "runtime/status.h"

namespace kestrel::ct2 {

// CTranslate2's DataType ids, as stored.
enum class DType : uint8_t { F32 = 0, I8 = 1, I16 = 2, I32 = 3, F16 = 4, BF16 = 5 };
const char* DTypeName(DType t);  // "float16"
size_t DTypeBytes(DType t);

inline constexpr uint32_t kMinBinaryVersion = 4;
inline constexpr uint32_t kMaxBinaryVersion = 6;
// More dimensions than any CTranslate2 spec uses (3, the convolutions) is a damaged file.
inline constexpr size_t kMaxRank = 8;

struct Variable {
  std::string name;
  DType dtype;
  std::vector<uint32_t> shape;    // [] for a scalar
  uint64_t n_elements = 0;        // product of shape; 1 for a scalar
  const uint8_t* data = nullptr;  // n_elements * DTypeBytes(dtype) bytes inside the file
  size_t bytes = 0;
};

// Opened, and validated whole, by Open or OpenFromMemory (converters/mapped_input.h).
class File : public MappedInput<File> {
 public:
  uint32_t binary_version() const { return binary_version_; }
  const std::string& spec() const { return spec_; }  // without the NUL
  uint32_t spec_revision() const { return spec_revision_; }
  const std::vector<Variable>& variables() const { return variables_; }  // in file order
  const std::map<std::string, std::string>& aliases() const { return aliases_; }
  // The variable called `name`, or the one the alias `name` shares; nullptr if neither.
  const Variable* Find(std::string_view name) const;

  // All values of `v` (a variable of this file) as floats, row-major: F32 as is, F16 and BF16
  // converted exactly. The integer dtypes are an error naming the dtype.
  Status ReadF32(const Variable& v, std::vector<float>* out) const;
  // The value of a scalar (rank 0) integer variable, such as "decoder/activation"; anything else
  // is an error naming the shape or dtype found.
  Status ReadScalarInt(const Variable& v, int64_t* out) const;

 private:
  friend class MappedInput<File>;
  File() = default;
  Status Parse();
  Status CheckOwned(const Variable& v, const std::string& where) const;

  uint32_t binary_version_ = 0;
  std::string spec_;
  uint32_t spec_revision_ = 0;
  std::vector<Variable> variables_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> position in variables_
  std::map<std::string, std::string> aliases_;        // alias -> variable name
};

}  // namespace kestrel::ct2
