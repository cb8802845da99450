// Fused attention over a ring-buffer KV cache with a streaming (online) softmax.
//
// For each (query row, head) the op walks the visible key positions in blocks, keeping a running
// max, running sum and running output, so the score matrix is never materialized and the op
// needs no memory beyond a few stack arrays (it runs inside the zero-allocation inference loop).
// Masks come from positions only: causal, or a sliding window.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kestrel::ops {

struct AttentionArgs {
  // [n_tokens, n_heads * head_dim]; already RoPE'd (and QK-normed) by earlier ops.
  const float* q;
  // [n_tokens, n_heads * head_dim]
  float* out;
  // Ring [capacity, n_kv_heads * head_dim]: position p lives in slot p % capacity; keys are
  // stored after RoPE.
  const float* k_cache;
  // Ring [capacity, n_kv_heads * head_dim], same slots as k_cache.
  const float* v_cache;
  size_t n_tokens;  // query rows in this step
  size_t n_heads;
  // n_heads % n_kv_heads == 0 (MHA, GQA, MQA); query head h uses kv head
  // h / (n_heads / n_kv_heads).
  size_t n_kv_heads;
  size_t head_dim;  // <= kAttentionMaxHeadDim
  size_t capacity;  // slots in the ring
  // Position of query row 0; row t is at pos0 + t. Keys/values for positions up to
  // pos0 + n_tokens - 1 are already stored.
  int64_t pos0;
  // 0: causal, the query at p sees keys at 0..p. >0: sliding window, sees keys at
  // max(0, p - window + 1)..p.
  int64_t window;
  float scale;  // multiplies q.k before the softmax
};

// The largest head_dim the op's stack state is sized for.
inline constexpr size_t kAttentionMaxHeadDim = 1024;

// Processes tasks [task_begin, task_end) of the n_tokens * n_heads (query row, head) pairs;
// task i = t * n_heads + h. Threads split the task range; only the output rows of these tasks are
// written. Preconditions (checked by the caller when the plan is prepared): head_dim <=
// kAttentionMaxHeadDim, and the keys a query needs are still in the ring, i.e.
// capacity >= (window ? window + n_tokens - 1 : pos0 + n_tokens).
void Attention(const AttentionArgs& args, size_t task_begin, size_t task_end);

// Attention resolved to this CPU's target once (ops/targets.h).
decltype(&Attention) ResolveAttention();

}  // namespace kestrel::ops
