// Reader for GGUF files (versions 2 and 3, little-endian), the container llama.cpp writes.
//
// The file is untrusted input: Open walks the whole header, every metadata value (nested arrays
// included) and every tensor info, and checks each count, length, shape and offset against the
// file size before anything is handed out. After a successful Open every getter and every
// TensorInfo::data pointer stays inside the file. Metadata values are not copied: they are
// decoded from the mapped bytes when asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ops/ggml_blocks.h"
#include "runtime/mapped_file.h"
#include "runtime/status.h"

namespace kestrel::gguf {

// ggml's type ids; the reader knows the blocks of those runtime/dtype_table.h has a row for.
using GgmlType = ops::GgmlType;
const char* GgmlTypeName(GgmlType t);  // "Q4_K" etc, "unknown" otherwise
// The types the reader knows, for messages: "F32, F16, ..." or, with ids, "F32 0, F16 1, ...".
std::string GgmlTypeList(bool with_ids);

enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char* ValueTypeName(ValueType t);  // "u32", "string", "array" etc, "unknown" otherwise

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> ne;  // ne[0] is the contiguous row length (GGUF order)
  GgmlType type;
  uint64_t offset;      // relative to the data section
  uint64_t n_elements;  // product of ne
  uint64_t n_bytes;     // n_elements / block elements * block bytes
  const uint8_t* data;  // points into the mapped file, bounds-checked at Open
};

class File {
 public:
  // Maps the file read-only and parses/validates header, all metadata (every value type incl.
  // nested arrays) and tensor infos. The mapping lives as long as the File.
  static Status Open(const std::string& path, std::unique_ptr<File>* out);
  // Same from a caller-owned buffer, which must outlive the File (tests use synthetic files).
  static Status OpenFromMemory(const uint8_t* data, size_t size, std::unique_ptr<File>* out);
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }      // general.alignment, default 32
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  size_t size() const { return size_; }                  // file size in bytes

  bool Has(std::string_view key) const;
  // The type of a value (for arrays: ARRAY; see GetArrayType for the element type).
  Status GetType(std::string_view key, ValueType* out) const;
  // Element type and length of an array value.
  Status GetArrayType(std::string_view key, ValueType* element_type, uint64_t* count) const;

  // Any integer type or bool. The error names the key, the expected and the found type.
  Status GetInt(std::string_view key, int64_t* out) const;
  Status GetFloat(std::string_view key, double* out) const;  // f32/f64 (integers accepted too)
  Status GetBool(std::string_view key, bool* out) const;
  Status GetString(std::string_view key, std::string* out) const;
  Status GetStringArray(std::string_view key, std::vector<std::string>* out) const;
  Status GetFloatArray(std::string_view key, std::vector<float>* out) const;  // any numeric
  Status GetIntArray(std::string_view key, std::vector<int64_t>* out) const;  // integers, bools

  std::vector<std::string> Keys() const;  // in file order
  // One line for inspect/debug printing: strings quoted and escaped, arrays shortened to their
  // first max_array_items items plus a count. "<missing>" when the key is absent.
  std::string ValueToString(std::string_view key, size_t max_array_items = 8) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(std::string_view name) const;  // nullptr if absent

 private:
  // One metadata entry: its type and where its (already validated) value bytes lie in the file.
  struct KeyValue {
    std::string key;
    ValueType type;
    const uint8_t* value;  // first byte of the value, after the type field
    size_t value_size;     // bytes the value occupies, nested contents included
  };

  File() = default;
  Status Parse();
  Status ParseMetadata(size_t* pos, uint64_t kv_count);
  Status ParseTensorInfos(size_t* pos, uint64_t tensor_count);
  Status Find(std::string_view key, const KeyValue** out) const;
  // The entry `key` when `accepts` takes its type; otherwise an error naming `expected` and the
  // type found. The Get* accessors share it, and so their messages.
  Status FindOfType(std::string_view key, bool (*accepts)(ValueType), const char* expected,
                    const KeyValue** out) const;
  // An array entry: its value is the u32 element type, the u64 count, then the elements.
  struct ArrayEntry {
    const KeyValue* kv = nullptr;
    ValueType element_type = ValueType::U8;
    uint64_t count = 0;
    size_t stride = 0;  // bytes per element when they are scalars
    // Where scalar element i starts.
    const uint8_t* Element(uint64_t i) const { return kv->value + 12 + i * stride; }
  };
  // The array entry `key` when `accepts` takes its element type; otherwise an error naming
  // `elements` (what it expected) and the element type found.
  Status FindArrayOf(std::string_view key, bool (*accepts)(ValueType), const char* elements,
                     ArrayEntry* out) const;

  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<MappedFile> mapping_;  // null for OpenFromMemory

  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;                                // file order
  std::map<std::string, size_t, std::less<>> kv_index_;      // key -> index in kvs_
  std::vector<TensorInfo> tensors_;                          // file order
  std::map<std::string, size_t, std::less<>> tensor_index_;  // name -> index in tensors_
};

}  // namespace kestrel::gguf
