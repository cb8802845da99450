// `kestrel serve` gives back the stack a request's computation touched (server/memory_release.h):
// the kernels' frames are deep, any of cpp-httplib's worker threads may compute, and each kept
// its deepest stack resident for good, so the server grew by ~3 MiB in a 50 s load. Here a
// thread touches 512 KiB of its stack in a deep call, returns, and gives it back; its stack's
// resident size (from /proc/self/smaps) falls back, and the pages work again when touched.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "server/memory_release.h"

namespace kestrel::server {
namespace {

constexpr size_t kFrameBytes = 16 * 1024;
constexpr int kFrames = 32;  // 512 KiB of stack

// Resident KiB of the mapping that holds `address`; -1 when none does.
long ResidentKiBAt(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &begin, &end) == 2 &&
        line.find(':') > line.find(' ')) {
      inside = begin <= address && address < end;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::stol(line.substr(4));
    }
  }
  return -1;
}

// Touches kFrameBytes of stack per frame, `depth` frames deep; returns what it read back so that
// no frame can be optimized away. Not instrumented: AddressSanitizer's stack-use-after-return
// mode would move the frames to the heap.
__attribute__((noinline, no_sanitize("address"))) int TouchStack(int depth) {
  volatile char frame[kFrameBytes];
  for (size_t i = 0; i < kFrameBytes; i += 1024) frame[i] = static_cast<char>(depth);
  const int below = depth > 1 ? TouchStack(depth - 1) : 0;
  return below + frame[0] + frame[kFrameBytes - 1024];
}

TEST(ServerMemory, StackBelowTheCallerIsGivenBack) {
  if (KESTREL_CROSS_BUILD) GTEST_SKIP() << "qemu-user does not emulate /proc/self/smaps";
  long before = 0, deep = 0, released = 0, again = 0;
  int sum = 0, sum_again = 0;
  std::thread worker([&] {
    const uintptr_t stack = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
    before = ResidentKiBAt(stack);
    sum = TouchStack(kFrames);
    deep = ResidentKiBAt(stack);
    ReleaseStackBelowHere();
    released = ResidentKiBAt(stack);
    sum_again = TouchStack(kFrames);  // the pages given back come back zero-filled, and work
    again = ResidentKiBAt(stack);
  });
  worker.join();
  ASSERT_GT(before, 0) << "no mapping of /proc/self/smaps holds the thread's stack";
  const long touched = static_cast<long>(kFrames * kFrameBytes / 1024);
  // A stack backed by transparent huge pages would not grow page by page; the test needs it to.
  ASSERT_GE(deep - before, touched * 3 / 4)
      << "touching " << touched << " KiB of stack made " << deep - before << " KiB resident";
  EXPECT_LE(released, before + 64)
      << "stack resident: " << before << " KiB before, " << deep << " KiB after a deep call, "
      << released << " KiB after it was given back";
  EXPECT_EQ(sum_again, sum);
  EXPECT_GE(again - released, touched * 3 / 4);
}

}  // namespace
}  // namespace kestrel::server
