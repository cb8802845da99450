#include "converters/gguf/gguf_file.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>

#include "converters/gguf/dequantize.h"
#include "runtime/dtype_table.h"

namespace kestrel::gguf {
namespace {

// Nested arrays deeper than this are rejected: the validator recurses once per level, and a
// hostile file could otherwise nest millions of levels in a few megabytes.
constexpr int kMaxArrayDepth = 16;
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kHeaderBytes = 4 + 4 + 8 + 8;  // magic, version, tensor_count, kv_count

std::string Num(uint64_t v) { return std::to_string(v); }

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

uint16_t LoadU16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t LoadU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t LoadU64(const uint8_t* p) {
  return static_cast<uint64_t>(LoadU32(p)) | (static_cast<uint64_t>(LoadU32(p + 4)) << 32);
}
float LoadF32(const uint8_t* p) {
  const uint32_t bits = LoadU32(p);
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
double LoadF64(const uint8_t* p) {
  const uint64_t bits = LoadU64(p);
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}

bool IsKnownValueType(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::F64); }

// Bytes of one scalar value; 0 for strings, arrays and unknown types.
size_t ScalarSize(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL: return 1;
    case ValueType::U16:
    case ValueType::I16: return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32: return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64: return 8;
    default: return 0;
  }
}

// The smallest number of bytes one element of this type can occupy in an array.
size_t MinEncodedSize(ValueType t) {
  if (t == ValueType::STRING) return 8;     // u64 length
  if (t == ValueType::ARRAY) return 4 + 8;  // u32 element type, u64 count
  return ScalarSize(t);
}

bool IsInteger(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::U16:
    case ValueType::I16:
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::BOOL: return true;
    default: return false;
  }
}

bool IsNumeric(ValueType t) { return IsInteger(t) || t == ValueType::F32 || t == ValueType::F64; }
// What GetFloat reads: a numeric value other than bool.
bool IsNumber(ValueType t) { return IsNumeric(t) && t != ValueType::BOOL; }
// The test for one value type, in the form FindOfType takes.
template <ValueType kType>
bool Is(ValueType t) {
  return t == kType;
}

// Decodes one validated integer (or bool) scalar. Fails only for u64 values above INT64_MAX.
bool DecodeInt(ValueType t, const uint8_t* p, int64_t* out) {
  switch (t) {
    case ValueType::U8: *out = p[0]; return true;
    case ValueType::I8: *out = static_cast<int8_t>(p[0]); return true;
    case ValueType::BOOL: *out = p[0] != 0; return true;
    case ValueType::U16: *out = LoadU16(p); return true;
    case ValueType::I16: *out = static_cast<int16_t>(LoadU16(p)); return true;
    case ValueType::U32: *out = LoadU32(p); return true;
    case ValueType::I32: *out = static_cast<int32_t>(LoadU32(p)); return true;
    case ValueType::I64: *out = static_cast<int64_t>(LoadU64(p)); return true;
    case ValueType::U64: {
      const uint64_t v = LoadU64(p);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
      *out = static_cast<int64_t>(v);
      return true;
    }
    default: return false;
  }
}

double DecodeFloat(ValueType t, const uint8_t* p) {
  if (t == ValueType::F32) return LoadF32(p);
  if (t == ValueType::F64) return LoadF64(p);
  if (t == ValueType::U64) return static_cast<double>(LoadU64(p));
  int64_t i = 0;
  DecodeInt(t, p, &i);
  return static_cast<double>(i);
}

// A bounds-checked read position over the file. Every failed read says what was being read,
// where, and how many bytes were missing.
class Cursor {
 public:
  Cursor(const uint8_t* base, size_t size, size_t pos) : base_(base), size_(size), pos_(pos) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return base_ + pos_; }

  Status Skip(size_t n, const std::string& what) {
    if (n > remaining()) {
      return Status::Error("truncated file: expected " + Num(n) + " bytes for " + what +
                           " at byte " + Num(pos_) + ", but the file has " + Num(size_) + " bytes");
    }
    pos_ += n;
    return OkStatus();
  }
  Status ReadU32(const std::string& what, uint32_t* out) {
    const uint8_t* p = here();
    KES_RETURN_IF_ERROR(Skip(4, what));
    *out = LoadU32(p);
    return OkStatus();
  }
  Status ReadU64(const std::string& what, uint64_t* out) {
    const uint8_t* p = here();
    KES_RETURN_IF_ERROR(Skip(8, what));
    *out = LoadU64(p);
    return OkStatus();
  }
  // A GGUF string: u64 length, then that many bytes (not NUL-terminated).
  Status ReadString(const std::string& what, std::string_view* out) {
    uint64_t length = 0;
    KES_RETURN_IF_ERROR(ReadU64("the length of " + what, &length));
    if (length > remaining()) {
      return Status::Error(what + ": string length " + Num(length) + " at byte " + Num(pos_ - 8) +
                           " exceeds the " + Num(remaining()) + " bytes left in the file");
    }
    *out = std::string_view(reinterpret_cast<const char*>(here()), static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return OkStatus();
  }

 private:
  const uint8_t* base_;
  size_t size_;
  size_t pos_;
};

