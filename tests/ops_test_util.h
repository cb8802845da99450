// Helpers shared by the ops tests: running a check on every Highway target, random fills, and
// host-side f16/bf16 encoding (Highway 1.0.3 has no scalar f32 -> f16 conversion).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/quantize_rows.h"
#include <hwy/base.h>
#include <hwy/targets.h>

namespace kestrel::ops::test {

// Unit roundoff of f32: every correctly rounded f32 operation has relative error at most kU.
inline constexpr double kU = 1.0 / (1 << 24);

// The Highway targets the ops tests run on: every target compiled in and supported by this CPU,
// or, when the environment sets KESTREL_TEST_TARGETS (names separated by spaces, e.g. "SVE_256"),
// only those of them. The cross-build CI uses it to test one emulated CPU's own target without
// repeating the others; naming a target this CPU does not support is an error, not a skip.
inline std::vector<int64_t> TargetsToTest() {
  std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  const char* wanted = std::getenv("KESTREL_TEST_TARGETS");
  if (wanted == nullptr || *wanted == '\0') return targets;
  const std::string list = std::string(" ") + wanted + " ";
  std::vector<int64_t> chosen;
  for (int64_t t : targets) {
    if (list.find(std::string(" ") + hwy::TargetName(t) + " ") != std::string::npos) {
      chosen.push_back(t);
    }
  }
  EXPECT_FALSE(chosen.empty()) << "KESTREL_TEST_TARGETS=\"" << wanted
                               << "\" names no target this CPU supports";
  return chosen;
}

// Runs body once per Highway target that is compiled in and supported by this CPU, with
// dynamic dispatch forced to that target, then restores normal dispatch. Prints the targets that
// ran and records them as the test property "targets". Failures are tagged with the target.
inline void ForEachTarget(const std::function<void(const char* target)>& body) {
  const std::vector<int64_t> targets = TargetsToTest();
  ASSERT_FALSE(targets.empty()) << "no Highway target to test";
  std::string ran;
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    // Recompute the dispatch mask now instead of relying on the next call to do it.
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    const char* name = hwy::TargetName(target);
    SCOPED_TRACE(std::string("Highway target ") + name);
    body(name);
    if (!ran.empty()) ran += ' ';
    ran += name;
  }
  hwy::SetSupportedTargetsForTest(0);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  std::printf("[ targets  ] %s\n", ran.c_str());
  ::testing::Test::RecordProperty("targets", ran);
}

// Shapes for the quantized matmul tests: token counts around the kernels' token tiles, output
// row counts around the 4-row groups, and row ranges as a thread gets them (from a group
// boundary) or with ragged edges.
struct QuantMatMulCase {
  size_t n_tokens, k, n_out, row_begin, row_end;
};

inline std::vector<QuantMatMulCase> QuantMatMulCases(const std::vector<size_t>& ks) {
  std::vector<QuantMatMulCase> cases;
  for (size_t k : ks) {
    for (size_t n_tokens : {1, 2, 3, 4, 5, 8, 9, 12, 14}) {  // tiles of 4 (AVX2, ARM), 8 (AVX-512)
      for (size_t n_out : {1, 4, 7, 13}) {
        cases.push_back({n_tokens, k, n_out, 0, n_out});
        if (n_out > 4) cases.push_back({n_tokens, k, n_out, 4, n_out});      // a thread's share
        if (n_out > 6) cases.push_back({n_tokens, k, n_out, 1, n_out - 2});  // ragged edges
      }
    }
  }
  // Rows this long take 16 tokens per L2 block (QuantMatMulTokenBlock): 19 tokens are a block
  // and a partial one of 3, ragged for every token tile. (Two such cases are half of the
  // quantized matmul tests' work; under CI's emulated SVE, minutes.)
  static_assert(QuantMatMulTokenBlock(8192) == 16, "the case below no longer spans blocks");
  cases.push_back({19, 8192, 6, 0, 6});
  cases.push_back({19, 8192, 6, 1, 5});
  return cases;
}

// Error bound of a sum of m terms computed with m - 1 correctly rounded f32 additions in any
// order: |computed - exact| <= Gamma(m) * sum |term| (Higham, Accuracy and Stability, 3.1).
inline double Gamma(size_t m) { return m * kU / (1.0 - m * kU); }

inline std::vector<float> RandomFloats(size_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Deterministic noise in [-1, 1] from a hash of (stream, a, b): tests read values by position
// without storing them.
inline float HashNoise(uint64_t stream, uint64_t a, uint64_t b) {
  uint64_t z =
      stream * 0x9E3779B97F4A7C15ull + a * 0xBF58476D1CE4E5B9ull + b * 0x94D049BB133111EBull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 40) / static_cast<double>(1ull << 23) - 1.0);
}

// Integers in [lo, hi] as floats: products and sums of such values stay exact in f32 (while
// below 2^24), so kernels must match a reference bit for bit whatever their summation order.
inline std::vector<float> RandomSmallIntegers(size_t n, int lo, int hi, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(dist(rng));
  return v;
}

// The values the float matmul tests check every case with: small integers in [-4, 4], where
// every product and partial sum is exact (an indexing or tail error is an exact mismatch,
// whatever the summation order), or random floats, weights in [-1, 1] and activations in
// [-3, 3], whose rounding error a bound covers.
enum class MatMulValues { kSmallIntegers, kRandomFloats };

