// The f32 panel matmul written with xsimd (bench/matmul_f32_panels_xsimd.h) beside Highway's
// (ops/matmul_f32_panels.h), one thread, on the shapes matmul_bench times BM_MatMulF32Panels at:
// each shape's variants (Highway's and xsimd's best target on this CPU, then each one's AVX2)
// run one after the other, so that a busy machine disturbs them alike; compare them by ratio.
// Before any timing, every variant's output is compared with Highway's on random weights.
// docs/simd-layer.md has the figures and why Kestrel stays on Highway.
//
//   taskset -c 1 build-x/bench/xsimd_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true       (one command line)
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <hwy/aligned_allocator.h>
#include <xsimd/xsimd.hpp>

#include "bench/machine_peak.h"
#include "bench/matmul_f32_panels_xsimd.h"
#include "ops/matmul_f32_panels.h"
#include "ops/targets.h"

namespace kestrel::bench {
namespace {

using XsimdFn = void (*)(const float*, const float*, float*, size_t, size_t, size_t);

// One implementation of the kernel: a resolved Highway target or an xsimd architecture.
struct Variant {
  std::string name;  // e.g. "highway:AVX3_DL", "xsimd:avx512bw"
  decltype(&ops::MatMulF32Panels) highway = nullptr;
  XsimdFn xsimd = nullptr;

