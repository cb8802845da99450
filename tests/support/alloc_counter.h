// Counting the heap calls of any thread, for the zero-allocation tests (model_zero_alloc_test on
// the real models, tiny_zero_alloc_test on the tiny generated ones, which also runs cross-built
// under qemu-user). alloc_counter.cc replaces the C allocator's entry points (malloc, calloc,
// realloc, free, aligned_alloc, memalign, posix_memalign; operator new and delete go through
// them) with ones that count, then call glibc's own. It is compiled into each zero-allocation
// test executable, never into a library other tests link, and never into a sanitizer build
// (the sanitizers own malloc themselves: tests/CMakeLists.txt leaves those tests out there).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace kestrel::test {

// Starts counting (from zero) the heap calls made by any thread.
void StartCountingAllocations();
// Stops counting; returns the calls counted since StartCountingAllocations().
long StopCountingAllocations();
// Of the calls the last counting window saw, those to free (the rest allocate or reallocate).
long CountedFrees();

// A TokenSink context (runtime/generate.h) that keeps the generated text without allocating.
struct CollectedText {
  char text[1 << 16];
  size_t bytes = 0;
  size_t tokens = 0;
};

inline void CollectText(void* context, int32_t, std::string_view piece) {
  auto* c = static_cast<CollectedText*>(context);
  const size_t n = std::min(piece.size(), sizeof(c->text) - c->bytes);
  std::memcpy(c->text + c->bytes, piece.data(), n);
  c->bytes += n;
  ++c->tokens;
}

}  // namespace kestrel::test
