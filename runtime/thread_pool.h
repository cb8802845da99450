// A fixed pool of worker threads, created once with the session; running work on it allocates
// nothing. The calling thread is thread 0 and takes part in every run.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace kestrel {

class ThreadPool {
 public:
  // fn(ctx, thread, n_threads) runs once on every thread; each call picks its share of the work.
  using Task = void (*)(void* ctx, size_t thread, size_t n_threads);

  explicit ThreadPool(size_t n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size() + 1; }
  // Runs fn on every thread and returns when all have finished.
  void Run(Task fn, void* ctx);

 private:
  void WorkerLoop(size_t thread);

  std::vector<std::thread> workers_;
  Task task_ = nullptr;
  void* ctx_ = nullptr;
  // Workers spin on the generation for a short while (ops follow each other within
  // microseconds), then sleep on the condition variable.
  std::atomic<uint64_t> generation_{0};
  std::atomic<size_t> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

// Splits [0, n) into n_parts nearly equal ranges; returns part `part`.
inline void SplitRange(size_t n, size_t part, size_t n_parts, size_t* begin, size_t* end) {
  const size_t base = n / n_parts, extra = n % n_parts;
  *begin = part * base + (part < extra ? part : extra);
  *end = *begin + base + (part < extra ? 1 : 0);
}

}  // namespace kestrel
