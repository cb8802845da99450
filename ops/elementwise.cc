// Element-wise activations and adds, compiled for every Highway target and dispatched at run time.
#include "ops/elementwise.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/elementwise.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "ops/dispatch.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// gelu_tanh(g) * up. hn::Tanh is within a few ulp of std::tanh; the formula's own cancellation in
// 1 + tanh(z) for very negative g is the same as in the scalar definition.
template <class DF, class V = hn::Vec<DF>>
HWY_INLINE V GeluTanhTimes(DF df, V g, V up) {
  const V kSqrt2OverPi = hn::Set(df, 0.7978845608028654f);
  const V kCubic = hn::Set(df, 0.044715f);
  const V kHalf = hn::Set(df, 0.5f);
  const V kOne = hn::Set(df, 1.0f);
  const V g3 = hn::Mul(hn::Mul(g, g), g);
  const V z = hn::Mul(kSqrt2OverPi, hn::MulAdd(kCubic, g3, g));
  const V gelu = hn::Mul(hn::Mul(kHalf, g), hn::Add(kOne, hn::Tanh(df, z)));
  return hn::Mul(gelu, up);
}

// gate, up, out: [n]. out may alias gate or up: each element is read before it is written.
void GeluTanhMulPerTarget(const float* gate, const float* up, float* out, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(GeluTanhTimes(df, hn::LoadU(df, gate + i), hn::LoadU(df, up + i)), df, out + i);
  }
  if (i < n) {
    const size_t rest = n - i;
    const auto v = GeluTanhTimes(df, LoadPartialAsF32(df, gate + i, rest),
                                 LoadPartialAsF32(df, up + i, rest));
    StorePartial(df, v, out + i, rest);
  }
}

// a, b, out: [n]. out may alias a or b.
void AddPerTarget(const float* a, const float* b, float* out, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::Add(hn::LoadU(df, a + i), hn::LoadU(df, b + i)), df, out + i);
  }
  if (i < n) {
    const size_t rest = n - i;
    const auto sum = hn::Add(LoadPartialAsF32(df, a + i, rest), LoadPartialAsF32(df, b + i, rest));
    StorePartial(df, sum, out + i, rest);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(GeluTanhMulPerTarget);
HWY_EXPORT(AddPerTarget);

void GeluTanhMul(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(GeluTanhMulPerTarget)(gate, up, out, n);
}
void Add(const float* a, const float* b, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(AddPerTarget)(a, b, out, n);
}

}  // namespace kestrel::ops
#endif  // HWY_ONCE
