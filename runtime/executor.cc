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

}  // namespace

Status BoundPlan::Bind(const Model& model, const fb::Plan& plan, uint8_t* arena,
                       const MemoryPlan& memory) {
  const std::string where = "plan '" + plan.name()->str() + "'";
  // Plans that touch the KV cache need the memory plan of its layout; an encoder-decoder's
  // encoder plan runs with the activations alone (PlanEncoderMemory).
  bool uses_kv = false;
  for (const fb::Op* op : *plan.ops()) {
    uses_kv |= op->params_type() == fb::OpParams::KvStore ||
               op->params_type() == fb::OpParams::Attention;
  }
  const auto* kv_layers = model.meta().kv()->layers();
  KES_CHECK_OR_RETURN(!uses_kv || memory.kv.size() == (kv_layers ? kv_layers->size() : 0),
                      "memory plan does not match the model's KV layout");
  plan_ = &plan;
  arena_ = arena;
  max_tokens_ = plan.max_tokens();

  steps_.clear();
  steps_.reserve(plan.ops()->size());
  for (const fb::Op* op : *plan.ops()) {
    const OpKind* kind = FindOpKind(op->params_type());
    KES_CHECK_OR_RETURN(kind != nullptr, where + ": op " + fb::EnumNameOpParams(op->params_type()) +
                                             " has no kernel in this build");
    Step step;
    kind->bind(BindContext(model, plan, *op, arena, memory), &step);
    steps_.push_back(step);
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
    if (observer_ != nullptr) observer_(observer_context_, *this, *plan_->ops()->Get(i), n_tokens);
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
