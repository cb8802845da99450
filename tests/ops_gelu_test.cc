// Erf, GeluErf and GeluErfMul against std::erf in double on every Highway target.
#include "ops/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

using test::ForEachTarget;
using test::kSentinel;
using test::kU;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The erf kernel's absolute error bound. The two fitted approximations are within 6.6e-8 of erf
// when evaluated in f32 (about 1.1 ulp of 1), hn::Exp adds at most 3 ulp of erfc < 0.19 (< 4e-8).
constexpr double kErfBound = 1.2e-7;

double GeluErfReference(double x) {
  if (x == -HUGE_VAL) return 0.0;  // the limit, which the kernel returns
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// Error bound of gelu(x) = 0.5x + 0.5x E(z), z = x / sqrt(2) rounded: E's own error, the
// rounding of z (relative kU, moving erf by at most z erf'(z) kU <= 0.49 kU), and the fused
// multiply-add (emulated as two roundings on targets without FMA): |0.5x| (kErfBound + 3 kU).
double GeluBound(double x) { return 0.5 * std::fabs(x) * (kErfBound + 3 * kU); }

// -10..10 every 2^-12 (every value a float) plus the edges erf is built from: 0, -0, the
// branch point 0.921875 and its neighbours, the clamp at 4, huge values, infinities.
std::vector<float> Sweep() {
  std::vector<float> x;
  for (int i = -10 * 4096; i <= 10 * 4096; ++i) x.push_back(static_cast<float>(i) / 4096.0f);
  for (float edge : {0.921875f, 4.0f}) {
    for (float e : {edge, std::nextafter(edge, 0.0f), std::nextafter(edge, 10.0f)}) {
      x.push_back(e);
      x.push_back(-e);
    }
  }
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, 30.0f, -30.0f, 1e30f, -1e30f, 3e38f,
                  -3e38f, kInf, -kInf}) {
    x.push_back(v);
  }
  return x;
}

// Runs kernel over x out of place and in place; checks that both agree bit for bit (NaN
// included) and that nothing is written past the end, and returns the result.
std::vector<float> RunUnary(void (*kernel)(const float*, float*, size_t),
                            const std::vector<float>& x) {
  std::vector<float> out(x.size() + 16, kSentinel);
  kernel(x.data(), out.data(), x.size());
  for (size_t i = x.size(); i < out.size(); ++i) EXPECT_EQ(out[i], kSentinel) << "write past end";
  std::vector<float> in_place = x;
  kernel(in_place.data(), in_place.data(), in_place.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(std::memcmp(&in_place[i], &out[i], sizeof(float)), 0) << "in place, x = " << x[i];
  }
  return in_place;
}

TEST(OpsGeluErf, ErfMatchesStdErf) {
  const auto x = Sweep();
  ForEachTarget([&](const char* target) {
    const auto y = RunUnary(Erf, x);
    double max_err = 0;
    float worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::erf(double{x[i]});
      const double err = std::fabs(y[i] - want);
      if (err > max_err) {
        max_err = err;
        worst = x[i];
      }
      ASSERT_LE(err, kErfBound) << "erf(" << x[i] << ") got " << y[i] << " want " << want;
      ASSERT_LE(std::fabs(y[i]), 1.0f);
      // Tiny arguments keep their relative accuracy.
      if (std::fabs(x[i]) < 1e-3f) {
        ASSERT_LE(err, 4 * kU * std::fabs(want)) << x[i];
      }
    }
    EXPECT_TRUE(std::isnan(RunUnary(Erf, {kNaN})[0]));
    EXPECT_TRUE(std::signbit(RunUnary(Erf, {-0.0f})[0]));
    std::printf("[ erf      ] %s: max abs error %.3g at x = %.9g over %zu values\n", target,
                max_err, worst, x.size());
  });
}

