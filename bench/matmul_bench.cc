// MatMulF32/F16 at Gemma 3 270M shapes on one thread, on the target dispatch picks for this CPU.
// Reports FLOP/s (2 * n_tokens * k * n_out per call) and weight bytes read per second; compare the
// latter with BM_MemcpyBandwidth from the same run (decode GEMV is bound by memory bandwidth once
// the weights exceed the caches), the former with the machine's FMA peak.
//
//   build-x/bench/matmul_bench --benchmark_min_time=0.2
#include <cstddef>
#include <cstring>

#include <benchmark/benchmark.h>
#include <hwy/aligned_allocator.h>
#include <hwy/base.h>

#include "ops/matmul.h"
#include "ops/targets.h"

namespace kestrel::ops {
namespace {

void MatMulAnyType(const float* w, const float* x, float* y, size_t n, size_t k, size_t n_out) {
  MatMulF32(w, x, y, n, k, n_out, 0, n_out);
}
void MatMulAnyType(const hwy::float16_t* w, const float* x, float* y, size_t n, size_t k,
                   size_t n_out) {
  MatMulF16(w, x, y, n, k, n_out, 0, n_out);
}

// f16 1/16 = 0x2C00; the values do not change the speed, only keep sums finite.
float WeightValue(float*) { return 1.0f / 16; }
hwy::float16_t WeightValue(hwy::float16_t*) {
  hwy::float16_t h;
  const uint16_t bits = 0x2C00;
  std::memcpy(&h, &bits, sizeof(bits));
  return h;
}

// Args: n_tokens, k, n_out. Weights are 64-byte aligned like tensors in a .kes weight blob.
template <typename T>
void BM_MatMul(benchmark::State& state) {
  const size_t n_tokens = state.range(0), k = state.range(1), n_out = state.range(2);
  auto w = hwy::AllocateAligned<T>(n_out * k);
  auto x = hwy::AllocateAligned<float>(n_tokens * k);
  auto y = hwy::AllocateAligned<float>(n_tokens * n_out);
  const T w_value = WeightValue(static_cast<T*>(nullptr));
  for (size_t i = 0; i < n_out * k; ++i) w[i] = w_value;
  for (size_t i = 0; i < n_tokens * k; ++i) x[i] = 0.5f + static_cast<float>(i % 7) / 8;

  for (auto _ : state) {
    MatMulAnyType(w.get(), x.get(), y.get(), n_tokens, k, n_out);
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * n_tokens * k * n_out;
  const double weight_bytes = static_cast<double>(n_out) * k * sizeof(T);
  state.counters["FLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_B/s"] =
      benchmark::Counter(weight_bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_MiB"] = weight_bytes / (1024.0 * 1024.0);
  state.SetLabel(ChosenTargetName());
}

// Gemma 3 270M: d_model 640, FFN 2048, vocab 262144 (tied LM head).
void ModelShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "k", "n_out"});
  b->Args({1, 640, 1024});     // decode: fused Q/K/V-sized projection
  b->Args({1, 640, 2048});     // decode: FFN gate or up
  b->Args({1, 2048, 640});     // decode: FFN down
  b->Args({1, 640, 262144});   // decode: LM head
  b->Args({64, 640, 2048});    // prefill chunk
  b->Args({512, 640, 2048});   // prefill chunk
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_TEMPLATE(BM_MatMul, float)->Apply(ModelShapes);
BENCHMARK_TEMPLATE(BM_MatMul, hwy::float16_t)->Apply(ModelShapes);

// Yardstick for weight_B/s: bytes read per second by memcpy from a buffer far larger than L3.
void BM_MemcpyBandwidth(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0)) << 20;
  auto src = hwy::AllocateAligned<uint8_t>(bytes);
  auto dst = hwy::AllocateAligned<uint8_t>(bytes);
  std::memset(src.get(), 1, bytes);
  std::memset(dst.get(), 0, bytes);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), bytes);
    benchmark::ClobberMemory();
  }
  state.counters["read_B/s"] = benchmark::Counter(static_cast<double>(bytes),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MemcpyBandwidth)->Arg(256)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kestrel::ops
