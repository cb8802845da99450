// Sequence pooling, compiled for every Highway target and dispatched at run time. The rows are
// folded into out one at a time (out += row, or out = max(out, row)), so each row is read once,
// in order, whatever the sequence length.
#include "ops/pool.h"
#include "ops/targets.h"

#include <cmath>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/pool.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "ops/simd_helpers-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kestrel::ops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out = row 0, then out = combine(out, row r) for each further row.
template <class Combine>
HWY_INLINE void FoldRows(const float* HWY_RESTRICT rows, size_t n_rows, size_t dim,
                         float* HWY_RESTRICT out, Combine combine) {
  memcpy(out, rows, dim * sizeof(float));
  for (size_t r = 1; r < n_rows; ++r) MapVectors(out, dim, combine, out, rows + r * dim);
}

// out *= scale.
HWY_INLINE void Scale(float* HWY_RESTRICT out, size_t dim, float scale) {
  MapVectors(
      out, dim, [scale](auto df, auto v) { return hn::Mul(v, hn::Set(df, scale)); }, out);
}

// rows: [n_rows, dim], out: [dim].
void PoolRowsPerTarget(const float* HWY_RESTRICT rows, size_t n_rows, size_t dim, PoolMode mode,
                       bool l2_normalize, float* HWY_RESTRICT out) {
  if (n_rows == 0) {
    memset(out, 0, dim * sizeof(float));
    return;
  }
  switch (mode) {
    case PoolMode::kMean:
      FoldRows(rows, n_rows, dim, out, [](auto, auto a, auto b) { return hn::Add(a, b); });
      if (n_rows > 1) Scale(out, dim, 1.0f / static_cast<float>(n_rows));
      break;
    case PoolMode::kCls: memcpy(out, rows, dim * sizeof(float)); break;
    case PoolMode::kLast: memcpy(out, rows + (n_rows - 1) * dim, dim * sizeof(float)); break;
    case PoolMode::kMax:
      FoldRows(rows, n_rows, dim, out, [](auto, auto a, auto b) { return hn::Max(a, b); });
      break;
  }
  if (l2_normalize) {
    const hn::ScalableTag<float> df;
    const float norm = std::sqrt(SumOfSquares(df, out, dim));
    Scale(out, dim, 1.0f / std::fmax(norm, 1e-12f));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kestrel::ops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kestrel::ops {

HWY_EXPORT(PoolRowsPerTarget);

void PoolRows(const float* rows, size_t n_rows, size_t dim, PoolMode mode, bool l2_normalize,
              float* out) {
  HWY_DYNAMIC_DISPATCH(PoolRowsPerTarget)(rows, n_rows, dim, mode, l2_normalize, out);
}

KESTREL_DEFINE_RESOLVE(PoolRows)

}  // namespace kestrel::ops
#endif  // HWY_ONCE
