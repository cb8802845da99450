#include "runtime/executor.h"

#include <cstring>

#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embed.h"
#include "ops/matmul.h"
#include "ops/matmul_quant.h"
#include "ops/quant_layout.h"
#include "ops/quantize_rows.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "runtime/format.h"
#include "runtime/plan_check.h"

namespace kestrel {
namespace {

// Element-wise work is split in multiples of this many floats (a cache line and more).
constexpr size_t kElementGrain = 64;

void Part(size_t n, size_t thread, size_t n_threads, size_t* begin, size_t* end) {
  SplitRange(n, thread, n_threads, begin, end);
}

void RunEmbed(const Step& s, size_t n, int64_t, size_t thread, size_t n_threads) {
  size_t b, e;
  Part(n, thread, n_threads, &b, &e);
  if (b == e) return;
  const size_t dim = s.cols;
  float* out = s.out + b * dim;
  const float scale = s.fargs[0];
  switch (static_cast<fb::DType>(s.iargs[0])) {
    case fb::DType::F16:
      ops::EmbedF16(static_cast<const hwy::float16_t*>(s.weight), dim, s.tokens + b, e - b, scale, out);
      break;
    case fb::DType::BF16:
      ops::EmbedBF16(static_cast<const hwy::bfloat16_t*>(s.weight), dim, s.tokens + b, e - b, scale, out);
      break;
    case fb::DType::Q8_0:
      ops::EmbedQ8(static_cast<const uint8_t*>(s.weight), s.rows, dim, s.tokens + b, e - b, scale, out);
      break;
    case fb::DType::Q4_0:
      ops::EmbedQ4(static_cast<const uint8_t*>(s.weight), s.rows, dim, s.tokens + b, e - b, scale, out);
      break;
    default:
      ops::EmbedF32(static_cast<const float*>(s.weight), dim, s.tokens + b, e - b, scale, out);
  }
}

void RunRmsNorm(const Step& s, size_t n, int64_t, size_t thread, size_t n_threads) {
  const size_t dim = s.cols;
  const size_t rows_per_token = static_cast<size_t>(s.iargs[1]);
  size_t b, e;
  Part(n * rows_per_token, thread, n_threads, &b, &e);
  if (b == e) return;
  ops::RmsNorm(s.in0 + b * dim, static_cast<const float*>(s.weight), s.out + b * dim, e - b, dim,
               s.fargs[0]);
}

// Output rows of a matmul for this thread, in whole groups of kQuantGroupRows (the kernels'
// row tile and the packing unit of quantized weights) so no thread gets a partial tile.
void MatMulRows(size_t rows, size_t thread, size_t n_threads, size_t* begin, size_t* end) {
  constexpr size_t kGroup = ops::kQuantGroupRows;
  Part((rows + kGroup - 1) / kGroup, thread, n_threads, begin, end);
  *begin = *begin * kGroup < rows ? *begin * kGroup : rows;
  *end = *end * kGroup < rows ? *end * kGroup : rows;
}

void RunQuantizeRows(const Step& s, size_t n, int64_t, size_t thread, size_t n_threads) {
  size_t b, e;
  Part(n, thread, n_threads, &b, &e);
  if (b == e) return;
  ops::QuantizeRowsQ8(s.in0 + b * s.cols, e - b, s.cols, s.out_bytes + b * s.row_bytes);
}

void RunMatMul(const Step& s, size_t n, int64_t, size_t thread, size_t n_threads) {
  const bool last_row_only = s.iargs[0] != 0;
  const size_t n_tokens = last_row_only ? 1 : n;
  size_t b, e;
  MatMulRows(s.rows, thread, n_threads, &b, &e);
  if (b == e) return;
  const auto* xq = s.in_bytes + (last_row_only ? (n - 1) * s.row_bytes : 0);
  const float* x = last_row_only ? s.in0 + (n - 1) * s.cols : s.in0;
  switch (static_cast<fb::DType>(s.iargs[1])) {
    case fb::DType::Q8_0:
      ops::MatMulQ8(static_cast<const uint8_t*>(s.weight), xq, s.out, n_tokens, s.cols, s.rows, b, e);
      break;
    case fb::DType::Q4_0:
      ops::MatMulQ4(static_cast<const uint8_t*>(s.weight), xq, s.out, n_tokens, s.cols, s.rows, b, e);
      break;
    case fb::DType::F16:
      ops::MatMulF16(static_cast<const hwy::float16_t*>(s.weight), x, s.out, n_tokens, s.cols, s.rows, b, e);
      break;
    case fb::DType::BF16:
      ops::MatMulBF16(static_cast<const hwy::bfloat16_t*>(s.weight), x, s.out, n_tokens, s.cols, s.rows, b, e);
      break;
    default:
      ops::MatMulF32(static_cast<const float*>(s.weight), x, s.out, n_tokens, s.cols, s.rows, b, e);
  }
}

void RunRope(const Step& s, size_t n, int64_t pos0, size_t thread, size_t n_threads) {
  size_t b, e;
  Part(n, thread, n_threads, &b, &e);
  if (b == e) return;
  const size_t heads = static_cast<size_t>(s.iargs[0]), head_dim = static_cast<size_t>(s.iargs[1]);
  ops::RopeNeox(s.out + b * heads * head_dim, e - b, heads, head_dim,
                pos0 + static_cast<int64_t>(b), s.fargs[0], s.fargs[1]);
}

void RunKvStore(const Step& s, size_t n, int64_t pos0, size_t, size_t) {
  const size_t row = s.ring->row_elems, capacity = s.ring->capacity;
  for (size_t t = 0; t < n; ++t) {
    const size_t slot = static_cast<size_t>(pos0 + static_cast<int64_t>(t)) % capacity;
    std::memcpy(s.k_ring + slot * row, s.in0 + t * row, row * sizeof(float));
    std::memcpy(s.v_ring + slot * row, s.in1 + t * row, row * sizeof(float));
  }
}

// Attention tasks are (token, head) pairs, token-major, and a token's cost is the number of keys
// it sees, which grows with its position until the window caps it: equal task counts would give
// the last thread of a causal prefill chunk several times the work of the first. With enough
// tokens, cut at token boundaries where the running key count crosses equal shares instead.
void AttentionTasks(size_t n, size_t heads, int64_t pos0, int64_t window, size_t thread,
                    size_t n_threads, size_t* begin, size_t* end) {
  if (n < 2 * n_threads) {
    Part(n * heads, thread, n_threads, begin, end);
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

void RunAttention(const Step& s, size_t n, int64_t pos0, size_t thread, size_t n_threads) {
  ops::AttentionArgs a;
  a.q = s.in0;
  a.out = s.out;
  a.k_cache = s.k_ring;
  a.v_cache = s.v_ring;
  a.n_tokens = n;
  a.n_heads = static_cast<size_t>(s.iargs[1]);
  a.n_kv_heads = static_cast<size_t>(s.iargs[2]);
  a.head_dim = static_cast<size_t>(s.iargs[3]);
  a.capacity = s.ring->capacity;
  a.pos0 = pos0;
  a.window = static_cast<int64_t>(s.ring->window);
  a.scale = s.fargs[0];
  size_t b, e;
  AttentionTasks(n, a.n_heads, pos0, a.window, thread, n_threads, &b, &e);
  if (b < e) ops::Attention(a, b, e);
}

template <void (*Kernel)(const float*, const float*, float*, size_t)>
void RunBinary(const Step& s, size_t n, int64_t, size_t thread, size_t n_threads) {
  const size_t total = n * s.cols;
  const size_t chunks = (total + kElementGrain - 1) / kElementGrain;
  size_t b, e;
  Part(chunks, thread, n_threads, &b, &e);
  b *= kElementGrain;
  e = e * kElementGrain < total ? e * kElementGrain : total;
  if (b < e) Kernel(s.in0 + b, s.in1 + b, s.out + b, e - b);
}

struct RunContext {
  const Step* step;
  size_t n_tokens;
  int64_t pos0;
};

void RunOnPool(void* ctx, size_t thread, size_t n_threads) {
  const auto* c = static_cast<const RunContext*>(ctx);
  c->step->run(*c->step, c->n_tokens, c->pos0, thread, n_threads);
}

}  // namespace

Status BoundPlan::Bind(const Model& model, const fb::Plan& plan, uint8_t* arena,
                       const MemoryPlan& memory) {
  const auto* buffers = plan.buffers();
  auto buffer = [&](uint32_t id) {
    return reinterpret_cast<float*>(arena + buffers->Get(id)->arena_offset());
  };
  max_tokens_ = plan.max_tokens();
  token_input_ = reinterpret_cast<int32_t*>(arena + buffers->Get(plan.token_input())->arena_offset());
  logits_ = buffer(plan.logits_output());
  logits_per_token_ = buffers->Get(plan.logits_output())->per_token();
  KES_CHECK_OR_RETURN(memory.kv.size() == model.meta().kv()->layers()->size(),
                      "memory plan does not match the model's KV layout");

  steps_.clear();
  steps_.reserve(plan.ops()->size());
  for (const fb::Op* op : *plan.ops()) {
    Step s;
    const auto in = [&](uint32_t i) { return buffer(op->inputs()->Get(i)); };
    const fb::Tensor* w = op->weights() && op->weights()->size() > 0
                              ? model.meta().tensors()->Get(op->weights()->Get(0))
                              : nullptr;
    if (w) s.weight = model.TensorData(op->weights()->Get(0));
    for (uint32_t i = 0; op->iargs() && i < op->iargs()->size() && i < 4; ++i) {
      s.iargs[i] = op->iargs()->Get(i);
    }
    for (uint32_t i = 0; op->fargs() && i < op->fargs()->size() && i < 2; ++i) {
      s.fargs[i] = op->fargs()->Get(i);
    }
    const size_t row_elems = op->inputs() ? buffers->Get(op->inputs()->Get(0))->row_elems() : 0;
    switch (op->code()) {
      case fb::OpCode::Embed:
        s.run = RunEmbed;
        s.parallel = true;
        s.tokens = reinterpret_cast<const int32_t*>(in(0));
        s.out = buffer(op->outputs()->Get(0));
        s.rows = w->shape()->Get(0);
        s.cols = w->shape()->Get(1);
        s.iargs[0] = static_cast<int64_t>(w->dtype());
        break;
      case fb::OpCode::RmsNorm:
        s.run = RunRmsNorm;
        s.parallel = true;
        s.in0 = in(0);
        s.out = buffer(op->outputs()->Get(0));
        s.cols = static_cast<size_t>(s.iargs[0]);
        s.iargs[1] = static_cast<int64_t>(row_elems / s.cols);
        break;
      case fb::OpCode::MatMul:
        s.run = RunMatMul;
        s.parallel = true;
        s.parallel_single_token = true;
        s.in0 = in(0);
        s.in_bytes = reinterpret_cast<const uint8_t*>(in(0));
        s.row_bytes = RowBytes(buffers->Get(op->inputs()->Get(0))->dtype(), row_elems);
        s.out = buffer(op->outputs()->Get(0));
        s.rows = w->shape()->Get(0);
        s.cols = w->shape()->Get(1);
        s.iargs[1] = static_cast<int64_t>(w->dtype());
        break;
      case fb::OpCode::RopeNeox:
        s.run = RunRope;
        s.parallel = true;
        s.out = in(0);
        break;
      case fb::OpCode::KvStore:
      case fb::OpCode::Attention: {
        const KvRingPlan& ring = memory.kv[static_cast<size_t>(s.iargs[0])];
        s.ring = &ring;
        s.k_ring = reinterpret_cast<float*>(arena + ring.k_offset);
        s.v_ring = reinterpret_cast<float*>(arena + ring.v_offset);
        s.in0 = in(0);
        if (op->code() == fb::OpCode::KvStore) {
          s.run = RunKvStore;
          s.in1 = in(1);
        } else {
          s.run = RunAttention;
          s.parallel = true;
          s.parallel_single_token = true;
          s.out = buffer(op->outputs()->Get(0));
        }
        break;
      }
      case fb::OpCode::QuantizeRows:
        s.run = RunQuantizeRows;
        s.parallel = true;
        s.in0 = in(0);
        s.out_bytes = reinterpret_cast<uint8_t*>(buffer(op->outputs()->Get(0)));
        s.cols = row_elems;
        s.row_bytes = RowBytes(fb::DType::Q8_ACT, row_elems);
        break;
      case fb::OpCode::GeluTanhMul:
      case fb::OpCode::Add:
        s.run = op->code() == fb::OpCode::Add ? RunBinary<ops::Add> : RunBinary<ops::GeluTanhMul>;
        s.parallel = true;
        s.in0 = in(0);
        s.in1 = in(1);
        s.out = buffer(op->outputs()->Get(0));
        s.cols = row_elems;
        break;
    }
    KES_CHECK_OR_RETURN(s.run != nullptr, std::string("op ") +
                                              fb::EnumNameOpCode(op->code()) +
                                              " has no kernel in this build");
    steps_.push_back(s);
  }
  return OkStatus();
}

void BoundPlan::Run(ThreadPool& pool, size_t n_tokens, int64_t pos0) const {
  for (const Step& step : steps_) {
    if (step.parallel && pool.size() > 1 && (n_tokens > 1 || step.parallel_single_token)) {
      RunContext ctx{&step, n_tokens, pos0};
      pool.Run(RunOnPool, &ctx);
    } else {
      step.run(step, n_tokens, pos0, 0, 1);
    }
  }
}

}  // namespace kestrel
