#include "runtime/memory_plan.h"

#include <algorithm>
#include <string>

#include "runtime/format.h"

namespace kestrel {

Status PlanMemory(const Model& model, size_t context_length, MemoryPlan* out,
                  const KvOptions& kv) {
  const size_t trained = model.hparams().context_length();
  KES_CHECK_OR_RETURN(context_length >= 1 && context_length <= trained,
                      "context length must be between 1 and the model's " +
                          std::to_string(trained) + " tokens, found " +
                          std::to_string(context_length));
  MemoryPlan plan;
  plan.context_length = context_length;
  plan.kv_options = kv;
  plan.activation_bytes = AlignUp(model.meta().activation_bytes(), kKesAlignment);
  size_t offset = plan.activation_bytes;
  plan.kv_offset = offset;
  const size_t elem = DTypeSize(model.meta().kv()->dtype());
  for (const fb::KvLayer* layer : *model.meta().kv()->layers()) {
    KvRingPlan ring;
    ring.window = layer->window();
    ring.row_elems = size_t{layer->n_kv_heads()} * layer->head_dim();
    ring.reach = ring.window == 0 ? context_length : std::min(context_length, ring.window);
    // A sliding-window ring holds the window plus one step, so a chunk never overwrites a key
    // that one of its own queries still needs.
    ring.capacity = ring.window == 0
                        ? context_length
                        : std::min(context_length, ring.window + model.max_step_tokens());
    const size_t ring_bytes = AlignUp(ring.capacity * ring.row_elems * elem, kKesAlignment);
    ring.k_offset = offset;
    ring.v_offset = offset + ring_bytes;
    offset += 2 * ring_bytes;
    plan.kv.push_back(ring);
  }
  plan.kv_bytes = offset - plan.kv_offset;
  plan.sampler_offset = offset;
  // Sampling sorts (probability, id) pairs of the whole vocabulary in place.
  plan.sampler_bytes = AlignUp(model.vocab_size() * (sizeof(float) + sizeof(int32_t)), kKesAlignment);
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
