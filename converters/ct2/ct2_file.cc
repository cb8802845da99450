#include "converters/ct2/ct2_file.h"

#include <cstring>

#include "converters/float_tensor.h"
#include "converters/message_format.h"

namespace kestrel::ct2 {
namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

// Sequential little-endian reads with bounds checks; `what` names the field in errors.
class Cursor {
 public:
  Cursor(const uint8_t* base, size_t size) : base_(base), size_(size) {}
  size_t offset() const { return offset_; }
  size_t remaining() const { return size_ - offset_; }

  template <class T>
  Status Read(const char* what, T* out) {
    if (remaining() < sizeof(T)) return Truncated(what, sizeof(T));
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(T{base_[offset_ + i]} << (8 * i));
    offset_ += sizeof(T);
    *out = v;
    return OkStatus();
  }

  // A u16-counted string whose last byte is its only NUL.
  Status ReadString(const char* what, std::string* out) {
    uint16_t length = 0;
    KES_RETURN_IF_ERROR(Read(what, &length));
    if (length == 0) {
      return Status::Error(std::string(what) + " at byte " + Num(offset_ - 2) +
                           ": length 0 (expected at least the terminating NUL)");
    }
    if (remaining() < length) return Truncated(what, length);
    const char* chars = reinterpret_cast<const char*>(base_ + offset_);
    if (chars[length - 1] != '\0') {
      return Status::Error(std::string(what) + " at byte " + Num(offset_) +
                           ": does not end with a NUL byte");
    }
    const void* inner_nul = std::memchr(chars, '\0', length - 1u);
    if (inner_nul != nullptr) {
      return Status::Error(std::string(what) + " at byte " + Num(offset_) + ": NUL byte at " +
                           Num(static_cast<size_t>(static_cast<const char*>(inner_nul) - chars)) +
                           " of " + Num(length) + " (expected only at the end)");
    }
    out->assign(chars, length - 1u);
    offset_ += length;
    return OkStatus();
  }

  Status Skip(const char* what, size_t bytes, const uint8_t** start) {
    if (remaining() < bytes) return Truncated(what, bytes);
    *start = base_ + offset_;
    offset_ += bytes;
    return OkStatus();
  }

 private:
  Status Truncated(const char* what, size_t needed) const {
    return Status::Error(std::string(what) + " at byte " + Num(offset_) + ": needs " + Num(needed) +
                         " bytes, the file has " + Num(remaining()) + " left");
  }

  const uint8_t* base_;
  size_t size_;
  size_t offset_ = 0;
};

bool KnownDType(uint8_t id) { return id <= static_cast<uint8_t>(DType::BF16); }

}  // namespace

const char* DTypeName(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::I8: return "int8";
    case DType::I16: return "int16";
    case DType::I32: return "int32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
  }
  return "unknown";
}

size_t DTypeBytes(DType t) {
  switch (t) {
    case DType::I8: return 1;
    case DType::I16:
    case DType::F16:
    case DType::BF16: return 2;
    case DType::F32:
    case DType::I32: return 4;
  }
  return 0;
}

