// A fixed pool of worker threads, created once with the session; running work on it allocates
// nothing. The calling thread takes part in every run.
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
  // fn(ctx, thread, n_threads) runs once for every thread index; each call picks its share of
  // the work. Calls with different indices may run on the same OS thread, one after the other,
  // so a call must never wait for another index's call.
  using Task = void (*)(void* ctx, size_t thread, size_t n_threads);

  // n_threads task indices per run, on at most AvailableCpus() OS threads (the caller included):
  // threads beyond the CPUs could only take turns, each run waiting on a descheduled one.
  explicit ThreadPool(size_t n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return n_threads_; }
  // OS threads that run the indices, the caller included.
  size_t os_threads() const { return workers_.size() + 1; }
  // Runs fn for every thread index and returns when all have finished. One caller at a time.
  void Run(Task fn, void* ctx);

 private:
  void WorkerLoop();
  // Claims and runs indices of run `generation` until none is left; returns when all are taken.
  void RunClaims(uint64_t generation, bool caller);

  size_t n_threads_;
  std::vector<std::thread> workers_;
  Task task_ = nullptr;
  void* ctx_ = nullptr;
  // Run number (high bits) and the next index to claim (low kIndexBits bits), in one word so a
  // worker late for a run can never claim an index of the next one.
  static constexpr int kIndexBits = 24;
  uint64_t generation_ = 0;  // the caller's count of runs
  std::atomic<uint64_t> claim_{0};
  std::atomic<size_t> finished_{0};  // indices of this run done
  std::atomic<bool> stop_{false};
  // Waiting threads spin for a while (ops follow each other within microseconds), then sleep:
  // workers on wake_ for the next run, the caller on done_ for the last index to finish.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
};

// Splits [0, n) into n_parts nearly equal ranges; returns part `part`.
inline void SplitRange(size_t n, size_t part, size_t n_parts, size_t* begin, size_t* end) {
  const size_t base = n / n_parts, extra = n % n_parts;
  *begin = part * base + (part < extra ? part : extra);
  *end = *begin + base + (part < extra ? 1 : 0);
}

}  // namespace kestrel
