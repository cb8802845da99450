// Argmax against a scalar scan on every Highway target: the lowest index of the largest value,
// NaN never winning, at every length from 1 to past four vectors and at a vocabulary's size.
#include "ops/argmax.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

using test::ForEachTarget;

size_t Reference(const std::vector<float>& x) {
  size_t best = x.size();
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;
    if (best == x.size() || x[i] > x[best]) best = i;
  }
  return best == x.size() ? 0 : best;
}

TEST(OpsArgmax, LowestIndexOfTheLargestValue) {
  std::mt19937 rng(5);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<size_t> sizes;
  for (size_t n = 1; n <= 80; ++n) sizes.push_back(n);
  sizes.push_back(262144);
  sizes.push_back(262144 + 3);
  ForEachTarget([&](const char*) {
    for (size_t n : sizes) {
      SCOPED_TRACE("n=" + std::to_string(n));
      std::uniform_int_distribution<size_t> at(0, n - 1);
      std::vector<float> x = test::RandomFloats(n, -30.0f, 30.0f, rng);
      ASSERT_EQ(Argmax(x.data(), n), Reference(x));
      // The largest value twice: the first one wins.
      const size_t a = at(rng), b = at(rng);
      x[a] = x[b] = 100.0f;
      ASSERT_EQ(Argmax(x.data(), n), Reference(x));
      ASSERT_EQ(Argmax(x.data(), n), std::min(a, b));
      // At either end, and with NaN beside it (also in place of the first value).
      x[a] = x[b] = 0.0f;
      x[n - 1] = 200.0f;
      x[at(rng)] = nan;
      ASSERT_EQ(Argmax(x.data(), n), Reference(x));
      x[0] = nan;
      ASSERT_EQ(Argmax(x.data(), n), Reference(x));
      x.assign(n, -inf);
      x[n - 1] = nan;
      ASSERT_EQ(Argmax(x.data(), n), Reference(x));
      x.assign(n, nan);
      ASSERT_EQ(Argmax(x.data(), n), 0u);
    }
  });
}

}  // namespace
}  // namespace kestrel::ops
