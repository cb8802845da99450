// The slots: N sessions of the text model, each with its own arena, all created at start, and a
// bounded queue of requests waiting for one. A request past the queue is refused at once (the
// server answers 503 with Retry-After) instead of waiting without bound.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kestrel/kestrel.hpp"

namespace kestrel::server {

struct Slot {
  size_t index = 0;
  kestrel::Session session;
  // The tokens the session's sequence holds, in order (reserved for the whole context at start),
  // so that a request whose prompt begins with them prefills only the rest.
  std::vector<int32_t> held;
};

class SlotPool;

// How many tokens `held` and `prompt` begin with alike, leaving at least one of `prompt` to
// prefill (its logits come from the last prefilled token).
size_t SharedPrefix(const std::vector<int32_t>& held, const std::vector<int32_t>& prompt);

// A slot taken from the pool; destroying the lease gives it back.
class SlotLease {
 public:
  SlotLease(SlotPool* pool, Slot* slot) : pool_(pool), slot_(slot) {}
  SlotLease(const SlotLease&) = delete;
  SlotLease& operator=(const SlotLease&) = delete;
  ~SlotLease();
  Slot& slot() { return *slot_; }

 private:
  SlotPool* pool_;
  Slot* slot_;
};

class SlotPool {
 public:
  // Takes the slots (made by the caller); at most `max_waiting` requests wait for one.
  SlotPool(std::vector<std::unique_ptr<Slot>> slots, size_t max_waiting);

  // A free slot, preferring the one that holds the longest beginning of `prompt` (its
  // prefill is then shortest), waiting in the queue while none is free; nullptr when the queue
  // is full or the pool is shutting down.
  std::shared_ptr<SlotLease> Acquire(const std::vector<int32_t>& prompt);
  // Wakes every waiter with nullptr; later Acquire calls get nullptr at once.
  void Shutdown();

  size_t size() const { return slots_.size(); }
  size_t busy() const;
  size_t waiting() const;

 private:
  friend class SlotLease;
  void Release(Slot* slot);

  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<bool> free_;
  size_t max_waiting_;
  size_t waiting_ = 0;
  bool shutdown_ = false;
  mutable std::mutex mutex_;
  std::condition_variable freed_;
};

}  // namespace kestrel::server
