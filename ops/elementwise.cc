// Element-wise activations and adds, compiled for every Highway target and dispatched at run time.
#include "ops/elementwise.h"
#include "ops/targets.h"

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

// silu(g) * up, silu(g) = g / (1 + exp(-g)); hn::Exp is within a few ulp of std::exp. hn::Exp
// is only valid up to about 88 (beyond, it returns garbage instead of +inf), so -g is clamped
// there: for g < -88 the result is g * 6e-39 instead of nearly 0, a difference below 1e-33
// even at g = -1e5.
template <class DF, class V = hn::Vec<DF>>
HWY_INLINE V SiluTimes(DF df, V g, V up) {
  const V neg_g = hn::Min(hn::Neg(g), hn::Set(df, 88.0f));
  const V silu = hn::Div(g, hn::Add(hn::Set(df, 1.0f), hn::Exp(df, neg_g)));
  return hn::Mul(silu, up);
}

// out[i] = combine(a[i], b[i]) for a, b, out: [n]. out may alias a or b: each element is read
// before it is written.
template <class Combine>
HWY_INLINE void Elementwise(const float* a, const float* b, float* out, size_t n,
                            Combine combine) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(combine(df, hn::LoadU(df, a + i), hn::LoadU(df, b + i)), df, out + i);
  }
  if (i < n) {
    const size_t rest = n - i;
    const auto v = combine(df, LoadPartialAsF32(df, a + i, rest), LoadPartialAsF32(df, b + i, rest));
    StorePartial(df, v, out + i, rest);
  }
}

void GeluTanhMulPerTarget(const float* gate, const float* up, float* out, size_t n) {
  Elementwise(gate, up, out, n, [](auto df, auto g, auto u) { return GeluTanhTimes(df, g, u); });
}

void SiluMulPerTarget(const float* gate, const float* up, float* out, size_t n) {
  Elementwise(gate, up, out, n, [](auto df, auto g, auto u) { return SiluTimes(df, g, u); });
}

void AddPerTarget(const float* a, const float* b, float* out, size_t n) {
  Elementwise(a, b, out, n, [](auto, auto x, auto y) { return hn::Add(x, y); });
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(GeluTanhMulPerTarget);
HWY_EXPORT(SiluMulPerTarget);
HWY_EXPORT(AddPerTarget);

void GeluTanhMul(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(GeluTanhMulPerTarget)(gate, up, out, n);
}
void SiluMul(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMulPerTarget)(gate, up, out, n);
}
void Add(const float* a, const float* b, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(AddPerTarget)(a, b, out, n);
}

KESTREL_DEFINE_RESOLVE(GeluTanhMul)
KESTREL_DEFINE_RESOLVE(SiluMul)
KESTREL_DEFINE_RESOLVE(Add)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
