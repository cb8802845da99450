#include "bench/machine_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/machine_peak.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/cache_control.h>
#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include "ops/simd_helpers-inl.h"
#include "ops/weight_prefetch.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "ops/matmul_quant_dotprod.h"  // CpuHasDotProd
#endif

HWY_BEFORE_NAMESPACE();
namespace kestrel::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Runs `iterations` rounds of 10 independent FMA chains: enough chains to cover FMA latency
// times the number of FMA ports on current cores (4 x 2). Returns FLOPs done; writes the sum so
// the work cannot be optimized away.
double FmaChains(size_t iterations, float* sink) {
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 0.999999f), a = hn::Set(d, 1e-7f);
  auto v0 = hn::Set(d, 1.0f), v1 = hn::Set(d, 1.1f), v2 = hn::Set(d, 1.2f), v3 = hn::Set(d, 1.3f),
       v4 = hn::Set(d, 1.4f), v5 = hn::Set(d, 1.5f), v6 = hn::Set(d, 1.6f), v7 = hn::Set(d, 1.7f),
       v8 = hn::Set(d, 1.8f), v9 = hn::Set(d, 1.9f);
  for (size_t i = 0; i < iterations; ++i) {
    v0 = hn::MulAdd(v0, m, a), v1 = hn::MulAdd(v1, m, a), v2 = hn::MulAdd(v2, m, a);
    v3 = hn::MulAdd(v3, m, a), v4 = hn::MulAdd(v4, m, a), v5 = hn::MulAdd(v5, m, a);
    v6 = hn::MulAdd(v6, m, a), v7 = hn::MulAdd(v7, m, a), v8 = hn::MulAdd(v8, m, a);
    v9 = hn::MulAdd(v9, m, a);
  }
  const auto sum = hn::Add(
      hn::Add(hn::Add(hn::Add(v0, v1), hn::Add(v2, v3)), hn::Add(hn::Add(v4, v5), hn::Add(v6, v7))),
      hn::Add(v8, v9));
  *sink = hn::GetLane(hn::SumOfLanes(d, sum));
  return 2.0 * 10 * hn::Lanes(d) * static_cast<double>(iterations);
}

// Sums n floats with four accumulators; returns the sum. With prefetch, each 64-byte line is
// also prefetched kWeightPrefetchBytes ahead as the quantized kernels do (ops/weight_prefetch.h):
// the hardware prefetcher alone stops at every 4 KiB page, and the kernels' decode read more
// than the plain loop measured (Q4_K 45 GB/s where it gave 40.5, one Zen 5 core), which made
// "fraction of bandwidth" figures above 1.
float SumBuffer(const float* data, size_t n, bool prefetch) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  size_t i = 0;
  constexpr size_t kLineFloats = 64 / sizeof(float);
  constexpr size_t kAheadFloats = ops::kWeightPrefetchBytes / sizeof(float);
  for (; i + 4 * N <= n; i += 4 * N) {
    if (prefetch) {
      for (size_t line = 0; line < 4 * N; line += kLineFloats) {
        hwy::Prefetch(data + i + line + kAheadFloats);
      }
    }
    s0 = hn::Add(s0, hn::Load(d, data + i));
    s1 = hn::Add(s1, hn::Load(d, data + i + N));
    s2 = hn::Add(s2, hn::Load(d, data + i + 2 * N));
    s3 = hn::Add(s3, hn::Load(d, data + i + 3 * N));
  }
  float total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) total += data[i];
  return total;
}

