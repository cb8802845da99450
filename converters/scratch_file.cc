#include "converters/scratch_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace kestrel {

Status ScratchFile::Create(const std::string& folder, std::unique_ptr<ScratchFile>* out) {
  const std::string dir = folder.empty() ? std::string(".") : folder;
  int fd = -1;
#ifdef O_TMPFILE
  // A file that never has a name, where the kernel and the file system know O_TMPFILE.
  fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  if (fd < 0) {
    // Else a named file unlinked at once, with every signal that could end the process held
    // while the name exists: a SIGINT between mkstemp and unlink left a .kestrel-scratch-* file
    // behind (tests/output_files_test.cc SignalsRemoveTheTemporary, under qemu).
    std::string path = dir + "/.kestrel-scratch-XXXXXX";
    std::vector<char> name(path.begin(), path.end());
    name.push_back('\0');
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &before);
    fd = ::mkstemp(name.data());
    const int err = errno;
    if (fd >= 0) ::unlink(name.data());
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (fd < 0) {
      return Status::Error("cannot create a scratch file in '" + folder +
                           "': " + std::strerror(err));
    }
  }
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
