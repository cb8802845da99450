// EmbedF32/F16/BF16 against a scalar reference on every Highway target; EmbedF32Panels against
// the unpacked table.
#include "ops/embed.h"
#include "ops/matmul_f32_panels.h"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/ops_test_util.h"

namespace kestrel::ops {
namespace {

using test::EncodeAs;
using test::ForEachTarget;
using test::kSentinel;

void Embed(const float* table, size_t dim, const int32_t* tokens, size_t n, float scale,
           float* out) {
  EmbedF32(table, dim, tokens, n, scale, out);
}
void Embed(const hwy::float16_t* table, size_t dim, const int32_t* tokens, size_t n, float scale,
           float* out) {
  EmbedF16(table, dim, tokens, n, scale, out);
}
void Embed(const hwy::bfloat16_t* table, size_t dim, const int32_t* tokens, size_t n, float scale,
           float* out) {
  EmbedBF16(table, dim, tokens, n, scale, out);
}

// Widening f16/bf16 to f32 is exact and the scale is one f32 multiplication, so the kernel must
// equal float(decoded) * scale bit for bit.
template <typename T>
void CheckEmbed() {
  std::mt19937 rng(99);
  const size_t vocab = 37;
  // Repeated ids, the first and the last row, out of order.
  const std::vector<int32_t> tokens = {5, 0, 36, 5, 17, 1, 35, 2};
  ForEachTarget([&](const char*) {
    for (size_t dim : test::AwkwardSizes()) {
      for (size_t n_tokens : {1, 2, 3, 5, 8}) {
        for (float scale : {1.0f, 25.298221281347036f /* sqrt(640) */, -0.5f}) {
          const auto table = EncodeAs<T>(test::RandomFloats(vocab * dim, -2.0f, 2.0f, rng));
          const size_t guard = 16;
          std::vector<float> out(n_tokens * dim + guard, kSentinel);
          Embed(table.stored.data(), dim, tokens.data(), n_tokens, scale, out.data());
          for (size_t t = 0; t < n_tokens; ++t) {
            for (size_t i = 0; i < dim; ++i) {
              const float want = table.decoded[static_cast<size_t>(tokens[t]) * dim + i] * scale;
              ASSERT_EQ(out[t * dim + i], want)
                  << "out[" << t << ", " << i << "] dim " << dim << " token " << tokens[t];
            }
          }
          for (size_t i = n_tokens * dim; i < out.size(); ++i) {
            ASSERT_EQ(out[i], kSentinel) << "write past the end of out, dim " << dim;
          }
        }
      }
    }
  });
}

TEST(OpsEmbed, F32MatchesReference) { CheckEmbed<float>(); }
TEST(OpsEmbed, F16MatchesReference) { CheckEmbed<hwy::float16_t>(); }
TEST(OpsEmbed, BF16MatchesReference) { CheckEmbed<hwy::bfloat16_t>(); }

// A tied table in panels (Whisper's f32 token embedding and output projection) gives its rows
// exactly: each value is the stored float times the scale, as EmbedF32 computes it. Vocabularies
// within one panel, of whole panels and with a partial last panel; every row of each.
TEST(OpsEmbed, F32PanelsGiveTheRowsOfTheUnpackedTable) {
  std::mt19937 rng(7);
  for (size_t vocab : {1, 15, 16, 17, 40}) {
    for (size_t dim : test::AwkwardSizes()) {
      const std::vector<float> table = test::RandomFloats(vocab * dim, -2.0f, 2.0f, rng);
      std::vector<float> panels(F32PanelFloats(vocab, dim), kSentinel);
      PackF32Panels(table.data(), vocab, dim, panels.data());
      std::vector<int32_t> tokens(vocab);
      for (size_t r = 0; r < vocab; ++r) tokens[r] = static_cast<int32_t>(vocab - 1 - r);
      for (float scale : {1.0f, -0.5f}) {
        std::vector<float> out(vocab * dim + 16, kSentinel), want(vocab * dim + 16, kSentinel);
        EmbedF32Panels(panels.data(), vocab, dim, tokens.data(), vocab, scale, out.data());
        EmbedF32(table.data(), dim, tokens.data(), vocab, scale, want.data());
        ASSERT_EQ(out, want) << "vocab " << vocab << " dim " << dim << " scale " << scale;
      }
    }
  }
}

// The tests' own f16/bf16 encoders decide what "decoded" means above; pin them to known bits.
TEST(OpsEmbed, TestEncodersMatchKnownBits) {
  EXPECT_EQ(test::F16BitsFromF32(1.0f), 0x3C00);
  EXPECT_EQ(test::F16BitsFromF32(-2.0f), 0xC000);
  EXPECT_EQ(test::F16BitsFromF32(65504.0f), 0x7BFF);
  EXPECT_EQ(test::F16BitsFromF32(0.1f), 0x2E66);
  EXPECT_EQ(test::F16BitsFromF32(5.9604644775390625e-08f), 0x0001);  // 2^-24, subnormal
  EXPECT_EQ(test::F16BitsFromF32(6.103515625e-05f), 0x0400);         // 2^-14, smallest normal
  EXPECT_EQ(test::F16BitsFromF32(1.0f + 1.0f / 2048), 0x3C00);       // tie rounds to even
  EXPECT_EQ(test::F16BitsFromF32(1.0f + 3.0f / 2048), 0x3C02);       // tie rounds to even
  EXPECT_EQ(test::F32FromF16Bits(0x2E66), 0.0999755859375f);
  EXPECT_EQ(test::F32FromF16Bits(0x8001), -5.9604644775390625e-08f);
  EXPECT_EQ(test::BF16BitsFromF32(1.0f), 0x3F80);
  EXPECT_EQ(test::BF16BitsFromF32(-3.140625f), 0xC049);
  EXPECT_EQ(test::BF16BitsFromF32(1.0f + 1.0f / 256), 0x3F80);  // tie rounds to even
  EXPECT_EQ(test::BF16BitsFromF32(1.0f + 3.0f / 256), 0x3F82);  // tie rounds to even
  EXPECT_EQ(test::F32FromBF16Bits(0x3FC0), 1.5f);
}

}  // namespace
}  // namespace kestrel::ops
