// Where everything a session needs lives in its one arena, computed before any inference:
//   [activations (planned by the converter)] [KV rings, per layer K then V]
//   [op scratch (OpKind::scratch_bytes: decode attention's partitions)] [sampler scratch]
// (an encoder's arena is the activations alone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/kv_layout.h"
#include "runtime/model.h"
#include "runtime/status.h"

namespace kestrel {

// How the session's KV cache is stored and what it keeps once the context is full.
struct KvOptions {
  // f16 by default, as llama.cpp's: half of f32's memory for perplexities within 0.05% of an
  // f32 cache's on the shipped models (README). kF32 for comparisons with float references.
  ops::KvType type = ops::KvType::kF16;
  // Global-attention layers keep the first `sinks` positions for good when generation goes past
  // the context (StreamingLLM's attention sinks); 0 keeps only the most recent tokens.
  size_t sinks = 4;
};

// Steps that reach past the context take at most this many tokens, so every ring needs only this
// many slots beyond the keys its queries see (Session splits longer steps).
inline constexpr size_t kPastContextStepTokens = 64;

// One layer's ring (ops/kv_layout.h): slot of position p is ops::KvSlot(p, capacity, sinks).
struct KvRingPlan {
  size_t capacity = 0;   // slots
  size_t row_elems = 0;  // n_kv_heads * head_dim
  size_t head_dim = 0;
  size_t window = 0;  // 0: global
  // The most recent positions a query sees: the window, capped by the context; plus the sinks
  // when those are not among them.
  size_t reach = 0;
  size_t sinks = 0;     // 0 for sliding-window layers
  bool cross = false;   // a cross-attention layer: capacity = reach = its cross_length
  size_t k_offset = 0;  // bytes from the arena start
  size_t v_offset = 0;
  size_t k_scale_offset = 0;  // int8 only: [n_kv_heads, capacity, head_dim / 32] f32
  size_t v_scale_offset = 0;
};

struct MemoryPlan {
  size_t context_length = 0;
  KvOptions kv_options;
  size_t activation_bytes = 0;
  size_t kv_bytes = 0;
  // The scratch any one step uses while it runs, the most any op of the model's plans asks
  // (OpKind::scratch_bytes); today decode attention's partitions of a query's keys split across
  // threads (runtime/steps/attention_step.cc).
  size_t op_scratch_bytes = 0;
  size_t sampler_bytes = 0;
  size_t arena_bytes = 0;  // everything above, aligned
  size_t kv_offset = 0;
  size_t op_scratch_offset = 0;
  size_t sampler_offset = 0;
  std::vector<KvRingPlan> kv;
};

// A decoder's arena. Fails when context_length is 0 or above the model's trained context, or when
// int8 KV is asked for a head_dim that is not a multiple of 32.
Status PlanMemory(const Model& model, size_t context_length, MemoryPlan* out,
                  const KvOptions& kv = {});
// An encoder's arena: activations only (no KV rings, no sampler); context_length is the longest
// sequence it takes.
MemoryPlan PlanEncoderMemory(const Model& model);

}  // namespace kestrel
