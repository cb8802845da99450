// Activation quantization (ops/quantize_rows.h), compiled for every Highway target.
#include "ops/quantize_rows.h"
#include "ops/targets.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/quantize_rows.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <cstring>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// factor: nullptr, or k per-channel multipliers applied to every row before it is quantized.
template <bool kScaled>
void QuantizeRowsQ8Body(const float* HWY_RESTRICT x, size_t n_rows, size_t k,
                        const float* HWY_RESTRICT factor, uint8_t* HWY_RESTRICT out) {
  // At most one block per vector, so every block is a whole number of vectors on every target
  // (SVE reaches 64 f32 lanes).
  const hn::CappedTag<float, 32> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  const size_t blocks = k / 32;
  for (size_t r = 0; r < n_rows; ++r) {
    const float* HWY_RESTRICT row = x + r * k;
    uint8_t* HWY_RESTRICT dst = out + r * Q8ActRowBytes(k);
    int8_t* HWY_RESTRICT q = reinterpret_cast<int8_t*>(dst);
    for (size_t b = 0; b < blocks; ++b) {
      const float* HWY_RESTRICT xb = row + b * 32;
      // The block's values, multiplied by their channels' factors when there are any.
      const auto load = [&](size_t i) {
        const auto v = hn::LoadU(df, xb + i);
        if constexpr (kScaled) return hn::Mul(v, hn::LoadU(df, factor + b * 32 + i));
        return v;
      };
      auto amax = hn::Zero(df);
      for (size_t i = 0; i < 32; i += N) amax = hn::Max(amax, hn::Abs(load(i)));
      const float scale = hn::GetLane(hn::MaxOfLanes(df, amax)) / 127.0f;
      const auto inv = hn::Set(df, scale != 0.0f ? 1.0f / scale : 0.0f);
      auto sum = hn::Zero(di);
      // Finite rows give quants in -127..127 already. The clamp is for rows with inf or NaN
      // (weights a model file may hold): inf * 0 and NaN convert to INT_MIN on x86, whose sums
      // would overflow int32 and whose -128 no kernel expects.
      const auto lo = hn::Set(di, -127), hi = hn::Set(di, 127);
      for (size_t i = 0; i < 32; i += N) {
        const auto qi =
            hn::Min(hn::Max(hn::NearestInt(hn::Mul(load(i), inv)), lo), hi);
        sum = hn::Add(sum, qi);
        hn::StoreU(hn::DemoteTo(d8, qi), d8, q + b * 32 + i);
      }
      const int32_t quant_sum = hn::GetLane(hn::SumOfLanes(di, sum));
      // memcpy: stores into the byte buffer without assuming its alignment.
      memcpy(dst + k + b * sizeof(float), &scale, sizeof(float));
      memcpy(dst + k + blocks * sizeof(float) + b * sizeof(int32_t), &quant_sum, sizeof(int32_t));
    }
  }
}

void QuantizeRowsQ8PerTarget(const float* HWY_RESTRICT x, size_t n_rows, size_t k,
                             uint8_t* HWY_RESTRICT out) {
  QuantizeRowsQ8Body<false>(x, n_rows, k, nullptr, out);
}

void QuantizeRowsQ8ScaledPerTarget(const float* HWY_RESTRICT x, size_t n_rows, size_t k,
                                   const float* HWY_RESTRICT factor, uint8_t* HWY_RESTRICT out) {
  QuantizeRowsQ8Body<true>(x, n_rows, k, factor, out);
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(QuantizeRowsQ8PerTarget);

void QuantizeRowsQ8(const float* x, size_t n_rows, size_t k, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(QuantizeRowsQ8PerTarget)(x, n_rows, k, out);
}

KESTREL_DEFINE_RESOLVE(QuantizeRowsQ8)

HWY_EXPORT(QuantizeRowsQ8ScaledPerTarget);

void QuantizeRowsQ8Scaled(const float* x, size_t n_rows, size_t k, const float* factor,
                          uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(QuantizeRowsQ8ScaledPerTarget)(x, n_rows, k, factor, out);
}

KESTREL_DEFINE_RESOLVE(QuantizeRowsQ8Scaled)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
