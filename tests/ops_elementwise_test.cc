// GeluTanhMul, SiluMul and Add against double-precision references on every Highway target.
#include "ops/elementwise.h"

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

double GeluTanh(double g) {
  return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / std::acos(-1.0)) * (g + 0.044715 * g * g * g)));
}

// Error bound of out = 0.5 g (1 + T(z)) up, relative to |g up|.
// - z = sqrt(2/pi) (g + 0.044715 g^3) in f32: g and g^3 share a sign (no cancellation), so with
//   the two f32 constants and four roundings z is within 6 kU relative, and
//   T moves by (1 - T^2) dz <= 6 kU * max_z z (1 - tanh(z)^2) = 6 kU * 0.448 < 3 kU absolute.
// - hn::Tanh is within 3 ulp of tanh (measured over [-20, 20]): <= 3 kU absolute as |T| <= 1.
// - 1 + T rounds once (<= 2 kU absolute): 8 kU absolute in 1 + T, i.e. 4 kU |g| in gelu.
// - 0.5 g is exact; (0.5 g)(1 + T) and the product with up round twice: 2 kU |g up|.
// Hence 6 kU |g up|, and it cannot be relative to |out|: for g << 0, 1 + T cancels, exactly as
// in a float scalar implementation.
constexpr double kGeluBound = 6 * kU;

std::vector<float> GateValues(size_t n, std::mt19937& rng) {
  auto gate = test::RandomFloats(n, -6.0f, 6.0f, rng);
  // Saturated, tiny and zero inputs, spread so they land in main loops and tails alike.
  const float special[] = {0.0f, -0.0f, 1e-6f, -1e-6f, 0.5f, -3.0f, 10.0f, -10.0f, 30.0f, -30.0f};
  for (size_t i = 0; i < n; i += 3) gate[i] = special[(i / 3) % std::size(special)];
  return gate;
}

double Silu(double g) { return g / (1.0 + std::exp(-g)); }

// Error bound of out = g / (1 + E(-g)) up, relative to |out|: hn::Exp is within 3 ulp of exp
// (3 kU relative), 1 + E rounds once (no cancellation: both terms are positive), the division
// and the product with up round once each: 6 kU, 8 with margin. Below g = -88 the kernel clamps
// exp's argument (it would overflow) and is off by less than 1e-33 from the true, tiny value.
constexpr double kSiluBound = 8 * kU;

using GatedKernel = void (*)(const float*, const float*, float*, size_t);

// alias 0: out is separate, 1: out == gate, 2: out == up. bound(gate, up, want) is the largest
// error allowed.
template <typename Bound>
void CheckGated(GatedKernel kernel, double (*reference)(double), int alias, Bound bound) {
  std::mt19937 rng(11);
  ForEachTarget([&](const char*) {
    for (size_t n : test::AwkwardSizes()) {
      const auto gate = GateValues(n, rng);
      const auto up = test::RandomFloats(n, -2.0f, 2.0f, rng);
      std::vector<float> gate_buf = gate, up_buf = up;
      std::vector<float> out(n + 16, kSentinel);
      float* out_ptr = alias == 1 ? gate_buf.data() : alias == 2 ? up_buf.data() : out.data();
      kernel(gate_buf.data(), up_buf.data(), out_ptr, n);
      for (size_t i = 0; i < n; ++i) {
        const double want = reference(gate[i]) * up[i];
        ASSERT_LE(std::fabs(out_ptr[i] - want), bound(gate[i], up[i], want))
            << "i " << i << " gate " << gate[i] << " up " << up[i] << " got " << out_ptr[i]
            << " want " << want << " n " << n;
      }
      if (alias == 0) {
        for (size_t i = n; i < out.size(); ++i) ASSERT_EQ(out[i], kSentinel) << "n " << n;
      }
    }
  });
}

void CheckGelu(int alias) {
  CheckGated(GeluTanhMul, GeluTanh, alias,
             [](double g, double up, double) { return kGeluBound * std::fabs(g * up); });
}

void CheckSilu(int alias) {
  CheckGated(SiluMul, Silu, alias,
             [](double, double, double want) { return kSiluBound * std::fabs(want) + 1e-36; });
}

TEST(OpsElementwise, SiluMulMatchesReference) { CheckSilu(0); }
TEST(OpsElementwise, SiluMulInPlaceOnGate) { CheckSilu(1); }
TEST(OpsElementwise, SiluMulInPlaceOnUp) { CheckSilu(2); }

