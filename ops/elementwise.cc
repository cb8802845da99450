// Element-wise activations and adds, compiled for every Highway target and dispatched at run time.
#include "ops/elementwise.h"
#include "ops/targets.h"

#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/elementwise.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "ops/simd_helpers-inl.h"
#include "ops/exp2-inl.h"

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

// erf(x) to within about 1e-7 absolute (measured in tests/ops_gelu_test.cc), from two
// approximations fitted for f32 evaluation (weighted least squares, Lawson iterations):
// - |x| < 0.921875: erf(x) = x + x p(x^2), p of degree 6. Written as a correction to x so that
//   tiny x keep full relative accuracy;
// - |x| >= 0.921875: erf(|x|) = 1 - exp(q(|x|)), q of degree 6 fitting log(erfc). Subtracting
//   a small erfc from 1 keeps the result within about an ulp of 1, which a single rational
//   x P(x^2) / Q(x^2) over the whole range (Eigen's, XNNPACK's) misses by several ulp in f32.
//   Beyond |x| = 4, erfc < 1.6e-8 and f32 erf is exactly +-1: |x| is clamped there.
// Both branches are computed and one selected per lane. NaN inputs give an unspecified value:
// callers that must propagate NaN select x back in (the GELU's final product does so itself).
template <class DF, class V = hn::Vec<DF>>
HWY_INLINE V ErfVec(DF df, V x) {
  const V x2 = hn::Mul(x, x);
  V p = hn::Set(df, 8.16115789e-05f);
  p = hn::MulAdd(p, x2, hn::Set(df, -0.000808478566f));
  p = hn::MulAdd(p, x2, hn::Set(df, 0.00519484887f));
  p = hn::MulAdd(p, x2, hn::Set(df, -0.0268562231f));
  p = hn::MulAdd(p, x2, hn::Set(df, 0.11283616f));
  p = hn::MulAdd(p, x2, hn::Set(df, -0.37612626f));
  p = hn::MulAdd(p, x2, hn::Set(df, 0.128379166f));  // 2/sqrt(pi) - 1
  const V near_zero = hn::MulAdd(p, x, x);

  const V a = hn::Min(hn::Abs(x), hn::Set(df, 4.0f));
  V q = hn::Set(df, 0.000194919267f);
  q = hn::MulAdd(q, a, hn::Set(df, -0.00303376163f));
  q = hn::MulAdd(q, a, hn::Set(df, 0.0221912172f));
  q = hn::MulAdd(q, a, hn::Set(df, -0.103861421f));
  q = hn::MulAdd(q, a, hn::Set(df, -0.637258053f));
  q = hn::MulAdd(q, a, hn::Set(df, -1.12763298f));
  q = hn::MulAdd(q, a, hn::Set(df, -0.000205469318f));
  // exp(q) as 2^(q log2 e) (ops/exp2-inl.h: half of hn::Exp's work; q < 0 here).
  const V erfc = Exp2NonPositive(df, hn::Mul(q, hn::Set(df, 1.4426950408889634f)));
  const V far = hn::CopySign(hn::Sub(hn::Set(df, 1.0f), erfc), x);

  return hn::IfThenElse(hn::Lt(hn::Abs(x), hn::Set(df, 0.921875f)), near_zero, far);
}

