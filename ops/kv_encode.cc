// KV-cache row encoders (ops/kv_encode.h), compiled for every Highway target.
#include "ops/kv_encode.h"
#include "ops/kv_layout.h"
#include "ops/targets.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/kv_encode.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// x rounded to 11 significant bits, ties to even, in f32: Highway 1.0.3's DemoteTo to f16
// truncates on targets without a conversion instruction (SSE4 and older x86, Armv7), and then
// truncates an exactly representable value, so every target rounds to nearest. (f16 subnormals,
// below 6.1e-5, still lose their low bits by truncation.)
template <class D>
HWY_INLINE hn::Vec<D> RoundToHalfPrecision(D df, hn::Vec<D> x) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, x);
  const auto odd = hn::And(hn::ShiftRight<13>(bits), hn::Set(du, 1u));
  const auto rounded = hn::Add(bits, hn::Add(hn::Set(du, 0xFFFu), odd));
  return hn::BitCast(df, hn::And(rounded, hn::Set(du, ~0x1FFFu)));
}

void KvEncodeF16PerTarget(const float* HWY_RESTRICT x, size_t n, hwy::float16_t* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::DemoteTo(dh, RoundToHalfPrecision(df, hn::LoadU(df, x + i))), dh, out + i);
  }
  // The tail one lane at a time, through the same conversion (no scalar f16 type to rely on).
  const hn::CappedTag<float, 1> d1;
  const hn::Rebind<hwy::float16_t, decltype(d1)> dh1;
  for (; i < n; ++i) {
    hn::StoreU(hn::DemoteTo(dh1, RoundToHalfPrecision(d1, hn::LoadU(d1, x + i))), dh1, out + i);
  }
}

void KvEncodeInt8PerTarget(const float* HWY_RESTRICT x, size_t n, int8_t* HWY_RESTRICT q,
                           float* HWY_RESTRICT scales) {
  // At most one block per vector, so every block is a whole number of vectors on every target.
  const hn::CappedTag<float, kKvInt8Block> df;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  for (size_t b = 0; b < n / kKvInt8Block; ++b) {
    const float* HWY_RESTRICT xb = x + b * kKvInt8Block;
    auto amax = hn::Zero(df);
    for (size_t i = 0; i < kKvInt8Block; i += N) {
      amax = hn::Max(amax, hn::Abs(hn::LoadU(df, xb + i)));
    }
    const float scale = hn::GetLane(hn::MaxOfLanes(df, amax)) / 127.0f;
    const auto inv = hn::Set(df, scale != 0.0f ? 1.0f / scale : 0.0f);
    for (size_t i = 0; i < kKvInt8Block; i += N) {
      const auto qi = hn::NearestInt(hn::Mul(hn::LoadU(df, xb + i), inv));
      hn::StoreU(hn::DemoteTo(d8, qi), d8, q + b * kKvInt8Block + i);
    }
    scales[b] = scale;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(KvEncodeF16PerTarget);
HWY_EXPORT(KvEncodeInt8PerTarget);

void KvEncodeF16(const float* x, size_t n, hwy::float16_t* out) {
  HWY_DYNAMIC_DISPATCH(KvEncodeF16PerTarget)(x, n, out);
}

void KvEncodeInt8(const float* x, size_t n, int8_t* q, float* scales) {
  HWY_DYNAMIC_DISPATCH(KvEncodeInt8PerTarget)(x, n, q, scales);
}

KESTREL_DEFINE_RESOLVE(KvEncodeF16)
KESTREL_DEFINE_RESOLVE(KvEncodeInt8)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