// SiLU is 0 at 0 and (nearly) far below it, the identity far above.
TEST(OpsElementwise, SiluMulLimits) {
  const std::vector<float> gate = {-1e5f, -100.0f, 0.0f, 100.0f, 1e4f};
  const std::vector<float> up(gate.size(), 1.0f);
  ForEachTarget([&](const char*) {
    std::vector<float> out(gate.size());
    SiluMul(gate.data(), up.data(), out.data(), gate.size());
    EXPECT_LE(std::fabs(out[0]), 1e-33f);
    EXPECT_LE(std::fabs(out[1]), 1e-33f);
    EXPECT_EQ(out[2], 0.0f);
    EXPECT_EQ(out[3], 100.0f);
    EXPECT_EQ(out[4], 1e4f);
  });
}

TEST(OpsElementwise, GeluTanhMulMatchesReference) { CheckGelu(0); }
TEST(OpsElementwise, GeluTanhMulInPlaceOnGate) { CheckGelu(1); }
TEST(OpsElementwise, GeluTanhMulInPlaceOnUp) { CheckGelu(2); }

// Far into the tails GELU is 0 or the identity; at 0 it is 0.
TEST(OpsElementwise, GeluTanhMulLimits) {
  const std::vector<float> gate = {-100.0f, -30.0f, 0.0f, 30.0f, 100.0f, 1e4f};
  const std::vector<float> up(gate.size(), 1.0f);
  ForEachTarget([&](const char*) {
    std::vector<float> out(gate.size());
    GeluTanhMul(gate.data(), up.data(), out.data(), gate.size());
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_EQ(out[2], 0.0f);
    EXPECT_EQ(out[3], 30.0f);
    EXPECT_EQ(out[4], 100.0f);
    EXPECT_EQ(out[5], 1e4f);
  });
}

// One rounding per element: the sum must equal the f32 sum exactly.
void CheckAdd(int alias) {  // 0: out is separate, 1: out == a, 2: out == b
  std::mt19937 rng(12);
  ForEachTarget([&](const char*) {
    for (size_t n : test::AwkwardSizes()) {
      const auto a = test::RandomFloats(n, -5.0f, 5.0f, rng);
      const auto b = test::RandomFloats(n, -5.0f, 5.0f, rng);
      std::vector<float> a_buf = a, b_buf = b;
      std::vector<float> out(n + 16, kSentinel);
      float* out_ptr = alias == 1 ? a_buf.data() : alias == 2 ? b_buf.data() : out.data();
      Add(a_buf.data(), b_buf.data(), out_ptr, n);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(out_ptr[i], a[i] + b[i]) << "i " << i << " n " << n;
      if (alias == 0) {
        for (size_t i = n; i < out.size(); ++i) ASSERT_EQ(out[i], kSentinel) << "n " << n;
      }
    }
  });
}

TEST(OpsElementwise, AddMatchesReference) { CheckAdd(0); }
TEST(OpsElementwise, AddInPlaceOnA) { CheckAdd(1); }
TEST(OpsElementwise, AddInPlaceOnB) { CheckAdd(2); }

// Error bound of out = cap * T(x * fl(1 / cap)), relative to cap: fl(1 / cap) and the product
// round twice, z = x / cap is within 2 kU relative, and T moves by (1 - T^2) |z| 2 kU <= 0.9 kU;
// hn::Tanh is within 3 ulp (<= 3 kU absolute, |T| <= 1); the product with cap rounds once. 5 kU
// of cap, 8 with margin.
void CheckSoftCap(bool in_place) {
  std::mt19937 rng(13);
  ForEachTarget([&](const char*) {
    for (const float cap : {30.0f, 50.0f, 0.75f}) {
      for (size_t n : test::AwkwardSizes()) {
        auto in = test::RandomFloats(n, -4.0f * cap, 4.0f * cap, rng);
        const float special[] = {0.0f, -0.0f, 1e-6f, 1e30f, -1e30f, cap, -cap};
        for (size_t i = 0; i < n; i += 5) in[i] = special[(i / 5) % std::size(special)];
        std::vector<float> buf = in;
        std::vector<float> out(n + 16, kSentinel);
        float* out_ptr = in_place ? buf.data() : out.data();
        SoftCap(buf.data(), out_ptr, n, cap);
        for (size_t i = 0; i < n; ++i) {
          const double want = cap * std::tanh(double{in[i]} / cap);
          ASSERT_LE(std::fabs(out_ptr[i] - want), 8 * kU * cap)
              << "i " << i << " in " << in[i] << " cap " << cap << " got " << out_ptr[i] << " want "
              << want << " n " << n;
          ASSERT_LE(std::fabs(out_ptr[i]), cap) << "i " << i << " in " << in[i];
        }
        if (!in_place) {
          for (size_t i = n; i < out.size(); ++i) ASSERT_EQ(out[i], kSentinel) << "n " << n;
        }
      }
    }
  });
}

TEST(OpsElementwise, SoftCapMatchesReference) { CheckSoftCap(false); }
TEST(OpsElementwise, SoftCapInPlace) { CheckSoftCap(true); }

}  // namespace
}  // namespace kestrel::ops
