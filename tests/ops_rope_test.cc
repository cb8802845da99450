// Rope (NEOX and adjacent pairs, with and without frequency factors, over whole heads or their
// first R elements) against a float64 reference written the way NumPy implementations compute
// it, with R = head_dim unless partial:
// inv_freq = 1 / theta_base ** (arange(0, R, 2) / R) / factors;
// angle = pos * freq_scale * inv_freq; a head's elements from R on pass through.
#include "ops/rope.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

using test::ForEachTarget;
using test::kU;

struct RopeCase {
  size_t n_tokens, n_heads, head_dim;
  int64_t pos0;
  float theta_base, freq_scale;
  RopeLayout layout = RopeLayout::kNeox;
  const float* factors = nullptr;  // [rotary / 2] or null
  size_t rotary_dims = 0;          // partial rotary: the first ones of a head turn; 0: all
  size_t Rotary() const { return rotary_dims != 0 ? rotary_dims : head_dim; }
};

// The two elements of pair i within a head.
size_t First(const RopeCase& c, size_t i) { return c.layout == RopeLayout::kNeox ? i : 2 * i; }
size_t Second(const RopeCase& c, size_t i) {
  return c.layout == RopeLayout::kNeox ? c.Rotary() / 2 + i : 2 * i + 1;
}
// The pair element e (< Rotary()) of a head belongs to.
size_t PairOf(const RopeCase& c, size_t e) {
  return c.layout == RopeLayout::kNeox ? e % (c.Rotary() / 2) : e / 2;
}

// x: [n_tokens, n_heads * head_dim], in float64.
std::vector<double> Reference(const std::vector<float>& x, const RopeCase& c) {
  std::vector<double> y(x.begin(), x.end());
  const size_t half = c.Rotary() / 2;
  for (size_t t = 0; t < c.n_tokens; ++t) {
    const double pos = static_cast<double>(c.pos0 + static_cast<int64_t>(t));
    for (size_t h = 0; h < c.n_heads; ++h) {
      const size_t base = (t * c.n_heads + h) * c.head_dim;
      for (size_t i = 0; i < half; ++i) {
        double inv_freq = 1.0 / std::pow(double{c.theta_base}, double(2 * i) / double(c.Rotary()));
        if (c.factors != nullptr) inv_freq /= c.factors[i];
        const double angle = pos * double{c.freq_scale} * inv_freq;
        const size_t a = base + First(c, i), b = base + Second(c, i);
        const double x0 = x[a], x1 = x[b];
        y[a] = x0 * std::cos(angle) - x1 * std::sin(angle);
        y[b] = x0 * std::sin(angle) + x1 * std::cos(angle);
      }
    }
  }
  return y;
}

// The kernel rounds cos and sin to f32 (relative error kU each, i.e. at most kU absolute),
// then computes x0 c - x1 s with one product rounding and one FMA rounding. Each output is thus
// within kU (|x0| + |x1|) from the rounded cos/sin, kU |x1| from the product and kU |result|
// <= kU (|x0| + |x1|) from the FMA: 3 kU (|x0| + |x1|). The double-precision angles of kernel and
// reference differ by ~1e-16 relative (< 1e-11 radians at these positions), far below that.
constexpr double kPairBound = 3 * kU;

void CheckCase(const RopeCase& c, std::mt19937& rng) {
  const size_t row = c.n_heads * c.head_dim;
  const auto x = test::RandomFloats(c.n_tokens * row, -4.0f, 4.0f, rng);
  const auto want = Reference(x, c);
  std::vector<float> got = x;
  got.resize(got.size() + 16, test::kSentinel);
  Rope(got.data(), c.n_tokens, c.n_heads, c.head_dim, c.pos0,
       {c.layout, c.theta_base, c.freq_scale, c.factors, c.rotary_dims});
  for (size_t j = 0; j < c.n_tokens * row; ++j) {
    const size_t head_start = j / c.head_dim * c.head_dim;
    if (j - head_start >= c.Rotary()) {
      ASSERT_EQ(got[j], x[j]) << "element " << j - head_start << " past the rotary " << c.Rotary()
                              << " of a head of " << c.head_dim << " moved";
      continue;
    }
    const size_t i = PairOf(c, j - head_start);
    const double pair =
        std::fabs(x[head_start + First(c, i)]) + std::fabs(x[head_start + Second(c, i)]);
    ASSERT_LE(std::fabs(got[j] - want[j]), kPairBound * pair)
        << "token " << j / row << " head " << (j % row) / c.head_dim << " element "
        << j - head_start << ": got " << got[j] << " want " << want[j] << "; head_dim "
        << c.head_dim << " pos0 " << c.pos0 << " theta " << c.theta_base << " scale "
        << c.freq_scale << " layout " << static_cast<int>(c.layout) << " factors "
        << (c.factors != nullptr);
  }
  for (size_t j = c.n_tokens * row; j < got.size(); ++j) {
    ASSERT_EQ(got[j], test::kSentinel) << "write past the end of x, head_dim " << c.head_dim;
  }
}