// check(c, w, x) for every case c on every target, w [c.n_out, c.k] and x [c.n_tokens, c.k]
// drawn anew for each from a generator seeded with `seed`; stops at the first fatal failure.
template <class Case, class Check>
void CheckMatMulCases(const std::vector<Case>& cases, MatMulValues values, uint32_t seed,
                      const Check& check) {
  std::mt19937 rng(seed);
  const bool integers = values == MatMulValues::kSmallIntegers;
  const auto draw = [&](size_t n, float bound) {
    return integers ? RandomSmallIntegers(n, -4, 4, rng) : RandomFloats(n, -bound, bound, rng);
  };
  ForEachTarget([&](const char*) {
    for (const Case& c : cases) {
      const std::vector<float> w = draw(c.n_out * c.k, 1.0f);
      const std::vector<float> x = draw(c.n_tokens * c.k, 3.0f);
      check(c, w, x);
      if (::testing::Test::HasFatalFailure()) return;
    }
  });
}

// f32 -> IEEE binary16 bits, round to nearest even. Inputs must be finite and below 65520 in
// magnitude (tests only encode such values); results below 2^-14 become subnormals.
inline uint16_t F16BitsFromF32(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const float a = std::fabs(f);
  if (a < 6.103515625e-05f) {  // 2^-14: subnormal range, in units of 2^-24
    const float units = std::nearbyint(a * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(units));
  }
  uint32_t abs_bits = bits & 0x7FFFFFFFu;
  // Round the 23-bit mantissa to 10 bits, ties to even.
  abs_bits += 0xFFFu + ((abs_bits >> 13) & 1u);
  const uint32_t exponent = (abs_bits >> 23) - 127 + 15;
  const uint32_t mantissa = (abs_bits >> 13) & 0x3FFu;
  return static_cast<uint16_t>(sign | (exponent << 10) | mantissa);
}

inline float F32FromF16Bits(uint16_t h) {
  const float sign = (h & 0x8000u) ? -1.0f : 1.0f;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);
  return sign * std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
}

// f32 -> bfloat16 bits, round to nearest even (finite inputs).
inline uint16_t BF16BitsFromF32(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float F32FromBF16Bits(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// hwy::float16_t is a struct on x86 and __fp16 on Arm; both hold the same 16 bits.
inline hwy::float16_t F16FromBits(uint16_t bits) {
  hwy::float16_t h;
  std::memcpy(&h, &bits, 2);
  return h;
}
inline hwy::bfloat16_t BF16FromBits(uint16_t bits) {
  hwy::bfloat16_t b;
  std::memcpy(&b, &bits, 2);
  return b;
}

// Weights in a storage type plus the exact f32 values they decode to, which the references use
// so that only the kernels' arithmetic is under test.
template <typename T>
struct EncodedWeights {
  std::vector<T> stored;
  std::vector<float> decoded;
};

inline EncodedWeights<float> Encode(const std::vector<float>& v, float*) { return {v, v}; }
// A 16-bit type through its bits: rounded from f32, stored, and decoded back.
template <typename T, uint16_t (*kBitsFromF32)(float), T (*kFromBits)(uint16_t),
          float (*kF32FromBits)(uint16_t)>
EncodedWeights<T> EncodeThroughBits(const std::vector<float>& v) {
  EncodedWeights<T> e;
  for (float x : v) {
    const uint16_t bits = kBitsFromF32(x);
    e.stored.push_back(kFromBits(bits));
    e.decoded.push_back(kF32FromBits(bits));
  }
  return e;
}
inline EncodedWeights<hwy::float16_t> Encode(const std::vector<float>& v, hwy::float16_t*) {
  return EncodeThroughBits<hwy::float16_t, F16BitsFromF32, F16FromBits, F32FromF16Bits>(v);
}
inline EncodedWeights<hwy::bfloat16_t> Encode(const std::vector<float>& v, hwy::bfloat16_t*) {
  return EncodeThroughBits<hwy::bfloat16_t, BF16BitsFromF32, BF16FromBits, F32FromBF16Bits>(v);
}
template <typename T>
EncodedWeights<T> EncodeAs(const std::vector<float>& v) {
  return Encode(v, static_cast<T*>(nullptr));
}

// Sizes that are not multiples of any vector width, neighbours of the widths, and model sizes.
inline const std::vector<size_t>& AwkwardSizes() {
  static const std::vector<size_t> sizes = {1,  3,  7,   15,  17,  31,  33,
                                            63, 65, 127, 129, 256, 640, 1000};
  return sizes;
}

// Value written around and beside outputs to detect stray writes.
inline constexpr float kSentinel = -1234.5f;

// A quantized matmul's output y [n_tokens, n_out] for case c against the exact products and the
// bounds on its rounding ([n_tokens * n_out] each): rows outside the case's range must still
// hold kSentinel.
inline void ExpectQuantMatMulMatches(const QuantMatMulCase& c, const std::vector<float>& y,
                                     const std::vector<double>& exact,
                                     const std::vector<double>& bound) {
  for (size_t t = 0; t < c.n_tokens; ++t) {
    for (size_t r = 0; r < c.n_out; ++r) {
      const size_t i = t * c.n_out + r;
      if (r < c.row_begin || r >= c.row_end) {
        ASSERT_EQ(y[i], kSentinel) << "wrote outside its rows";
        continue;
      }
      ASSERT_NEAR(y[i], exact[i], bound[i]) << "token " << t << " row " << r << " k=" << c.k
                                            << " n_out=" << c.n_out << " tokens=" << c.n_tokens;
    }
  }
}

}  // namespace kestrel::ops::test
