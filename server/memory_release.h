// Memory that a request's computation touched and no longer needs goes back to the system when
// the computation ends, so that the server's resident memory after a burst of requests is what
// it was before it (issue 32: within 2 MiB after 64 clients for 2 minutes).
//
// Why it is needed: the computation runs on cpp-httplib's worker threads (2 x (slots + queue)
// + 8 of them, any of which may serve a generation), and the kernels' frames are deep (a
// prefill's token panels take ~320 KiB of stack, decode attention ~100 KiB). A worker keeps
// resident the deepest stack it ever used, so each worker serving its first generation, or a
// longer prompt than before, grew the server by up to ~250 KiB for good: +2.5 to 3 MiB after
// 2 minutes of load with 48 workers. The malloc arenas of those threads keep freed pages too.
#pragma once

#include <atomic>
#include <cstddef>

namespace kestrel::server {

// Gives back the pages of the calling thread's stack below the caller's frame (they hold no
// live frame: the stack grows down); the next deep call touches them again, zero-filled. A
// no-op where the thread's stack bounds are unknown.
void ReleaseStackBelowHere();

// Gives back the malloc arenas' free pages (glibc's malloc_trim); a no-op elsewhere.
void ReleaseFreeHeap();

// Marks a request's computation (a generation, an embedding, a transcription) on this thread.
// When it ends, the thread's stack below the scope is given back, and, when no other
// computation is under way (the server is idle), the free heap too.
class ComputeScope {
 public:
  explicit ComputeScope(std::atomic<size_t>& active) : active_(active) { ++active_; }
  ~ComputeScope();
  ComputeScope(const ComputeScope&) = delete;
  ComputeScope& operator=(const ComputeScope&) = delete;

 private:
  std::atomic<size_t>& active_;
};

}  // namespace kestrel::server
