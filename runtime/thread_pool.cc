#include "runtime/thread_pool.h"

#include <algorithm>

#include "runtime/cpu_count.h"

namespace kestrel {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

// A waiting thread spins this many times before it sleeps: the next op usually starts within
// microseconds, far sooner than a sleeping thread wakes. Bounded, so that a thread waiting on
// one the OS has descheduled (other processes on the CPUs) gives its CPU back instead of
// spinning a whole time slice.
constexpr int kSpinIterations = 4000;

// Spins while pred() is false, at most kSpinIterations times; returns pred().
template <typename Pred>
bool SpinUntil(Pred pred) {
  for (int spin = 0; spin < kSpinIterations; ++spin) {
    if (pred()) return true;
    CpuRelax();
  }
  return pred();
}

}  // namespace

ThreadPool::ThreadPool(size_t n_threads) : n_threads_(std::max<size_t>(n_threads, 1)) {
  const size_t os_threads = std::min(n_threads_, AvailableCpus());
  workers_.reserve(os_threads - 1);
  for (size_t i = 1; i < os_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_relaxed);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Run(Task fn, void* ctx) {
  if (workers_.empty()) {
    for (size_t i = 0; i < n_threads_; ++i) fn(ctx, i, n_threads_);
    return;
  }
  task_ = fn;
  ctx_ = ctx;
  finished_.store(0, std::memory_order_relaxed);
  const uint64_t generation = ++generation_;
  {
    // Under the lock: a worker checks claim_ and goes to sleep under it, so it cannot miss this.
    std::lock_guard<std::mutex> lock(mutex_);
    claim_.store(generation << kIndexBits, std::memory_order_release);
  }
  wake_.notify_all();
  RunClaims(generation, /*caller=*/true);
  const auto all_done = [&] { return finished_.load(std::memory_order_acquire) == n_threads_; };
  if (!SpinUntil(all_done)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, all_done);
  }
}

void ThreadPool::RunClaims(uint64_t generation, bool caller) {
  const uint64_t index_mask = (uint64_t{1} << kIndexBits) - 1;
  uint64_t claim = claim_.load(std::memory_order_acquire);
  for (;;) {
    if ((claim >> kIndexBits) != generation || (claim & index_mask) >= n_threads_) return;
    // acquire: a successful claim sees the task the run published.
    if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acquire)) continue;
    task_(ctx_, static_cast<size_t>(claim & index_mask), n_threads_);
    if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_threads_ && !caller) {
      // The caller may be asleep (or about to sleep: it checks under the lock).
      { std::lock_guard<std::mutex> lock(mutex_); }
      done_.notify_one();
      return;
    }
    claim = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;  // the last run this worker looked at
  for (;;) {
    const auto next_run = [&] {
      return stop_.load(std::memory_order_relaxed) ||
             (claim_.load(std::memory_order_acquire) >> kIndexBits) != seen;
    };
    if (!SpinUntil(next_run)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, next_run);
    }
    if (stop_.load(std::memory_order_relaxed)) return;
    seen = claim_.load(std::memory_order_acquire) >> kIndexBits;
    RunClaims(seen, /*caller=*/false);
  }
}

}  // namespace kestrel