// Walks one value of type `type` (its type field already consumed), checking every length
// against the file. `where` names the value for messages.
Status ValidateValue(Cursor* c, ValueType type, int depth, const std::string& where) {
  if (type == ValueType::STRING) {
    std::string_view ignored;
    return c->ReadString(where, &ignored);
  }
  if (type != ValueType::ARRAY) return c->Skip(ScalarSize(type), where);

  if (depth >= kMaxArrayDepth) {
    return Status::Error(where + ": arrays nested deeper than " + Num(kMaxArrayDepth) +
                         " levels at byte " + Num(c->pos()));
  }
  uint32_t raw_type = 0;
  uint64_t count = 0;
  KES_RETURN_IF_ERROR(c->ReadU32("the element type of " + where, &raw_type));
  if (!IsKnownValueType(raw_type)) {
    return Status::Error(where + ": expected an array element type between 0 and 12, found " +
                         Num(raw_type) + " at byte " + Num(c->pos() - 4));
  }
  const auto element_type = static_cast<ValueType>(raw_type);
  KES_RETURN_IF_ERROR(c->ReadU64("the length of " + where, &count));
  const size_t min_size = MinEncodedSize(element_type);
  if (count > c->remaining() / min_size) {
    return Status::Error(where + ": array of " + Num(count) + " " + ValueTypeName(element_type) +
                         " elements needs at least " + Num(min_size) + " bytes each, but only " +
                         Num(c->remaining()) + " bytes are left in the file after byte " +
                         Num(c->pos()));
  }
  if (ScalarSize(element_type) != 0) {
    return c->Skip(static_cast<size_t>(count) * min_size, where);
  }
  if (element_type == ValueType::STRING) {
    // Vocabularies hold 10^5 strings: name the element only when one is bad.
    for (uint64_t i = 0; i < count; ++i) {
      if (c->remaining() >= 8 && LoadU64(c->here()) <= c->remaining() - 8) {
        (void)c->Skip(8 + static_cast<size_t>(LoadU64(c->here())), where);
        continue;
      }
      std::string_view ignored;
      return c->ReadString(where + "[" + Num(i) + "]", &ignored);  // fails, saying why
    }
    return OkStatus();
  }
  for (uint64_t i = 0; i < count; ++i) {
    KES_RETURN_IF_ERROR(ValidateValue(c, element_type, depth + 1, where + "[" + Num(i) + "]"));
  }
  return OkStatus();
}

std::string Escaped(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// Formats one validated value and advances the cursor past it.
void FormatValue(Cursor* c, ValueType type, size_t max_items, std::string* out) {
  const uint8_t* p = c->here();
  char buf[64];
  switch (type) {
    case ValueType::STRING: {
      std::string_view s;
      if (c->ReadString("string", &s).ok()) *out += Escaped(s);
      return;
    }
    case ValueType::ARRAY: {
      uint32_t raw_type = 0;
      uint64_t count = 0;
      if (!c->ReadU32("array type", &raw_type).ok() || !c->ReadU64("array length", &count).ok()) {
        return;
      }
      const auto element_type = static_cast<ValueType>(raw_type);
      *out += "[";
      for (uint64_t i = 0; i < count; ++i) {
        if (i == max_items) {
          // Skip the rest without printing it (validated at Open, so this cannot fail).
          *out += i > 0 ? ", ..." : "...";
          if (ScalarSize(element_type) != 0) {
            (void)c->Skip(static_cast<size_t>(count - i) * ScalarSize(element_type), "array");
          } else {
            for (; i < count; ++i) (void)ValidateValue(c, element_type, 0, "array");
          }
          break;
        }
        if (i > 0) *out += ", ";
        FormatValue(c, element_type, max_items, out);
      }
      *out += "]";
      if (count > max_items) *out += " (" + Num(count) + " " + ValueTypeName(element_type) + ")";
      return;
    }
    case ValueType::F32:
      std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(LoadF32(p)));
      break;
    case ValueType::F64: std::snprintf(buf, sizeof(buf), "%.17g", LoadF64(p)); break;
    case ValueType::BOOL: std::snprintf(buf, sizeof(buf), "%s", p[0] ? "true" : "false"); break;
    case ValueType::U64: std::snprintf(buf, sizeof(buf), "%" PRIu64, LoadU64(p)); break;
    default: {
      int64_t v = 0;
      DecodeInt(type, p, &v);
      std::snprintf(buf, sizeof(buf), "%" PRId64, v);
      break;
    }
  }
  *out += buf;
  (void)c->Skip(ScalarSize(type), "scalar");
}

}  // namespace