TEST(OpsRope, MatchesFloat64Reference) {
  std::mt19937 rng(3);
  // Llama 3's factors run from 1 (high frequencies) to 8 (low); random ones cover any order.
  const auto factors = test::RandomFloats(kRopeMaxHeadDim / 2, 1.0f, 8.0f, rng);
  ForEachTarget([&](const char*) {
    // half = 1, 3, 5, 8, 31, 32, 64, 128 (Gemma 3), 512: tails and whole vectors.
    for (size_t head_dim : {2, 6, 10, 16, 62, 64, 128, 256, 1024}) {
      for (size_t n_heads : {1, 3, 4}) {
        for (int64_t pos0 :
             {int64_t{0}, int64_t{1}, int64_t{511}, int64_t{32765}, int64_t{39990}}) {
          for (float theta : {1e6f, 1e4f}) {
            for (float scale : {1.0f, 0.125f}) {
              for (RopeLayout layout : {RopeLayout::kNeox, RopeLayout::kAdjacent}) {
                for (const float* f : {static_cast<const float*>(nullptr), factors.data()}) {
                  CheckCase({5, n_heads, head_dim, pos0, theta, scale, layout, f}, rng);
                  if (::testing::Test::HasFatalFailure()) return;
                }
              }
            }
          }
        }
      }
    }
  });
}

// Partial rotary (Phi-4-mini turns 96 of 128): the first R elements of each head turn as a head
// of R would, the rest stay as they were.
TEST(OpsRope, PartialRotaryTurnsTheFirstElementsOnly) {
  std::mt19937 rng(5);
  const auto factors = test::RandomFloats(kRopeMaxHeadDim / 2, 1.0f, 8.0f, rng);
  ForEachTarget([&](const char*) {
    for (const auto& [head_dim, rotary] :
         {std::pair<size_t, size_t>{16, 12}, {16, 2}, {128, 96}, {128, 64}, {256, 250}}) {
      for (int64_t pos0 : {int64_t{0}, int64_t{37}, int64_t{32765}}) {
        for (RopeLayout layout : {RopeLayout::kNeox, RopeLayout::kAdjacent}) {
          for (const float* f : {static_cast<const float*>(nullptr), factors.data()}) {
            CheckCase({5, 3, head_dim, pos0, 1e4f, 1.0f, layout, f, rotary}, rng);
            if (::testing::Test::HasFatalFailure()) return;
          }
        }
      }
    }
  });
}

// Position 0 is the identity rotation; splitting a prompt into chunks must not change results
// (row t of a chunk starting at pos0 is position pos0 + t).
TEST(OpsRope, ChunksMatchOneCall) {
  std::mt19937 rng(4);
  const size_t n_heads = 4, head_dim = 256, n_tokens = 41, row = n_heads * head_dim;
  const auto x = test::RandomFloats(n_tokens * row, -2.0f, 2.0f, rng);
  ForEachTarget([&](const char*) {
    std::vector<float> whole = x;
    RopeNeox(whole.data(), n_tokens, n_heads, head_dim, 100, 1e6f, 1.0f);
    std::vector<float> chunked = x;
    // Splits inside and across the kernel's 16-position anchor intervals.
    RopeNeox(chunked.data(), 4, n_heads, head_dim, 100, 1e6f, 1.0f);
    RopeNeox(chunked.data() + 4 * row, 5, n_heads, head_dim, 104, 1e6f, 1.0f);
    RopeNeox(chunked.data() + 9 * row, 19, n_heads, head_dim, 109, 1e6f, 1.0f);
    RopeNeox(chunked.data() + 28 * row, 13, n_heads, head_dim, 128, 1e6f, 1.0f);
    ASSERT_EQ(whole, chunked);

    std::vector<float> at_zero = x;
    RopeNeox(at_zero.data(), 1, n_heads, head_dim, 0, 1e4f, 1.0f);
    ASSERT_TRUE(std::equal(at_zero.begin(), at_zero.begin() + row, x.begin()));
  });
}

}  // namespace
}  // namespace kestrel::ops
