// Where everything a session needs lives in its one arena, computed before any inference:
//   [activations (planned by the converter)] [KV rings, per layer K then V] [sampler scratch]
// (an encoder's arena is the activations alone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/model.h"
#include "runtime/status.h"

namespace kestrel {

struct KvRingPlan {
  size_t capacity = 0;   // slots; position p lives in slot p % capacity
  size_t row_elems = 0;  // n_kv_heads * head_dim
  size_t window = 0;     // 0: global
  size_t k_offset = 0;   // bytes from the arena start
  size_t v_offset = 0;
};

struct MemoryPlan {
  size_t context_length = 0;
  size_t activation_bytes = 0;
  size_t kv_bytes = 0;
  size_t sampler_bytes = 0;
  size_t arena_bytes = 0;  // everything above, aligned
  size_t kv_offset = 0;
  size_t sampler_offset = 0;
  std::vector<KvRingPlan> kv;
};

// A decoder's arena. Fails when context_length is 0 or above the model's trained context.
Status PlanMemory(const Model& model, size_t context_length, MemoryPlan* out);
// An encoder's arena: activations only (no KV rings, no sampler); context_length is the longest
// sequence it takes.
MemoryPlan PlanEncoderMemory(const Model& model);

}  // namespace kestrel