const char* GgmlTypeName(GgmlType t) {
  const DTypeRow* row = FindGgmlType(t);
  return row == nullptr ? "unknown" : fb::EnumNameDType(row->dtype);
}

std::string GgmlTypeList(bool with_ids) {
  std::string list;
  for (const DTypeRow& row : kDTypeTable) {
    if (!row.gguf) continue;
    list += (list.empty() ? "" : ", ") + std::string(GgmlTypeName(*row.gguf));
    if (with_ids) list += " " + std::to_string(static_cast<uint32_t>(*row.gguf));
  }
  return list;
}

const char* ValueTypeName(ValueType t) {
  switch (t) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "unknown";
}

Status File::Open(const std::string& path, std::unique_ptr<File>* out) {
  std::unique_ptr<File> file(new File());
  KES_RETURN_IF_ERROR(MappedFile::Open(path, &file->mapping_));
  file->base_ = file->mapping_->data();
  file->size_ = file->mapping_->size();
  KES_RETURN_IF_ERROR(file->Parse().WithContext("GGUF file '" + path + "'"));
  *out = std::move(file);
  return OkStatus();
}

Status File::OpenFromMemory(const uint8_t* data, size_t size, std::unique_ptr<File>* out) {
  if (data == nullptr && size != 0) return Status::Error("GGUF buffer: data is null");
  std::unique_ptr<File> file(new File());
  file->base_ = data;
  file->size_ = size;
  KES_RETURN_IF_ERROR(file->Parse());
  *out = std::move(file);
  return OkStatus();
}

