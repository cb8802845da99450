// MatMulF32/F16/BF16 and MatMulQ8/Q4 (with the activation quantization they need) at Gemma 3 270M
// shapes on one thread, on the target dispatch picks for this CPU. Reports FLOP/s (2 * n_tokens * k
// * n_out per call) and weight bytes read per second, and each as a fraction of this machine's
// limits measured in the same run (bench/machine_peak.h): decode GEMV (n = 1) is bound by read
// bandwidth once the weights exceed the caches (look at of_read_BW), prefill (n = 64, 512) by FMA
// throughput (of_FMA_peak).
//
//   build-x/bench/matmul_bench --benchmark_min_time=0.2
//   build-x/bench/matmul_bench --disable-targets=AVX3_DL   (the same on the next best target)
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include <benchmark/benchmark.h>
#include <hwy/aligned_allocator.h>
#include <hwy/base.h>

#include "bench/machine_peak.h"
#include "ops/block_layout.h"
#include "ops/matmul.h"
#include "ops/matmul_f32_panels.h"
#include "ops/matmul_blocks.h"
#include "ops/matmul_quant.h"
#include "ops/quant_layout.h"
#include "ops/quantize_rows.h"
#include "ops/targets.h"

namespace kestrel::ops {
namespace {

void MatMulAnyType(const float* w, const float* x, float* y, size_t n, size_t k, size_t n_out) {
  MatMulF32(w, x, y, n, k, n_out, 0, n_out);
}
void MatMulAnyType(const hwy::bfloat16_t* w, const float* x, float* y, size_t n, size_t k,
                   size_t n_out) {
  MatMulBF16(w, x, y, n, k, n_out, 0, n_out);
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
// bf16 1/16 = 0x3D80.
hwy::bfloat16_t WeightValue(hwy::bfloat16_t*) {
  hwy::bfloat16_t h;
  const uint16_t bits = 0x3D80;
  std::memcpy(&h, &bits, sizeof(bits));
  return h;
}

// Counters of one matmul call moving `flops` and reading `weight_bytes`: rates, and the rates
// divided by this machine's limits (fractions of its peak).
void ReportRates(benchmark::State& state, double flops, double weight_bytes) {
  state.counters["FLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_B/s"] =
      benchmark::Counter(weight_bytes, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_FMA_peak"] = benchmark::Counter(flops / bench::FmaPeakFlops(),
                                                     benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_read_BW"] = benchmark::Counter(weight_bytes / bench::ReadBandwidth(),
                                                    benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_MiB"] = weight_bytes / (1024.0 * 1024.0);
  state.SetLabel(ChosenTargetName());
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
  ReportRates(state, 2.0 * n_tokens * k * n_out, static_cast<double>(n_out) * k * sizeof(T));
}

// f32 weights packed in panels of 16 rows (ops/matmul_f32_panels.h), as converted encoders store
// them.
void BM_MatMulF32Panels(benchmark::State& state) {
  const size_t n_tokens = state.range(0), k = state.range(1), n_out = state.range(2);
  auto rows = hwy::AllocateAligned<float>(n_out * k);
  auto w = hwy::AllocateAligned<float>(F32PanelFloats(n_out, k));
  auto x = hwy::AllocateAligned<float>(n_tokens * k);
  auto y = hwy::AllocateAligned<float>(n_tokens * n_out);
  for (size_t i = 0; i < n_out * k; ++i) rows[i] = 1.0f / 16;
  PackF32Panels(rows.get(), n_out, k, w.get());
  for (size_t i = 0; i < n_tokens * k; ++i) x[i] = 0.5f + static_cast<float>(i % 7) / 8;
  for (auto _ : state) {
    MatMulF32Panels(w.get(), x.get(), y.get(), n_tokens, k, n_out, 0, n_out);
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  ReportRates(state, 2.0 * n_tokens * k * n_out, static_cast<double>(n_out) * k * sizeof(float));
}

// Q8_0 / Q4_0 weights: each call also quantizes the activations (QuantizeRowsQ8), as the plan
// does once per matmul input. Bytes are the packed weights (8.5 / 4.5 bits per weight).
template <bool kQ4>
void BM_MatMulQuant(benchmark::State& state) {
  const size_t n_tokens = state.range(0), k = state.range(1), n_out = state.range(2);
  const QuantLayout layout(n_out, k, kQ4 ? kQ4BlockBytes : kQ8BlockBytes);
  auto w = hwy::AllocateAligned<uint8_t>(layout.TotalBytes());
  for (size_t i = 0; i < layout.QuantBytes(); ++i) w[i] = static_cast<uint8_t>(i * 37 % 251);
  const uint16_t scale = 0x2C00;  // f16 1/16
  for (size_t i = layout.QuantBytes(); i < layout.TotalBytes(); i += 2) {
    std::memcpy(&w[i], &scale, 2);
  }
  auto x = hwy::AllocateAligned<float>(n_tokens * k);
  auto xq = hwy::AllocateAligned<uint8_t>(n_tokens * Q8ActRowBytes(k));
  auto y = hwy::AllocateAligned<float>(n_tokens * n_out);
  for (size_t i = 0; i < n_tokens * k; ++i) x[i] = 0.5f - static_cast<float>(i % 7) / 8;
  for (auto _ : state) {
    QuantizeRowsQ8(x.get(), n_tokens, k, xq.get());
    (kQ4 ? MatMulQ4 : MatMulQ8)(w.get(), xq.get(), y.get(), n_tokens, k, n_out, 0, n_out);
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  ReportRates(state, 2.0 * n_tokens * k * n_out, static_cast<double>(layout.TotalBytes()));
}

// A kept GGUF type (ops/block_layout.h), with the activations quantized as a converted plan
// quantizes them for it (a scale per 256 for Q4_K, Q5_K and Q6_K, PreferredActivationScaleBlock;
// kScaleBlock 32 forces one per 32). Quant bits vary; every scale record byte is 0x11, so the f16
// scales are normal numbers (no subnormal slow paths) and the 6-bit K-quant scales non-zero.
template <GgmlBlockType kType, size_t kScaleBlock = PreferredActivationScaleBlock(kType)>
void BM_MatMulBlocks(benchmark::State& state) {
  const size_t n_tokens = state.range(0), k = state.range(1), n_out = state.range(2);
  const BlockLayout layout(kType, n_out, k);
  auto w = hwy::AllocateAligned<uint8_t>(layout.TotalBytes());
  for (size_t i = 0; i < layout.TotalBytes(); ++i) w[i] = static_cast<uint8_t>(i * 37 % 251);
  for (size_t r = 0; r < n_out; ++r) {
    for (size_t b = 0; b < layout.blocks_per_row; ++b) {
      std::memset(w.get() + layout.RecordOffset(r, b), 0x11, layout.format.record_bytes);
    }
  }
  auto x = hwy::AllocateAligned<float>(n_tokens * k);
  auto xq = hwy::AllocateAligned<uint8_t>(n_tokens * Q8ActRowBytes(k));
  auto y = hwy::AllocateAligned<float>(n_tokens * n_out);
  for (size_t i = 0; i < n_tokens * k; ++i) x[i] = 0.5f - static_cast<float>(i % 7) / 8;
  const auto matmul = ResolveBlockMatMul(kType);
  const auto quantize = kScaleBlock == 256 && k % 256 == 0 ? QuantizeRowsQ8Super : QuantizeRowsQ8;
  for (auto _ : state) {
    quantize(x.get(), n_tokens, k, xq.get());
    matmul(w.get(), xq.get(), y.get(), n_tokens, k, n_out, 0, n_out);
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  ReportRates(state, 2.0 * n_tokens * k * n_out, static_cast<double>(layout.TotalBytes()));
}

// Gemma 3 270M: d_model 640, FFN 2048, vocab 262144 (tied LM head).
void ModelShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "k", "n_out"});
  b->Args({1, 640, 1024});    // decode: fused Q/K/V-sized projection
  b->Args({1, 640, 2048});    // decode: FFN gate or up
  b->Args({1, 2048, 640});    // decode: FFN down
  b->Args({1, 640, 262144});  // decode: LM head
  b->Args({64, 640, 2048});   // prefill chunk
  b->Args({512, 640, 2048});  // prefill chunk
  b->Args({512, 2048, 640});  // prefill chunk: FFN down
  b->Unit(benchmark::kMicrosecond);
}

// SmolLM2-1.7B / Llama-3.2-1B: d_model 2048, FFN 8192. One matrix of the real model fits this
// machine's L3; a decode step streams 1 GB of them from DRAM, so the decode rows that stand for
// it are made taller than the real matrices (n_out 65536 / 16384: 75 MB in Q4_K).
void LargeModelShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "k", "n_out"});
  b->Args({1, 2048, 8192});    // decode: FFN gate or up, in cache
  b->Args({1, 2048, 65536});   // decode from DRAM, k = d_model
  b->Args({1, 8192, 2048});    // decode: FFN down, in cache
  b->Args({1, 8192, 16384});   // decode from DRAM, k = FFN (down)
  b->Args({512, 2048, 8192});  // prefill: FFN gate or up
  b->Args({512, 8192, 2048});  // prefill: FFN down
  b->Unit(benchmark::kMicrosecond);
}

// all-MiniLM-L6-v2 (d_model 384, FFN 1536) on a 128-token text: the encoder's four matmuls.
void EncoderShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "k", "n_out"});
  b->Args({128, 384, 1152});  // fused Q/K/V
  b->Args({128, 384, 384});   // attention output
  b->Args({128, 384, 1536});  // FFN up
  b->Args({128, 1536, 384});  // FFN down
  b->Unit(benchmark::kMicrosecond);
}