TEST(OpsGeluErf, GeluMatchesReference) {
  const auto x = Sweep();
  ForEachTarget([&](const char* target) {
    const auto y = RunUnary(GeluErf, x);
    double max_err = 0, max_err_over_x = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = GeluErfReference(x[i]);
      if (std::isinf(want)) {
        ASSERT_EQ(y[i], want) << x[i];
        continue;
      }
      const double err = std::fabs(y[i] - want);
      if (std::fabs(x[i]) <= 10) max_err = std::max(max_err, err);
      if (x[i] != 0) max_err_over_x = std::max(max_err_over_x, err / std::fabs(x[i]));
      ASSERT_LE(err, GeluBound(x[i])) << "gelu(" << x[i] << ") got " << y[i] << " want " << want;
    }
    for (float nan_in : {kNaN, -kNaN}) EXPECT_TRUE(std::isnan(RunUnary(GeluErf, {nan_in})[0]));
    std::printf("[ gelu_erf ] %s: max abs error %.3g on [-10, 10], max error / |x| %.3g\n", target,
                max_err, max_err_over_x);
  });
}

// Every size through the main loop and the tails, out of place and with out == gate.
TEST(OpsGeluErf, GatedMatchesReferenceOnAwkwardSizes) {
  std::mt19937 rng(21);
  ForEachTarget([&](const char*) {
    for (size_t n : test::AwkwardSizes()) {
      const auto gate = test::RandomFloats(n, -8.0f, 8.0f, rng);
      const auto up = test::RandomFloats(n, -2.0f, 2.0f, rng);
      for (bool in_place : {false, true}) {
        std::vector<float> out(n + 16, kSentinel), gate_buf = gate;
        float* dst = in_place ? gate_buf.data() : out.data();
        GeluErfMul(gate_buf.data(), up.data(), dst, n);
        for (size_t i = 0; i < n; ++i) {
          const double want = GeluErfReference(gate[i]) * up[i];
          const double bound = GeluBound(gate[i]) * std::fabs(up[i]) + kU * std::fabs(want);
          ASSERT_LE(std::fabs(dst[i] - want), bound)
              << "gate " << gate[i] << " up " << up[i] << " n " << n;
        }
        for (size_t i = n; i < out.size(); ++i) ASSERT_EQ(out[i], kSentinel) << "n " << n;
      }
    }
  });
}

// The matmul epilogues (rows of n values, stride apart, the values between rows untouched): bit
// for bit what Add of the bias, GeluErf and Add of the residual give one after the other, with
// and without each of bias and residual, on every size.
TEST(OpsGeluErf, BiasRowsEpiloguesMatchTheOpsOneAfterTheOther) {
  std::mt19937 rng(22);
  ForEachTarget([&](const char*) {
    for (size_t n : test::AwkwardSizes()) {
      constexpr size_t kRows = 3;
      const size_t stride = n + 5;
      const auto y0 = test::RandomFloats(kRows * stride, -6.0f, 6.0f, rng);
      const auto bias = test::RandomFloats(n, -2.0f, 2.0f, rng);
      const auto residual = test::RandomFloats(kRows * stride, -3.0f, 3.0f, rng);
      for (bool gelu : {false, true}) {
        for (bool with_bias : {false, true}) {
          for (bool with_residual : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "n " << n << " gelu " << gelu << " bias "
                                              << with_bias << " residual " << with_residual);
            std::vector<float> y = y0;
            (gelu ? BiasGeluErfRows : AddBiasRows)(y.data(), stride, kRows,
                                                   with_bias ? bias.data() : nullptr,
                                                   with_residual ? residual.data() : nullptr, n);
            for (size_t t = 0; t < kRows; ++t) {
              std::vector<float> want(y0.begin() + t * stride, y0.begin() + t * stride + n);
              if (with_bias) Add(want.data(), bias.data(), want.data(), n);
              if (gelu) GeluErf(want.data(), want.data(), n);
              if (with_residual) Add(residual.data() + t * stride, want.data(), want.data(), n);
              for (size_t j = 0; j < n; ++j) {
                ASSERT_EQ(y[t * stride + j], want[j]) << "row " << t << " col " << j;
              }
              for (size_t j = n; j < stride && t * stride + j < y0.size(); ++j) {
                ASSERT_EQ(y[t * stride + j], y0[t * stride + j]) << "between rows " << t;
              }
            }
          }
        }
      }
    }
  });
}

}  // namespace
}  // namespace kestrel::ops
