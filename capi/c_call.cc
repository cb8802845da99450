#include "capi/c_call.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/executor.h"
#include "runtime/model.h"

namespace kestrel::capi {
namespace {

// Per thread, because models are shared across threads: one thread's failure never replaces
// the message another is reading.
struct ThreadSlot {
  const void* handle = nullptr;
  std::string message;
  const char* fixed = nullptr;  // used instead of message when it could not be stored
};
thread_local ThreadSlot g_slot;

}  // namespace

kes_status Record(const void* handle, std::string* handle_error, CallStatus status) noexcept {
  g_slot.handle = handle;
  g_slot.fixed = nullptr;
  try {
    g_slot.message = status.message;
    if (handle_error != nullptr) *handle_error = std::move(status.message);
  } catch (...) {
    g_slot.fixed = "out of memory while recording an error";
  }
  return status.code;
}

const char* ThreadError() noexcept {
  return g_slot.fixed != nullptr ? g_slot.fixed : g_slot.message.c_str();
}

const char* ThreadErrorFor(const void* handle) noexcept {
  return handle != nullptr && g_slot.handle == handle ? ThreadError() : "";
}

CallStatus CheckCanRunThreads(size_t n_threads) {
  KES_C_RETURN_IF_ERROR(FromStatus(KES_UNSUPPORTED, CheckCanRun(1)));
  return FromStatus(KES_INVALID_ARGUMENT, CheckCanRun(n_threads));
}

CallStatus WrongModel(const Model& model, const char* kind, const char* instead) {
  return Error(KES_UNSUPPORTED, std::string("this is ") + kind + " (" +
                                    model.meta().architecture()->str() + "): " + instead);
}

bool CanOpenRegularFile(const char* path) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  return regular;
}

}  // namespace kestrel::capi