// Whisper-tiny (d_model 384, FFN 1536, vocab 51864): the encoder's matmuls over one 30-second
// window (1500 positions), the second convolution (kernel 3 x 384 in), and the decoder's tied
// output projection at one token.
void WhisperShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "k", "n_out"});
  b->Args({1500, 384, 384});   // Q, K, V or the attention output
  b->Args({1500, 384, 1536});  // FFN up
  b->Args({1500, 1536, 384});  // FFN down
  b->Args({1500, 1152, 384});  // conv2
  b->Args({1, 384, 51864});    // decode: output projection
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_TEMPLATE(BM_MatMul, float)->Apply(ModelShapes);
BENCHMARK_TEMPLATE(BM_MatMul, hwy::float16_t)->Apply(ModelShapes);
BENCHMARK_TEMPLATE(BM_MatMul, hwy::bfloat16_t)->Apply(ModelShapes);
BENCHMARK_TEMPLATE(BM_MatMulQuant, false)->Name("BM_MatMul<q8>")->Apply(ModelShapes);
BENCHMARK_TEMPLATE(BM_MatMulQuant, true)->Name("BM_MatMul<q4>")->Apply(ModelShapes);
BENCHMARK_TEMPLATE(BM_MatMulQuant, false)->Name("BM_LargeMatMul<q8>")->Apply(LargeModelShapes);
BENCHMARK_TEMPLATE(BM_MatMulQuant, true)->Name("BM_LargeMatMul<q4>")->Apply(LargeModelShapes);
BENCHMARK_TEMPLATE(BM_MatMul, float)->Name("BM_EncoderMatMul<f32>")->Apply(EncoderShapes);
BENCHMARK(BM_MatMulF32Panels)->Name("BM_EncoderMatMul<f32_panels>")->Apply(EncoderShapes);
BENCHMARK(BM_MatMulF32Panels)->Name("BM_MatMul<f32_panels>")->Apply(ModelShapes);
BENCHMARK_TEMPLATE(BM_MatMulQuant, false)->Name("BM_EncoderMatMul<q8>")->Apply(EncoderShapes);
BENCHMARK_TEMPLATE(BM_MatMul, float)->Name("BM_WhisperMatMul<f32>")->Apply(WhisperShapes);
BENCHMARK(BM_MatMulF32Panels)->Name("BM_WhisperMatMul<f32_panels>")->Apply(WhisperShapes);
BENCHMARK_TEMPLATE(BM_MatMulQuant, false)->Name("BM_WhisperMatMul<q8>")->Apply(WhisperShapes);
#define KESTREL_BENCH_BLOCKS(T)                            \
  BENCHMARK_TEMPLATE(BM_MatMulBlocks, GgmlBlockType::k##T) \
      ->Name("BM_MatMul<" #T ">")                          \
      ->Apply(ModelShapes);                                \
  BENCHMARK_TEMPLATE(BM_MatMulBlocks, GgmlBlockType::k##T) \
      ->Name("BM_LargeMatMul<" #T ">")                     \
      ->Apply(LargeModelShapes);
KESTREL_BLOCK_TYPES(KESTREL_BENCH_BLOCKS)
#undef KESTREL_BENCH_BLOCKS
// The K-quants with a scale per 32 activations, as files converted before scale_block 256 run.
#define KESTREL_BENCH_PER32(T)                                 \
  BENCHMARK_TEMPLATE(BM_MatMulBlocks, GgmlBlockType::k##T, 32) \
      ->Name("BM_LargeMatMul<" #T ",per32>")                   \
      ->Apply(LargeModelShapes);
KESTREL_BENCH_PER32(Q4_K)
KESTREL_BENCH_PER32(Q5_K)
KESTREL_BENCH_PER32(Q6_K)
#undef KESTREL_BENCH_PER32

// The activation quantizer alone (ops/quantize_rows.h), plain and with SmoothQuant's channel
// factors, at MiniLM's 128-token rows (k = 384: Q/K/V, attention output, FFN up; 1536: FFN
// down). Args: n_tokens, k.
template <bool kScaled>
void BM_QuantizeRows(benchmark::State& state) {
  const size_t n_tokens = state.range(0), k = state.range(1);
  auto x = hwy::AllocateAligned<float>(n_tokens * k);
  auto factor = hwy::AllocateAligned<float>(k);
  auto xq = hwy::AllocateAligned<uint8_t>(n_tokens * Q8ActRowBytes(k));
  for (size_t i = 0; i < n_tokens * k; ++i) x[i] = 0.5f - static_cast<float>(i % 7) / 8;
  for (size_t i = 0; i < k; ++i) factor[i] = 0.25f + static_cast<float>(i % 5);
  for (auto _ : state) {
    if constexpr (kScaled) {
      QuantizeRowsQ8Scaled(x.get(), n_tokens, k, factor.get(), xq.get());
    } else {
      QuantizeRowsQ8(x.get(), n_tokens, k, xq.get());
    }
    benchmark::DoNotOptimize(xq.get());
    benchmark::ClobberMemory();
  }
  state.counters["values/s"] = benchmark::Counter(static_cast<double>(n_tokens * k),
                                                  benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(ChosenTargetName());
}
void EncoderRows(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "k"})->Args({128, 384})->Args({128, 1536})->Unit(benchmark::kMicrosecond);
}
BENCHMARK_TEMPLATE(BM_QuantizeRows, false)->Name("BM_QuantizeRows<plain>")->Apply(EncoderRows);
BENCHMARK_TEMPLATE(BM_QuantizeRows, true)->Name("BM_QuantizeRows<scaled>")->Apply(EncoderRows);

// The limits the fractions above divide by, printed once per run: one thread's, and the read
// bandwidth and int8 peak of T threads together (counters suffixed _Tt; T in PeakThreadCounts)
// for bench/compare_llama_cpp.py's fractions at each thread count.
void BM_MachinePeak(benchmark::State& state) {
  const double fma_peak = bench::FmaPeakFlops(), read_bandwidth = bench::ReadBandwidth();
  const double int8_peak = bench::Int8PeakOps();
  for (auto _ : state) benchmark::DoNotOptimize(fma_peak + read_bandwidth + int8_peak);
  state.counters["FMA_FLOP/s"] = fma_peak;
  state.counters["read_B/s"] = read_bandwidth;
  state.counters["int8_OP/s"] = int8_peak;
  for (const int threads : bench::PeakThreadCounts()) {
    const std::string suffix = "_" + std::to_string(threads) + "t";
    state.counters["read_B/s" + suffix] = bench::ReadBandwidth(threads);
    state.counters["int8_OP/s" + suffix] = bench::Int8PeakOps(threads);
  }
  state.SetLabel(ChosenTargetName());
}
BENCHMARK(BM_MachinePeak)->Iterations(1);

}  // namespace
}  // namespace kestrel::ops

// Google Benchmark's main, after taking our one flag out of the arguments.
int main(int argc, char** argv) {
  const std::string flag = "--disable-targets=";
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag.c_str(), flag.size()) == 0) {
      const std::string error = kestrel::ops::DisableTargets(argv[i] + flag.size());
      if (!error.empty()) {
        std::fprintf(stderr, "matmul_bench: %s\n", error.c_str());
        return 2;
      }
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