Status File::Parse() {
  if (size_ < kHeaderBytes) {
    return Status::Error("expected at least " + Num(kHeaderBytes) +
                         " bytes of GGUF header, found " + Num(size_) + " bytes");
  }
  if (std::memcmp(base_, "GGUF", 4) != 0) {
    char found[32];
    std::snprintf(found, sizeof(found), "%02x %02x %02x %02x", base_[0], base_[1], base_[2],
                  base_[3]);
    return Status::Error(
        std::string("not a GGUF file: expected magic 'GGUF' (47 47 55 46), found ") + found);
  }
  Cursor c(base_, size_, 4);
  KES_RETURN_IF_ERROR(c.ReadU32("the version", &version_));
  if (version_ != 2 && version_ != 3) {
    std::string hint;
    if (version_ == 1) hint = " (version 1 used 32-bit counts and is not supported)";
    if ((version_ & 0xFFFF) == 0 && version_ != 0) hint = " (this looks like a big-endian file)";
    return Status::Error("unsupported GGUF version: expected 2 or 3, found " + Num(version_) +
                         hint);
  }
  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
  KES_RETURN_IF_ERROR(c.ReadU64("the tensor count", &tensor_count));
  KES_RETURN_IF_ERROR(c.ReadU64("the metadata count", &kv_count));

  size_t pos = c.pos();
  KES_RETURN_IF_ERROR(ParseMetadata(&pos, kv_count));

  alignment_ = kDefaultAlignment;
  if (const auto it = kv_index_.find("general.alignment"); it != kv_index_.end()) {
    const ValueType type = kvs_[it->second].type;
    if (!IsInteger(type) || type == ValueType::BOOL) {
      return Status::Error("general.alignment: expected an unsigned integer, found " +
                           std::string(ValueTypeName(type)));
    }
    int64_t alignment = 0;
    if (!GetInt("general.alignment", &alignment).ok() || alignment <= 0 ||
        (alignment & (alignment - 1)) != 0) {
      return Status::Error("general.alignment: expected a power of two, found " +
                           ValueToString("general.alignment"));
    }
    alignment_ = static_cast<uint64_t>(alignment);
  }

  KES_RETURN_IF_ERROR(ParseTensorInfos(&pos, tensor_count));

  // The data section begins at the next multiple of the alignment after the tensor infos.
  const uint64_t padding = (alignment_ - pos % alignment_) % alignment_;
  data_offset_ = static_cast<uint64_t>(pos) + padding;  // pos <= size_, padding < 2^63
  if (tensors_.empty()) return OkStatus();
  if (data_offset_ > size_) {
    return Status::Error("data section: expected it to start at byte " + Num(data_offset_) + " (" +
                         Num(alignment_) + "-byte aligned), but the file has " + Num(size_) +
                         " bytes");
  }
  const uint64_t data_size = size_ - data_offset_;
  for (TensorInfo& t : tensors_) {
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      uint64_t end = 0;
      if (__builtin_add_overflow(data_offset_, t.offset, &end) ||
          __builtin_add_overflow(end, t.n_bytes, &end)) {
        return Status::Error("tensor " + Quoted(t.name) + ": data at offset " + Num(t.offset) +
                             " of " + Num(t.n_bytes) +
                             " bytes ends beyond 2^64, but the file has " + Num(size_) + " bytes");
      }
      return Status::Error("tensor " + Quoted(t.name) + ": data ends at byte " + Num(end) +
                           " but the file has " + Num(size_) + " bytes");
    }
    t.data = base_ + data_offset_ + t.offset;
  }
  return OkStatus();
}

Status File::ParseMetadata(size_t* pos, uint64_t kv_count) {
  Cursor c(base_, size_, *pos);
  // Each entry takes at least a key length, a type and one value byte: bounds the reservation.
  constexpr size_t kMinEntryBytes = 8 + 4 + 1;
  if (kv_count > c.remaining() / kMinEntryBytes) {
    return Status::Error("metadata count: expected at most " + Num(c.remaining() / kMinEntryBytes) +
                         " entries in the " + Num(c.remaining()) +
                         " bytes left after the header, found " + Num(kv_count));
  }
  kvs_.reserve(static_cast<size_t>(kv_count));
  for (uint64_t i = 0; i < kv_count; ++i) {
    const std::string entry = "metadata entry " + Num(i);
    std::string_view key;
    KES_RETURN_IF_ERROR(c.ReadString("the key of " + entry, &key));
    const std::string where = "metadata " + Quoted(key);
    uint32_t raw_type = 0;
    KES_RETURN_IF_ERROR(c.ReadU32("the value type of " + where, &raw_type));
    if (!IsKnownValueType(raw_type)) {
      return Status::Error(where + ": expected a value type between 0 and 12, found " +
                           Num(raw_type) + " at byte " + Num(c.pos() - 4));
    }
    const auto type = static_cast<ValueType>(raw_type);
    const size_t start = c.pos();
    KES_RETURN_IF_ERROR(ValidateValue(&c, type, 0, where));
    const auto [it, inserted] = kv_index_.emplace(std::string(key), kvs_.size());
    if (!inserted) {
      return Status::Error(where + ": duplicate key (entries " + Num(it->second) + " and " +
                           Num(i) + ")");
    }
    kvs_.push_back(KeyValue{std::string(key), type, base_ + start, c.pos() - start});
  }
  *pos = c.pos();
  return OkStatus();
}

