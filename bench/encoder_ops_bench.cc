// The element-wise and per-row kernels of a BERT encoder layer at all-MiniLM-L6-v2's shapes
// (d_model 384, FFN 1536): LayerNorm over token rows and the exact (erf) GELU over the FFN's
// hidden activations, for a 128-token sentence batch and a 4096-token one.
//
// Both stream their data once (LayerNorm re-reads each 1.5 KiB row from L1), so bytes/s counts
// the bytes read and written once: compare it with the machine's read bandwidth, reported as
// read_bw beside it and measured in the same run. At 4096 tokens the buffers (6 MiB for
// LayerNorm, 24 MiB in and 24 MiB out for GELU) exceed L2; at 128 tokens they fit in it.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/machine_peak.h"
#include "ops/elementwise.h"
#include "ops/layernorm.h"
#include "ops/targets.h"

namespace kestrel::ops {
namespace {

constexpr size_t kModel = 384;
constexpr size_t kFfn = 1536;

const bool kContextAdded = [] {
  benchmark::AddCustomContext("highway_target", ChosenTargetName());
  return true;
}();

// offset + uniform values in [-2, 2), the same on every run.
std::vector<float> Deterministic(size_t n, float offset) {
  std::vector<float> v(n);
  uint32_t state = 12345;
  for (float& x : v) {
    state = state * 1664525u + 1013904223u;
    x = offset + 4.0f * (static_cast<float>(state >> 8) / static_cast<float>(1u << 24) - 0.5f);
  }
  return v;
}

void ReportBytes(benchmark::State& state, size_t bytes_per_call) {
  state.counters["bytes/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * bytes_per_call, benchmark::Counter::kIsRate);
  state.counters["read_bw"] = bench::ReadBandwidth();
}

// LayerNorm in place over tokens x 384, as the encoder runs it after each residual add.
void BM_LayerNorm(benchmark::State& state) {
  const size_t tokens = static_cast<size_t>(state.range(0));
  auto x = Deterministic(tokens * kModel, 0.5f);
  const auto gamma = Deterministic(kModel, 1.0f);
  const auto beta = Deterministic(kModel, 0.0f);
  const auto kernel = ResolveLayerNorm();
  for (auto _ : state) {
    kernel(x.data(), x.data(), gamma.data(), beta.data(), tokens, kModel, 1e-12f);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  ReportBytes(state, 2 * x.size() * sizeof(float));
}
BENCHMARK(BM_LayerNorm)->Arg(128)->Arg(4096)->Unit(benchmark::kMicrosecond);

// GELU (erf) from one buffer into another over tokens x 1536, the FFN's hidden activations.
// Out of place, so every iteration sees the same inputs (in place, repeated GELU would drift
// them towards 0 and change the mix of erf's two branches).
void BM_GeluErf(benchmark::State& state) {
  const size_t tokens = static_cast<size_t>(state.range(0));
  const auto x = Deterministic(tokens * kFfn, 0.0f);
  std::vector<float> y(x.size());
  const auto kernel = ResolveGeluErf();
  for (auto _ : state) {
    kernel(x.data(), y.data(), x.size());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  ReportBytes(state, 2 * x.size() * sizeof(float));
  state.counters["elements/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * x.size(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_GeluErf)->Arg(128)->Arg(4096)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kestrel::ops