// The int8 chains below: 10 independent accumulators (enough to cover a 5-cycle multiply-add on
// two ports), each multiplying a register operand (the activation) by one loaded from `w` (the
// weights; 10 vectors, in L1). The empty asm at the top of each round hides the weights' address
// from the compiler, which must then load them again every round instead of hoisting the
// products out of the loop, as a matmul loads new weights every time (a memory clobber did the
// same but also spilled the accumulators every round: 344 int8 GOP/s on a Zen 5 core where the
// Q8_0 panels reach 590). Each returns the OPs done (2 per
// multiply-add) and writes a lane of the sum to *sink so nothing is optimized away.
#if HWY_TARGET == HWY_AVX3_DL
// vpdpbusd on 512-bit vectors, as the VNNI tiles (ops/matmul_panel_vnni-inl.h): 64 products each.
double Int8Chains(size_t iterations, const uint8_t* w, int32_t* sink) {
  const __m512i x = _mm512_set1_epi8(3);
  __m512i acc[10];
  for (__m512i& a : acc) a = _mm512_setzero_si512();
  const auto* wv = reinterpret_cast<const __m512i*>(w);
  for (size_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+r"(wv));
    for (int c = 0; c < 10; ++c) {
      acc[c] = ops::HWY_NAMESPACE::DotBytes512(acc[c], x, _mm512_loadu_si512(wv + c));
    }
  }
  __m512i sum = acc[0];
  for (int c = 1; c < 10; ++c) sum = _mm512_add_epi32(sum, acc[c]);
  *sink = _mm512_cvtsi512_si32(sum);
  return 2.0 * 10 * 64 * static_cast<double>(iterations);
}
#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
// AVX2's sequence, as ops/matmul_blocks.cc's x86 tiles: two vpmaddubsw (32 u8 x s8 products
// each, summed in pairs to int16) added in int16, widened to int32 pair sums by vpmaddwd against
// ones, accumulated by vpaddd: 64 products per chain and round.
double Int8Chains(size_t iterations, const uint8_t* w, int32_t* sink) {
  const __m256i x = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  __m256i acc[10];
  for (__m256i& a : acc) a = _mm256_setzero_si256();
  const auto* wv = reinterpret_cast<const __m256i*>(w);
  for (size_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+r"(wv));
    for (int c = 0; c < 10; ++c) {
      const __m256i p0 = _mm256_maddubs_epi16(_mm256_loadu_si256(wv + 2 * c), x);
      const __m256i p1 = _mm256_maddubs_epi16(_mm256_loadu_si256(wv + 2 * c + 1), x);
      acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_add_epi16(p0, p1), ones));
    }
  }
  __m256i sum = acc[0];
  for (int c = 1; c < 10; ++c) sum = _mm256_add_epi32(sum, acc[c]);
  *sink = _mm256_cvtsi256_si32(sum);
  return 2.0 * 10 * 64 * static_cast<double>(iterations);
}
#else
// Elsewhere (SSE4, NEON without dotprod, SVE, scalar): int16 products summed in pairs into int32
// (pmaddwd, smlal), Highway's portable int8 path once the bytes are widened. Six chains of two
// accumulators each (NEON splits the pairs into both), within every target's registers. Written
// out, not as arrays: SVE's vectors cannot be array elements.
double Int8Chains(size_t iterations, const uint8_t* w, int32_t* sink) {
  const hn::ScalableTag<int32_t> d32;
#if HWY_TARGET == HWY_SCALAR
  const hn::Rebind<int16_t, decltype(d32)> d16;  // SCALAR has no 2-lane vector: one product
#else
  const hn::Repartition<int16_t, decltype(d32)> d16;
#endif
  const auto* w16 = reinterpret_cast<const int16_t*>(w);
  const size_t N = hn::Lanes(d16);
  const auto x = hn::Set(d16, 3);
  auto a0 = hn::Zero(d32), a1 = hn::Zero(d32), a2 = hn::Zero(d32), a3 = hn::Zero(d32),
       a4 = hn::Zero(d32), a5 = hn::Zero(d32);
  auto b0 = hn::Zero(d32), b1 = hn::Zero(d32), b2 = hn::Zero(d32), b3 = hn::Zero(d32),
       b4 = hn::Zero(d32), b5 = hn::Zero(d32);
  for (size_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+r"(w16));
    a0 = hn::ReorderWidenMulAccumulate(d32, hn::LoadU(d16, w16), x, a0, b0);
    a1 = hn::ReorderWidenMulAccumulate(d32, hn::LoadU(d16, w16 + N), x, a1, b1);
    a2 = hn::ReorderWidenMulAccumulate(d32, hn::LoadU(d16, w16 + 2 * N), x, a2, b2);
    a3 = hn::ReorderWidenMulAccumulate(d32, hn::LoadU(d16, w16 + 3 * N), x, a3, b3);
    a4 = hn::ReorderWidenMulAccumulate(d32, hn::LoadU(d16, w16 + 4 * N), x, a4, b4);
    a5 = hn::ReorderWidenMulAccumulate(d32, hn::LoadU(d16, w16 + 5 * N), x, a5, b5);
  }
  const auto sum = hn::Add(hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(a4, a5)),
                           hn::Add(hn::Add(hn::Add(b0, b1), hn::Add(b2, b3)), hn::Add(b4, b5)));
  *sink = hn::GetLane(sum);
  return 2.0 * 6 * N * static_cast<double>(iterations);
}
#endif

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kestrel::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::bench {

HWY_EXPORT(FmaChains);
HWY_EXPORT(SumBuffer);
HWY_EXPORT(Int8Chains);

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

volatile float g_sink;
volatile int32_t g_int_sink;

// Weights for the int8 chains: 20 vectors of the widest target (AVX2 reads 20 x 32 bytes, the
// others 10 x their vector), small values so no int16 sum saturates.
constexpr size_t kInt8WeightBytes = 20 * HWY_MAX_BYTES;

#if defined(__aarch64__)
// sdot as the dotprod tiles use it (ops/matmul_quant_dotprod.cc): 16 products per instruction,
// 10 chains. Compiled for Armv8.2 with dotprod (the target attribute, for this function only)
// and run only where the CPU has it; outside Highway, whose 1.0.3 has no int8 dot product.
__attribute__((target("arch=armv8.2-a+dotprod"))) double Int8ChainsDotProd(size_t iterations,
                                                                           const uint8_t* w,
                                                                           int32_t* sink) {
  const int8x16_t x = vdupq_n_s8(3);
  const auto* w8 = reinterpret_cast<const int8_t*>(w);
  int32x4_t acc[10];
  for (int32x4_t& a : acc) a = vdupq_n_s32(0);
  for (size_t i = 0; i < iterations; ++i) {
    asm volatile("" : "+r"(w8));
    for (int c = 0; c < 10; ++c) acc[c] = vdotq_s32(acc[c], vld1q_s8(w8 + 16 * c), x);
  }
  int32x4_t sum = acc[0];
  for (int c = 1; c < 10; ++c) sum = vaddq_s32(sum, acc[c]);
  *sink = vgetq_lane_s32(sum, 0);
  return 2.0 * 10 * 16 * static_cast<double>(iterations);
}
#endif

// One run of the int8 chains on the instructions this CPU's matmuls use.
double Int8ChainsHere(size_t iterations, const uint8_t* w, int32_t* sink) {
#if defined(__aarch64__)
  if (ops::CpuHasDotProd()) return Int8ChainsDotProd(iterations, w, sink);
#endif
  return HWY_DYNAMIC_DISPATCH(Int8Chains)(iterations, w, sink);
}

// Runs work(t) on `threads` threads released together; returns the seconds from the release to
// the end of the last one. The helper threads are started (and wait, spinning) before the clock
// starts; work(0) runs on the calling thread. Had the caller only released and joined them, on a
// machine with as many cores as threads it would have competed with the spinning helpers for a
// core, and the scheduler's time slice would have counted as time the work took (two threads'
// read bandwidth measured 30 GB/s on a 2-core VM whose decode moved 43).
template <class Work>
double TimeOnThreads(int threads, const Work& work) {
  std::atomic<bool> go{false};
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (int t = 1; t < threads; ++t) {
    helpers.emplace_back([&go, &work, t] {
      while (!go.load(std::memory_order_acquire)) {
      }
      work(t);
    });
  }
  const Clock::time_point start = Clock::now();
  go.store(true, std::memory_order_release);
  work(0);
  for (std::thread& helper : helpers) helper.join();
  return SecondsSince(start);
}

double MeasureFmaPeak() {
  double best = 0;
  for (int run = 0; run < 7; ++run) {
    float sink = 0;
    const Clock::time_point start = Clock::now();
    const double flops = HWY_DYNAMIC_DISPATCH(FmaChains)(size_t{20} << 20, &sink);
    const double rate = flops / SecondsSince(start);
    g_sink = sink;
    if (rate > best) best = rate;
  }
  return best;
}

double MeasureReadBandwidth(int threads) {
  // 512 MiB, and at least 128 MiB a thread: far beyond any L3.
  const size_t bytes = std::max(size_t{512} << 20, (size_t{128} << 20) * threads);
  const size_t n = bytes / sizeof(float), slice = n / threads;
  auto buffer = hwy::AllocateAligned<float>(n);
  for (size_t i = 0; i < n; ++i) buffer[i] = 1.0f;  // touch every page before timing
  std::vector<float> sums(threads);
  double best = 0;
  // Each thread reads its slice kSweeps times per pass (a slice is far beyond any L3, so every
  // sweep comes from memory): a pass lasts long enough that a thread starting late is a small
  // part of it.
  constexpr int kSweeps = 4;
  for (int pass = 0; pass < 6; ++pass) {  // odd passes prefetch
    const double seconds = TimeOnThreads(threads, [&](int t) {
      for (int sweep = 0; sweep < kSweeps; ++sweep) {
        sums[t] += HWY_DYNAMIC_DISPATCH(SumBuffer)(buffer.get() + t * slice, slice, pass % 2 == 1);
      }
    });
    for (float s : sums) g_sink = s;
    const double rate = static_cast<double>(slice) * threads * kSweeps * sizeof(float) / seconds;
    if (rate > best) best = rate;
  }
  return best;
}

double MeasureInt8Peak(int threads) {
  auto weights = hwy::AllocateAligned<uint8_t>(kInt8WeightBytes);
  for (size_t i = 0; i < kInt8WeightBytes; ++i) weights[i] = static_cast<uint8_t>(i % 5);
  std::vector<double> ops(threads);
  std::vector<int32_t> sinks(threads);
  double best = 0;
  for (int run = 0; run < 7; ++run) {
    const double seconds = TimeOnThreads(threads, [&](int t) {
      ops[t] = Int8ChainsHere(size_t{4} << 20, weights.get(), &sinks[t]);
    });
    double total = 0;
    for (int t = 0; t < threads; ++t) total += ops[t], g_int_sink = sinks[t];
    if (total / seconds > best) best = total / seconds;
  }
  return best;
}

// Caches one measurement per thread count. Google Benchmark runs benchmarks one at a time, but a
// mutex keeps a concurrent caller from measuring twice (or reading a half-written map).
template <class Measure>
double Cached(std::map<int, double>* cache, std::mutex* mutex, int threads,
              const Measure& measure) {
  std::lock_guard<std::mutex> lock(*mutex);
  const auto it = cache->find(threads);
  if (it != cache->end()) return it->second;
  const double value = measure(threads);
  (*cache)[threads] = value;
  return value;
}

}  // namespace

double FmaPeakFlops() {
  static const double peak = MeasureFmaPeak();
  return peak;
}

double ReadBandwidth(int threads) {
  static std::map<int, double> cache;
  static std::mutex mutex;
  return Cached(&cache, &mutex, threads < 1 ? 1 : threads, MeasureReadBandwidth);
}

double Int8PeakOps(int threads) {
  static std::map<int, double> cache;
  static std::mutex mutex;
  return Cached(&cache, &mutex, threads < 1 ? 1 : threads, MeasureInt8Peak);
}

std::vector<int> PeakThreadCounts() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<int> counts;
  for (int t = 2; t < cores; t *= 2) counts.push_back(t);
  if (cores > 1) counts.push_back(cores);
  return counts;
}

}  // namespace kestrel::bench
#endif  // HWY_ONCE
