// Fused attention over a ring-buffer KV cache with a streaming (online) softmax.
//
// For each (query row, head) the op walks the visible key positions in blocks, keeping a running
// max, running sum and running output, so the score matrix is never materialized and the op
// needs no memory beyond a few stack arrays (it runs inside the zero-allocation inference loop).
// Masks come from positions only: causal, or a sliding window.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/kv_layout.h"
#include "ops/rope.h"

namespace kestrel::ops {

struct AttentionArgs {
  // [n_tokens, n_heads * head_dim]; already RoPE'd (and QK-normed) by earlier ops.
  const float* q = nullptr;
  // [n_tokens, n_heads * head_dim]
  float* out = nullptr;
  // Rings [capacity, n_kv_heads * head_dim] of kv_type (ops/kv_layout.h): position p lives in
  // slot KvSlot(p, capacity, sinks); keys are stored after RoPE, at their true positions.
  KvType kv_type = KvType::kF32;
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  const float* k_scales = nullptr;  // int8: [capacity, n_kv_heads * head_dim / 32]
  const float* v_scales = nullptr;
  size_t n_tokens = 0;  // query rows in this step
  size_t n_heads = 0;
  // n_heads % n_kv_heads == 0 (MHA, GQA, MQA); query head h uses kv head
  // h / (n_heads / n_kv_heads).
  size_t n_kv_heads = 0;
  size_t head_dim = 0;  // <= kAttentionMaxHeadDim
  size_t capacity = 0;  // slots in the ring
  // Position of query row 0; row t is at pos0 + t. Keys/values for positions up to
  // pos0 + n_tokens - 1 are already stored.
  int64_t pos0 = 0;
  // 0: causal, the query at p sees keys at 0..p. >0: sliding window, sees keys at
  // max(0, p - window + 1)..p.
  int64_t window = 0;
  // >0: no query sees more than `context` keys. A causal query past it sees the sinks (positions
  // 0..sinks-1) and the context - sinks most recent positions; a sliding-window query sees the
  // min(window, context) most recent ones. 0: unlimited.
  int64_t context = 0;
  size_t sinks = 0;  // causal layers only
  // How the keys were rotated (null: they were not). Past the context, the sinks are attended as
  // if they sat just before the oldest recent key, so no query-key distance exceeds the context
  // (StreamingLLM places tokens by their place in the cache, not in the text). Recent keys keep
  // their true positions, whose distances are already within the context: only the few sink keys
  // are rotated further, per query position, in a stack tile.
  const RopeFrequencies* sink_rope = nullptr;
  float scale = 1.0f;  // multiplies q.k before the softmax
};

// The largest head_dim the op's stack state is sized for.
inline constexpr size_t kAttentionMaxHeadDim = 1024;

// Processes tasks [task_begin, task_end) of the n_tokens * n_heads (query row, head) pairs;
// task i = t * n_heads + h. Threads split the task range; only the output rows of these tasks are
// written. Preconditions (checked by the caller when the plan is prepared): head_dim <=
// kAttentionMaxHeadDim (a multiple of 32 for int8), and the keys a query needs are still in the
// ring: every position from the first query's oldest visible one to the last query's.
void Attention(const AttentionArgs& args, size_t task_begin, size_t task_end);

// Attention resolved to this CPU's target once (ops/targets.h).
decltype(&Attention) ResolveAttention();

}  // namespace kestrel::ops