Status File::ParseTensorInfos(size_t* pos, uint64_t tensor_count) {
  Cursor c(base_, size_, *pos);
  // name length + n_dims + one dimension + type + offset.
  constexpr size_t kMinInfoBytes = 8 + 4 + 8 + 4 + 8;
  if (tensor_count > c.remaining() / kMinInfoBytes) {
    return Status::Error("tensor count: expected at most " + Num(c.remaining() / kMinInfoBytes) +
                         " tensor infos in the " + Num(c.remaining()) +
                         " bytes left after the metadata, found " + Num(tensor_count));
  }
  tensors_.reserve(static_cast<size_t>(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    std::string_view name;
    KES_RETURN_IF_ERROR(c.ReadString("the name of tensor " + Num(i), &name));
    const std::string where = "tensor " + Quoted(name);
    TensorInfo t;
    t.name = std::string(name);

    uint32_t n_dims = 0;
    KES_RETURN_IF_ERROR(c.ReadU32("n_dims of " + where, &n_dims));
    if (n_dims < 1 || n_dims > kMaxDims) {
      return Status::Error(where + ": expected 1 to " + Num(kMaxDims) +
                           " dimensions, found n_dims " + Num(n_dims));
    }
    t.ne.resize(n_dims);
    uint64_t n_elements = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      KES_RETURN_IF_ERROR(c.ReadU64("dimension " + Num(d) + " of " + where, &t.ne[d]));
      // ggml stores dimensions as int64_t: anything above INT64_MAX is negative there.
      if (t.ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
      if (!overflow && __builtin_mul_overflow(n_elements, t.ne[d], &n_elements)) overflow = true;
    }
    if (overflow || n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      std::string shape;
      for (const uint64_t d : t.ne) shape += (shape.empty() ? "" : ", ") + Num(d);
      return Status::Error(where + ": expected an element count below 2^63, but the shape [" +
                           shape + "] overflows it");
    }
    t.n_elements = n_elements;

    uint32_t raw_type = 0;
    KES_RETURN_IF_ERROR(c.ReadU32("the type of " + where, &raw_type));
    t.type = static_cast<GgmlType>(raw_type);
    const size_t block_elements = BlockElements(t.type);
    if (block_elements == 0) {
      return Status::Error(where + ": unknown ggml type " + Num(raw_type) + " (expected one of " +
                           GgmlTypeList(true) + ")");
    }
    if (t.ne[0] % block_elements != 0) {
      return Status::Error(where + ": row length ne[0] = " + Num(t.ne[0]) +
                           " is not a multiple of the " + GgmlTypeName(t.type) + " block size " +
                           Num(block_elements));
    }
    const uint64_t blocks = n_elements / block_elements;
    if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(BlockBytes(t.type)), &t.n_bytes)) {
      return Status::Error(where + ": byte size of " + Num(blocks) + " " + GgmlTypeName(t.type) +
                           " blocks overflows 64 bits");
    }

    KES_RETURN_IF_ERROR(c.ReadU64("the data offset of " + where, &t.offset));
    if (t.offset % alignment_ != 0) {
      return Status::Error(where + ": expected a data offset that is a multiple of the " +
                           Num(alignment_) + "-byte alignment, found " + Num(t.offset));
    }
    t.data = nullptr;  // set once the data section is known to hold it

    const auto [it, inserted] = tensor_index_.emplace(t.name, tensors_.size());
    if (!inserted) {
      return Status::Error(where + ": duplicate tensor name (tensors " + Num(it->second) + " and " +
                           Num(i) + ")");
    }
    tensors_.push_back(std::move(t));
  }
  *pos = c.pos();
  return OkStatus();
}

Status File::Find(std::string_view key, const KeyValue** out) const {
  const auto it = kv_index_.find(key);
  if (it == kv_index_.end()) {
    return Status::Error("metadata key " + Quoted(key) + " not found");
  }
  *out = &kvs_[it->second];
  return OkStatus();
}

Status File::FindOfType(std::string_view key, bool (*accepts)(ValueType), const char* expected,
                        const KeyValue** out) const {
  KES_RETURN_IF_ERROR(Find(key, out));
  if (!accepts((*out)->type)) {
    return Status::Error("metadata " + Quoted(key) + ": expected " + expected + ", found " +
                         ValueTypeName((*out)->type));
  }
  return OkStatus();
}

Status File::FindArrayOf(std::string_view key, bool (*accepts)(ValueType), const char* elements,
                         ArrayEntry* out) const {
  KES_RETURN_IF_ERROR(GetArrayType(key, &out->element_type, &out->count));
  if (!accepts(out->element_type)) {
    return Status::Error("metadata " + Quoted(key) + ": expected an array of " + elements +
                         ", found an array of " + ValueTypeName(out->element_type));
  }
  out->stride = ScalarSize(out->element_type);
  return Find(key, &out->kv);
}

bool File::Has(std::string_view key) const { return kv_index_.find(key) != kv_index_.end(); }

