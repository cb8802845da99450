// Fused attention over a ring-buffer KV cache with a streaming (online) softmax.
//
// For each (query row, head) the op walks the visible key positions in blocks, keeping a running
// max, running sum and running output, so the score matrix is never materialized and the op
// needs no memory beyond a few stack arrays (it runs inside the zero-allocation inference loop).
// Masks come from positions only: causal, or a sliding window. A decode step, one query row, can
// split its keys across threads by partition (AttentionPartials) and fold the partial softmax
// states afterwards (AttentionMergePartials), with the same result as one thread.
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
  // Rings [n_kv_heads, capacity, head_dim] of kv_type (ops/kv_layout.h): position p lives in
  // slot KvSlot(p, capacity, sinks); keys are stored after RoPE, at their true positions.
  KvType kv_type = KvType::kF32;
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  const float* k_scales = nullptr;  // int8: [n_kv_heads, capacity, head_dim / 32]
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
  // >0: each scaled score s becomes cap * tanh(s / cap) before the softmax (Gemma 2's attention
  // logit soft-capping). 0: scores go to the softmax as they are.
  float logit_softcap = 0.0f;
  // Keys are summed in partitions, each with a softmax state of its own, and the states are folded
  // in ascending order: the sinks form partition 0, and recent position j >= sinks is in
  // partition 1 + (j - sinks) / partition_keys. Key blocks never straddle a partition. Because the
  // partitions depend on positions only, a decode step can hand one query's partitions to several
  // threads (AttentionPartials + AttentionMergePartials) and get the bits one thread gets.
  // 0: one partition for all recent keys.
  size_t partition_keys = 0;
};

// Which keys a query sees: with reach = the most recent positions visible, a query at p sees
// j <= p with j < sinks or j >= Oldest(p).
struct AttentionVisibility {
  int64_t reach;
  int64_t sinks;
  int64_t Oldest(int64_t p) const { return p < reach ? 0 : p - (reach - sinks) + 1; }
  bool Sees(int64_t p, int64_t j) const { return j <= p && (j < sinks || j >= Oldest(p)); }
};
AttentionVisibility VisibilityOf(const AttentionArgs& args);

// The partitions that queries at positions first_pos..last_pos see, in the order they are folded:
// the sinks (partition 0) when there are any, then recent partitions first_recent..last_recent
// (none when first_recent > last_recent).
struct AttentionPartitionRange {
  bool sinks = false;
  int64_t first_recent = 1, last_recent = 0;
  size_t count() const {
    return (sinks ? 1 : 0) +
           (last_recent >= first_recent ? static_cast<size_t>(last_recent - first_recent + 1) : 0);
  }
  // Partition number of the i-th partition in fold order.
  int64_t Get(size_t i) const {
    return sinks ? (i == 0 ? 0 : first_recent + static_cast<int64_t>(i) - 1)
                 : first_recent + static_cast<int64_t>(i);
  }
};
AttentionPartitionRange PartitionsSeen(const AttentionArgs& args, int64_t first_pos,
                                       int64_t last_pos);

// Keys per partition for a layer whose queries see `reach` recent keys: at most about 16
// partitions, and at least 256 keys each so that folding the states costs nothing measurable.
inline size_t AttentionPartitionKeys(size_t reach) {
  const size_t per_part = (reach + 15) / 16;
  return per_part <= 256 ? 256 : (per_part + 255) / 256 * 256;
}
// The most partitions one query sees in a layer of that reach (sinks, and a run of reach
// positions that may start inside a partition).
inline size_t AttentionMaxPartitions(size_t reach) {
  const size_t keys = AttentionPartitionKeys(reach);
  return 2 + (reach + keys - 1) / keys;
}
// Floats of one partition's softmax state for one query head: the running output, max and sum.
inline size_t AttentionPartialFloats(size_t head_dim) { return head_dim + 2; }

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

// Decode with one query's keys split across threads. The work items of the step's single query
// row (n_tokens == 1) are (kv head, partition) pairs, item = kv_head * parts + i with parts =
// PartitionsSeen(args, pos0, pos0).count(). AttentionPartials computes items [item_begin,
// item_end) into partials, a [parts][n_heads][AttentionPartialFloats(head_dim)] array;
// once every item is done, AttentionMergePartials folds them in order and writes the output row.
void AttentionPartials(const AttentionArgs& args, size_t item_begin, size_t item_end,
                       float* partials);
void AttentionMergePartials(const AttentionArgs& args, const float* partials);
decltype(&AttentionPartials) ResolveAttentionPartials();
decltype(&AttentionMergePartials) ResolveAttentionMergePartials();

}  // namespace kestrel::ops
