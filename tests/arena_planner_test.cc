// PlanArena: buffers alive at the same time never share bytes; buffers that are not do.
#include <gtest/gtest.h>

#include <random>

#include "converters/kes_model.h"
#include "runtime/format.h"

namespace kestrel {
namespace {

const KesModel kNoTensors;

bool Overlap(const fb::BufferT& a, const fb::BufferT& b) {
  return a.arena_offset < b.arena_offset + b.size && b.arena_offset < a.arena_offset + a.size;
}

TEST(ArenaPlanner, ChainReusesMemoryOfDeadBuffers) {
  PlanBuilder b(kNoTensors, "prefill", 4);
  const uint32_t tokens = b.TokenInput();
  uint32_t prev = b.Activation("x0", 100);
  b.Embed(tokens, prev, 0, 1.0f);
  for (int i = 1; i < 10; ++i) {
    const uint32_t next = b.Activation("x" + std::to_string(i), 100);
    b.Add(prev, prev, next);
    prev = next;
  }
  b.LogitsOutput(prev);
  fb::ModelT meta;
  meta.plans.push_back(b.Finish());
  ASSERT_TRUE(PlanArena(&meta).ok());
  const fb::PlanT& plan = *meta.plans[0];
  // A chain needs two activations and the tokens at any time, not ten.
  const uint64_t one = AlignUp(4 * 100 * 4, kKesAlignment);
  EXPECT_LE(plan.activation_bytes, 2 * one + AlignUp(4 * 4, kKesAlignment));
  EXPECT_EQ(meta.activation_bytes, plan.activation_bytes);
  for (const auto& buffer : plan.buffers) EXPECT_EQ(buffer->arena_offset % kKesAlignment, 0u);
}

TEST(ArenaPlanner, RandomPlansNeverOverlapLiveBuffers) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    PlanBuilder b(kNoTensors, "p", 1 + rng() % 8);
    const uint32_t tokens = b.TokenInput();
    std::vector<uint32_t> ids{tokens};
    const int n_ops = 5 + rng() % 30;
    std::vector<std::vector<uint32_t>> touched;
    for (int i = 0; i < n_ops; ++i) {
      const uint32_t out = b.Activation("b" + std::to_string(i), 1 + rng() % 300);
      const uint32_t in = ids[rng() % ids.size()];
      b.Add(in, in, out);
      touched.push_back({in, out});
      ids.push_back(out);
    }
    b.LogitsOutput(ids.back());
    fb::ModelT meta;
    meta.plans.push_back(b.Finish());
    ASSERT_TRUE(PlanArena(&meta).ok());
    const fb::PlanT& plan = *meta.plans[0];
    // Lifetimes as the planner defines them: step 0 writes tokens, op i is step i + 1.
    std::vector<int> first(plan.buffers.size(), 1 << 30), last(plan.buffers.size(), -1);
    first[tokens] = last[tokens] = 0;
    for (int i = 0; i < n_ops; ++i) {
      for (uint32_t id : touched[i]) {
        first[id] = std::min(first[id], i + 1);
        last[id] = std::max(last[id], i + 1);
      }
    }
    last[plan.outputs[0]->buffer] = n_ops + 1;
    for (size_t a = 0; a < plan.buffers.size(); ++a) {
      if (last[a] < 0) continue;
      EXPECT_LE(plan.buffers[a]->arena_offset + plan.buffers[a]->size, plan.activation_bytes);
      for (size_t c = a + 1; c < plan.buffers.size(); ++c) {
        if (last[c] < 0) continue;
        const bool alive_together = first[a] <= last[c] && first[c] <= last[a];
        if (alive_together) {
          EXPECT_FALSE(Overlap(*plan.buffers[a], *plan.buffers[c]))
              << "trial " << trial << ": buffers " << a << " and " << c;
        }
      }
    }
  }
}

TEST(ArenaPlanner, UnusedBufferIsAnError) {
  PlanBuilder b(kNoTensors, "p", 1);
  const uint32_t tokens = b.TokenInput();
  const uint32_t x = b.Activation("x", 8);
  b.Activation("never_used", 8);
  b.Embed(tokens, x, 0, 1.0f);
  b.LogitsOutput(x);
  fb::ModelT meta;
  meta.plans.push_back(b.Finish());
  const Status s = PlanArena(&meta);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("never used"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace kestrel
