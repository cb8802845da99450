// Attention at Gemma 3 270M's shape (4 query heads sharing 1 kv head of head_dim 256) and, for
// decode, at the Llama shape of SmolLM2-1.7B (32 heads, each its own kv head, head_dim 64).
//
// Decode (one query row) reads every visible key and value once for all 4 heads, so its limit is
// the bandwidth of reading the KV cache: BM_KvReadBaseline reads the same bytes with a plain
// summing loop in the same run, and kv_bytes/s of the two are the comparison to make.
// Prefill is compute-bound: its counter is FLOP/s (4 per query head and key: 2 for q.k, 2 for
// o += w * v) to compare with the machine's FMA peak.
// The second argument of each benchmark is the KV type: 0 f32, 1 f16, 2 int8 (ops/kv_layout.h).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/attention.h"
#include "ops/kv_encode.h"
#include "ops/kv_layout.h"
#include "ops/targets.h"

namespace kestrel::ops {
namespace {

struct AttentionShape {
  size_t heads, kv_heads, head_dim;
};
constexpr AttentionShape kGemma3{4, 1, 256};
constexpr AttentionShape kSmolLm2{32, 32, 64};
constexpr size_t kHeads = kGemma3.heads;
constexpr size_t kKvHeads = kGemma3.kv_heads;
constexpr size_t kHeadDim = kGemma3.head_dim;
constexpr size_t kKvRowBytes = kKvHeads * kHeadDim * sizeof(float);

const bool kContextAdded = [] {
  benchmark::AddCustomContext("highway_target", ChosenTargetName());
  return true;
}();

// One layer's ring of the given KV type and a step's queries, with deterministic contents.
struct AttentionSetup {
  std::vector<float> q, out;
  std::vector<uint8_t> k, v;
  std::vector<float> k_scales, v_scales;
  AttentionArgs args;