Status File::Parse() {
  Cursor in(base_, size_);
  KES_RETURN_IF_ERROR(in.Read("binary version", &binary_version_));
  if (binary_version_ < kMinBinaryVersion || binary_version_ > kMaxBinaryVersion) {
    return Status::Error("binary version " + Num(binary_version_) + " (expected " +
                         Num(kMinBinaryVersion) + " to " + Num(kMaxBinaryVersion) +
                         ": not a CTranslate2 model.bin, or one this reader does not know)");
  }
  KES_RETURN_IF_ERROR(in.ReadString("model specification", &spec_));
  if (spec_.empty()) return Status::Error("empty model specification name");
  KES_RETURN_IF_ERROR(in.Read("specification revision", &spec_revision_));

  uint32_t count = 0;
  KES_RETURN_IF_ERROR(in.Read("variable count", &count));
  // Smallest variable: a 1-character name (2 + 2 bytes), rank, dtype, byte count (6 bytes).
  constexpr size_t kMinVariableBytes = 10;
  if (count > in.remaining() / kMinVariableBytes) {
    return Status::Error(Num(count) + " variables cannot fit in the " + Num(in.remaining()) +
                         " bytes left (each takes at least " + Num(kMinVariableBytes) + ")");
  }
  variables_.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    Variable v;
    const std::string which = "variable " + Num(i) + " of " + Num(count);
    KES_RETURN_IF_ERROR(in.ReadString("name", &v.name).WithContext(which));
    const std::string where = which + " " + Quoted(v.name);
    if (v.name.empty()) return Status::Error(where + ": empty name");
    uint8_t rank = 0;
    KES_RETURN_IF_ERROR(in.Read("rank", &rank).WithContext(where));
    if (rank > kMaxRank) {
      return Status::Error(where + ": rank " + Num(rank) + " (expected at most " + Num(kMaxRank) +
                           ")");
    }
    // Counted with saturation: 8 factors below 2^32 could overflow 64 bits.
    constexpr uint64_t kTooMany = uint64_t{1} << 40;
    v.n_elements = 1;
    bool empty = false;
    for (uint8_t d = 0; d < rank; ++d) {
      uint32_t dim = 0;
      KES_RETURN_IF_ERROR(in.Read("dimension", &dim).WithContext(where));
      v.shape.push_back(dim);
      if (dim == 0)
        empty = true;
      else
        v.n_elements = v.n_elements > kTooMany / dim ? kTooMany : v.n_elements * dim;
    }
    if (empty) v.n_elements = 0;
    if (v.n_elements >= kTooMany) {
      return Status::Error(where + ": shape " + ShapeString(v.shape) +
                           " has 2^40 elements or more (no model variable is that large)");
    }
    uint8_t dtype_id = 0;
    KES_RETURN_IF_ERROR(in.Read("dtype", &dtype_id).WithContext(where));
    if (!KnownDType(dtype_id)) {
      return Status::Error(where + ": dtype id " + Num(dtype_id) +
                           " (expected 0 float32, 1 int8, 2 int16, 3 int32, 4 float16 or "
                           "5 bfloat16)");
    }
    v.dtype = static_cast<DType>(dtype_id);
    uint32_t bytes = 0;
    KES_RETURN_IF_ERROR(in.Read("byte count", &bytes).WithContext(where));
    const uint64_t expected = v.n_elements * DTypeBytes(v.dtype);  // below 2^42
    if (bytes != expected) {
      return Status::Error(where + ": " + Num(bytes) + " bytes (expected " + Num(expected) +
                           " for shape " + ShapeString(v.shape) + " of " + DTypeName(v.dtype) +
                           ")");
    }
    v.bytes = bytes;
    KES_RETURN_IF_ERROR(in.Skip("data", v.bytes, &v.data).WithContext(where));
    if (!index_.emplace(v.name, variables_.size()).second) {
      return Status::Error(where + ": duplicate name (first is variable " +
                           Num(index_.find(v.name)->second) + ")");
    }
    variables_.push_back(std::move(v));
  }

  uint32_t alias_count = 0;
  KES_RETURN_IF_ERROR(in.Read("alias count", &alias_count));
  constexpr size_t kMinAliasBytes = 8;  // two 1-character strings
  if (alias_count > in.remaining() / kMinAliasBytes) {
    return Status::Error(Num(alias_count) + " aliases cannot fit in the " + Num(in.remaining()) +
                         " bytes left");
  }
  for (uint32_t i = 0; i < alias_count; ++i) {
    const std::string which = "alias " + Num(i) + " of " + Num(alias_count);
    std::string alias, target;
    KES_RETURN_IF_ERROR(in.ReadString("alias name", &alias).WithContext(which));
    KES_RETURN_IF_ERROR(in.ReadString("aliased variable", &target).WithContext(which));
    const std::string where = which + " " + Quoted(alias);
    if (alias.empty()) return Status::Error(where + ": empty name");
    if (index_.count(alias) != 0) {
      return Status::Error(where + ": a variable already has this name");
    }
    if (index_.count(target) == 0) {
      return Status::Error(where + ": names " + Quoted(target) +
                           ", which is not a variable of the file");
    }
    if (!aliases_.emplace(alias, target).second) {
      return Status::Error(where + ": duplicate alias");
    }
  }
  if (in.remaining() != 0) {
    return Status::Error(Num(in.remaining()) + " bytes after the aliases at byte " +
                         Num(in.offset()) + " (expected the file to end there)");
  }
  return OkStatus();
}

const Variable* File::Find(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    const auto alias = aliases_.find(std::string(name));
    if (alias == aliases_.end()) return nullptr;
    it = index_.find(alias->second);
  }
  return &variables_[it->second];
}

Status File::CheckOwned(const Variable& v, const std::string& where) const {
  // Its data pointer is trusted by the readers, so it must be one of ours, checked at Open.
  if (variables_.empty() || &v < &variables_.front() || &v > &variables_.back()) {
    return Status::Error(where + ": not a variable of this file");
  }
  return OkStatus();
}

Status File::ReadF32(const Variable& v, std::vector<float>* out) const {
  const std::string where = Quoted(path_) + ": variable " + Quoted(v.name);
  KES_RETURN_IF_ERROR(CheckOwned(v, where));
  return ReadFloatTensor(v.dtype, v.data, v.n_elements, where, out);
}

Status File::ReadScalarInt(const Variable& v, int64_t* out) const {
  const std::string where = Quoted(path_) + ": variable " + Quoted(v.name);
  KES_RETURN_IF_ERROR(CheckOwned(v, where));
  if (!v.shape.empty()) {
    return Status::Error(where + ": shape " + ShapeString(v.shape) + " (expected a scalar)");
  }
  switch (v.dtype) {
    case DType::I8: *out = static_cast<int8_t>(v.data[0]); return OkStatus();
    case DType::I16: {
      const auto u = static_cast<uint16_t>(v.data[0] | (v.data[1] << 8));
      *out = static_cast<int16_t>(u);
      return OkStatus();
    }
    case DType::I32: {
      uint32_t u = 0;
      for (int i = 0; i < 4; ++i) u |= uint32_t{v.data[i]} << (8 * i);
      *out = static_cast<int32_t>(u);
      return OkStatus();
    }
    default:
      return Status::Error(where + ": " + DTypeName(v.dtype) +
                           " (expected an int8, int16 or int32 scalar)");
  }
}

}  // namespace kestrel::ct2
