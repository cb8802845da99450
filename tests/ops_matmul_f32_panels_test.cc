// MatMulF32Panels (f32 weights in panels of 16 rows) against a double-precision reference on every
// Highway target, the packing itself, and the promise that each output is one FMA chain over k in
// order: the same bits for any row split, token count or slice of the call.
#include "ops/matmul_f32_panels.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

using test::ForEachTarget;
using test::kSentinel;

std::vector<float> Pack(const std::vector<float>& w, size_t n_out, size_t k) {
  std::vector<float> panels(F32PanelFloats(n_out, k), kSentinel);
  PackF32Panels(w.data(), n_out, k, panels.data());
  return panels;
}

TEST(OpsMatMulF32Panels, PacksSixteenRowsColumnByColumn) {
  const size_t n_out = 18, k = 3;
  std::vector<float> w(n_out * k);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
  ASSERT_EQ(F32PanelFloats(n_out, k), 32 * k);
  const std::vector<float> panels = Pack(w, n_out, k);
  for (size_t p = 0; p < 2; ++p) {
    for (size_t i = 0; i < k; ++i) {
      for (size_t j = 0; j < kF32PanelRows; ++j) {
        const size_t r = p * kF32PanelRows + j;
        const float want = r < n_out ? w[r * k + i] : 0.0f;  // rows past n_out are zero
        ASSERT_EQ(panels[(p * k + i) * kF32PanelRows + j], want)
            << "panel " << p << " column " << i << " lane " << j;
      }
    }
  }
}

struct Case {
  size_t n_tokens, k, n_out, row_begin, row_end;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  // k: one element, vector tails, the kernel's k slice of 128 and its neighbours, a long row.
  for (size_t k : {1, 5, 17, 127, 128, 129, 384, 1537}) {
    // Tokens: one, fewer and more than a pass of 8 (5 on 16-register targets).
    for (size_t n_tokens : {1, 3, 8, 9, 21}) {
      // Rows: within one panel, a whole panel, a partial last panel, two and a half panels.
      for (size_t n_out : {1, 15, 16, 17, 40}) {
        cases.push_back({n_tokens, k, n_out, 0, n_out});
        if (n_out > 3) cases.push_back({n_tokens, k, n_out, 2, n_out - 1});
        cases.push_back({n_tokens, k, n_out, n_out - 1, n_out});
        cases.push_back({n_tokens, k, n_out, 0, 0});
      }
    }
  }
  return cases;
}

// y[t, r] for rows in the case's range within gamma(k + 1) * sum |w x| of the exact value (0
// for small integers, where every partial sum is exact); every other entry untouched.
void CheckCase(const Case& c, const std::vector<float>& w, const std::vector<float>& x,
               bool exact) {
  const std::vector<float> panels = Pack(w, c.n_out, c.k);
  const size_t guard = 16;
  std::vector<float> y(c.n_tokens * c.n_out + guard, kSentinel);
  MatMulF32Panels(panels.data(), x.data(), y.data(), c.n_tokens, c.k, c.n_out, c.row_begin,
                  c.row_end);
  for (size_t t = 0; t < c.n_tokens; ++t) {
    for (size_t r = 0; r < c.n_out; ++r) {
      const float got = y[t * c.n_out + r];
      if (r < c.row_begin || r >= c.row_end) {
        ASSERT_EQ(got, kSentinel) << "row " << r << " outside [" << c.row_begin << ", " << c.row_end
                                  << ") was written, token " << t;
        continue;
      }
      double want = 0, magnitude = 0;
      for (size_t i = 0; i < c.k; ++i) {
        const double term = double{w[r * c.k + i]} * x[t * c.k + i];
        want += term;
        magnitude += std::fabs(term);
      }
      const double bound = exact ? 0.0 : test::Gamma(c.k + 1) * magnitude;
      ASSERT_LE(std::fabs(got - want), bound)
          << "y[" << t << ", " << r << "] got " << got << " want " << want << "; n_tokens "
          << c.n_tokens << " k " << c.k << " n_out " << c.n_out << " rows [" << c.row_begin << ", "
          << c.row_end << ")";
    }
  }
  for (size_t i = c.n_tokens * c.n_out; i < y.size(); ++i) {
    ASSERT_EQ(y[i], kSentinel) << "write past the end of y at " << i;
  }
}

TEST(OpsMatMulF32Panels, ExactOnSmallIntegers) {
  test::CheckMatMulCases(
      Cases(), test::MatMulValues::kSmallIntegers, 91,
      [](const Case& c, const auto& w, const auto& x) { CheckCase(c, w, x, true); });
}

TEST(OpsMatMulF32Panels, RandomWithinRoundingBound) {
  test::CheckMatMulCases(
      Cases(), test::MatMulValues::kRandomFloats, 92,
      [](const Case& c, const auto& w, const auto& x) { CheckCase(c, w, x, false); });
}

// One call over all rows and tokens against the same products in pieces: rows split anywhere
// (as threads split them, and not on panel boundaries), tokens one at a time and in odd blocks.
// Each output is one FMA chain over k in order, so the bits must not change.
TEST(OpsMatMulF32Panels, PiecesComposeBitForBit) {
  std::mt19937 rng(93);
  struct Shape {
    size_t n_tokens, k, n_out;
  };
  for (const Shape s : {Shape{13, 384, 72}, Shape{7, 1537, 40}, Shape{130, 640, 33}}) {
    const std::vector<float> w = test::RandomFloats(s.n_out * s.k, -0.1f, 0.1f, rng);
    const std::vector<float> x = test::RandomFloats(s.n_tokens * s.k, -2.0f, 2.0f, rng);
    const std::vector<float> panels = Pack(w, s.n_out, s.k);
    ForEachTarget([&](const char*) {
      std::vector<float> whole(s.n_tokens * s.n_out, kSentinel);
      MatMulF32Panels(panels.data(), x.data(), whole.data(), s.n_tokens, s.k, s.n_out, 0, s.n_out);
      std::vector<float> by_rows(whole.size(), kSentinel);
      const size_t splits[] = {0, 1, 6, 16, s.n_out / 2 + 1, s.n_out};
      for (size_t i = 0; i + 1 < std::size(splits); ++i) {
        MatMulF32Panels(panels.data(), x.data(), by_rows.data(), s.n_tokens, s.k, s.n_out,
                        splits[i], splits[i + 1]);
      }
      ASSERT_EQ(whole, by_rows);
      std::vector<float> by_tokens(whole.size(), kSentinel);
      for (size_t t = 0, count = 1; t < s.n_tokens; t += count, count = count % 5 + 1) {
        const size_t n = std::min(count, s.n_tokens - t);
        MatMulF32Panels(panels.data(), x.data() + t * s.k, by_tokens.data() + t * s.n_out, n, s.k,
                        s.n_out, 0, s.n_out);
      }
      ASSERT_EQ(whole, by_tokens);
    });
  }
}

}  // namespace
}  // namespace kestrel::ops
