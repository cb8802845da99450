// Runs a plan: at session creation each op is bound once (runtime/steps/: its kernel for the
// operands' dtypes and its resolved arena and weight pointers, a Step); running the plan is then
// a flat loop over the steps, with no lookups, dtype switches or allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/memory_plan.h"
#include "runtime/model.h"
#include "runtime/op_kind.h"
#include "runtime/status.h"
#include "runtime/thread_pool.h"

namespace kestrel {

// Whether plans can run here with n_threads threads: 1..256, and a SIMD target this CPU has.
Status CheckCanRun(size_t n_threads);

class BoundPlan {
 public:
  // The plan was checked when the model was opened. The arena holds at least memory.arena_bytes
  // bytes; model and arena must outlive this.
  Status Bind(const Model& model, const fb::Plan& plan, uint8_t* arena, const MemoryPlan& memory);
  // Runs every op on the inputs already written. 1 <= n_tokens <= max_tokens().
  void Run(ThreadPool& pool, size_t n_tokens, int64_t pos0) const;

  // The buffer of the plan input or output with this role, or nullptr when it has none.
  uint8_t* Io(fb::IoRole role) const;
  const fb::Buffer* IoBuffer(fb::IoRole role) const;
  int32_t* token_input() const { return reinterpret_cast<int32_t*>(Io(fb::IoRole::TokenIds)); }
  // [n_tokens or 1, vocab]: one row when the plan computes only the last token's logits.
  const float* logits() const { return reinterpret_cast<const float*>(Io(fb::IoRole::Logits)); }
  bool logits_per_token() const;
  size_t max_tokens() const { return max_tokens_; }

 private:
  std::vector<Step> steps_;
  const fb::Plan* plan_ = nullptr;
  uint8_t* arena_ = nullptr;
  size_t max_tokens_ = 0;
};

}  // namespace kestrel
