#include "runtime/executor.h"

#include <string>

#include "ops/targets.h"
#include "runtime/plan_check.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct RunContext {
  const Step* step;
  size_t n_tokens;
  int64_t pos0;
};

void RunOnPool(void* ctx, size_t thread, size_t n_threads) {
  const auto* c = static_cast<const RunContext*>(ctx);
  c->step->run(c->step->args, c->n_tokens, c->pos0, thread, n_threads);
}

// Whether `next` can run in the epilogue of the MatMul `op`, on each block of the matmul's
// output rows while they are still in cache (runtime/steps/matmul_step.cc): an element-wise
// GeluErf Activate of that output in place, or a residual Add of another buffer to it in place
// (out = other + out). In place means nothing later can read the matmul's output before `next`.
bool FusesIntoMatMul(const fb::Op& op, const fb::Op& next) {
  const fb::MatMul* matmul = op.params_as_MatMul();
  if (matmul == nullptr || matmul->last_row_only()) return false;
  const uint32_t out = op.outputs()->Get(0);
  // Activate and Add have one output (op checks); other kinds may have none.
  if (next.outputs() == nullptr || next.outputs()->size() != 1 || next.outputs()->Get(0) != out) {
    return false;
  }
  if (const fb::Activate* activate = next.params_as_Activate()) {
    return activate->activation() == fb::Activation::GeluErf && next.inputs()->Get(0) == out;
  }
  if (next.params_as_Add() != nullptr) {
    const uint32_t a = next.inputs()->Get(0), b = next.inputs()->Get(1);
    return (a == out) != (b == out);  // the residual is the other input, not out itself
  }
  return false;
}

// Whether `next` is a QuantizeRows of the output of the LayerNorm `op`: both split the step's
// tokens over the threads the same way (SplitRange), so each thread can quantize the rows it has
// just normalized (runtime/steps/layer_norm_step.cc).
bool FusesIntoLayerNorm(const fb::Op& op, const fb::Op& next) {
  return op.params_as_LayerNorm() != nullptr && next.params_as_QuantizeRows() != nullptr &&
         next.inputs()->Get(0) == op.outputs()->Get(0);
}

bool FusesIntoStep(const fb::Op& op, const fb::Op& next) {
  return FusesIntoMatMul(op, next) || FusesIntoLayerNorm(op, next);
}

}  // namespace

Status BoundPlan::Bind(const Model& model, const fb::Plan& plan, uint8_t* arena,
                       const MemoryPlan& memory, bool fuse_epilogues) {
  const std::string where = "plan '" + plan.name()->str() + "'";
  // Plans that touch the KV cache need the memory plan of its layout; an encoder-decoder's
  // encoder plan runs with the activations alone (PlanEncoderMemory).
  bool uses_kv = false;
  for (const fb::Op* op : *plan.ops()) {
    const OpKind* kind = FindOpKind(op->params_type());
    uses_kv |= kind != nullptr && kind->uses_kv;
  }
  const auto* kv_layers = model.meta().kv()->layers();
  KES_CHECK_OR_RETURN(!uses_kv || memory.kv.size() == (kv_layers ? kv_layers->size() : 0),
                      "memory plan does not match the model's KV layout");
  plan_ = &plan;
  arena_ = arena;
  max_tokens_ = plan.max_tokens();

  steps_.clear();
  step_ops_.clear();
  steps_.reserve(plan.ops()->size());
  step_ops_.reserve(plan.ops()->size());
  const auto& ops = *plan.ops();
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const fb::Op* op = ops.Get(i);
    const OpKind* kind = FindOpKind(op->params_type());
    KES_CHECK_OR_RETURN(kind != nullptr, where + ": op " + fb::EnumNameOpParams(op->params_type()) +
                                             " has no kernel in this build");
    const bool fuse_next =
        fuse_epilogues && i + 1 < ops.size() && FusesIntoStep(*op, *ops.Get(i + 1));
    const fb::Op* fused = fuse_next ? ops.Get(i + 1) : nullptr;
    Step step;
    kind->bind(BindContext(model, plan, *op, arena, memory, fused), &step);
    steps_.push_back(step);
    step_ops_.push_back(i);
    if (fused != nullptr) ++i;  // runs in this step
  }
  return OkStatus();
}

Status CheckCanRun(size_t n_threads) {
  KES_CHECK_OR_RETURN(n_threads >= 1 && n_threads <= 256,
                      "threads must be between 1 and 256, found " + std::to_string(n_threads));
  // On a core without the SIMD extensions the binary was built for (e.g. an armv7 build on a
  // Cortex-A9, which lacks VFPv4), dispatch has nothing to run.
  KES_CHECK_OR_RETURN(ops::ChosenTargetName() != "none",
                      "this CPU supports none of the SIMD targets this binary was compiled for (" +
                          ops::CompiledTargetNames() + "); build Kestrel for this CPU");
  return OkStatus();
}

const fb::Buffer* BoundPlan::IoBuffer(fb::IoRole role) const {
  const int64_t id = plan_ == nullptr ? -1 : FindPlanIo(*plan_, role);
  return id < 0 ? nullptr : plan_->buffers()->Get(static_cast<uint32_t>(id));
}

uint8_t* BoundPlan::Io(fb::IoRole role) const {
  const fb::Buffer* b = IoBuffer(role);
  return b == nullptr ? nullptr : arena_ + b->arena_offset();
}

bool BoundPlan::logits_per_token() const {
  const fb::Buffer* b = IoBuffer(fb::IoRole::Logits);
  return b != nullptr && b->per_token();
}

void BoundPlan::Run(ThreadPool& pool, size_t n_tokens, int64_t pos0) const {
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (observer_ != nullptr) {
      observer_(observer_context_, *this, *plan_->ops()->Get(step_ops_[i]), n_tokens);
    }
    const bool split = step.parallelism == Parallelism::kAlways ||
                       (step.parallelism == Parallelism::kMultiToken && n_tokens > 1);
    if (split && pool.size() > 1) {
      RunContext ctx{&step, n_tokens, pos0};
      pool.Run(RunOnPool, &ctx);
    } else {
      step.run(step.args, n_tokens, pos0, 0, 1);
    }
  }
}

}  // namespace kestrel