  AttentionSetup(size_t n_tokens, size_t capacity, int64_t pos0, int64_t window, KvType type,
                 AttentionShape shape = kGemma3)
      : q(n_tokens * shape.heads * shape.head_dim),
        out(q.size()),
        k(capacity * KvRowBytes(type, shape.kv_heads * shape.head_dim)),
        v(k.size()),
        k_scales(capacity * shape.kv_heads * shape.head_dim / kKvInt8Block),
        v_scales(k_scales.size()) {
    uint32_t state = 12345;
    auto next = [&state] {
      state = state * 1664525u + 1013904223u;
      return static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f;
    };
    for (float& x : q) x = next();
    const size_t elems = capacity * shape.kv_heads * shape.head_dim;
    std::vector<float> values(elems);
    for (std::vector<uint8_t>* ring : {&k, &v}) {
      for (float& x : values) x = next();
      float* scales = ring == &k ? k_scales.data() : v_scales.data();
      if (type == KvType::kF16) {
        KvEncodeF16(values.data(), elems, reinterpret_cast<hwy::float16_t*>(ring->data()));
      } else if (type == KvType::kInt8) {
        KvEncodeInt8(values.data(), elems, reinterpret_cast<int8_t*>(ring->data()), scales);
      } else {
        std::memcpy(ring->data(), values.data(), elems * sizeof(float));
      }
    }
    args.q = q.data();
    args.out = out.data();
    args.kv_type = type;
    args.k_cache = k.data();
    args.v_cache = v.data();
    args.k_scales = k_scales.data();
    args.v_scales = v_scales.data();
    args.n_tokens = n_tokens;
    args.n_heads = shape.heads;
    args.n_kv_heads = shape.kv_heads;
    args.head_dim = shape.head_dim;
    args.capacity = capacity;
    args.pos0 = pos0;
    args.window = window;
    args.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  }
};

KvType TypeArg(const benchmark::State& state) { return static_cast<KvType>(state.range(1)); }

// Decode on a global (causal) layer with `context` positions stored: 1 query row at the end.
void BM_AttentionDecode(benchmark::State& state) {
  const size_t context = static_cast<size_t>(state.range(0));
  AttentionSetup s(1, context, static_cast<int64_t>(context) - 1, 0, TypeArg(state));
  state.SetLabel(KvTypeName(TypeArg(state)));
  for (auto _ : state) {
    Attention(s.args, 0, kHeads);
    benchmark::DoNotOptimize(s.out.data());
    benchmark::ClobberMemory();
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["keys/s"] = benchmark::Counter(calls * context, benchmark::Counter::kIsRate);
  const double row_bytes = KvRowBytes(TypeArg(state), kKvHeads * kHeadDim) +
                           KvRowScaleBytes(TypeArg(state), kKvHeads * kHeadDim);
  state.counters["kv_bytes/s"] =
      benchmark::Counter(calls * context * 2 * row_bytes, benchmark::Counter::kIsRate);
  state.counters["FLOP/s"] =
      benchmark::Counter(calls * kHeads * context * kHeadDim * 4, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AttentionDecode)
    ->ArgsProduct({{512, 4096, 32768}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

// Decode at SmolLM2-1.7B's shape as `kestrel bench` runs it: 4 sinks (the runtime's default) and
// `context` positions stored, one query row at the end. Short contexts are what a tg128 test
// sees; there the fixed work per kv head and key block, not the bytes, sets the time.
void BM_AttentionDecodeMha(benchmark::State& state) {
  const size_t context = static_cast<size_t>(state.range(0));
  AttentionSetup s(1, context, static_cast<int64_t>(context) - 1, 0, TypeArg(state), kSmolLm2);
  s.args.sinks = 4;
  s.args.partition_keys = AttentionPartitionKeys(context);
  state.SetLabel(KvTypeName(TypeArg(state)));
  // Third argument 1: each call finds the ring out of the caches, as decode does once a layer's
  // weights have streamed past it (64 MiB read in between, outside the manually timed call).
  std::vector<uint64_t> evict(state.range(2) ? (size_t{64} << 20) / 8 : 0, 1);
  for (auto _ : state) {
    uint64_t sum = 0;
    for (size_t i = 0; i < evict.size(); i += 8) sum += evict[i];
    benchmark::DoNotOptimize(sum);
    const auto start = std::chrono::steady_clock::now();
    Attention(s.args, 0, kSmolLm2.heads);
    benchmark::DoNotOptimize(s.out.data());
    benchmark::ClobberMemory();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["head_keys/s"] =
      benchmark::Counter(calls * context * kSmolLm2.heads, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AttentionDecodeMha)
    ->ArgsProduct({{16, 64, 128, 1024}, {0, 1, 2}, {0, 1}})
    ->UseManualTime()
    ->MinTime(0.05)  // the evicting reads take 100x the timed call
    ->Unit(benchmark::kMicrosecond);

// The same K and V bytes as BM_AttentionDecode, only read: the bandwidth limit decode aims at.
void BM_KvReadBaseline(benchmark::State& state) {
  const size_t context = static_cast<size_t>(state.range(0));
  // Words rather than floats: integer sums vectorize without reassociation concerns.
  const size_t words = context * kKvRowBytes / sizeof(uint64_t);
  std::vector<uint64_t> k(words, 1), v(words, 2);
  for (auto _ : state) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < words; i += 2) {
      s0 += k[i];
      s1 += k[i + 1];
      s2 += v[i];
      s3 += v[i + 1];
    }
    benchmark::DoNotOptimize(s0 + s1 + s2 + s3);
  }
  state.counters["kv_bytes/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * context * 2 * kKvRowBytes,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_KvReadBaseline)->Arg(512)->Arg(4096)->Arg(32768)->Unit(benchmark::kMicrosecond);

// A prefill chunk of 64 rows at position 0 on a sliding-window layer (window 512): row t sees
// t + 1 keys, 2080 (row, key) pairs per head.
void BM_AttentionPrefill64(benchmark::State& state) {
  constexpr size_t kRows = 64;
  constexpr int64_t kWindow = 512;
  AttentionSetup s(kRows, kWindow + kRows - 1, 0, kWindow, TypeArg(state));
  state.SetLabel(KvTypeName(TypeArg(state)));
  for (auto _ : state) {
    Attention(s.args, 0, kRows * kHeads);
    benchmark::DoNotOptimize(s.out.data());
    benchmark::ClobberMemory();
  }
  const double pairs = static_cast<double>(kRows * (kRows + 1) / 2 * kHeads);
  const double calls = static_cast<double>(state.iterations());
  state.counters["query_keys/s"] = benchmark::Counter(calls * pairs, benchmark::Counter::kIsRate);
  state.counters["FLOP/s"] =
      benchmark::Counter(calls * pairs * kHeadDim * 4, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AttentionPrefill64)->ArgsProduct({{0}, {0, 1, 2}})->Unit(benchmark::kMicrosecond);

// A 512-row prefill chunk on a global layer with `depth` positions already stored: every row
// sees depth + its own place in the chunk. Blocks of queries share each key block's reads.
void BM_AttentionPrefill512AtDepth(benchmark::State& state) {
  constexpr size_t kRows = 512;
  const size_t depth = static_cast<size_t>(state.range(0));
  AttentionSetup s(kRows, depth + kRows, static_cast<int64_t>(depth), 0, TypeArg(state));
  state.SetLabel(KvTypeName(TypeArg(state)));
  for (auto _ : state) {
    Attention(s.args, 0, kRows * kHeads);
    benchmark::DoNotOptimize(s.out.data());
    benchmark::ClobberMemory();
  }
  const double pairs = static_cast<double>((depth * kRows + kRows * (kRows + 1) / 2) * kHeads);
  state.counters["FLOP/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * pairs * kHeadDim * 4, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AttentionPrefill512AtDepth)
    ->ArgsProduct({{0, 4096}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kestrel::ops
