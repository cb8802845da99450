// SequenceAttention: an encoder's self-attention, bidirectional or causal. Each sequence of the
// step attends over its own keys and values, which are rows of this step's k and v buffers, with
// the kernel ops/sequence_attention made for that (every query of a sequence sees the same keys).
#include <cmath>

#include "ops/sequence_attention.h"
#include "runtime/steps/sequences.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

struct SequenceAttentionStepArgs {
  decltype(&ops::SequenceAttention) kernel;
  const float* q;  // [tokens, n_heads * head_dim]
  const float* k;  // [tokens, n_kv_heads * head_dim]
  const float* v;
  float* out;  // [tokens, n_heads * head_dim]
  const int32_t* table;
  size_t table_rows;
  size_t n_heads, n_kv_heads, head_dim;
  float scale;
  bool causal;
};

// Tasks are (sequence, head) pairs; a pair of a sequence of length L costs L^2 (query, key)
// pairs, so threads get equal shares of the summed cost, not of the task count (a batch mixes
// sequences of 5 and 256 tokens).
void Run(const void* args, size_t n, int64_t, size_t thread, size_t n_threads) {
  const auto& a = *static_cast<const SequenceAttentionStepArgs*>(args);
  const size_t n_seqs = CountSequences(a.table, a.table_rows, n);
  uint64_t total = 0;
  for (size_t s = 0; s < n_seqs; ++s) {
    const uint64_t len = SequenceAt(a.table, s).length;
    total += len * len * a.n_heads;
  }
  const uint64_t cost_begin = total * thread / n_threads,
                 cost_end = total * (thread + 1) / n_threads;
  const size_t q_row = a.n_heads * a.head_dim, kv_row = a.n_kv_heads * a.head_dim;
  uint64_t before = 0;  // cost of the sequences before s
  for (size_t s = 0; s < n_seqs && before < cost_end; ++s) {
    const SequenceSpan span = SequenceAt(a.table, s);
    const uint64_t len = span.length, head_cost = len * len, cost = head_cost * a.n_heads;
    if (len > 0 && before + cost > cost_begin) {
      // This thread's heads of the sequence: those whose cost range starts in its share.
      const auto head_at = [&](uint64_t c) {
        const uint64_t h = c <= before ? 0 : (c - before + head_cost - 1) / head_cost;
        return static_cast<size_t>(h < a.n_heads ? h : a.n_heads);
      };
      const size_t b = head_at(cost_begin), e = head_at(cost_end);
      if (b < e) {
        ops::SequenceAttentionArgs k{};
        k.q = a.q + span.start * q_row;
        k.k = a.k + span.start * kv_row;
        k.v = a.v + span.start * kv_row;
        k.out = a.out + span.start * q_row;
        k.len = span.length;
        k.n_heads = a.n_heads;
        k.n_kv_heads = a.n_kv_heads;
        k.head_dim = a.head_dim;
        k.scale = a.scale;
        k.causal = a.causal;
        a.kernel(k, b, e);
      }
    }
    before += cost;
  }
}

Status Check(const OpCheck& c) {
  const fb::SequenceAttention& p = *c.op().params_as_SequenceAttention();
  KES_RETURN_IF_ERROR(c.Expect(p.n_kv_heads() > 0 && p.n_heads() > 0 && p.n_heads() <= 65536 &&
                                   p.n_heads() % p.n_kv_heads() == 0,
                               [&] {
                                 return "query heads " + std::to_string(p.n_heads()) +
                                        " must be a multiple of KV heads " +
                                        std::to_string(p.n_kv_heads());
                               }));
  KES_RETURN_IF_ERROR(c.Expect(p.head_dim() > 0 && p.head_dim() <= ops::kAttentionMaxHeadDim, [&] {
    return "head_dim " + std::to_string(p.head_dim()) + " not in 1.." +
           std::to_string(ops::kAttentionMaxHeadDim);
  }));
  KES_RETURN_IF_ERROR(
      c.Expect(std::isfinite(p.scale()) && p.scale() > 0.0f, "scale must be positive and finite"));
  const uint64_t q_row = uint64_t{p.n_heads()} * p.head_dim();
  const uint64_t kv_row = uint64_t{p.n_kv_heads()} * p.head_dim();
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), q_row, "query"));
  KES_RETURN_IF_ERROR(c.Activation(c.In(1), kv_row, "key"));
  KES_RETURN_IF_ERROR(c.Activation(c.In(2), kv_row, "value"));
  KES_RETURN_IF_ERROR(c.SequenceTable(3));
  return c.Activation(c.Out(0), q_row, "output");
}

void Bind(const BindContext& b, Step* step) {
  const fb::SequenceAttention& p = *b.op().params_as_SequenceAttention();
  SequenceAttentionStepArgs a{};
  a.kernel = ops::ResolveSequenceAttention();
  a.q = reinterpret_cast<const float*>(b.In(0));
  a.k = reinterpret_cast<const float*>(b.In(1));
  a.v = reinterpret_cast<const float*>(b.In(2));
  a.table = reinterpret_cast<const int32_t*>(b.In(3));
  a.table_rows = b.InBuffer(3).fixed_rows();
  a.out = reinterpret_cast<float*>(b.Out(0));
  a.n_heads = p.n_heads();
  a.n_kv_heads = p.n_kv_heads();
  a.head_dim = p.head_dim();
  a.scale = p.scale();
  a.causal = p.causal();
  step->Set(Run, Parallelism::kAlways, a);
}

}  // namespace

const OpKind kSequenceAttentionOp =
    OpKind(fb::OpParams::SequenceAttention, Check, Bind).Operands(4, 1);

}  // namespace kestrel
