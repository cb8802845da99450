// One entry per op kind of the plan contract (schema/kestrel.fbs, union OpParams): how many
// operands it takes, how a plan's use of it is checked against the model (once, at load), and
// how it is bound to a kernel and to resolved arena and weight pointers (once, at session
// creation). Each kind lives in runtime/steps/<op>_step.cc; runtime/steps/op_table.cc lists them.
//
// Running a bound step is a call through Step::run with no lookups or dtype switches: bind picks
// the kernel for the operands' dtypes and stores the op's resolved arguments in Step::args.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kestrel_generated.h"
#include "runtime/memory_plan.h"
#include "runtime/model.h"
#include "runtime/status.h"
#include "runtime/thread_pool.h"

namespace kestrel {

// Processes this thread's share of a step for n_tokens tokens at positions pos0...
using StepFn = void (*)(const void* args, size_t n_tokens, int64_t pos0, size_t thread,
                        size_t n_threads);

enum class Parallelism : uint8_t {
  kSerial,      // so little work that waking the other threads costs more
  kMultiToken,  // split over threads when the step has several tokens
  kAlways,      // split even for one token (matmuls, attention)
};

struct Step {
  static constexpr size_t kArgsBytes = 256;

  StepFn run = nullptr;
  Parallelism parallelism = Parallelism::kSerial;
  alignas(16) unsigned char args[kArgsBytes] = {};

  // Sets the run function, how it splits over threads, and the op's resolved arguments (a plain
  // struct that `run` reads back from args).
  template <typename Args>
  void Set(StepFn fn, Parallelism how, const Args& a) {
    static_assert(sizeof(Args) <= kArgsBytes, "step arguments too large");
    static_assert(std::is_trivially_copyable_v<Args>, "step arguments must be plain data");
    run = fn;
    parallelism = how;
    std::memcpy(args, &a, sizeof(Args));
  }
};

// Reads one op of a plan for its kind's check: operands by position and typed expectations that
// fail with messages naming the plan, the op and what was expected and found.
class OpCheck {
 public:
  OpCheck(const fb::Model& model, const fb::Plan& plan, const fb::Op& op, uint32_t index);

  const fb::Model& model() const { return model_; }
  const fb::Plan& plan() const { return plan_; }
  const fb::Op& op() const { return op_; }
  const fb::Buffer& In(uint32_t i) const { return *plan_.buffers()->Get(op_.inputs()->Get(i)); }
  const fb::Buffer& Out(uint32_t i) const { return *plan_.buffers()->Get(op_.outputs()->Get(i)); }
  const fb::Tensor& Weight(uint32_t i) const {
    return *model_.tensors()->Get(op_.weights()->Get(i));
  }
  uint32_t n_weights() const { return op_.weights() ? op_.weights()->size() : 0; }
  uint32_t n_inputs() const { return op_.inputs() ? op_.inputs()->size() : 0; }
  // Whether input i is the plan input of this role.
  bool InputIs(uint32_t i, fb::IoRole role) const;

  // The message is only read on failure; a literal one then costs no allocation on success, and
  // one built from values is passed as a lambda that makes it
  // (`[&] { return "found " + std::to_string(n); }`), so checking a good file allocates nothing.
  Status Expect(bool condition, const std::string& message) const;
  Status Expect(bool condition, const char* message) const;
  template <typename MakeMessage, typename = decltype(std::string(std::declval<MakeMessage&>()()))>
  Status Expect(bool condition, MakeMessage&& make_message) const {
    return condition ? OkStatus() : Fail(make_message());
  }
  // A per-token f32 activation of row_elems elements.
  Status Activation(const fb::Buffer& b, uint64_t row_elems, const char* role) const;
  // A per-token Q8_ACT buffer (activations quantized by QuantizeRows) of row_elems elements.
  Status QuantizedActivation(const fb::Buffer& b, uint64_t row_elems, const char* role) const;
  Status Matrix(const fb::Tensor& t, const char* role) const;
  Status F32Vector(const fb::Tensor& t, uint64_t n, const char* role) const;
  // The KV layer `layer` names, or an error when it is out of range.
  Status KvLayer(uint32_t layer, const fb::KvLayer** out) const;
  // Input i is the plan's sequence table (encoder steps).
  Status SequenceTable(uint32_t i) const;
  // A fixed f32 buffer with one row of row_elems elements per row of the sequence table.
  Status PerSequence(const fb::Buffer& b, uint64_t row_elems, const char* role) const;

