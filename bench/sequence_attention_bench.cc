// An encoder's self-attention at all-MiniLM-L6-v2's shape (12 heads of head_dim 32, MHA), one
// sequence of len tokens, and at Whisper-tiny's audio encoder's (6 heads of 64, one 30-second
// window of 1500 positions): ops::SequenceAttention. It is compute-bound; the counter is FLOP/s, 4
// per (query, key) pair and head element (2 for q.k, 2 for o += w * v), to compare with the
// machine's FMA peak (matmul_bench BM_MachinePeak). (The decoder kernel ops::Attention, which
// encoders first ran with every key visible, did 19-20 GFLOP/s here on Zen 4; this one 39-68.)
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/sequence_attention.h"
#include "ops/targets.h"

namespace kestrel::ops {
namespace {

constexpr size_t kHeads = 12;
constexpr size_t kHeadDim = 32;
constexpr size_t kRow = kHeads * kHeadDim;  // 384 for both models
constexpr size_t kWhisperHeads = 6;
constexpr size_t kWhisperHeadDim = 64;

const bool kContextAdded = [] {
  benchmark::AddCustomContext("highway_target", ChosenTargetName());
  return true;
}();

// One sequence's q, k, v (MHA: all [len, kRow]) with deterministic contents.
struct Sequence {
  std::vector<float> q, k, v, out;
  explicit Sequence(size_t len) : q(len * kRow), k(q.size()), v(q.size()), out(q.size()) {
    uint32_t state = 12345;
    auto next = [&state] {
      state = state * 1664525u + 1013904223u;
      return static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f;
    };
    for (float& x : q) x = 4.0f * next();
    for (float& x : k) x = next();
    for (float& x : v) x = next();
  }
};

constexpr float kScale = 0.17677669f;  // 1 / sqrt(32)

void SetFlops(benchmark::State& state, size_t len) {
  const double flops = 4.0 * static_cast<double>(len * len * kRow);
  state.counters["FLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
}

void RunSequenceAttention(benchmark::State& state, size_t heads, size_t head_dim, float scale) {
  const size_t len = static_cast<size_t>(state.range(0));
  Sequence s(len);
  const SequenceAttentionArgs args{s.q.data(), s.k.data(), s.v.data(), s.out.data(), len,
                                   heads,      heads,      head_dim,   scale};
  const auto kernel = ResolveSequenceAttention();
  for (auto _ : state) {
    kernel(args, 0, heads);
    benchmark::DoNotOptimize(s.out.data());
    benchmark::ClobberMemory();
  }
  SetFlops(state, len);
}
void BM_SequenceAttention(benchmark::State& state) {
  RunSequenceAttention(state, kHeads, kHeadDim, kScale);
}
void BM_WhisperSequenceAttention(benchmark::State& state) {
  RunSequenceAttention(state, kWhisperHeads, kWhisperHeadDim, 0.125f /* 1 / sqrt(64) */);
}
BENCHMARK(BM_SequenceAttention)->Arg(16)->Arg(128)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WhisperSequenceAttention)->Arg(1500)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kestrel::ops
