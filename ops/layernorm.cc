// LayerNorm, compiled for every Highway target and dispatched at run time.
//
// Per row, the corrected two-pass algorithm (Chan, Golub & LeVeque 1983): m = sum(x) / dim in
// f32, then d = x - m with sum(d) and sum(d^2). m is off from the true mean by its own rounding,
// which for rows like 1000 + noise is comparable to the noise; c = sum(d) / dim measures that
// error (d is exact there: x and m are within a factor of 2 of each other) and the output
// subtracts it, so the result is as accurate as if the mean had been exact. var = sum(d^2) / dim
// - c^2 never cancels: c is the small rounding error of m.
#include "ops/layernorm.h"
#include "ops/targets.h"

#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/layernorm.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "ops/simd_helpers-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

struct Deviations {
  float sum;             // sum(x - m)
  float sum_of_squares;  // sum((x - m)^2)
};

// Sums of d = x[i] - m and of d^2 over x: [n]. The tail's padding lanes are masked out (there
// d would be -m, not 0).
template <class DF>
HWY_INLINE Deviations SumDeviations(DF df, const float* HWY_RESTRICT x, size_t n, float m) {
  const size_t N = hn::Lanes(df);
  const auto vm = hn::Set(df, m);
  auto sum = hn::Zero(df);
  auto sum_sq = hn::Zero(df);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto d = hn::Sub(hn::LoadU(df, x + i), vm);
    sum = hn::Add(sum, d);
    sum_sq = hn::MulAdd(d, d, sum_sq);
  }
  if (i < n) {
    const auto d =
        hn::IfThenElseZero(hn::FirstN(df, n - i), hn::Sub(LoadPartialAsF32(df, x + i, n - i), vm));
    sum = hn::Add(sum, d);
    sum_sq = hn::MulAdd(d, d, sum_sq);
  }
  return {ReduceSum(df, sum), ReduceSum(df, sum_sq)};
}

// in, out: [n_rows, dim] (out may equal in, hence no HWY_RESTRICT on them); gamma, beta: [dim].
void LayerNormPerTarget(const float* in, float* out, const float* HWY_RESTRICT gamma,
                        const float* HWY_RESTRICT beta, size_t n_rows, size_t dim, float eps) {
  if (dim == 0) return;
  const hn::ScalableTag<float> df;
  // Divisions rather than products with 1/dim: a constant row of small integers or of dyadic
  // values then gets m exactly, d = 0, and outputs exactly beta even with BERT's eps of 1e-12.
  const float fdim = static_cast<float>(dim);
  for (size_t r = 0; r < n_rows; ++r) {
    const float* x = in + r * dim;
    const float m = Reduce(df, x, dim, [](auto acc, auto v) { return hn::Add(acc, v); }) / fdim;
    const Deviations dev = SumDeviations(df, x, dim, m);
    const float c = dev.sum / fdim;  // true mean - m, up to roundings
    const float var = std::fmax(dev.sum_of_squares / fdim - c * c, 0.0f);
    const float inv_std = 1.0f / std::sqrt(var + eps);
    // Every element of the row is read before it is written, so out == in is safe. Scalars, not
    // vectors, are captured: SVE vectors are sizeless and cannot live in a closure.
    MapVectors(
        out + r * dim, dim,
        [m, c, inv_std](auto df, auto v, auto g, auto b) {
          const auto d = hn::Sub(hn::Sub(v, hn::Set(df, m)), hn::Set(df, c));
          return hn::MulAdd(hn::Mul(d, hn::Set(df, inv_std)), g, b);
        },
        x, gamma, beta);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(LayerNormPerTarget);

void LayerNorm(const float* in, float* out, const float* gamma, const float* beta, size_t n_rows,
               size_t dim, float eps) {
  HWY_DYNAMIC_DISPATCH(LayerNormPerTarget)(in, out, gamma, beta, n_rows, dim, eps);
}

KESTREL_DEFINE_RESOLVE(LayerNorm)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
