#include "runtime/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>

namespace kestrel {
namespace {

// The live mappings the SIGBUS handler can name: a fixed table, since a signal handler may not
// allocate or lock. A slot is claimed with `busy`, filled, then published by storing `begin`
// (release); the handler reads `begin` (acquire) before the rest. Freeing clears `begin` first.
struct FaultSlot {
  std::atomic<bool> busy{false};
  std::atomic<uintptr_t> begin{0};
  size_t size = 0;
  char path[512] = {};
};
constexpr int kFaultSlots = 64;
FaultSlot fault_slots[kFaultSlots];
const char* fault_program = "kestrel";

int RegisterMapping(const void* data, size_t size, const std::string& path) {
  for (int i = 0; i < kFaultSlots; ++i) {
    bool expected = false;
    if (!fault_slots[i].busy.compare_exchange_strong(expected, true)) continue;
    FaultSlot& slot = fault_slots[i];
    slot.size = size;
    const size_t n = std::min(path.size(), sizeof(slot.path) - 1);
    std::memcpy(slot.path, path.data(), n);
    slot.path[n] = '\0';
    slot.begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_release);
    return i;
  }
  return -1;  // full: the mapping works, a fault in it just goes unnamed
}

void UnregisterMapping(int i) {
  if (i < 0) return;
  fault_slots[i].begin.store(0, std::memory_order_release);
  fault_slots[i].busy.store(false, std::memory_order_release);
}

void WriteAll(const char* text) {
  size_t n = std::strlen(text);
  while (n > 0) {
    const ssize_t k = ::write(STDERR_FILENO, text, n);
    if (k <= 0) return;
    text += k;
    n -= static_cast<size_t>(k);
  }
}

// Only async-signal-safe calls: write(2), _exit(2), sigaction, raise.
void OnSigbus(int sig, siginfo_t* info, void*) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (FaultSlot& slot : fault_slots) {
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || addr < begin || addr - begin >= slot.size) continue;
    WriteAll(fault_program);
    WriteAll(": error: the file '");
    WriteAll(slot.path);
    WriteAll(
        "' changed or was truncated while in use (SIGBUS reading its mapping); replace a "
        "file in use by writing a new one and renaming it over the old\n");
    ::_exit(1);
  }
  // Not ours: the default action, as if no handler were installed (a synchronous fault
  // re-faults on return; a sent signal is delivered again once the handler returns).
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

}  // namespace

void InstallMappedFileFaultHandler(const char* program) {
  fault_program = program;
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_sigaction = OnSigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, nullptr);
}

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
    file->fault_slot_ = RegisterMapping(p, file->size_, path);
  }
  ::close(fd);
  *out = std::move(file);
  return OkStatus();
}

MappedFile::~MappedFile() {
  UnregisterMapping(fault_slot_);
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace kestrel
