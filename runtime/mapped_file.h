// A read-only memory mapping of a whole file: weights are used in place, never copied.
//
// A mapped file that is truncated while mapped (a model overwritten in place) makes the next
// read of a page past its new end raise SIGBUS, which kills the process without a word.
// InstallMappedFileFaultHandler turns that into a one-line error naming the file and exit code
// 1. A library must not take over a process's signals, so the runtime never installs it: the
// kestrel and kestrel-convert programs call it first thing in main (tools/cli_main.cc,
// converters/convert_main.cc); other programs may too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/status.h"

namespace kestrel {

// Installs the SIGBUS handler: a fault inside a live mapping writes "<program>: error: the
// file 'PATH' changed or was truncated while in use ..." to stderr and exits with 1; any
// other SIGBUS gets the default action. Up to 64 mappings at once are named (more still map, and
// a fault in those gets the default action). `program` must outlive the process (a literal).
void InstallMappedFileFaultHandler(const char* program);

class MappedFile {
 public:
  static Status Open(const std::string& path, std::unique_ptr<MappedFile>* out);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int fault_slot_ = -1;  // its entry for InstallMappedFileFaultHandler's messages, or -1
};

}  // namespace kestrel
