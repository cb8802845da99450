// The counting allocator of tests/support/alloc_counter.h: glibc's malloc family interposed
// (the executable's definitions take precedence over libc's for every library it loads).
#include "tests/support/alloc_counter.h"

#include <atomic>
#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_calls{0};
std::atomic<long> g_frees{0};
inline void Count() {
  if (g_counting.load(std::memory_order_relaxed)) g_calls.fetch_add(1, std::memory_order_relaxed);
}
inline void CountFree() {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_calls.fetch_add(1, std::memory_order_relaxed);
    g_frees.fetch_add(1, std::memory_order_relaxed);
  }
}
}  // namespace

namespace kestrel::test {

void StartCountingAllocations() {
  g_calls.store(0);
  g_frees.store(0);
  g_counting.store(true);
}

long StopCountingAllocations() {
  g_counting.store(false);
  return g_calls.load();
}

long CountedFrees() { return g_frees.load(); }

}  // namespace kestrel::test

extern "C" {
void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  Count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  Count();
  return __libc_realloc(p, size);
}
void free(void* p) {
  if (p) CountFree();
  __libc_free(p);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
void* memalign(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Count();
  void* p = __libc_memalign(alignment, size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
}
