#include "runtime/thread_pool.h"

#include <thread>

namespace kestrel {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

// A waiting thread first spins (the next step usually starts within microseconds), then
// yields its core for a while, so that on a machine with more busy threads than cores the thread
// it waits for gets to run instead of being starved by the spinning; a worker then sleeps.
constexpr int kSpinIterations = 2000;
constexpr int kYieldIterations = 1000;

}  // namespace

ThreadPool::ThreadPool(size_t n_threads) {
  const size_t n_workers = n_threads > 1 ? n_threads - 1 : 0;
  workers_.reserve(n_workers);
  for (size_t i = 0; i < n_workers; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i + 1); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Run(Task fn, void* ctx) {
  if (workers_.empty()) {
    fn(ctx, 0, 1);
    return;
  }
  task_ = fn;
  ctx_ = ctx;
  pending_.store(workers_.size(), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  fn(ctx, 0, size());
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinIterations) {
      CpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::WorkerLoop(size_t thread) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t generation = generation_.load(std::memory_order_acquire);
    for (int spin = 0; generation == seen && spin < kSpinIterations + kYieldIterations; ++spin) {
      if (spin < kSpinIterations) {
        CpuRelax();
      } else {
        std::this_thread::yield();
      }
      generation = generation_.load(std::memory_order_acquire);
    }
    if (generation == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      generation = generation_.load(std::memory_order_acquire);
    }
    seen = generation;
    if (stop_.load(std::memory_order_relaxed)) return;
    task_(ctx_, thread, size());
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace kestrel
