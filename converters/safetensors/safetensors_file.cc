#include "converters/safetensors/safetensors_file.h"

#include <algorithm>
#include <numeric>

#include "converters/float_tensor.h"
#include "converters/message_format.h"
#include "converters/safetensors/json_reader.h"

namespace kestrel::safetensors {
namespace {

using nlohmann::json;

constexpr size_t kLengthBytes = 8;
constexpr DType kAllDTypes[] = {DType::BOOL, DType::U8,  DType::I8,  DType::F8_E5M2, DType::F8_E4M3,
                                DType::I16,  DType::U16, DType::F16, DType::BF16,    DType::I32,
                                DType::U32,  DType::F32, DType::F64, DType::I64,     DType::U64};

std::string Num(uint64_t v) { return std::to_string(v); }
std::string RangeString(uint64_t begin, uint64_t end) {
  return "[" + Num(begin) + ", " + Num(end) + "]";
}

bool ParseDType(const std::string& name, DType* out) {
  for (const DType t : kAllDTypes) {
    if (name == DTypeName(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

std::string KnownDTypes() {
  std::string s;
  for (const DType t : kAllDTypes) s += (s.empty() ? "" : ", ") + std::string(DTypeName(t));
  return s;
}

// A field of a tensor entry that must be present and of one JSON type.
Status Field(const json& entry, const char* key, json::value_t type, const char* described,
             const json** out) {
  const auto it = entry.find(key);
  if (it == entry.end()) {
    return Status::Error(std::string("missing '") + key + "' (expected " + described + ")");
  }
  if (it->type() != type) {
    return Status::Error(std::string("expected '") + key + "' to be " + described + ", found " +
                         JsonKind(*it));
  }
  *out = &*it;
  return OkStatus();
}

// Element i of a JSON array that must be a non-negative integer.
Status Unsigned(const json& array, size_t i, const char* key, uint64_t* out) {
  const json& v = array[i];
  if (!v.is_number_unsigned()) {
    return Status::Error(std::string("expected '") + key +
                         "' to hold non-negative integers, found " + JsonKind(v) + " at index " +
                         Num(i));
  }
  *out = v.get<uint64_t>();
  return OkStatus();
}

}  // namespace

const char* DTypeName(DType t) {
  switch (t) {
    case DType::BOOL: return "BOOL";
    case DType::U8: return "U8";
    case DType::I8: return "I8";
    case DType::F8_E5M2: return "F8_E5M2";
    case DType::F8_E4M3: return "F8_E4M3";
    case DType::I16: return "I16";
    case DType::U16: return "U16";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    case DType::U32: return "U32";
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    case DType::I64: return "I64";
    case DType::U64: return "U64";
  }
  return "unknown";
}

size_t DTypeBytes(DType t) {
  switch (t) {
    case DType::BOOL:
    case DType::U8:
    case DType::I8:
    case DType::F8_E5M2:
    case DType::F8_E4M3: return 1;
    case DType::I16:
    case DType::U16:
    case DType::F16:
    case DType::BF16: return 2;
    case DType::I32:
    case DType::U32:
    case DType::F32: return 4;
    case DType::F64:
    case DType::I64:
    case DType::U64: return 8;
  }
  return 0;
}

const TensorInfo* File::Find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Status File::Parse() {
  if (size_ < kLengthBytes) {
    return Status::Error("expected at least 8 bytes (the header length), found " + Num(size_) +
                         " bytes");
  }
  uint64_t n = 0;
  for (size_t i = 0; i < kLengthBytes; ++i) n |= static_cast<uint64_t>(base_[i]) << (8 * i);
  if (n > kMaxHeaderBytes) {
    return Status::Error("expected a header length of at most " + Num(kMaxHeaderBytes) +
                         " bytes, found " + Num(n));
  }
  if (n > size_ - kLengthBytes) {
    return Status::Error("header length " + Num(n) + " runs past the end of the file: expected " +
                         "at most " + Num(size_ - kLengthBytes) +
                         " bytes after the length, found " + Num(size_ - kLengthBytes));
  }
  data_offset_ = kLengthBytes + n;
  const std::string_view text(reinterpret_cast<const char*>(base_ + kLengthBytes),
                              static_cast<size_t>(n));
  json header;
  std::vector<std::string> names;  // in header order
  KES_RETURN_IF_ERROR(ParseJson(text, "header", &header, &names));
  if (!header.is_object()) {
    return Status::Error("expected the header to be a JSON object, found " +
                         JsonKind(header.type()));
  }

  tensors_.reserve(names.size());
  for (const std::string& name : names) {
    const json& entry = header[name];
    if (name == "__metadata__") {
      if (!entry.is_object()) {
        return Status::Error("expected '__metadata__' to be an object of strings, found " +
                             JsonKind(entry));
      }
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return Status::Error("__metadata__ " + Quoted(key) + ": expected a string, found " +
                               JsonKind(value));
        }
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    TensorInfo t;
    KES_RETURN_IF_ERROR(ParseTensor(name, entry, &t).WithContext("tensor " + Quoted(name)));
    index_.emplace(name, tensors_.size());  // unique: ParseJson rejects repeated keys
    tensors_.push_back(std::move(t));
  }
  KES_RETURN_IF_ERROR(CheckTiling());
  for (TensorInfo& t : tensors_) t.data = base_ + data_offset_ + t.begin;
  return OkStatus();
}

Status File::ParseTensor(const std::string& name, const json& entry, TensorInfo* t) const {
  if (!entry.is_object()) {
    return Status::Error("expected an object with dtype, shape and data_offsets, found " +
                         JsonKind(entry));
  }
  for (const auto& [key, value] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return Status::Error("unexpected key " + Quoted(key) +
                           " (expected only dtype, shape and data_offsets)");
    }
  }
  const json* dtype = nullptr;
  const json* shape = nullptr;
  const json* offsets = nullptr;
  KES_RETURN_IF_ERROR(Field(entry, "dtype", json::value_t::string, "a string", &dtype));
  KES_RETURN_IF_ERROR(Field(entry, "shape", json::value_t::array, "an array", &shape));
  KES_RETURN_IF_ERROR(
      Field(entry, "data_offsets", json::value_t::array, "an array [begin, end]", &offsets));

  t->name = name;
  const std::string& dtype_name = dtype->get_ref<const std::string&>();
  if (!ParseDType(dtype_name, &t->dtype)) {
    return Status::Error("unknown dtype " + Quoted(dtype_name) + " (expected one of " +
                         KnownDTypes() + ")");
  }
  t->shape.resize(shape->size());
  for (size_t i = 0; i < shape->size(); ++i) {
    KES_RETURN_IF_ERROR(Unsigned(*shape, i, "shape", &t->shape[i]));
  }
  if (offsets->size() != 2) {
    return Status::Error("expected 'data_offsets' to hold 2 integers [begin, end], found " +
                         Num(offsets->size()) + " values");
  }
  KES_RETURN_IF_ERROR(Unsigned(*offsets, 0, "data_offsets", &t->begin));
  KES_RETURN_IF_ERROR(Unsigned(*offsets, 1, "data_offsets", &t->end));

  // Overflow-safe: a shape whose byte count passes 2^64 could otherwise wrap to a small number
  // that matches its offsets.
  uint64_t n_elements = 1;
  uint64_t n_bytes = 0;
  bool overflow = false;
  for (const uint64_t d : t->shape) overflow |= __builtin_mul_overflow(n_elements, d, &n_elements);
  overflow |= __builtin_mul_overflow(n_elements, uint64_t{DTypeBytes(t->dtype)}, &n_bytes);
  if (overflow && std::find(t->shape.begin(), t->shape.end(), 0) == t->shape.end()) {
    return Status::Error("shape " + ShapeString(t->shape) + " of " + DTypeName(t->dtype) +
                         ": expected a size below 2^64 bytes, found one that overflows it");
  }
  if (overflow) n_elements = n_bytes = 0;  // a 0 dimension makes the tensor empty after all
  t->n_elements = n_elements;
  if (t->begin > t->end) {
    return Status::Error("data_offsets " + RangeString(t->begin, t->end) +
                         ": expected begin <= end, found begin after end");
  }
  if (t->end - t->begin != n_bytes) {
    return Status::Error("shape " + ShapeString(t->shape) + " of " + DTypeName(t->dtype) +
                         " needs " + Num(n_bytes) + " bytes, but data_offsets " +
                         RangeString(t->begin, t->end) + " hold " + Num(t->end - t->begin));
  }
  const uint64_t data_size = size_ - data_offset_;
  if (t->end > data_size) {
    return Status::Error("data_offsets " + RangeString(t->begin, t->end) +
                         ": expected them within the data section of " + Num(data_size) +
                         " bytes (file bytes " + Num(data_offset_) + " to " + Num(size_) +
                         "), found an end past it");
  }
  return OkStatus();
}

// The format requires the tensors to cover the data section exactly, in some order: no two
// share a byte, and no byte belongs to none (the reference reader refuses holes too, so a file
// cannot hide a second payload, and each byte has one meaning).
Status File::CheckTiling() const {
  std::vector<size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [this](size_t a, size_t b) {
    const TensorInfo& x = tensors_[a];
    const TensorInfo& y = tensors_[b];
    return x.begin != y.begin ? x.begin < y.begin : x.end < y.end;
  });
  uint64_t covered = 0;  // the data section's bytes [0, covered) belong to tensors already seen
  const TensorInfo* previous = nullptr;
  for (const size_t i : order) {
    const TensorInfo& t = tensors_[i];
    if (t.begin < covered) {
      return Status::Error("tensors " + Quoted(previous->name) + " " +
                           RangeString(previous->begin, previous->end) + " and " + Quoted(t.name) +
                           " " + RangeString(t.begin, t.end) +
                           " overlap: expected each byte of the data section in one tensor");
    }
    if (t.begin > covered) {
      return Status::Error("data bytes [" + Num(covered) + ", " + Num(t.begin) +
                           ") before tensor " + Quoted(t.name) +
                           " belong to no tensor: expected the tensors to cover the data "
                           "section without holes");
    }
    covered = t.end;
    previous = &t;
  }
  const uint64_t data_size = size_ - data_offset_;
  if (covered != data_size) {
    return Status::Error("expected the tensors to cover the data section of " + Num(data_size) +
                         " bytes, found " + Num(data_size - covered) +
                         " trailing bytes after the last tensor's data (byte " + Num(covered) +
                         ")");
  }
  return OkStatus();
}

Status File::ReadF32(const TensorInfo& t, std::vector<float>* out) const {
  const std::string where = Quoted(path_) + ": tensor " + Quoted(t.name);
  // Its data pointer is trusted below, so it must be one of ours, checked at Open.
  if (tensors_.empty() || &t < &tensors_.front() || &t > &tensors_.back()) {
    return Status::Error(where + ": not a tensor of this file");
  }
  return ReadFloatTensor(t.dtype, t.data, t.n_elements, where, out);
}

}  // namespace kestrel::safetensors
