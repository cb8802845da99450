// What the readers of Hugging Face safetensors and CTranslate2 model.bin files share: the bytes
// they parse, either the file mapped read-only (runtime/mapped_file.h: weights are read in place,
// never copied) or a caller's buffer, the name their messages use for it, and the two ways to
// open one. A reader derives publicly from MappedInput<Reader> (CRTP), keeps a private default
// constructor and a `Status Parse()` that reads base_[0, size_), and befriends MappedInput<Reader>
// so that Open and OpenFromMemory can make it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/mapped_file.h"
#include "runtime/status.h"

namespace kestrel {

template <class Reader>
class MappedInput {
 public:
  // Maps the file read-only and validates it; the mapping lives as long as the reader.
  static Status Open(const std::string& path, std::unique_ptr<Reader>* out) {
    std::unique_ptr<Reader> reader(new Reader());
    KES_RETURN_IF_ERROR(MappedFile::Open(path, &reader->mapping_));
    reader->Use(reader->mapping_->data(), reader->mapping_->size(), path);
    return Parsed(std::move(reader), out);
  }
  // Same from a caller-owned buffer, which must outlive the reader; `name` stands for the path in
  // messages (tests use synthetic files).
  static Status OpenFromMemory(const uint8_t* data, size_t size, const std::string& name,
                               std::unique_ptr<Reader>* out) {
    if (data == nullptr && size != 0) return Status::Error(Quote(name) + ": data is null");
    std::unique_ptr<Reader> reader(new Reader());
    reader->Use(data, size, name);
    return Parsed(std::move(reader), out);
  }
  MappedInput(const MappedInput&) = delete;
  MappedInput& operator=(const MappedInput&) = delete;

  const std::string& path() const { return path_; }

 protected:
  MappedInput() = default;
  ~MappedInput() = default;

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;

 private:
  static std::string Quote(const std::string& s) { return "'" + s + "'"; }
  void Use(const uint8_t* data, size_t size, const std::string& name) {
    path_ = name;
    base_ = data;
    size_ = size;
  }
  static Status Parsed(std::unique_ptr<Reader> reader, std::unique_ptr<Reader>* out) {
    KES_RETURN_IF_ERROR(reader->Parse().WithContext(Quote(reader->path_)));
    *out = std::move(reader);
    return OkStatus();
  }

  std::unique_ptr<MappedFile> mapping_;  // null for a caller's buffer
};

}  // namespace kestrel
