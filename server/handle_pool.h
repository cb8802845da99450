// The encoders of --embed-model and the transcribers of --whisper-model: one per slot, made at
// start, each with its arenas, and the same bounded queue as the text slots
// (server/slot_pool.h) for requests that find none free.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "kestrel/kestrel.h"

namespace kestrel::server {

template <typename Handle, void (*Destroy)(Handle*)>
class HandlePool {
 public:
  struct Deleter {
    void operator()(Handle* handle) const { Destroy(handle); }
  };
  using Owned = std::unique_ptr<Handle, Deleter>;

  HandlePool(std::vector<Owned> handles, size_t max_waiting)
      : handles_(std::move(handles)), max_waiting_(max_waiting) {
    for (const Owned& h : handles_) free_.push_back(h.get());
  }

  // A handle taken until the lease is destroyed.
  class Lease {
   public:
    Lease(HandlePool* pool, Handle* handle) : pool_(pool), handle_(handle) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { pool_->Release(handle_); }
    Handle* get() const { return handle_; }

   private:
    HandlePool* pool_;
    Handle* handle_;
  };

  // A free handle, waiting in the queue while none is; nullptr when the queue is full or the
  // pool is shutting down.
  std::unique_ptr<Lease> Acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!shutdown_ && free_.empty()) {
      if (waiting_ >= max_waiting_) return nullptr;
      ++waiting_;
      freed_.wait(lock, [&] { return shutdown_ || !free_.empty(); });
      --waiting_;
    }
    if (shutdown_) return nullptr;
    Handle* handle = free_.back();
    free_.pop_back();
    return std::make_unique<Lease>(this, handle);
  }

  // Wakes every waiter with nullptr; later Acquire calls get nullptr at once.
  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutdown_ = true;
    }
    freed_.notify_all();
  }

 private:
  void Release(Handle* handle) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(handle);
    }
    freed_.notify_one();
  }

  std::vector<Owned> handles_;
  std::vector<Handle*> free_;
  size_t max_waiting_;
  size_t waiting_ = 0;
  bool shutdown_ = false;
  std::mutex mutex_;
  std::condition_variable freed_;
};

using EncoderPool = HandlePool<kes_encoder, kes_encoder_destroy>;
using TranscriberPool = HandlePool<kes_transcriber, kes_transcriber_destroy>;

}  // namespace kestrel::server
