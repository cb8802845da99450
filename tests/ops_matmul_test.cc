// MatMulF32/F16/BF16 against a double-precision reference on every Highway target.
#include "ops/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

using test::EncodeAs;
using test::EncodedWeights;
using test::ForEachTarget;
using test::kSentinel;

void MatMul(const float* w, const float* x, float* y, size_t n_tokens, size_t k, size_t n_out,
            size_t row_begin, size_t row_end) {
  MatMulF32(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}
void MatMul(const hwy::float16_t* w, const float* x, float* y, size_t n_tokens, size_t k,
            size_t n_out, size_t row_begin, size_t row_end) {
  MatMulF16(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}
void MatMul(const hwy::bfloat16_t* w, const float* x, float* y, size_t n_tokens, size_t k,
            size_t n_out, size_t row_begin, size_t row_end) {
  MatMulBF16(w, x, y, n_tokens, k, n_out, row_begin, row_end);
}

struct RowRange {
  size_t begin, end;
};

// Whole matrix, and ranges that start and end inside it (as when threads split rows).
std::vector<RowRange> RowRangesFor(size_t n_out) {
  std::vector<RowRange> ranges = {{0, n_out}};
  if (n_out >= 3) ranges.push_back({1, n_out - 1});
  if (n_out >= 9) ranges.push_back({5, n_out - 2});
  if (n_out >= 2) ranges.push_back({n_out - 1, n_out});
  ranges.push_back({0, 0});
  return ranges;
}

struct Case {
  size_t n_tokens, k, n_out;
  RowRange rows;
  size_t misalign;  // elements by which w and x are shifted off the allocation's alignment
};

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (size_t k : test::AwkwardSizes()) {
    for (size_t n_tokens : {1, 2, 3, 5, 8}) {
      for (size_t n_out : {1, 6, 13}) {
        for (const RowRange& rows : RowRangesFor(n_out)) {
          cases.push_back({n_tokens, k, n_out, rows, (k + n_out) % 3});
        }
      }
    }
  }
  // Rows long enough to be walked in slices of kMatMulKSlice (3 and 4 of them, the last with a
  // partial vector), each slice's sums added to the last.
  for (size_t k : {1537, 2051}) {
    for (size_t n_tokens : {1, 5}) {
      for (const RowRange& rows : RowRangesFor(13)) {
        cases.push_back({n_tokens, k, 13, rows, k % 3});
      }
    }
  }
  return cases;
}

// Runs one case for weight type T and checks y against a double reference: rows in the range
// within bound_scale * sum |w * x| (0 demands exact equality), all other entries untouched.
template <typename T>
void CheckCase(const Case& c, const std::vector<float>& w_values,
               const std::vector<float>& x_values, double (*bound_scale)(size_t k)) {
  const EncodedWeights<T> w = EncodeAs<T>(w_values);
  std::vector<T> w_buf(c.misalign + w.stored.size());
  std::copy(w.stored.begin(), w.stored.end(), w_buf.begin() + c.misalign);
  std::vector<float> x_buf(c.misalign + x_values.size());
  std::copy(x_values.begin(), x_values.end(), x_buf.begin() + c.misalign);
  const size_t guard = 16;
  std::vector<float> y(c.n_tokens * c.n_out + guard, kSentinel);

  MatMul(w_buf.data() + c.misalign, x_buf.data() + c.misalign, y.data(), c.n_tokens, c.k, c.n_out,
         c.rows.begin, c.rows.end);

  const double scale = bound_scale(c.k);
  for (size_t t = 0; t < c.n_tokens; ++t) {
    for (size_t r = 0; r < c.n_out; ++r) {
      const float got = y[t * c.n_out + r];
      if (r < c.rows.begin || r >= c.rows.end) {
        ASSERT_EQ(got, kSentinel) << "row " << r << " outside [" << c.rows.begin << ", "
                                  << c.rows.end << ") was written, token " << t;
        continue;
      }
      double exact = 0, magnitude = 0;
      for (size_t i = 0; i < c.k; ++i) {
        const double term = double{w.decoded[r * c.k + i]} * x_values[t * c.k + i];
        exact += term;
        magnitude += std::fabs(term);
      }
      ASSERT_LE(std::fabs(got - exact), scale * magnitude)
          << "y[" << t << ", " << r << "] got " << got << " want " << exact << "; n_tokens "
          << c.n_tokens << " k " << c.k << " n_out " << c.n_out << " rows [" << c.rows.begin << ", "
          << c.rows.end << ") misalign " << c.misalign;
    }
  }
  for (size_t i = c.n_tokens * c.n_out; i < y.size(); ++i) {
    ASSERT_EQ(y[i], kSentinel) << "write past the end of y at " << i;
  }
}

double Exact(size_t) { return 0.0; }
// Each output is a sum of k products, each formed exactly by an FMA and then rounded once by
// an addition; a lane accumulates k / lanes of them and the horizontal sum adds log2(lanes)
// more, so no chain has more than k + 1 terms on any target (the SCALAR target is the worst).
double F32SumBound(size_t k) { return test::Gamma(k + 1); }

// Small integers: every product and partial sum is exact, so any indexing or tail error shows
// up as an exact mismatch, independent of summation order.
template <typename T>
void CheckExactOnSmallIntegers() {
  test::CheckMatMulCases(
      AllCases(), test::MatMulValues::kSmallIntegers, 1234,
      [](const Case& c, const auto& w, const auto& x) { CheckCase<T>(c, w, x, &Exact); });
}

// Real values: the f32 rounding error must stay within the summation bound. Weights are
// decoded exactly from f16/bf16 in the reference, so the bound is the same for every type.
template <typename T>
void CheckRandomWithinBound() {
  test::CheckMatMulCases(
      AllCases(), test::MatMulValues::kRandomFloats, 5678,
      [](const Case& c, const auto& w, const auto& x) { CheckCase<T>(c, w, x, &F32SumBound); });
}

TEST(OpsMatMul, F32ExactOnSmallIntegers) { CheckExactOnSmallIntegers<float>(); }
TEST(OpsMatMul, F16ExactOnSmallIntegers) { CheckExactOnSmallIntegers<hwy::float16_t>(); }
TEST(OpsMatMul, BF16ExactOnSmallIntegers) { CheckExactOnSmallIntegers<hwy::bfloat16_t>(); }

TEST(OpsMatMul, F32RandomWithinRoundingBound) { CheckRandomWithinBound<float>(); }
TEST(OpsMatMul, F16RandomWithinRoundingBound) { CheckRandomWithinBound<hwy::float16_t>(); }
TEST(OpsMatMul, BF16RandomWithinRoundingBound) { CheckRandomWithinBound<hwy::bfloat16_t>(); }

// Gemma 3 270M shapes, decode and a prefill chunk, with threads' row splits that are not
// multiples of the row tile: the pieces together must equal one call over all rows.
TEST(OpsMatMul, RowSplitsComposeAtModelShapes) {
  std::mt19937 rng(42);
  struct Shape {
    size_t k, n_out;
  };
  for (const Shape s : {Shape{640, 1024}, Shape{2048, 640}}) {
    for (size_t n_tokens : {1, 7}) {
      const auto w = test::RandomFloats(s.n_out * s.k, -0.1f, 0.1f, rng);
      const auto x = test::RandomFloats(n_tokens * s.k, -2.0f, 2.0f, rng);
      ForEachTarget([&](const char*) {
        std::vector<float> whole(n_tokens * s.n_out, kSentinel);
        std::vector<float> pieces(n_tokens * s.n_out, kSentinel);
        MatMulF32(w.data(), x.data(), whole.data(), n_tokens, s.k, s.n_out, 0, s.n_out);
        const size_t splits[] = {0, 1, 6, 333, s.n_out / 2 + 1, s.n_out};
        for (size_t i = 0; i + 1 < std::size(splits); ++i) {
          MatMulF32(w.data(), x.data(), pieces.data(), n_tokens, s.k, s.n_out, splits[i],
                    splits[i + 1]);
        }
        // Tiles differ only in which outputs share them, not in how each sum is formed.
        ASSERT_EQ(whole, pieces);
      });
    }
  }
}

}  // namespace
}  // namespace kestrel::ops
