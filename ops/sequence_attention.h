// Self-attention within one sequence (an encoder's), with a streaming (online) softmax: every
// query row attends to all len keys of the sequence, or with `causal` to keys 0..its own row (a
// decoder's layers run as an embedding model: Qwen3-Embedding).
//
// ops/attention serves decoders: it walks a KV ring one query row at a time, and each q.k ends in
// a reduction across lanes. Here every query of the sequence sees the same keys, so the kernel
// puts a chunk of queries in the lanes of a vector, transposed once: scores and outputs become
// broadcast-FMAs, and the softmax needs no reduction across lanes. As in ops/attention the score
// matrix is never materialized and all state lives in fixed-size stack arrays (no heap: it runs
// inside the zero-allocation inference loop).
#pragma once

#include <cstddef>

#include "ops/attention.h"  // kAttentionMaxHeadDim

namespace kestrel::ops {

struct SequenceAttentionArgs {
  const float* q;  // [len, n_heads * head_dim], row stride n_heads * head_dim
  const float* k;  // [len, n_kv_heads * head_dim]
  const float* v;  // [len, n_kv_heads * head_dim]
  float* out;      // [len, n_heads * head_dim]
  size_t len;      // >= 1
  size_t n_heads;
  // n_heads % n_kv_heads == 0 (MHA, GQA, MQA); query head h uses kv head
  // h / (n_heads / n_kv_heads).
  size_t n_kv_heads;
  size_t head_dim;      // 1..kAttentionMaxHeadDim
  float scale;          // multiplies q.k before the softmax
  bool causal = false;  // query row i attends to keys 0..i only
};

// Every query row of the sequence attends to all len keys (causal: keys 0..row), for query
// heads [head_begin, head_end); only those heads' output columns are written. Threads split the
// head range.
void SequenceAttention(const SequenceAttentionArgs& a, size_t head_begin, size_t head_end);

// SequenceAttention resolved to this CPU's target once (ops/targets.h).
decltype(&SequenceAttention) ResolveSequenceAttention();

}  // namespace kestrel::ops
