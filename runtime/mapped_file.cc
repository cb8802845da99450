#include "runtime/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace kestrel {

Status MappedFile::Open(const std::string& path, std::unique_ptr<MappedFile>* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::Error("cannot open '" + path + "': " + std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::Error("cannot stat '" + path + "': " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::Error("'" + path + "' is not a regular file");
  }
  // On 32-bit boards a file larger than the address space cannot be mapped: say so plainly.
  if (static_cast<unsigned long long>(st.st_size) > std::numeric_limits<size_t>::max() / 2) {
    ::close(fd);
    return Status::Error("'" + path + "' has " + std::to_string(st.st_size) +
                         " bytes, more than this platform can map");
  }
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    // MAP_POPULATE maps every page now (as llama.cpp's mmap does), so the first inference does
    // not take a page fault per 4 KiB of weights it reads (37,000 for Whisper-tiny in f32, all
    // inside the first transcription's time).
    int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
    flags |= MAP_POPULATE;
#endif
    void* p = ::mmap(nullptr, file->size_, PROT_READ, flags, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Status::Error("cannot map '" + path + "' (" + std::to_string(file->size_) +
                           " bytes): " + std::strerror(err));
    }
    file->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  *out = std::move(file);
  return OkStatus();
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace kestrel
