// 2^x for x <= 0, cheaper than hn::Exp, for exponentials whose argument the caller can scale by
// log2(e) for free or nearly: the softmax of ops/sequence_attention.cc, exp(s - max) =
// 2^((s - max) log2 e), the product taken after the difference; and erf's tail in
// ops/elementwise.cc, 1 - exp(q(|x|)). x = n + r with n = round(x) and |r| <= 1/2; 2^r is a
// degree-6 polynomial (relative weighted least squares with Lawson iterations, fitted for f32
// Horner evaluation: relative error within 7.9e-8 over [-1/2, 1/2]), and n is added to its
// exponent bits. About 11 vector operations where hn::Exp takes about 20, which the attention's
// softmax and GELU both show, at the same accuracy (tests/ops_sequence_attention_test.cc,
// ops_gelu_test.cc; figures: docs/kernels.md).
//
// Include after hwy/highway.h from a file compiled per target (foreach_target.h): the toggle
// guard below lets each target's pass re-include this file.

#if defined(KESTREL_OPS_EXP2_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KESTREL_OPS_EXP2_INL_H_
#undef KESTREL_OPS_EXP2_INL_H_
#else
#define KESTREL_OPS_EXP2_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Arguments below this give 2^kExp2Lowest (about 2.4e-38, the last power of two whose product
// with the polynomial's minimum 2^-1/2 stays a normal float) instead of a smaller value or 0:
// negligible beside the softmax's maximal term 1. x <= 0; NaN gives an unspecified value.
inline constexpr float kExp2Lowest = -125.0f;

template <class DF, class V = hn::Vec<DF>>
HWY_INLINE V Exp2NonPositive(DF df, V x) {
  const hn::RebindToSigned<DF> di;
  x = hn::Max(x, hn::Set(df, kExp2Lowest));
  // Adding 1.5 * 2^23 rounds x to an integer n (to nearest, ties to even, as hn::Round) held in
  // the low mantissa bits of `shifted`, so n's exponent field is those bits shifted by 23: the
  // sum's own exponent and leading bit leave the 32 bits. hn::ConvertTo would take 5
  // instructions on AVX-512 (its overflow fix-up), a quarter of this function.
  const V magic = hn::Set(df, 12582912.0f);
  const V shifted = hn::Add(x, magic);
  const V n = hn::Sub(shifted, magic);
  const V r = hn::Sub(x, n);  // exact: |r| <= 1/2
  V p = hn::Set(df, 0.00015345806605182588f);
  p = hn::MulAdd(p, r, hn::Set(df, 0.0013399932067841291f));
  p = hn::MulAdd(p, r, hn::Set(df, 0.009618489071726799f));
  p = hn::MulAdd(p, r, hn::Set(df, 0.05550328642129898f));
  p = hn::MulAdd(p, r, hn::Set(df, 0.24022646248340607f));
  p = hn::MulAdd(p, r, hn::Set(df, 0.6931471824645996f));
  p = hn::MulAdd(p, r, hn::Set(df, 1.0f));
  // p is in [2^-1/2, 2^1/2] and n >= -125: adding n to the exponent field keeps it normal.
  const auto exponent = hn::ShiftLeft<23>(hn::BitCast(di, shifted));
  return hn::BitCast(df, hn::Add(hn::BitCast(di, p), exponent));
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#endif  // KESTREL_OPS_EXP2_INL_H_
