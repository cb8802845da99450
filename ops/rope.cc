// Rotary position embedding, compiled for every Highway target and dispatched at run time.
#include "ops/rope.h"
#include "ops/targets.h"

#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/rope.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "ops/simd_helpers-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rotates the pairs (head[i], head[i + half]) of one head by the angles whose cosines and sines
// are cos_t[i], sin_t[i]. head: [2 * half], cos_t, sin_t: [half].
template <class DF>
HWY_INLINE void RotateHead(DF df, float* HWY_RESTRICT head, const float* HWY_RESTRICT cos_t,
                           const float* HWY_RESTRICT sin_t, size_t half) {
  const size_t N = hn::Lanes(df);
  float* HWY_RESTRICT first = head;
  float* HWY_RESTRICT second = head + half;
  size_t i = 0;
  for (; i + N <= half; i += N) {
    const auto x0 = hn::LoadU(df, first + i);
    const auto x1 = hn::LoadU(df, second + i);
    const auto c = hn::LoadU(df, cos_t + i);
    const auto s = hn::LoadU(df, sin_t + i);
    hn::StoreU(hn::MulSub(x0, c, hn::Mul(x1, s)), df, first + i);
    hn::StoreU(hn::MulAdd(x0, s, hn::Mul(x1, c)), df, second + i);
  }
  if (i < half) {
    const size_t rest = half - i;
    const auto x0 = LoadPartialAsF32(df, first + i, rest);
    const auto x1 = LoadPartialAsF32(df, second + i, rest);
    const auto c = LoadPartialAsF32(df, cos_t + i, rest);
    const auto s = LoadPartialAsF32(df, sin_t + i, rest);
    StorePartial(df, hn::MulSub(x0, c, hn::Mul(x1, s)), first + i, rest);
    StorePartial(df, hn::MulAdd(x0, s, hn::Mul(x1, c)), second + i, rest);
  }
}

// Rotates the pairs (head[2i], head[2i + 1]). The pairs interleave, so a plain loop: RoPE is a
// few hundred multiplies per token, far below the matmuls around it.
HWY_INLINE void RotateHeadAdjacent(float* HWY_RESTRICT head, const float* HWY_RESTRICT cos_t,
                                   const float* HWY_RESTRICT sin_t, size_t half) {
  for (size_t i = 0; i < half; ++i) {
    const float a = head[2 * i], b = head[2 * i + 1];
    head[2 * i] = a * cos_t[i] - b * sin_t[i];
    head[2 * i + 1] = a * sin_t[i] + b * cos_t[i];
  }
}

// x: [n_tokens, n_heads * head_dim], rotated in place.
void RopePerTarget(float* HWY_RESTRICT x, size_t n_tokens, size_t n_heads, size_t head_dim,
                   int64_t pos0, const RopeFrequencies& f) {
  const size_t rotary = RotatedDims(f.rotary_dims, head_dim);
  HWY_DASSERT(head_dim % 2 == 0 && head_dim <= kRopeMaxHeadDim && pos0 >= 0);
  HWY_DASSERT(rotary % 2 == 0 && rotary <= head_dim);
  const hn::ScalableTag<float> df;
  const size_t half = rotary / 2;

  // Angles in double: positions times frequencies reach 1e5 radians, where float rounding of
  // the angle alone would cost about 4e-3 radians. Only cos/sin are rounded to float.
  double freq[kRopeMaxHeadDim / 2];  // freq_scale * theta_base^(-2i / rotary) / factor[i]
  for (size_t i = 0; i < half; ++i) {
    const double exponent = -2.0 * static_cast<double>(i) / static_cast<double>(rotary);
    freq[i] =
        static_cast<double>(f.freq_scale) * std::pow(static_cast<double>(f.theta_base), exponent);
    if (f.freq_factors != nullptr) freq[i] /= static_cast<double>(f.freq_factors[i]);
  }

  // cos/sin of position p come from cos/sin of the anchor a = p - p % kRopeAnchorInterval and
  // (p - a) rotations by freq (the angle-addition formulas), in double: 4 multiplies per angle
  // instead of a libm sincos for most tokens (3% of Gemma 3's prefill), with rounding of about
  // 1e-16 per rotation, far below the float results'. The values depend on p alone, never on
  // where a chunk or a thread's share of the tokens starts, so those splits stay bit-identical.
  constexpr int64_t kRopeAnchorInterval = 16;
  double cos_d[kRopeMaxHeadDim / 2], sin_d[kRopeMaxHeadDim / 2];
  double cos_step[kRopeMaxHeadDim / 2], sin_step[kRopeMaxHeadDim / 2];
  for (size_t i = 0; i < half; ++i) {
    cos_step[i] = std::cos(freq[i]);
    sin_step[i] = std::sin(freq[i]);
  }
  const auto rotate_once = [&]() {
    for (size_t i = 0; i < half; ++i) {
      const double c = cos_d[i] * cos_step[i] - sin_d[i] * sin_step[i];
      sin_d[i] = sin_d[i] * cos_step[i] + cos_d[i] * sin_step[i];
      cos_d[i] = c;
    }
  };
  HWY_ALIGN float cos_t[kRopeMaxHeadDim / 2];
  HWY_ALIGN float sin_t[kRopeMaxHeadDim / 2];
  for (size_t t = 0; t < n_tokens; ++t) {
    const int64_t pos = pos0 + static_cast<int64_t>(t);
    const int64_t from_anchor = pos % kRopeAnchorInterval;
    if (t == 0 || from_anchor == 0) {
      const double anchor = static_cast<double>(pos - from_anchor);
      for (size_t i = 0; i < half; ++i) {
        cos_d[i] = std::cos(anchor * freq[i]);
        sin_d[i] = std::sin(anchor * freq[i]);
      }
      for (int64_t r = 0; r < from_anchor; ++r) rotate_once();
    } else {
      rotate_once();
    }
    for (size_t i = 0; i < half; ++i) {
      cos_t[i] = static_cast<float>(cos_d[i] * f.magnitude);
      sin_t[i] = static_cast<float>(sin_d[i] * f.magnitude);
    }
    float* HWY_RESTRICT row = x + t * n_heads * head_dim;
    for (size_t h = 0; h < n_heads; ++h) {
      if (f.layout == RopeLayout::kAdjacent) {
        RotateHeadAdjacent(row + h * head_dim, cos_t, sin_t, half);
      } else {
        RotateHead(df, row + h * head_dim, cos_t, sin_t, half);
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(RopePerTarget);

void Rope(float* x, size_t n_tokens, size_t n_heads, size_t head_dim, int64_t pos0,
          const RopeFrequencies& freqs) {
  HWY_DYNAMIC_DISPATCH(RopePerTarget)(x, n_tokens, n_heads, head_dim, pos0, freqs);
}

KESTREL_DEFINE_RESOLVE(Rope)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
