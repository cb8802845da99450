// Argmax, compiled for every Highway target and dispatched at run time. Two passes: the maximum
// (four independent vector maxima), then the first position holding it. Over Gemma 3's 262,144
// logits the scalar loop, one compare and branch per value, took 1.7% of a decode step.
#include "ops/argmax.h"
#include "ops/targets.h"

#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/argmax.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

size_t ArgmaxPerTarget(const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const auto lowest = hn::Set(df, -std::numeric_limits<float>::infinity());
  // NaN lanes become -inf, so that they never win whatever the target's Max does with NaN.
  const auto load = [&](size_t i) {
    const auto v = hn::LoadU(df, x + i);
    return hn::IfThenElse(hn::Eq(v, v), v, lowest);
  };
  auto m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    m0 = hn::Max(m0, load(i));
    m1 = hn::Max(m1, load(i + N));
    m2 = hn::Max(m2, load(i + 2 * N));
    m3 = hn::Max(m3, load(i + 3 * N));
  }
  for (; i + N <= n; i += N) m0 = hn::Max(m0, load(i));
  float best = hn::GetLane(hn::MaxOfLanes(df, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
  for (; i < n; ++i) {
    if (x[i] > best) best = x[i];
  }
  const auto target = hn::Set(df, best);
  for (i = 0; i + N <= n; i += N) {
    if (!hn::AllFalse(df, hn::Eq(hn::LoadU(df, x + i), target))) break;
  }
  for (; i < n; ++i) {
    if (x[i] == best) return i;
  }
  return 0;  // every value NaN
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(ArgmaxPerTarget);

size_t Argmax(const float* x, size_t n) { return HWY_DYNAMIC_DISPATCH(ArgmaxPerTarget)(x, n); }

KESTREL_DEFINE_RESOLVE(Argmax)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
