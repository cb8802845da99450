// Builds a GGUF file in memory, the layout llama.cpp writes (version 3, alignment 32): how a
// Hugging Face decoder folder becomes the GGUF that llama.cpp's convert_hf_to_gguf.py would make
// of it (converters/hf/decoder_gguf.h), which the GGUF reader then opens like any other file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "converters/gguf/gguf_file.h"
#include "runtime/status.h"

namespace kestrel::gguf {

class Builder {
 public:
  void SetUint32(const std::string& key, uint32_t v);
  void SetFloat32(const std::string& key, float v);
  void SetBool(const std::string& key, bool v);
  void SetString(const std::string& key, const std::string& v);
  void SetStringArray(const std::string& key, const std::vector<std::string>& v);
  void SetInt32Array(const std::string& key, const std::vector<int32_t>& v);
  void SetFloat32Array(const std::string& key, const std::vector<float>& v);

  // A tensor whose bytes are copied from `data` (n_bytes of ne's elements of `type`) when the
  // file is built; `data` must live until then (it may point into a mapped checkpoint).
  void AddTensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type,
                 const uint8_t* data, uint64_t n_bytes);
  // The same with bytes the builder keeps (a transformed tensor).
  void AddOwnedTensor(const std::string& name, std::vector<uint64_t> ne, GgmlType type,
                      std::vector<uint8_t> bytes);

  // The whole file: header, metadata in the order set, tensor infos, the aligned data.
  std::vector<uint8_t> Build() const;
  // The same bytes handed to `sink` in order, piece by piece: tensors are not copied into one
  // buffer (a checkpoint of several GB goes straight from its mapping to a file). Stops at the
  // sink's first error.
  using Sink = std::function<Status(const uint8_t* data, size_t n)>;
  Status Write(const Sink& sink) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    GgmlType type;
    const uint8_t* data;
    uint64_t n_bytes;
    std::vector<uint8_t> owned;
  };
  // Each key's encoded type and value, in the order set (a key set twice keeps its first place).
  std::vector<std::pair<std::string, std::vector<uint8_t>>> kvs_;
  std::vector<Tensor> tensors_;

  std::vector<uint8_t>& Value(const std::string& key);
};

}  // namespace kestrel::gguf
