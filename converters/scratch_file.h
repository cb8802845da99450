// Bytes too large to keep in memory, written once to a file no other process can open and then
// mapped back read-only. The mapped pages belong to the file, so under memory pressure the kernel
// writes them out and drops them instead of counting them as the process's own: how a Hugging
// Face decoder folder, rewritten as a GGUF of the checkpoint's size, is converted without holding
// that copy in memory beside the .kes being made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/status.h"

namespace kestrel {

class ScratchFile {
 public:
  // A new file in `folder` with no name (O_TMPFILE, or unlinked as soon as it is made), so
  // nothing is left behind however the process ends, and its space is freed when the
  // ScratchFile is destroyed.
  static Status Create(const std::string& folder, std::unique_ptr<ScratchFile>* out);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  // Writes at the end; only before Map. An error names the folder and the cause (a full disk).
  Status Append(const uint8_t* data, size_t n);
  // Maps all that was written; data() and size() are valid from then on.
  Status Map();
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  ScratchFile() = default;
  std::string folder_;
  int fd_ = -1;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kestrel
