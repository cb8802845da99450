// PoolRows against double-precision references on every Highway target.
#include "ops/pool.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

using test::ForEachTarget;
using test::Gamma;
using test::kSentinel;
using test::kU;

// The pooled vector before normalization, and per element the bound of the kernel's error on it.
struct Pooled {
  std::vector<double> value, bound;
};

Pooled PoolReference(const std::vector<float>& rows, size_t n_rows, size_t dim, PoolMode mode) {
  Pooled p{std::vector<double>(dim, 0.0), std::vector<double>(dim, 0.0)};
  if (n_rows == 0) return p;
  for (size_t i = 0; i < dim; ++i) {
    const auto at = [&](size_t r) { return double{rows[r * dim + i]}; };
    switch (mode) {
      case PoolMode::kMean: {
        double sum = 0, sum_abs = 0;
        for (size_t r = 0; r < n_rows; ++r) {
          sum += at(r);
          sum_abs += std::fabs(at(r));
        }
        p.value[i] = sum / n_rows;
        // n_rows - 1 additions, the rounded 1/n_rows and the product: Gamma(n_rows + 1).
        p.bound[i] = Gamma(n_rows + 1) * sum_abs / n_rows;
        break;
      }
      case PoolMode::kCls: p.value[i] = at(0); break;
      case PoolMode::kLast: p.value[i] = at(n_rows - 1); break;
      case PoolMode::kMax:
        p.value[i] = at(0);
        for (size_t r = 1; r < n_rows; ++r) p.value[i] = std::max(p.value[i], at(r));
        break;
    }
  }
  return p;
}

// Propagates the pooled vector's error e through v / max(||v||, 1e-12): an element moves by at
// most e_i / ||v|| + |u_i| ||e|| / ||v|| (to first order, hence the 1.01), and the kernel's own
// sum of squares (Gamma(dim + 1), halved by sqrt), sqrt, reciprocal and product add to |u_i|.
Pooled Normalize(const Pooled& p, size_t dim) {
  double norm2 = 0, err2 = 0;
  for (size_t i = 0; i < dim; ++i) {
    norm2 += p.value[i] * p.value[i];
    err2 += p.bound[i] * p.bound[i];
  }
  const double norm = std::max(std::sqrt(norm2), 1e-12);
  const double rel = std::sqrt(err2) / norm + 0.5 * Gamma(dim + 1) + 4 * kU;
  Pooled n{std::vector<double>(dim), std::vector<double>(dim)};
  for (size_t i = 0; i < dim; ++i) {
    n.value[i] = p.value[i] / norm;
    n.bound[i] = 1.01 * (p.bound[i] / norm + std::fabs(n.value[i]) * rel);
  }
  return n;
}

constexpr PoolMode kModes[] = {PoolMode::kMean, PoolMode::kCls, PoolMode::kMax, PoolMode::kLast};

void CheckPool(const std::vector<float>& rows, size_t n_rows, size_t dim, PoolMode mode,
               bool l2_normalize) {
  Pooled want = PoolReference(rows, n_rows, dim, mode);
  if (l2_normalize) want = Normalize(want, dim);
  std::vector<float> out(dim + 16, kSentinel);
  PoolRows(rows.data(), n_rows, dim, mode, l2_normalize, out.data());
  for (size_t i = 0; i < dim; ++i) {
    ASSERT_LE(std::fabs(out[i] - want.value[i]), want.bound[i])
        << "out[" << i << "] got " << out[i] << " want " << want.value[i] << "; mode "
        << static_cast<int>(mode) << " n_rows " << n_rows << " dim " << dim << " normalize "
        << l2_normalize;
  }
  for (size_t i = dim; i < out.size(); ++i) ASSERT_EQ(out[i], kSentinel) << "dim " << dim;
}

TEST(OpsPool, EveryModeMatchesReference) {
  std::mt19937 rng(41);
  ForEachTarget([&](const char*) {
    for (size_t dim : {1, 3, 17, 33, 384, 385}) {
      for (size_t n_rows : {1, 2, 3, 7, 64, 257}) {
        const auto rows = test::RandomFloats(n_rows * dim, -2.0f, 2.0f, rng);
        for (PoolMode mode : kModes) {
          for (bool l2_normalize : {false, true}) CheckPool(rows, n_rows, dim, mode, l2_normalize);
        }
      }
    }
  });
}

// Means of small integers over a power-of-two count are exact: the kernel must match bit for bit.
TEST(OpsPool, MeanOfIntegersIsExact) {
  std::mt19937 rng(42);
  ForEachTarget([&](const char*) {
    for (size_t n_rows : {1, 2, 4, 8}) {
      const size_t dim = 385;
      const auto rows = test::RandomSmallIntegers(n_rows * dim, -50, 50, rng);
      std::vector<float> out(dim);
      PoolRows(rows.data(), n_rows, dim, PoolMode::kMean, false, out.data());
      const auto want = PoolReference(rows, n_rows, dim, PoolMode::kMean);
      for (size_t i = 0; i < dim; ++i) ASSERT_EQ(out[i], want.value[i]) << i;
    }
  });
}

// A zero vector stays zero under normalization (the 1e-12 floor), and an empty sequence pools
// to zeros; neither gives NaN.
TEST(OpsPool, ZeroVectorAndEmptySequence) {
  ForEachTarget([&](const char*) {
    for (size_t dim : {1, 17, 384}) {
      const std::vector<float> rows(3 * dim, 0.0f);
      for (PoolMode mode : kModes) {
        for (bool l2_normalize : {false, true}) {
          for (size_t n_rows : {0, 1, 3}) {
            std::vector<float> out(dim, kSentinel);
            PoolRows(rows.data(), n_rows, dim, mode, l2_normalize, out.data());
            for (float v : out) ASSERT_EQ(v, 0.0f) << "dim " << dim << " n_rows " << n_rows;
          }
        }
      }
    }
  });
}

// Normalized outputs have unit length, and a tiny vector is scaled up rather than floored.
TEST(OpsPool, NormalizedHasUnitLength) {
  std::mt19937 rng(43);
  ForEachTarget([&](const char*) {
    for (float scale : {1e-8f, 1.0f, 1e6f}) {
      auto rows = test::RandomFloats(5 * 384, -1.0f, 1.0f, rng);
      for (float& v : rows) v *= scale;
      std::vector<float> out(384);
      PoolRows(rows.data(), 5, 384, PoolMode::kMean, true, out.data());
      double norm2 = 0;
      for (float v : out) norm2 += double{v} * v;
      EXPECT_NEAR(std::sqrt(norm2), 1.0, 1e-6) << "scale " << scale;
    }
  });
}

}  // namespace
}  // namespace kestrel::ops
