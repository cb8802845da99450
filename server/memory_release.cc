#include "server/memory_release.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kestrel::server {
namespace {

// Left resident below the caller's frame: what the calls from here (madvise's wrapper, a
// signal handler) may use without faulting pages back in at once.
constexpr uintptr_t kKeptBelow = 16 * 1024;

// The lowest usable address of the calling thread's stack (above its guard page); 0 unknown.
uintptr_t StackLow() {
  thread_local uintptr_t low = 0;
  thread_local bool known = false;
  if (!known) {
    known = true;
#if defined(__linux__)
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        low = reinterpret_cast<uintptr_t>(addr);
      }
      pthread_attr_destroy(&attr);
    }
#endif
  }
  return low;
}

}  // namespace

void ReleaseStackBelowHere() {
  const uintptr_t low = StackLow();
  if (low == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (here < low + kKeptBelow + page) return;
  const uintptr_t begin = (low + page - 1) & ~(page - 1);
  const uintptr_t end = (here - kKeptBelow) & ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void ReleaseFreeHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

ComputeScope::~ComputeScope() {
  ReleaseStackBelowHere();
  if (--active_ == 0) ReleaseFreeHeap();
}

}  // namespace kestrel::server
