#include "server/slot_pool.h"

#include <algorithm>
#include <utility>

namespace kestrel::server {

size_t SharedPrefix(const std::vector<int32_t>& held, const std::vector<int32_t>& prompt) {
  const size_t limit = std::min(held.size(), prompt.empty() ? size_t{0} : prompt.size() - 1);
  size_t n = 0;
  while (n < limit && held[n] == prompt[n]) ++n;
  return n;
}

SlotLease::~SlotLease() { pool_->Release(slot_); }

SlotPool::SlotPool(std::vector<std::unique_ptr<Slot>> slots, size_t max_waiting)
    : slots_(std::move(slots)), free_(slots_.size(), true), max_waiting_(max_waiting) {}

std::shared_ptr<SlotLease> SlotPool::Acquire(const std::vector<int32_t>& prompt) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto any_free = [&] {
    for (bool f : free_) {
      if (f) return true;
    }
    return false;
  };
  if (!shutdown_ && !any_free()) {
    if (waiting_ >= max_waiting_) return nullptr;
    ++waiting_;
    freed_.wait(lock, [&] { return shutdown_ || any_free(); });
    --waiting_;
  }
  if (shutdown_) return nullptr;
  size_t best = slots_.size(), best_reuse = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!free_[i]) continue;
    const size_t reuse = SharedPrefix(slots_[i]->held, prompt);
    if (best == slots_.size() || reuse > best_reuse) {
      best = i;
      best_reuse = reuse;
    }
  }
  free_[best] = false;
  return std::make_shared<SlotLease>(this, slots_[best].get());
}

void SlotPool::Release(Slot* slot) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_[slot->index] = true;
  }
  freed_.notify_one();
}

void SlotPool::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
  }
  freed_.notify_all();
}

size_t SlotPool::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (bool f : free_) n += f ? 0 : 1;
  return n;
}

size_t SlotPool::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiting_;
}

}  // namespace kestrel::server
