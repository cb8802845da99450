#include "runtime/memory_plan.h"

#include <algorithm>
#include <string>

#include "runtime/format.h"
#include "runtime/op_kind.h"
#include "runtime/steps/steps.h"

namespace kestrel {

Status PlanMemory(const Model& model, size_t context_length, MemoryPlan* out, const KvOptions& kv) {
  // Encoders (text or speech) have no KV cache to plan: their arena is PlanEncoderMemory's.
  KES_CHECK_OR_RETURN(model.meta().kv()->layers() != nullptr,
                      "this model has no KV cache (it is an encoder): nothing to plan for a "
                      "session");
  const size_t trained = model.hparams().context_length();
  KES_CHECK_OR_RETURN(context_length >= 1 && context_length <= trained,
                      "context length must be between 1 and the model's " +
                          std::to_string(trained) + " tokens, found " +
                          std::to_string(context_length));
  KES_CHECK_OR_RETURN(kv.sinks < context_length,
                      "attention sinks must be fewer than the context of " +
                          std::to_string(context_length) + " tokens, found " +
                          std::to_string(kv.sinks));
  MemoryPlan plan;
  plan.context_length = context_length;
  plan.kv_options = kv;
  plan.activation_bytes = AlignUp(model.meta().activation_bytes(), kKesAlignment);
  size_t offset = plan.activation_bytes;
  plan.kv_offset = offset;
  const auto take = [&](size_t bytes) {
    const size_t at = offset;
    offset += AlignUp(bytes, kKesAlignment);
    return at;
  };
  for (const fb::KvLayer* layer : *model.meta().kv()->layers()) {
    KvRingPlan ring;
    ring.window = layer->window();
    ring.head_dim = layer->head_dim();
    ring.row_elems = size_t{layer->n_kv_heads()} * layer->head_dim();
    KES_CHECK_OR_RETURN(kv.type != ops::KvType::kInt8 || ring.head_dim % ops::kKvInt8Block == 0,
                        "int8 KV cache needs a head_dim that is a multiple of " +
                            std::to_string(ops::kKvInt8Block) + ", found " +
                            std::to_string(ring.head_dim) + " (use --kv-type f16 or f32)");
    if (layer->cross_length() > 0) {
      // The encoder's positions, written once per input: no context, no sinks, no wrapping.
      ring.cross = true;
      ring.reach = ring.capacity = layer->cross_length();
    } else {
      ring.reach = ring.window == 0 ? context_length : std::min(context_length, ring.window);
      // Sliding-window layers were trained to see only recent tokens: they need no sinks.
      ring.sinks = ring.window == 0 ? kv.sinks : 0;
      // Inside the context a sliding-window ring holds the window plus one step, so a chunk
      // never overwrites a key that one of its own queries still needs; past the context, every
      // ring holds its reach plus one past-context step for the same reason.
      const size_t in_context =
          ring.window == 0 ? context_length
                           : std::min(context_length, ring.window + model.max_step_tokens());
      ring.capacity = std::max(in_context, ring.reach + kPastContextStepTokens);
    }
    ring.k_offset = take(ring.capacity * ops::KvRowBytes(kv.type, ring.row_elems));
    ring.v_offset = take(ring.capacity * ops::KvRowBytes(kv.type, ring.row_elems));
    if (kv.type == ops::KvType::kInt8) {
      ring.k_scale_offset = take(ring.capacity * ops::KvRowScaleBytes(kv.type, ring.row_elems));
      ring.v_scale_offset = take(ring.capacity * ops::KvRowScaleBytes(kv.type, ring.row_elems));
    }
    plan.kv.push_back(ring);
  }
  plan.kv_bytes = offset - plan.kv_offset;
  for (const fb::Plan* p : *model.meta().plans()) {
    for (const fb::Op* op : *p->ops()) {
      const OpKind* kind = FindOpKind(op->params_type());
      if (kind != nullptr && kind->scratch_bytes != nullptr) {
        plan.op_scratch_bytes = std::max(plan.op_scratch_bytes, kind->scratch_bytes(*op, plan.kv));
      }
    }
  }
  if (plan.op_scratch_bytes > 0) plan.op_scratch_offset = take(plan.op_scratch_bytes);
  plan.sampler_offset = offset;
  // Sampling sorts (probability, id) pairs of the whole vocabulary in place.
  plan.sampler_bytes =
      AlignUp(model.vocab_size() * (sizeof(float) + sizeof(int32_t)), kKesAlignment);
  offset += plan.sampler_bytes;
  plan.arena_bytes = offset;
  *out = std::move(plan);
  return OkStatus();
}

MemoryPlan PlanEncoderMemory(const Model& model) {
  MemoryPlan plan;
  plan.context_length = model.hparams().context_length();
  plan.activation_bytes = AlignUp(model.meta().activation_bytes(), kKesAlignment);
  plan.kv_offset = plan.sampler_offset = plan.arena_bytes = plan.activation_bytes;
  return plan;
}

}  // namespace kestrel