 private:
  const fb::Model& model_;
  const fb::Plan& plan_;
  const fb::Op& op_;
  uint32_t index_;
  // "plan 'decode' op 12 (MatMul)": built only for an error, so checking a good file allocates
  // nothing.
  std::string Where() const;
  Status Fail(const std::string& message) const;
};

// What binding one op sees: the model, the plan's buffers placed in the arena, the session's
// memory plan (KV rings).
class BindContext {
 public:
  // fused_next: the op after this one when it runs in this op's step (an element-wise Activate or
  // a residual Add in a MatMul's epilogue, a QuantizeRows after a LayerNorm; BoundPlan::Bind
  // decides), or nullptr.
  BindContext(const Model& model, const fb::Plan& plan, const fb::Op& op, uint8_t* arena,
              const MemoryPlan& memory, const fb::Op* fused_next = nullptr)
      : model_(model),
        plan_(plan),
        op_(op),
        arena_(arena),
        memory_(memory),
        fused_next_(fused_next) {}

  const fb::Op& op() const { return op_; }
  const fb::Plan& plan() const { return plan_; }
  const Model& model() const { return model_; }
  const MemoryPlan& memory() const { return memory_; }
  uint8_t* arena() const { return arena_; }
  const fb::Buffer& InBuffer(uint32_t i) const {
    return *plan_.buffers()->Get(op_.inputs()->Get(i));
  }
  uint8_t* In(uint32_t i) const { return arena_ + InBuffer(i).arena_offset(); }
  uint32_t n_inputs() const { return op_.inputs() ? op_.inputs()->size() : 0; }
  uint8_t* Out(uint32_t i) const {
    return arena_ + plan_.buffers()->Get(op_.outputs()->Get(i))->arena_offset();
  }
  const fb::Tensor& Weight(uint32_t i) const {
    return *model_.meta().tensors()->Get(op_.weights()->Get(i));
  }
  const uint8_t* WeightData(uint32_t i) const { return model_.TensorData(op_.weights()->Get(i)); }
  uint32_t n_weights() const { return op_.weights() ? op_.weights()->size() : 0; }
  const fb::Op* fused_next() const { return fused_next_; }
  // The arena bytes of plan buffer `id`.
  uint8_t* BufferData(uint32_t id) const {
    return arena_ + plan_.buffers()->Get(id)->arena_offset();
  }

 private:
  const Model& model_;
  const fb::Plan& plan_;
  const fb::Op& op_;
  uint8_t* arena_;
  const MemoryPlan& memory_;
  const fb::Op* fused_next_;
};

// What the runtime knows of one op kind, each field named where its step file defines it:
//   const OpKind kRopeOp =
//       OpKind(fb::OpParams::Rope, Check, Bind).Operands(1, 0).Weights(0, 2);
struct OpKind {
  fb::OpParams params;  // the union member this entry serves
  // Everything the op's bind and run rely on, beyond the operand counts and id ranges (checked
  // generically before this is called).
  Status (*check)(const OpCheck& c);
  // Fills step (run function, parallelism, args); called only on checked ops.
  void (*bind)(const BindContext& b, Step* step);
  uint32_t inputs = 0, outputs = 0, min_weights = 0, max_weights = 0;
  uint32_t optional_inputs = 0;  // inputs the op may take after its `inputs` required ones
  // Reads or writes the KV cache: a plan with such an op binds only with the memory plan of the
  // model's KV layout (an encoder-decoder's encoder plan runs without one).
  bool uses_kv = false;
  // Bytes of arena scratch the op's step uses while it runs, given the session's KV rings; null
  // for none. Steps run one at a time, so a session's arena holds one region for all of them:
  // the most any op of the model's plans asks (MemoryPlan::op_scratch_bytes, bound at
  // op_scratch_offset).
  size_t (*scratch_bytes)(const fb::Op& op, const std::vector<KvRingPlan>& kv) = nullptr;

  constexpr OpKind(fb::OpParams params, Status (*check)(const OpCheck&),
                   void (*bind)(const BindContext&, Step*))
      : params(params), check(check), bind(bind) {}
  constexpr OpKind Operands(uint32_t n_inputs, uint32_t n_outputs) const {
    OpKind k = *this;
    k.inputs = n_inputs;
    k.outputs = n_outputs;
    return k;
  }
  constexpr OpKind OptionalInputs(uint32_t n) const {
    OpKind k = *this;
    k.optional_inputs = n;
    return k;
  }
  constexpr OpKind Weights(uint32_t min, uint32_t max) const {
    OpKind k = *this;
    k.min_weights = min;
    k.max_weights = max;
    return k;
  }
  constexpr OpKind UsesKv() const {
    OpKind k = *this;
    k.uses_kv = true;
    return k;
  }
  constexpr OpKind Scratch(size_t (*bytes)(const fb::Op&, const std::vector<KvRingPlan>&)) const {
    OpKind k = *this;
    k.scratch_bytes = bytes;
    return k;
  }
};

}  // namespace kestrel
