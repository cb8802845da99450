#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "runtime/sampler.h"

namespace kestrel {
namespace {

class SamplerTest : public ::testing::Test {
 protected:
  Status Init(const SamplerOptions& o, size_t vocab) {
    scratch_.assign(Sampler::ScratchBytes(vocab), 0);
    return sampler_.Init(o, vocab, scratch_.data(), scratch_.size());
  }
  Sampler sampler_;
  std::vector<uint8_t> scratch_;
};

TEST_F(SamplerTest, GreedyPicksArgmaxLowestIdOnTies) {
  ASSERT_TRUE(Init({0.0f, 40, 0.95f, 1}, 5).ok());
  const float logits[5] = {1, 3, 2, 3, -1};
  EXPECT_EQ(sampler_.Sample(logits), 1);
}

TEST_F(SamplerTest, TopKOneIsGreedy) {
  ASSERT_TRUE(Init({1.0f, 1, 1.0f, 5}, 6).ok());
  const float logits[6] = {0.1f, 0.2f, 5.0f, 0.3f, 4.9f, 0.0f};
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sampler_.Sample(logits), 2);
}

TEST_F(SamplerTest, TopPKeepsTheNucleusOnly) {
  // Probabilities ~ 0.64, 0.24, 0.09, 0.03: top-p 0.8 keeps the first two.
  ASSERT_TRUE(Init({1.0f, 0, 0.8f, 9}, 4).ok());
  const float logits[4] = {2.0f, 1.0f, 0.0f, -1.2f};
  std::map<int, int> seen;
  for (int i = 0; i < 2000; ++i) ++seen[sampler_.Sample(logits)];
  EXPECT_EQ(seen.count(2), 0u);
  EXPECT_EQ(seen.count(3), 0u);
  // 0.64 / (0.64 + 0.24) = 0.73 of the draws.
  EXPECT_NEAR(seen[0] / 2000.0, 0.731, 0.04);
}

TEST_F(SamplerTest, TemperatureSamplingFollowsSoftmax) {
  ASSERT_TRUE(Init({0.5f, 0, 1.0f, 3}, 3).ok());
  const float logits[3] = {0.0f, 0.5f, 1.0f};  // at T=0.5: e^0, e^1, e^2
  std::map<int, int> seen;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) ++seen[sampler_.Sample(logits)];
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  EXPECT_NEAR(seen[0] / double(draws), 1 / z, 0.015);
  EXPECT_NEAR(seen[2] / double(draws), std::exp(2.0) / z, 0.015);
}

TEST_F(SamplerTest, SameSeedSameSequence) {
  const float logits[4] = {0.3f, 0.1f, 0.2f, 0.25f};
  std::vector<int> a, b;
  ASSERT_TRUE(Init({1.0f, 0, 1.0f, 123}, 4).ok());
  for (int i = 0; i < 50; ++i) a.push_back(sampler_.Sample(logits));
  ASSERT_TRUE(Init({1.0f, 0, 1.0f, 123}, 4).ok());
  for (int i = 0; i < 50; ++i) b.push_back(sampler_.Sample(logits));
  EXPECT_EQ(a, b);
}

TEST_F(SamplerTest, RejectsBadOptions) {
  EXPECT_FALSE(Init({-1.0f, 40, 0.9f, 0}, 4).ok());
  EXPECT_FALSE(Init({1.0f, -2, 0.9f, 0}, 4).ok());
  EXPECT_FALSE(Init({1.0f, 40, 0.0f, 0}, 4).ok());
  EXPECT_FALSE(Init({1.0f, 40, 1.5f, 0}, 4).ok());
  EXPECT_FALSE(sampler_.Init({1.0f, 40, 0.9f, 0}, 4, scratch_.data(), 3).ok());
}

}  // namespace
}  // namespace kestrel