Status File::GetType(std::string_view key, ValueType* out) const {
  const KeyValue* kv = nullptr;
  KES_RETURN_IF_ERROR(Find(key, &kv));
  *out = kv->type;
  return OkStatus();
}

Status File::GetArrayType(std::string_view key, ValueType* element_type, uint64_t* count) const {
  const KeyValue* kv = nullptr;
  KES_RETURN_IF_ERROR(FindOfType(key, Is<ValueType::ARRAY>, "an array", &kv));
  *element_type = static_cast<ValueType>(LoadU32(kv->value));
  *count = LoadU64(kv->value + 4);
  return OkStatus();
}

Status File::GetInt(std::string_view key, int64_t* out) const {
  const KeyValue* kv = nullptr;
  KES_RETURN_IF_ERROR(FindOfType(key, IsInteger, "an integer", &kv));
  if (!DecodeInt(kv->type, kv->value, out)) {
    return Status::Error("metadata " + Quoted(key) + ": expected an integer below 2^63, found " +
                         Num(LoadU64(kv->value)));
  }
  return OkStatus();
}

Status File::GetFloat(std::string_view key, double* out) const {
  const KeyValue* kv = nullptr;
  KES_RETURN_IF_ERROR(FindOfType(key, IsNumber, "a number", &kv));
  *out = DecodeFloat(kv->type, kv->value);
  return OkStatus();
}

Status File::GetBool(std::string_view key, bool* out) const {
  const KeyValue* kv = nullptr;
  KES_RETURN_IF_ERROR(FindOfType(key, Is<ValueType::BOOL>, "bool", &kv));
  *out = kv->value[0] != 0;
  return OkStatus();
}

Status File::GetString(std::string_view key, std::string* out) const {
  const KeyValue* kv = nullptr;
  KES_RETURN_IF_ERROR(FindOfType(key, Is<ValueType::STRING>, "string", &kv));
  out->assign(reinterpret_cast<const char*>(kv->value + 8),
              static_cast<size_t>(LoadU64(kv->value)));
  return OkStatus();
}

Status File::GetStringArray(std::string_view key, std::vector<std::string>* out) const {
  ArrayEntry array;
  KES_RETURN_IF_ERROR(FindArrayOf(key, Is<ValueType::STRING>, "string", &array));
  Cursor c(array.kv->value, array.kv->value_size, 12);
  out->clear();
  out->reserve(static_cast<size_t>(array.count));
  for (uint64_t i = 0; i < array.count; ++i) {
    std::string_view s;
    KES_RETURN_IF_ERROR(c.ReadString(Quoted(key) + "[" + Num(i) + "]", &s));
    out->emplace_back(s);
  }
  return OkStatus();
}

Status File::GetFloatArray(std::string_view key, std::vector<float>* out) const {
  ArrayEntry array;
  KES_RETURN_IF_ERROR(FindArrayOf(key, IsNumber, "numbers", &array));
  out->resize(static_cast<size_t>(array.count));
  for (size_t i = 0; i < out->size(); ++i) {
    (*out)[i] = static_cast<float>(DecodeFloat(array.element_type, array.Element(i)));
  }
  return OkStatus();
}

Status File::GetIntArray(std::string_view key, std::vector<int64_t>* out) const {
  ArrayEntry array;
  KES_RETURN_IF_ERROR(FindArrayOf(key, IsInteger, "integers", &array));
  out->resize(static_cast<size_t>(array.count));
  for (size_t i = 0; i < out->size(); ++i) {
    if (!DecodeInt(array.element_type, array.Element(i), &(*out)[i])) {
      return Status::Error("metadata " + Quoted(key) + "[" + Num(i) +
                           "]: expected an integer below 2^63, found " +
                           Num(LoadU64(array.Element(i))));
    }
  }
  return OkStatus();
}

std::vector<std::string> File::Keys() const {
  std::vector<std::string> keys;
  keys.reserve(kvs_.size());
  for (const KeyValue& kv : kvs_) keys.push_back(kv.key);
  return keys;
}

std::string File::ValueToString(std::string_view key, size_t max_array_items) const {
  const KeyValue* kv = nullptr;
  if (!Find(key, &kv).ok()) return "<missing>";
  Cursor c(kv->value, kv->value_size, 0);
  std::string out;
  FormatValue(&c, kv->type, max_array_items, &out);
  return out;
}

const TensorInfo* File::FindTensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace kestrel::gguf
