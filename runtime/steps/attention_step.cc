// Attention: streaming-softmax attention of the step's queries over one KV ring.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <new>

#include "ops/attention.h"
#include "runtime/steps/steps.h"

namespace kestrel {
namespace {

// Attention tasks are (token, head) pairs, token-major, and a token's cost is the number of keys
// it sees, which grows with its position until the window caps it: equal task counts would give
// the last thread of a causal prefill chunk several times the work of the first. With enough
// tokens, cut at token boundaries where the running key count crosses equal shares instead.
void ThreadTasks(size_t n, size_t heads, int64_t pos0, int64_t window, size_t thread,
                 size_t n_threads, size_t* begin, size_t* end) {
  if (n < 2 * n_threads) {
    SplitRange(n * heads, thread, n_threads, begin, end);
    return;
  }
  const auto keys = [&](size_t t) {
    const int64_t visible = pos0 + static_cast<int64_t>(t) + 1;
    return static_cast<uint64_t>(window > 0 && visible > window ? window : visible);
  };
  uint64_t total = 0;
  for (size_t t = 0; t < n; ++t) total += keys(t);
  const uint64_t first = total * thread / n_threads, last = total * (thread + 1) / n_threads;
  size_t token_begin = n, token_end = n;
  uint64_t before = 0;  // keys of tokens [0, t)
  for (size_t t = 0; t < n; ++t) {
    if (token_begin == n && before >= first) token_begin = t;
    if (before >= last) {
      token_end = t;
      break;
    }
    before += keys(t);
  }
  if (thread + 1 == n_threads) token_end = n;
  *begin = token_begin * heads;
  *end = (token_end > token_begin ? token_end : token_begin) * heads;
}

struct AttentionStepArgs {
  decltype(&ops::Attention) kernel;
  decltype(&ops::AttentionPartials) partials_kernel;
  decltype(&ops::AttentionMergePartials) merge_kernel;
  // Arena scratch for splitting a decode step's keys across threads (null: no scratch planned).
  std::atomic<size_t>* arrivals;
  float* partials;
  size_t max_partitions;    // that the partials have room for
  ops::AttentionArgs args;  // n_tokens, pos0 and sink_rope are filled in per step
  bool keys_rotated;
  ops::RopeFrequencies key_rope;
  bool cross;  // Cross mask: RunCross
};

// How the plan rotates the keys stored in `layer`: the Rope op that writes the key input of the
// layer's KvStore. False when nothing rotates them.
bool FindKeyRope(const BindContext& b, uint32_t layer, ops::RopeFrequencies* rope) {
  const auto& ops = *b.plan().ops();
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const fb::KvStore* store = ops.Get(i)->params_as_KvStore();
    if (store == nullptr || store->layer() != layer) continue;
    const uint32_t keys = ops.Get(i)->inputs()->Get(0);
    for (uint32_t j = i; j-- > 0;) {
      const fb::Op& op = *ops.Get(j);
      if (op.outputs() && op.outputs()->size() > 0 && op.outputs()->Get(0) == keys &&
          op.params_type() != fb::OpParams::Rope) {
        return false;  // written last by something else
      }
      const fb::Rope* r = op.params_as_Rope();
      if (r == nullptr || op.inputs()->Get(0) != keys) continue;
      rope->layout = r->style() == fb::RopeStyle::Adjacent ? ops::RopeLayout::kAdjacent
                                                           : ops::RopeLayout::kNeox;
      rope->theta_base = r->theta();
      rope->freq_scale = r->freq_scale();
      rope->rotary_dims = RotaryDims(*r);
      // magnitude stays 1: the attention step turns stored keys on by an angle, and they hold
      // the op's magnitude already.
      rope->freq_factors = RopeFrequencyFactors(b.model(), op, b.memory().context_length);
      return true;
    }
    return false;
  }
  return false;
}

// Cross mask: every token sees all `capacity` keys, which is what the causal kernel gives a lone
// query at the last position. Threads split (token, head) pairs; each token's run of heads is
// one kernel call.
void RunCross(const AttentionStepArgs& step, size_t n, size_t thread, size_t n_threads) {
  ops::AttentionArgs a = step.args;
  a.n_tokens = 1;
  a.pos0 = static_cast<int64_t>(a.capacity) - 1;
  const size_t row = a.n_heads * a.head_dim;
  size_t b, e;
  SplitRange(n * a.n_heads, thread, n_threads, &b, &e);
  while (b < e) {
    const size_t t = b / a.n_heads;
    const size_t heads_end = std::min(e, (t + 1) * a.n_heads);
    a.q = step.args.q + t * row;
    a.out = step.args.out + t * row;
    step.kernel(a, b - t * a.n_heads, heads_end - t * a.n_heads);
    b = heads_end;
  }
}

void Run(const void* args, size_t n, int64_t pos0, size_t thread, size_t n_threads) {
  const auto& step = *static_cast<const AttentionStepArgs*>(args);
  if (step.cross) {
    RunCross(step, n, thread, n_threads);
    return;
  }
  ops::AttentionArgs a = step.args;
  a.n_tokens = n;
  a.pos0 = pos0;
  a.sink_rope = step.keys_rotated ? &step.key_rope : nullptr;
  size_t b, e;
  if (n == 1 && n_threads > 1 && step.partials != nullptr) {
    // One query row: splitting its heads leaves threads idle or walking one kv head twice when
    // there are few kv heads (Gemma 3 has one), so the threads split its (kv head, partition)
    // pairs instead, and the last to finish folds the partitions, in the order one thread would.
    const size_t parts = ops::PartitionsSeen(a, pos0, pos0).count();
    if (parts > 1 && parts <= step.max_partitions) {
      SplitRange(a.n_kv_heads * parts, thread, n_threads, &b, &e);
      if (b < e) step.partials_kernel(a, b, e, step.partials);
      // acq_rel: the last arrival sees every other thread's partials; the pool's own barrier
      // orders the reset before the next step that uses the counter.
      if (step.arrivals->fetch_add(1, std::memory_order_acq_rel) + 1 == n_threads) {
        step.arrivals->store(0, std::memory_order_relaxed);
        step.merge_kernel(a, step.partials);
      }
      return;
    }
  }
  const int64_t reach = a.window > 0 ? std::min(a.window, a.context) : a.context;
  ThreadTasks(n, a.n_heads, pos0, reach, thread, n_threads, &b, &e);
  if (b < e) step.kernel(a, b, e);
}

// The threads' arrival counter has a cache line of its own, before the partitions.
constexpr size_t kArrivalBytes = 64;

// Decode splits a query's keys across threads (Run): the arrival counter, then the partition
// states of one token's heads (ops/attention.h AttentionPartials). Cross-attention never splits
// them (RunCross).
size_t ScratchBytes(const fb::Op& op, const std::vector<KvRingPlan>& kv) {
  const fb::Attention* p = op.params_as_Attention();
  if (p == nullptr || p->layer() >= kv.size() || kv[p->layer()].cross) return 0;
  return kArrivalBytes + ops::AttentionMaxPartitions(kv[p->layer()].reach) * p->n_heads() *
                             ops::AttentionPartialFloats(p->head_dim()) * sizeof(float);
}

Status Check(const OpCheck& c) {
  const fb::Attention& p = *c.op().params_as_Attention();
  const fb::KvLayer* kv = nullptr;
  KES_RETURN_IF_ERROR(c.KvLayer(p.layer(), &kv));
  KES_RETURN_IF_ERROR(c.Expect(p.n_kv_heads() == kv->n_kv_heads() && p.head_dim() == kv->head_dim(),
                               "heads do not match the KV layer"));
  KES_RETURN_IF_ERROR(
      c.Expect(p.n_heads() > 0 && p.n_heads() <= 65536 && p.n_heads() % p.n_kv_heads() == 0, [&] {
        return "query heads " + std::to_string(p.n_heads()) + " must be a multiple of KV heads " +
               std::to_string(p.n_kv_heads());
      }));
  KES_RETURN_IF_ERROR(c.Expect(p.head_dim() <= ops::kAttentionMaxHeadDim, [&] {
    return "head_dim " + std::to_string(p.head_dim()) + " exceeds " +
           std::to_string(ops::kAttentionMaxHeadDim);
  }));
  KES_RETURN_IF_ERROR(
      c.Expect((p.mask() == fb::AttentionMask::Cross) == (kv->cross_length() > 0), [&] {
        return "cross attention needs a cross-attention KV layer and only it (layer " +
               std::to_string(p.layer()) + " has cross_length " +
               std::to_string(kv->cross_length()) + ")";
      }));
  switch (p.mask()) {
    case fb::AttentionMask::Cross: break;
    case fb::AttentionMask::Causal:
      KES_RETURN_IF_ERROR(c.Expect(kv->window() == 0, [&] {
        return "causal attention over a sliding-window KV layer (window " +
               std::to_string(kv->window()) + ")";
      }));
      break;
    case fb::AttentionMask::SlidingWindow:
      KES_RETURN_IF_ERROR(c.Expect(p.window() > 0 && p.window() == kv->window(), [&] {
        return "sliding window " + std::to_string(p.window()) +
               " does not match the KV layer's window " + std::to_string(kv->window());
      }));
      break;
    default:
      return c.Expect(false, [&] {
        return "unsupported attention mask " + std::to_string(static_cast<int>(p.mask()));
      });
  }
  KES_RETURN_IF_ERROR(
      c.Expect(std::isfinite(p.scale()) && p.scale() > 0.0f, "scale must be positive and finite"));
  KES_RETURN_IF_ERROR(c.Expect(std::isfinite(p.logit_softcap()) && p.logit_softcap() >= 0.0f, [&] {
    return "logit_softcap must be 0 (off) or positive and finite, found " +
           std::to_string(p.logit_softcap());
  }));
  const uint64_t q_row = uint64_t{p.n_heads()} * p.head_dim();
  KES_RETURN_IF_ERROR(c.Activation(c.In(0), q_row, "query"));
  return c.Activation(c.Out(0), q_row, "output");
}

void Bind(const BindContext& b, Step* step) {
  const fb::Attention& p = *b.op().params_as_Attention();
  const KvRingPlan& ring = b.memory().kv[p.layer()];
  AttentionStepArgs args{};
  args.kernel = ops::ResolveAttention();
  ops::AttentionArgs& a = args.args;
  a.q = reinterpret_cast<const float*>(b.In(0));
  a.out = reinterpret_cast<float*>(b.Out(0));
  a.kv_type = b.memory().kv_options.type;
  a.k_cache = b.arena() + ring.k_offset;
  a.v_cache = b.arena() + ring.v_offset;
  if (a.kv_type == ops::KvType::kInt8) {
    a.k_scales = reinterpret_cast<const float*>(b.arena() + ring.k_scale_offset);
    a.v_scales = reinterpret_cast<const float*>(b.arena() + ring.v_scale_offset);
  }
  a.n_heads = p.n_heads();
  a.n_kv_heads = p.n_kv_heads();
  a.head_dim = p.head_dim();
  a.capacity = ring.capacity;
  a.window = p.mask() == fb::AttentionMask::SlidingWindow ? static_cast<int64_t>(p.window()) : 0;
  a.context = static_cast<int64_t>(b.memory().context_length);
  a.sinks = ring.sinks;
  a.scale = p.scale();
  a.logit_softcap = p.logit_softcap();
  a.partition_keys = ops::AttentionPartitionKeys(ring.reach);
  args.partials_kernel = ops::ResolveAttentionPartials();
  args.merge_kernel = ops::ResolveAttentionMergePartials();
  const size_t scratch_bytes = ScratchBytes(b.op(), b.memory().kv);
  if (scratch_bytes > 0 && scratch_bytes <= b.memory().op_scratch_bytes) {
    uint8_t* scratch = b.arena() + b.memory().op_scratch_offset;
    args.arrivals = new (scratch) std::atomic<size_t>(0);
    args.partials = reinterpret_cast<float*>(scratch + kArrivalBytes);
    args.max_partitions = ops::AttentionMaxPartitions(ring.reach);
  }
  args.keys_rotated = ring.sinks > 0 && FindKeyRope(b, p.layer(), &args.key_rope);
  args.cross = p.mask() == fb::AttentionMask::Cross;
  if (args.cross) a.context = 0;  // the encoder's positions, all seen
  step->Set(Run, Parallelism::kAlways, args);
}

}  // namespace

const OpKind kAttentionOp =
    OpKind(fb::OpParams::Attention, Check, Bind).Operands(1, 1).UsesKv().Scratch(ScratchBytes);

}  // namespace kestrel
