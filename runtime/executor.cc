#include "runtime/executor.h"

#include <string>

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
  const int64_t tokens = FindPlanIo(plan, fb::IoRole::TokenIds);
  const int64_t logits = FindPlanIo(plan, fb::IoRole::Logits);
  KES_CHECK_OR_RETURN(tokens >= 0, where + ": expected a token-ids input, found none");
  KES_CHECK_OR_RETURN(logits >= 0, where + ": expected a logits output, found none");
  KES_CHECK_OR_RETURN(memory.kv.size() == model.meta().kv()->layers()->size(),
                      "memory plan does not match the model's KV layout");
  const auto* buffers = plan.buffers();
  max_tokens_ = plan.max_tokens();
  token_input_ = reinterpret_cast<int32_t*>(
      arena + buffers->Get(static_cast<uint32_t>(tokens))->arena_offset());
  const fb::Buffer& logits_buffer = *buffers->Get(static_cast<uint32_t>(logits));
  logits_ = reinterpret_cast<const float*>(arena + logits_buffer.arena_offset());
  logits_per_token_ = logits_buffer.per_token();

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

void BoundPlan::Run(ThreadPool& pool, size_t n_tokens, int64_t pos0) const {
  for (const Step& step : steps_) {
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