  void Run(const float* w, const float* x, float* y, size_t n, size_t k, size_t n_out) const {
    if (highway != nullptr) return highway(w, x, y, n, k, n_out, 0, n_out);
    xsimd(w, x, y, n, k, n_out);
  }
};

void XsimdDispatched(const float* w, const float* x, float* y, size_t n, size_t k, size_t n_out) {
  xsimd::dispatch<XsimdPanelArchs>(MatMulF32PanelsXsimd{})(w, x, y, n, k, n_out);
}
void XsimdAvx2(const float* w, const float* x, float* y, size_t n, size_t k, size_t n_out) {
  MatMulF32PanelsXsimd{}(xsimd::fma3<xsimd::avx2>{}, w, x, y, n, k, n_out);
}

// The variants this CPU runs, best targets first. Measures the FMA peak on Highway's best
// target before keeping dispatch off it for the AVX2 variant, so every of_FMA_peak divides by
// the machine's peak.
std::vector<Variant> MakeVariants() {
  std::vector<Variant> variants;
  ops::ChooseTarget();
  variants.push_back({"highway:" + ops::ChosenTargetName(), ops::ResolveMatMulF32Panels()});
  FmaPeakFlops();
  ReadBandwidth();
  using Avx2 = xsimd::fma3<xsimd::avx2>;
  const bool xsimd_avx2 = xsimd::available_architectures().fma3_avx2 != 0;
  std::string xsimd_best;
  if (xsimd_avx2) {
    xsimd_best =
        xsimd::dispatch<XsimdPanelArchs>([](auto arch) { return decltype(arch)::name(); })();
    variants.push_back({"xsimd:" + xsimd_best, nullptr, &XsimdDispatched});
  }
  // Every compiled target better than AVX2 off (names best first), then AVX2 resolved.
  std::string better;
  const std::string compiled = ops::CompiledTargetNames() + " ";
  for (size_t begin = 0, end; (end = compiled.find(' ', begin)) != std::string::npos;
       begin = end + 1) {
    const std::string name = compiled.substr(begin, end - begin);
    if (name == "AVX2") break;
    better += name + " ";
  }
  const std::string error = ops::DisableTargets(better);
  if (error.empty() && ops::ChosenTargetName() == "AVX2" && variants[0].name != "highway:AVX2") {
    variants.push_back({"highway:AVX2", ops::ResolveMatMulF32Panels()});
    if (xsimd_avx2 && xsimd_best != Avx2::name()) {
      variants.push_back({std::string("xsimd:") + Avx2::name(), nullptr, &XsimdAvx2});
    }
  }
  return variants;
}

struct Shape {
  const char* group;
  size_t n, k, n_out;
};

// matmul_bench.cc's EncoderShapes (all-MiniLM-L6-v2, 128 tokens), WhisperShapes (whisper-tiny's
// encoder over 1500 positions, and its output projection at one token) and ModelShapes (Gemma 3
// 270M) without its 262144-row LM head, which reads 640 MiB of f32 and measures DRAM alone.
const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> shapes = {
      {"BM_EncoderMatMul", 128, 384, 1152},  {"BM_EncoderMatMul", 128, 384, 384},
      {"BM_EncoderMatMul", 128, 384, 1536},  {"BM_EncoderMatMul", 128, 1536, 384},
      {"BM_WhisperMatMul", 1500, 384, 384},  {"BM_WhisperMatMul", 1500, 384, 1536},
      {"BM_WhisperMatMul", 1500, 1536, 384}, {"BM_WhisperMatMul", 1500, 1152, 384},
      {"BM_WhisperMatMul", 1, 384, 51864},   {"BM_MatMul", 1, 640, 1024},
      {"BM_MatMul", 1, 640, 2048},           {"BM_MatMul", 1, 2048, 640},
      {"BM_MatMul", 64, 640, 2048},          {"BM_MatMul", 512, 640, 2048},
      {"BM_MatMul", 512, 2048, 640},
  };
  return shapes;
}

// Values in [-1, 1) from a fixed sequence: the same check on every run.
void FillRandom(float* v, size_t count, uint32_t seed) {
  uint32_t state = seed;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    v[i] = static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
}

// Runs every variant on random weights and inputs of every shape and compares each output with
// the first variant's (Highway's best target): within 1e-5 of it, relative to 1 + |reference|.
// Each output is one FMA chain over k in the same order in both layers, so they should agree to
// the bit; prints how many outputs do not.
bool OutputsAgree(const std::vector<Variant>& variants) {
  bool agree = true;
  for (const Shape& s : Shapes()) {
    auto rows = hwy::AllocateAligned<float>(s.n_out * s.k);
    auto w = hwy::AllocateAligned<float>(ops::F32PanelFloats(s.n_out, s.k));
    auto x = hwy::AllocateAligned<float>(s.n * s.k);
    auto reference = hwy::AllocateAligned<float>(s.n * s.n_out);
    auto y = hwy::AllocateAligned<float>(s.n * s.n_out);
    FillRandom(rows.get(), s.n_out * s.k, 1);
    FillRandom(x.get(), s.n * s.k, 2);
    ops::PackF32Panels(rows.get(), s.n_out, s.k, w.get());
    variants[0].Run(w.get(), x.get(), reference.get(), s.n, s.k, s.n_out);
    for (size_t v = 1; v < variants.size(); ++v) {
      variants[v].Run(w.get(), x.get(), y.get(), s.n, s.k, s.n_out);
      size_t differ = 0;
      double worst = 0.0;
      for (size_t i = 0; i < s.n * s.n_out; ++i) {
        if (y[i] != reference[i]) ++differ;
        const double error = std::fabs(static_cast<double>(y[i]) - reference[i]) /
                             (1.0 + std::fabs(static_cast<double>(reference[i])));
        if (!(error <= worst)) worst = error;  // NaN counts as the worst
      }
      const bool ok = worst <= 1e-5;
      agree = agree && ok;
      std::printf(
          "check %s n=%zu k=%zu n_out=%zu: %s vs %s: %zu of %zu outputs differ in bits, "
          "largest relative difference %.3g%s\n",
          s.group, s.n, s.k, s.n_out, variants[v].name.c_str(), variants[0].name.c_str(), differ,
          s.n * s.n_out, worst, ok ? "" : " (over 1e-5: FAILED)");
    }
  }
  return agree;
}

// Args: n_tokens, k, n_out; weights as BM_MatMulF32Panels builds them.
void BM_Panels(benchmark::State& state, const Variant* variant) {
  const size_t n = state.range(0), k = state.range(1), n_out = state.range(2);
  auto rows = hwy::AllocateAligned<float>(n_out * k);
  auto w = hwy::AllocateAligned<float>(ops::F32PanelFloats(n_out, k));
  auto x = hwy::AllocateAligned<float>(n * k);
  auto y = hwy::AllocateAligned<float>(n * n_out);
  for (size_t i = 0; i < n_out * k; ++i) rows[i] = 1.0f / 16;
  ops::PackF32Panels(rows.get(), n_out, k, w.get());
  for (size_t i = 0; i < n * k; ++i) x[i] = 0.5f + static_cast<float>(i % 7) / 8;
  for (auto _ : state) {
    variant->Run(w.get(), x.get(), y.get(), n, k, n_out);
    benchmark::DoNotOptimize(y.get());
    benchmark::ClobberMemory();
  }
  // matmul_bench.cc's ReportRates.
  const double flops = 2.0 * n * k * n_out, weight_bytes = 1.0 * n_out * k * sizeof(float);
  state.counters["FLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_FMA_peak"] =
      benchmark::Counter(flops / FmaPeakFlops(), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["of_read_BW"] = benchmark::Counter(weight_bytes / ReadBandwidth(),
                                                    benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(variant->name);
}

void RegisterAll(const std::vector<Variant>& variants) {
  for (const Shape& s : Shapes()) {
    for (const Variant& v : variants) {
      const std::string name = std::string(s.group) + "<f32_panels," + v.name + ">";
      benchmark::RegisterBenchmark(name.c_str(), BM_Panels, &v)
          ->ArgNames({"n", "k", "n_out"})
          ->Args(
              {static_cast<int64_t>(s.n), static_cast<int64_t>(s.k), static_cast<int64_t>(s.n_out)})
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace kestrel::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  static const std::vector<kestrel::bench::Variant> variants = kestrel::bench::MakeVariants();
  if (!kestrel::bench::OutputsAgree(variants)) {
    std::fprintf(stderr, "xsimd_bench: the variants' outputs disagree (lines above)\n");
    return 1;
  }
  kestrel::bench::RegisterAll(variants);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
