// Runs a plan: at session creation each op is bound once to its kernel and to resolved pointers
// into the arena and the weights (a Step); running the plan is then a flat loop over the steps,
// with no lookups, dtype switches or allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/memory_plan.h"
#include "runtime/model.h"
#include "runtime/status.h"
#include "runtime/thread_pool.h"

namespace kestrel {

struct Step;
// Processes this thread's share of the step for n_tokens tokens at positions pos0...
using StepFn = void (*)(const Step& step, size_t n_tokens, int64_t pos0, size_t thread,
                        size_t n_threads);

struct Step {
  StepFn run = nullptr;
  bool parallel = false;  // false: so little work that waking the other threads costs more
  bool parallel_single_token = false;  // worth splitting even for one token (matmul, attention)
  const float* in0 = nullptr;
  const float* in1 = nullptr;
  float* out = nullptr;
  const uint8_t* in_bytes = nullptr;  // in0 when it holds quantized activations
  uint8_t* out_bytes = nullptr;       // out when it receives quantized activations
  size_t row_bytes = 0;               // bytes per row of in_bytes / out_bytes
  const int32_t* tokens = nullptr;
  const void* weight = nullptr;
  size_t rows = 0;       // weight rows (matmul output features) / embedding width
  size_t cols = 0;       // weight columns (matmul input features) / norm length / row length
  int64_t iargs[4] = {0, 0, 0, 0};
  float fargs[2] = {0, 0};
  float* k_ring = nullptr;
  float* v_ring = nullptr;
  const KvRingPlan* ring = nullptr;
};

class BoundPlan {
 public:
  // The arena holds at least memory.arena_bytes bytes; model and arena must outlive this.
  Status Bind(const Model& model, const fb::Plan& plan, uint8_t* arena, const MemoryPlan& memory);
  // Runs every op on the tokens already written to token_input(). 1 <= n_tokens <= max_tokens().
  void Run(ThreadPool& pool, size_t n_tokens, int64_t pos0) const;

  int32_t* token_input() const { return token_input_; }
  // [n_tokens or 1, vocab]: one row when the plan computes only the last token's logits.
  const float* logits() const { return logits_; }
  bool logits_per_token() const { return logits_per_token_; }
  size_t max_tokens() const { return max_tokens_; }

 private:
  std::vector<Step> steps_;
  int32_t* token_input_ = nullptr;
  const float* logits_ = nullptr;
  bool logits_per_token_ = false;
  size_t max_tokens_ = 0;
};

}  // namespace kestrel
