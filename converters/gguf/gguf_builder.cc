#include "converters/gguf/gguf_builder.h"

#include <cstring>
#include <utility>

namespace kestrel::gguf {
namespace {

constexpr uint64_t kAlignment = 32;

void Put(std::vector<uint8_t>* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutType(std::vector<uint8_t>* out, ValueType t) { Put(out, static_cast<uint32_t>(t), 4); }
void PutString(std::vector<uint8_t>* out, const std::string& s) {
  Put(out, s.size(), 8);
  out->insert(out->end(), s.begin(), s.end());
}
uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

}  // namespace

std::vector<uint8_t>& Builder::Value(const std::string& key) {
  for (auto& [k, v] : kvs_) {
    if (k == key) return v = {};
  }
  kvs_.emplace_back(key, std::vector<uint8_t>());
  return kvs_.back().second;
}

void Builder::SetUint32(const std::string& key, uint32_t v) {
  std::vector<uint8_t>& out = Value(key);
  PutType(&out, ValueType::U32);
  Put(&out, v, 4);
}

void Builder::SetFloat32(const std::string& key, float v) {
  std::vector<uint8_t>& out = Value(key);
  PutType(&out, ValueType::F32);
  Put(&out, Bits(v), 4);
}

void Builder::SetBool(const std::string& key, bool v) {
  std::vector<uint8_t>& out = Value(key);
  PutType(&out, ValueType::BOOL);
  Put(&out, v ? 1 : 0, 1);
}

void Builder::SetString(const std::string& key, const std::string& v) {
  std::vector<uint8_t>& out = Value(key);
  PutType(&out, ValueType::STRING);
  PutString(&out, v);
}

void Builder::SetStringArray(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t>& out = Value(key);
  PutType(&out, ValueType::ARRAY);
  PutType(&out, ValueType::STRING);
  Put(&out, v.size(), 8);
  for (const std::string& s : v) PutString(&out, s);
}

void Builder::SetInt32Array(const std::string& key, const std::vector<int32_t>& v) {
  std::vector<uint8_t>& out = Value(key);
  PutType(&out, ValueType::ARRAY);
  PutType(&out, ValueType::I32);
  Put(&out, v.size(), 8);
  for (int32_t x : v) Put(&out, static_cast<uint32_t>(x), 4);
}

void Builder::SetFloat32Array(const std::string& key, const std::vector<float>& v) {
  std::vector<uint8_t>& out = Value(key);
  PutType(&out, ValueType::ARRAY);
  PutType(&out, ValueType::F32);
  Put(&out, v.size(), 8);
  for (float x : v) Put(&out, Bits(x), 4);
}

void Builder::AddTensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type,
                        const uint8_t* data, uint64_t n_bytes) {
  tensors_.push_back(Tensor{name, std::move(ne), type, data, n_bytes, {}});
}

void Builder::AddOwnedTensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type,
                             std::vector<uint8_t> bytes) {
  const uint64_t n = bytes.size();
  tensors_.push_back(Tensor{name, std::move(ne), type, nullptr, n, std::move(bytes)});
}

std::vector<uint8_t> Builder::Build() const {
  std::vector<uint8_t> out;
  const Status s = Write([&](const uint8_t* data, size_t n) {
    out.insert(out.end(), data, data + n);
    return OkStatus();
  });
  (void)s;  // the sink never fails
  return out;
}

Status Builder::Write(const Sink& sink) const {
  std::vector<uint8_t> head;
  Put(&head, 0x46554747, 4);  // "GGUF"
  Put(&head, 3, 4);
  Put(&head, tensors_.size(), 8);
  Put(&head, kvs_.size(), 8);
  for (const auto& [key, value] : kvs_) {
    PutString(&head, key);
    head.insert(head.end(), value.begin(), value.end());
  }
  const auto aligned = [](uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; };
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    PutString(&head, t.name);
    Put(&head, t.ne.size(), 4);
    for (uint64_t n : t.ne) Put(&head, n, 8);
    Put(&head, static_cast<uint32_t>(t.type), 4);
    Put(&head, offset, 8);
    offset = aligned(offset + t.n_bytes);
  }
  head.resize(aligned(head.size()), 0);
  KES_RETURN_IF_ERROR(sink(head.data(), head.size()));
  const uint8_t zeros[kAlignment] = {};
  for (const Tensor& t : tensors_) {
    const uint8_t* src = t.owned.empty() ? t.data : t.owned.data();
    if (t.n_bytes > 0) KES_RETURN_IF_ERROR(sink(src, t.n_bytes));
    const uint64_t padding = aligned(t.n_bytes) - t.n_bytes;
    if (padding > 0) KES_RETURN_IF_ERROR(sink(zeros, padding));
  }
  return OkStatus();
}

}  // namespace kestrel::gguf
