// Argmax over a vocabulary's logits, as greedy decoding takes each token (Gemma 3: 262,144;
// Llama 3: 128,256; 1 MiB of Gemma's is in L2 right after the LM head wrote them). bytes/s
// counts one read of the logits (the maximum's pass; the second stops at the first maximum),
// against the machine's read bandwidth beside it.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/machine_peak.h"
#include "ops/argmax.h"
#include "ops/targets.h"

namespace kestrel::ops {
namespace {

const bool kContextAdded = [] {
  benchmark::AddCustomContext("highway_target", ChosenTargetName());
  return true;
}();

void BM_Argmax(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<float> logits(n);
  uint32_t seed = 12345;
  for (float& v : logits) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24);
  }
  const auto kernel = ResolveArgmax();
  for (auto _ : state) benchmark::DoNotOptimize(kernel(logits.data(), n));
  state.counters["bytes/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * n * sizeof(float), benchmark::Counter::kIsRate);
  state.counters["read_bw"] = bench::ReadBandwidth();
}
BENCHMARK(BM_Argmax)->Arg(128256)->Arg(262144)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kestrel::ops
