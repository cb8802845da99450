// RmsNorm against a double-precision reference on every Highway target.
#include "ops/rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

using test::ForEachTarget;
using test::kSentinel;
using test::kU;

// y = x / sqrt(mean(x^2) + eps) * gamma in double.
std::vector<double> Reference(const std::vector<float>& x, const std::vector<float>& gamma,
                              size_t n_rows, size_t dim, float eps) {
  std::vector<double> y(n_rows * dim);
  for (size_t r = 0; r < n_rows; ++r) {
    double sum = 0;
    for (size_t i = 0; i < dim; ++i) sum += double{x[r * dim + i]} * x[r * dim + i];
    const double inv_rms = 1.0 / std::sqrt(sum / dim + eps);
    for (size_t i = 0; i < dim; ++i) y[r * dim + i] = x[r * dim + i] * inv_rms * gamma[i];
  }
  return y;
}

// Relative error bound of one output. The sum of dim non-negative squares in f32 is within
// Gamma(dim + 1) (each term rounded once, plus the horizontal sum; see F32SumBound in the matmul
// test); dividing by dim and adding eps add 2 roundings; sqrt halves the relative error and adds
// one rounding, the reciprocal one more; the two final multiplications two more.
double RelativeBound(size_t dim) { return 0.5 * (test::Gamma(dim + 1) + 2 * kU) + 4 * kU; }

void CheckRmsNorm(bool in_place) {
  std::mt19937 rng(7);
  ForEachTarget([&](const char*) {
    for (size_t dim : test::AwkwardSizes()) {
      for (size_t n_rows : {1, 2, 3, 5, 8}) {
        for (float eps : {1e-6f, 1e-2f}) {
          auto x = test::RandomFloats(n_rows * dim, -3.0f, 3.0f, rng);
          x[0] = 0.0f;  // zeros are legal activations
          const auto gamma = test::RandomFloats(dim, 0.5f, 2.0f, rng);
          const auto want = Reference(x, gamma, n_rows, dim, eps);
          const size_t guard = 16;
          std::vector<float> y(n_rows * dim + guard, kSentinel);
          if (in_place) {
            std::copy(x.begin(), x.end(), y.begin());
            RmsNorm(y.data(), gamma.data(), y.data(), n_rows, dim, eps);
          } else {
            RmsNorm(x.data(), gamma.data(), y.data(), n_rows, dim, eps);
          }
          const double bound = RelativeBound(dim);
          for (size_t i = 0; i < n_rows * dim; ++i) {
            ASSERT_LE(std::fabs(y[i] - want[i]), bound * std::fabs(want[i]))
                << "y[" << i / dim << ", " << i % dim << "] got " << y[i] << " want " << want[i]
                << "; dim " << dim << " n_rows " << n_rows << " eps " << eps;
          }
          for (size_t i = n_rows * dim; i < y.size(); ++i) {
            ASSERT_EQ(y[i], kSentinel) << "write past the end of y, dim " << dim;
          }
        }
      }
    }
  });
}

TEST(OpsRmsNorm, MatchesReference) { CheckRmsNorm(/*in_place=*/false); }
TEST(OpsRmsNorm, InPlaceMatchesReference) { CheckRmsNorm(/*in_place=*/true); }

// QK-norm: every head of every token is its own row of head_dim values with a shared gamma.
TEST(OpsRmsNorm, PerHeadRowsAreIndependent) {
  std::mt19937 rng(8);
  const size_t n_tokens = 3, n_heads = 4, head_dim = 256;
  auto x = test::RandomFloats(n_tokens * n_heads * head_dim, -1.0f, 1.0f, rng);
  // Heads of very different scale: a norm over the whole token row would mix them.
  for (size_t i = 0; i < head_dim; ++i) x[head_dim + i] *= 1000.0f;
  const auto gamma = test::RandomFloats(head_dim, 0.5f, 1.5f, rng);
  const auto want = Reference(x, gamma, n_tokens * n_heads, head_dim, 1e-6f);
  ForEachTarget([&](const char*) {
    std::vector<float> y = x;
    RmsNorm(y.data(), gamma.data(), y.data(), n_tokens * n_heads, head_dim, 1e-6f);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_LE(std::fabs(y[i] - want[i]), RelativeBound(head_dim) * std::fabs(want[i])) << i;
    }
  });
}

}  // namespace
}  // namespace kestrel::ops
