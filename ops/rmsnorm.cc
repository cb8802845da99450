// RMSNorm, compiled for every Highway target and dispatched at run time.
#include "ops/rmsnorm.h"
#include "ops/targets.h"

#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/rmsnorm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "ops/simd_helpers-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// x, y: [n_rows, dim] (y may equal x, hence no HWY_RESTRICT on them), gamma: [dim].
void RmsNormPerTarget(const float* x, const float* HWY_RESTRICT gamma, float* y, size_t n_rows,
                      size_t dim, float eps) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  for (size_t r = 0; r < n_rows; ++r) {
    const float* row = x + r * dim;
    float* out = y + r * dim;
    const float mean_square = SumOfSquares(df, row, dim) / static_cast<float>(dim);
    const auto inv_rms = hn::Set(df, 1.0f / std::sqrt(mean_square + eps));
    // Every element is read before the same element is written, so y == x is safe.
    size_t i = 0;
    for (; i + N <= dim; i += N) {
      const auto v = hn::Mul(hn::LoadU(df, row + i), inv_rms);
      hn::StoreU(hn::Mul(v, hn::LoadU(df, gamma + i)), df, out + i);
    }
    if (i < dim) {
      const size_t rest = dim - i;
      const auto v = hn::Mul(LoadPartialAsF32(df, row + i, rest), inv_rms);
      StorePartial(df, hn::Mul(v, LoadPartialAsF32(df, gamma + i, rest)), out + i, rest);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(RmsNormPerTarget);

void RmsNorm(const float* x, const float* gamma, float* y, size_t n_rows, size_t dim, float eps) {
  HWY_DYNAMIC_DISPATCH(RmsNormPerTarget)(x, gamma, y, n_rows, dim, eps);
}

KESTREL_DEFINE_RESOLVE(RmsNorm)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
