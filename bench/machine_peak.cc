#include "bench/machine_peak.h"

#include <chrono>
#include <cstddef>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/machine_peak.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

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
  const auto sum = hn::Add(hn::Add(hn::Add(hn::Add(v0, v1), hn::Add(v2, v3)),
                                   hn::Add(hn::Add(v4, v5), hn::Add(v6, v7))),
                           hn::Add(v8, v9));
  *sink = hn::GetLane(hn::SumOfLanes(d, sum));
  return 2.0 * 10 * hn::Lanes(d) * static_cast<double>(iterations);
}

// Sums `bytes` bytes of floats with four accumulators; returns the sum.
float SumBuffer(const float* data, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    s0 = hn::Add(s0, hn::Load(d, data + i));
    s1 = hn::Add(s1, hn::Load(d, data + i + N));
    s2 = hn::Add(s2, hn::Load(d, data + i + 2 * N));
    s3 = hn::Add(s3, hn::Load(d, data + i + 3 * N));
  }
  float total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) total += data[i];
  return total;
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace kestrel::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::bench {

HWY_EXPORT(FmaChains);
HWY_EXPORT(SumBuffer);

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

volatile float g_sink;

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

double MeasureReadBandwidth() {
  const size_t n = (size_t{512} << 20) / sizeof(float);  // 512 MiB: far beyond any L3
  auto buffer = hwy::AllocateAligned<float>(n);
  for (size_t i = 0; i < n; ++i) buffer[i] = 1.0f;  // touch every page before timing
  double best = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const Clock::time_point start = Clock::now();
    g_sink = HWY_DYNAMIC_DISPATCH(SumBuffer)(buffer.get(), n);
    const double rate = n * sizeof(float) / SecondsSince(start);
    if (rate > best) best = rate;
  }
  return best;
}

}  // namespace

double FmaPeakFlops() {
  static const double peak = MeasureFmaPeak();
  return peak;
}

double ReadBandwidth() {
  static const double bandwidth = MeasureReadBandwidth();
  return bandwidth;
}

}  // namespace kestrel::bench
#endif  // HWY_ONCE
