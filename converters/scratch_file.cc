#include "converters/scratch_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace kestrel {

Status ScratchFile::Create(const std::string& folder, std::unique_ptr<ScratchFile>* out) {
  std::string path = (folder.empty() ? std::string(".") : folder) + "/.kestrel-scratch-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    return Status::Error("cannot create a scratch file in '" + folder +
                         "': " + std::strerror(errno));
  }
  ::unlink(name.data());
  std::unique_ptr<ScratchFile> file(new ScratchFile());
  file->folder_ = folder;
  file->fd_ = fd;
  *out = std::move(file);
  return OkStatus();
}

ScratchFile::~ScratchFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

Status ScratchFile::Append(const uint8_t* data, size_t n) {
  KES_CHECK_OR_RETURN(data_ == nullptr, "internal error: a scratch file written after Map");
  while (n > 0) {
    const ssize_t wrote = ::write(fd_, data, n);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      return Status::Error(
          "cannot write the scratch file in '" + folder_ + "' (" + std::to_string(size_) +
          " bytes written): " + (wrote < 0 ? std::strerror(errno) : "no progress"));
    }
    data += wrote;
    n -= static_cast<size_t>(wrote);
    size_ += static_cast<size_t>(wrote);
  }
  return OkStatus();
}

Status ScratchFile::Map() {
  KES_CHECK_OR_RETURN(data_ == nullptr && size_ > 0, "internal error: nothing to map");
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    return Status::Error("cannot map the scratch file in '" + folder_ + "' (" +
                         std::to_string(size_) + " bytes): " + std::strerror(errno));
  }
  data_ = static_cast<const uint8_t*>(p);
  return OkStatus();
}

}  // namespace kestrel
