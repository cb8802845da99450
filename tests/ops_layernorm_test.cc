// LayerNorm against a double-precision reference on every Highway target.
#include "ops/layernorm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// The reference and, per element, the normalized value (x - mean) / sqrt(var + eps) that the
// error bound scales with.
struct Expected {
  std::vector<double> out, normalized;
};

Expected Reference(const std::vector<float>& x, const std::vector<float>& gamma,
                   const std::vector<float>& beta, size_t n_rows, size_t dim, float eps) {
  Expected e{std::vector<double>(n_rows * dim), std::vector<double>(n_rows * dim)};
  for (size_t r = 0; r < n_rows; ++r) {
    const float* row = x.data() + r * dim;
    double mean = 0, var = 0;
    for (size_t i = 0; i < dim; ++i) mean += row[i];
    mean /= dim;
    for (size_t i = 0; i < dim; ++i) var += (row[i] - mean) * (row[i] - mean);
    const double inv_std = 1.0 / std::sqrt(var / dim + eps);
    for (size_t i = 0; i < dim; ++i) {
      e.normalized[r * dim + i] = (row[i] - mean) * inv_std;
      e.out[r * dim + i] = e.normalized[r * dim + i] * gamma[i] + beta[i];
    }
  }
  return e;
}

// Worst-case error bound of one output, from the kernel's corrected two-pass algorithm:
// - sum(d^2) is within Gamma(dim + 1) relative (non-negative terms, each rounded once); dividing,
//   subtracting c^2, adding eps, sqrt (halving the error) and the reciprocal add a few kU:
//   inv_std is within 0.5 Gamma(dim + 1) + 4 kU, which scales |normalized|;
// - x - m, the subtraction of c and the product with inv_std round once each (3 kU |normalized|,
//   plus kU |c| inv_std, c being tiny);
// - c = sum(d) / dim is off by at most Gamma(dim + 1) mean(|d|), about Gamma(dim + 1) std: an
//   absolute Gamma(dim + 1) in normalized units;
// - the fused multiply-add with gamma and beta rounds once (twice where emulated): 2 kU |out|.
double Bound(size_t dim, double normalized, float gamma, double out) {
  const double g = Gamma(dim + 1);
  return std::fabs(gamma) * (std::fabs(normalized) * (0.5 * g + 8 * kU) + g + kU) +
         2 * kU * std::fabs(out);
}

// Error in units of the output's scale |gamma| (|normalized| + 1) + |beta|: what "1e-6
// relative" means for outputs that can be near zero.
double ScaledError(double err, double normalized, float gamma, float beta) {
  return err / (std::fabs(gamma) * (std::fabs(normalized) + 1) + std::fabs(beta));
}

constexpr size_t kDims[] = {1, 3, 17, 31, 384, 385, 1000};

// Checks every dim in kDims with rows from make_row; returns the largest scaled error.
template <class MakeRow>
double Check(MakeRow make_row, bool in_place, float eps, std::mt19937& rng) {
  double max_scaled = 0;
  for (size_t dim : kDims) {
    for (size_t n_rows : {1, 2, 5}) {
      std::vector<float> x;
      for (size_t r = 0; r < n_rows; ++r) {
        const auto row = make_row(dim, rng);
        x.insert(x.end(), row.begin(), row.end());
      }
      const auto gamma = test::RandomFloats(dim, 0.5f, 2.0f, rng);
      const auto beta = test::RandomFloats(dim, -1.0f, 1.0f, rng);
      const Expected want = Reference(x, gamma, beta, n_rows, dim, eps);
      std::vector<float> y(n_rows * dim + 16, kSentinel);
      if (in_place) {
        std::copy(x.begin(), x.end(), y.begin());
        LayerNorm(y.data(), y.data(), gamma.data(), beta.data(), n_rows, dim, eps);
      } else {
        LayerNorm(x.data(), y.data(), gamma.data(), beta.data(), n_rows, dim, eps);
      }
      for (size_t i = 0; i < n_rows * dim; ++i) {
        const size_t c = i % dim;
        const double err = std::fabs(y[i] - want.out[i]);
        EXPECT_LE(err, Bound(dim, want.normalized[i], gamma[c], want.out[i]))
            << "y[" << i / dim << ", " << c << "] got " << y[i] << " want " << want.out[i]
            << "; dim " << dim << " n_rows " << n_rows;
        max_scaled = std::max(max_scaled, ScaledError(err, want.normalized[i], gamma[c], beta[c]));
      }
      for (size_t i = n_rows * dim; i < y.size(); ++i) {
        EXPECT_EQ(y[i], kSentinel) << "write past the end of y, dim " << dim;
      }
    }
  }
  return max_scaled;
}

std::vector<float> CenteredRow(size_t dim, std::mt19937& rng) {
  return test::RandomFloats(dim, -3.0f, 3.0f, rng);
}

// Hidden states drift: a common offset far larger than the spread, where a mean rounded to f32
// alone would be off by about as much as the noise it is subtracted from (without the kernel's
// correction the scaled error here measures about 2e-4 to 2e-3).
std::vector<float> OffsetRow(size_t dim, std::mt19937& rng) {
  auto row = test::RandomFloats(dim, -1.0f, 1.0f, rng);
  for (float& v : row) v += 1000.0f;
  return row;
}

TEST(OpsLayerNorm, MatchesReference) {
  std::mt19937 rng(31);
  ForEachTarget([&](const char* target) {
    const double e = Check(CenteredRow, /*in_place=*/false, 1e-12f, rng);
    EXPECT_LE(e, 1e-6);
    std::printf("[ layernorm] %s: centered rows, max error %.3g of the output scale\n", target, e);
  });
}

TEST(OpsLayerNorm, InPlaceMatchesReference) {
  std::mt19937 rng(32);
  ForEachTarget([&](const char*) { Check(CenteredRow, /*in_place=*/true, 1e-5f, rng); });
}

TEST(OpsLayerNorm, LargeCommonOffsetKeepsFullAccuracy) {
  std::mt19937 rng(33);
  ForEachTarget([&](const char* target) {
    const double e = Check(OffsetRow, /*in_place=*/false, 1e-12f, rng);
    EXPECT_LE(e, 1e-6);
    std::printf("[ layernorm] %s: rows 1000 + U(-1, 1), max error %.3g of the output scale\n",
                target, e);
  });
}

// A constant row has zero variance: the output is beta exactly, not NaN, whatever the offset.
TEST(OpsLayerNorm, ConstantRowGivesBeta) {
  std::mt19937 rng(34);
  ForEachTarget([&](const char*) {
    for (size_t dim : kDims) {
      for (float value : {0.0f, 1000.0f, -3.25f}) {
        const std::vector<float> x(dim, value);
        const auto gamma = test::RandomFloats(dim, 0.5f, 2.0f, rng);
        const auto beta = test::RandomFloats(dim, -1.0f, 1.0f, rng);
        std::vector<float> y(dim);
        LayerNorm(x.data(), y.data(), gamma.data(), beta.data(), 1, dim, 1e-12f);
        for (size_t i = 0; i < dim; ++i) ASSERT_EQ(y[i], beta[i]) << "dim " << dim << " i " << i;
      }
    }
  });
}

}  // namespace
}  // namespace kestrel::ops
