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

class BoundPlan;

// Called before each step of a running plan with the op and the step's token count: a
// calibration pass reads the inputs an op is about to use (BoundPlan::BufferData). Not for
// inference: the converter's SmoothQuant pass uses it on an f32 model.
using StepObserver = void (*)(void* context, const BoundPlan& plan, const fb::Op& op,
                              size_t n_tokens);

class BoundPlan {
 public:
  // The plan was checked when the model was opened. The arena holds at least memory.arena_bytes
  // bytes; model and arena must outlive this. With fuse_epilogues, a MatMul followed by an
  // in-place GELU of its output or an in-place residual Add to it (BERT's and Whisper's blocks)
  // is bound as one step that applies it to each block of output rows as they are made, and a
  // LayerNorm followed by the QuantizeRows of its output as one step that quantizes each
  // thread's rows as they are normalized: the same values with one pass over memory and one
  // thread barrier less (false: one step per op, for tests that compare the two).
  Status Bind(const Model& model, const fb::Plan& plan, uint8_t* arena, const MemoryPlan& memory,
              bool fuse_epilogues = true);
  // Runs every op on the inputs already written. 1 <= n_tokens <= max_tokens().
  void Run(ThreadPool& pool, size_t n_tokens, int64_t pos0) const;

  // observer (or nullptr: none) is called before every op of every later Run.
  void SetObserver(StepObserver observer, void* context) {
    observer_ = observer;
    observer_context_ = context;
  }
  // The arena bytes of buffer `id` of the plan (an op's operand, for an observer).
  const uint8_t* BufferData(uint32_t id) const {
    return arena_ + plan_->buffers()->Get(id)->arena_offset();
  }
  const fb::Plan& plan() const { return *plan_; }

  // The buffer of the plan input or output with this role, or nullptr when it has none.
  uint8_t* Io(fb::IoRole role) const;
  const fb::Buffer* IoBuffer(fb::IoRole role) const;
  int32_t* token_input() const { return reinterpret_cast<int32_t*>(Io(fb::IoRole::TokenIds)); }
  // [n_tokens or 1, vocab]: one row when the plan computes only the last token's logits.
  const float* logits() const { return reinterpret_cast<const float*>(Io(fb::IoRole::Logits)); }
  bool logits_per_token() const;
  size_t max_tokens() const { return max_tokens_; }
  // Bound steps: the plan's ops less those fused into the step before them.
  size_t n_steps() const { return steps_.size(); }

 private:
  std::vector<Step> steps_;
  std::vector<uint32_t> step_ops_;  // the plan op each step runs (the first, when fused)
  const fb::Plan* plan_ = nullptr;
  uint8_t* arena_ = nullptr;
  size_t max_tokens_ = 0;
  StepObserver observer_ = nullptr;
  void* observer_context_ = nullptr;
};

}  // namespace kestrel