// gelu_erf(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), as 0.5x + 0.5x erf in one fused
// multiply-add, so that 1 + erf is never rounded on its own. Its limit 0 at x = -inf is returned
// explicitly (the formula gives -inf * 0 = NaN); NaN stays NaN through the product with x.
template <class DF, class V = hn::Vec<DF>>
HWY_INLINE V GeluErfVec(DF df, V x) {
  const V half_x = hn::Mul(x, hn::Set(df, 0.5f));
  const V erf = ErfVec(df, hn::Mul(x, hn::Set(df, 0.70710678118654752f)));
  const V gelu = hn::MulAdd(half_x, erf, half_x);
  return hn::IfThenZeroElse(hn::Eq(x, hn::Set(df, -HUGE_VALF)), gelu);
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

void GeluTanhMulPerTarget(const float* gate, const float* up, float* out, size_t n) {
  MapVectors(
      out, n, [](auto df, auto g, auto u) { return GeluTanhTimes(df, g, u); }, gate, up);
}

void SiluMulPerTarget(const float* gate, const float* up, float* out, size_t n) {
  MapVectors(
      out, n, [](auto df, auto g, auto u) { return SiluTimes(df, g, u); }, gate, up);
}

void ErfPerTarget(const float* in, float* out, size_t n) {
  MapVectors(
      out, n, [](auto df, auto x) { return hn::IfThenElse(hn::IsNaN(x), x, ErfVec(df, x)); }, in);
}

void GeluErfPerTarget(const float* in, float* out, size_t n) {
  MapVectors(
      out, n, [](auto df, auto x) { return GeluErfVec(df, x); }, in);
}

void GeluErfMulPerTarget(const float* gate, const float* up, float* out, size_t n) {
  MapVectors(
      out, n, [](auto df, auto g, auto u) { return hn::Mul(GeluErfVec(df, g), u); }, gate, up);
}

void SoftCapPerTarget(const float* in, float* out, size_t n, float cap) {
  MapVectors(
      out, n,
      [cap](auto df, auto x) {
        return hn::Mul(hn::Tanh(df, hn::Mul(x, hn::Set(df, 1.0f / cap))), hn::Set(df, cap));
      },
      in);
}

void AddPerTarget(const float* a, const float* b, float* out, size_t n) {
  MapVectors(
      out, n, [](auto, auto x, auto y) { return hn::Add(x, y); }, a, b);
}

// One row of a matmul epilogue: y = act(y + bias) + residual, bias and residual optional.
template <bool kGelu>
HWY_INLINE void EpilogueRow(float* y, const float* bias, const float* residual, size_t n) {
  const auto act = [](auto df, auto x) {
    if constexpr (kGelu) {
      return GeluErfVec(df, x);
    } else {
      (void)df;
      return x;
    }
  };
  if (bias != nullptr && residual != nullptr) {
    MapVectors(
        y, n, [&](auto df, auto x, auto b, auto r) { return hn::Add(act(df, hn::Add(x, b)), r); },
        y, bias, residual);
  } else if (bias != nullptr) {
    MapVectors(
        y, n, [&](auto df, auto x, auto b) { return act(df, hn::Add(x, b)); }, y, bias);
  } else if (residual != nullptr) {
    MapVectors(
        y, n, [&](auto df, auto x, auto r) { return hn::Add(act(df, x), r); }, y, residual);
  } else {
    MapVectors(
        y, n, [&](auto df, auto x) { return act(df, x); }, y);
  }
}

void AddBiasRowsPerTarget(float* y, size_t stride, size_t rows, const float* bias,
                          const float* residual, size_t n) {
  for (size_t t = 0; t < rows; ++t) {
    EpilogueRow<false>(y + t * stride, bias, residual ? residual + t * stride : nullptr, n);
  }
}

void BiasGeluErfRowsPerTarget(float* y, size_t stride, size_t rows, const float* bias,
                              const float* residual, size_t n) {
  for (size_t t = 0; t < rows; ++t) {
    EpilogueRow<true>(y + t * stride, bias, residual ? residual + t * stride : nullptr, n);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(GeluTanhMulPerTarget);
HWY_EXPORT(SiluMulPerTarget);
HWY_EXPORT(ErfPerTarget);
HWY_EXPORT(GeluErfPerTarget);
HWY_EXPORT(GeluErfMulPerTarget);
HWY_EXPORT(SoftCapPerTarget);
HWY_EXPORT(AddPerTarget);
HWY_EXPORT(AddBiasRowsPerTarget);
HWY_EXPORT(BiasGeluErfRowsPerTarget);

void GeluTanhMul(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(GeluTanhMulPerTarget)(gate, up, out, n);
}
void SiluMul(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMulPerTarget)(gate, up, out, n);
}
void Erf(const float* in, float* out, size_t n) { HWY_DYNAMIC_DISPATCH(ErfPerTarget)(in, out, n); }
void GeluErf(const float* in, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(GeluErfPerTarget)(in, out, n);
}
void GeluErfMul(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(GeluErfMulPerTarget)(gate, up, out, n);
}
void SoftCap(const float* in, float* out, size_t n, float cap) {
  HWY_DYNAMIC_DISPATCH(SoftCapPerTarget)(in, out, n, cap);
}
void Add(const float* a, const float* b, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(AddPerTarget)(a, b, out, n);
}
void AddBiasRows(float* y, size_t stride, size_t rows, const float* bias, const float* residual,
                 size_t n) {
  HWY_DYNAMIC_DISPATCH(AddBiasRowsPerTarget)(y, stride, rows, bias, residual, n);
}
void BiasGeluErfRows(float* y, size_t stride, size_t rows, const float* bias, const float* residual,
                     size_t n) {
  HWY_DYNAMIC_DISPATCH(BiasGeluErfRowsPerTarget)(y, stride, rows, bias, residual, n);
}

KESTREL_DEFINE_RESOLVE(GeluTanhMul)
KESTREL_DEFINE_RESOLVE(SiluMul)
KESTREL_DEFINE_RESOLVE(GeluErf)
KESTREL_DEFINE_RESOLVE(SoftCap)
KESTREL_DEFINE_RESOLVE(Add)
KESTREL_DEFINE_RESOLVE(AddBiasRows)
KESTREL_DEFINE_RESOLVE(BiasGeluErfRows)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
