// PlanArena: greedy-by-size placement of activation buffers with interval overlap.
#include <algorithm>
#include <limits>
#include <numeric>

#include "converters/kes_model.h"
#include "runtime/format.h"

namespace kestrel {
namespace {

struct Lifetime {
  size_t first = std::numeric_limits<size_t>::max();
  size_t last = 0;
  bool used() const { return first != std::numeric_limits<size_t>::max(); }
  bool Overlaps(const Lifetime& o) const { return first <= o.last && o.first <= last; }
};

std::vector<Lifetime> Lifetimes(const fb::PlanT& plan) {
  std::vector<Lifetime> life(plan.buffers.size());
  const auto touch = [&](uint32_t id, size_t step) {
    life[id].first = std::min(life[id].first, step);
    life[id].last = std::max(life[id].last, step);
  };
  // Step 0 is the runtime writing the plan's inputs; op i is step i + 1; the runtime reads the
  // outputs after the last op.
  for (const auto& io : plan.inputs) touch(io->buffer, 0);
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    for (uint32_t id : plan.ops[i]->inputs) touch(id, i + 1);
    for (uint32_t id : plan.ops[i]->outputs) touch(id, i + 1);
  }
  for (const auto& io : plan.outputs) touch(io->buffer, plan.ops.size() + 1);
  return life;
}

Status PlanOne(fb::PlanT* plan) {
  for (const auto& op : plan->ops) {
    for (const auto* ids : {&op->inputs, &op->outputs}) {
      for (uint32_t id : *ids) {
        KES_CHECK_OR_RETURN(id < plan->buffers.size(),
                            "plan '" + plan->name + "': op refers to buffer " + std::to_string(id) +
                                " of " + std::to_string(plan->buffers.size()));
      }
    }
  }
  const std::vector<Lifetime> life = Lifetimes(*plan);
  std::vector<size_t> order(plan->buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan->buffers[a]->size > plan->buffers[b]->size;
  });
  std::vector<size_t> placed;
  uint64_t high_water = 0;
  for (size_t id : order) {
    fb::BufferT& buffer = *plan->buffers[id];
    KES_CHECK_OR_RETURN(life[id].used(),
                        "plan '" + plan->name + "': buffer '" + buffer.name + "' is never used");
    // Candidate offsets: 0 and the end of every placed buffer alive at the same time; take the
    // lowest that collides with none of them.
    std::vector<uint64_t> candidates{0};
    for (size_t other : placed) {
      if (life[other].Overlaps(life[id])) {
        candidates.push_back(plan->buffers[other]->arena_offset + plan->buffers[other]->size);
      }
    }
    std::sort(candidates.begin(), candidates.end());
    for (uint64_t offset : candidates) {
      bool fits = true;
      for (size_t other : placed) {
        const fb::BufferT& o = *plan->buffers[other];
        if (life[other].Overlaps(life[id]) && offset < o.arena_offset + o.size &&
            o.arena_offset < offset + buffer.size) {
          fits = false;
          break;
        }
      }
      if (fits) {
        buffer.arena_offset = offset;
        break;
      }
    }
    placed.push_back(id);
    high_water = std::max(high_water, buffer.arena_offset + buffer.size);
  }
  plan->activation_bytes = AlignUp(high_water, kKesAlignment);
  return OkStatus();
}

}  // namespace

Status PlanArena(fb::ModelT* meta) {
  meta->activation_bytes = 0;
  for (auto& plan : meta->plans) {
    KES_RETURN_IF_ERROR(PlanOne(plan.get()));
    meta->activation_bytes = std::max(meta->activation_bytes, plan->activation_bytes);
  }
  return OkStatus();
}

}  // namespace kestrel
