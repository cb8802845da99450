// SmolLM3 (GGUF architecture smollm3) against llama.cpp itself: a tiny random SmolLM3
// (tests/py/make_tiny_llama.py --arch smollm3 --layers 8: Llama's permuted q/k and adjacent-pair
// RoPE, a tied head, 4 heads of 32 on a d_model of 64, and no RoPE in layers 3 and 7, as
// llama.cpp's smollm3 graph does in every 4th layer), converted with --weights f32, scores 300
// tokens of a fixed text; llama.cpp's logits for the same file and tokens are the fixture
// tests/data/smollm3_tiny_llama_cpp_logits.bin, recorded by hand with
// tests/py/record_llama_cpp_logits.py (CI cannot build llama.cpp). Mean KL(llama.cpp || Kestrel)
// must stay below 1e-5 nats and the top token must agree at every position (rotating every layer
// gives mean KL 4e-4 and 13 differing top tokens). Also: the converted plans rotate q and k in
// every layer but 3 and 7, and Kestrel's tokenizer (llama-bpe pre-tokenizer) gives llama.cpp's
// ids for the text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "tests/support/llama_cpp_logits.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

const char kFixture[] = KESTREL_SOURCE_DIR "/tests/data/smollm3_tiny_llama_cpp_logits.bin";
constexpr char kRecord[] = "tests/py/record_llama_cpp_logits.py";

class SmolLm3Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gguf_ = test::ScratchPath("smollm3.gguf");
    error_ = test::ReadLlamaCppLogitsAndModel(kFixture, "make_tiny_llama.py", gguf_, &fixture_);
  }
  static void TearDownTestSuite() { std::remove(gguf_.c_str()); }

  static std::string error_, gguf_;
  static test::LlamaCppLogits fixture_;
};
std::string SmolLm3Test::error_, SmolLm3Test::gguf_;
test::LlamaCppLogits SmolLm3Test::fixture_;

TEST_F(SmolLm3Test, LogitsMatchLlamaCpp) {
  ASSERT_EQ(error_, "");
  const test::LlamaCppLogits& f = fixture_;
  ASSERT_EQ(test::Fnv1a64(test::ReadBytes(gguf_)), f.gguf_hash)
      << "make_tiny_llama.py " << f.make_args << " no longer writes the GGUF the fixture was "
      << "recorded from; record it again with " << kRecord;
  const std::string kes = test::ScratchPath("smollm3.kes");
  const ProcessResult r = test::Convert({gguf_, kes, "--weights", "f32"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  std::unique_ptr<Model> model;
  const Status opened = Model::Open(kes, &model);
  std::remove(kes.c_str());
  ASSERT_TRUE(opened.ok()) << opened.message();
  ASSERT_EQ(model->vocab_size(), f.vocab);
  // The heads do not split d_model: Q is [64 -> 4 * 32], attn_output [4 * 32 -> 64].
  EXPECT_EQ(model->hparams().d_model(), 64u);
  EXPECT_EQ(model->hparams().n_heads(), 4u);
  EXPECT_EQ(model->hparams().head_dim(), 32u);

  // Same ids as llama.cpp's tokenizer (llama-bpe pre-tokenizer, ChatML control tokens parsed).
  std::vector<int32_t> ids;
  ASSERT_TRUE(model->tokenizer().Encode(f.text, false, true, &ids).ok());
  ASSERT_EQ(ids.size(), f.text_tokens);
  ids.resize(f.n_tokens);
  ASSERT_EQ(ids, f.tokens);

  std::vector<float> ours;
  ASSERT_EQ(test::ScoreAll(*model, f.tokens, 2, 512, &ours), "");
  const test::LogitAgreement a = test::CompareWithLlamaCpp(f, ours, 0, f.n_tokens);
  std::printf("smollm3 vs llama.cpp (%s): %u positions, mean KL %.3g, max KL %.3g, "
              "max |logit diff| %.3g, top token differs at %d\n",
              f.provenance.c_str(), f.n_tokens, a.kl_mean, a.kl_max, a.logit_diff_max,
              a.top_differ);
  EXPECT_LT(a.kl_mean, 1e-5);
  EXPECT_EQ(a.top_differ, 0) << a.first_differences;
}

// The plans rotate the keys (and queries) of every layer but 3 and 7: what the logits test
// checks through numbers, checked here per layer, in each decoder plan.
TEST_F(SmolLm3Test, NoRopeInEveryFourthLayer) {
  ASSERT_EQ(error_, "");
  const std::string kes = test::ScratchPath("smollm3-plans.kes");
  const ProcessResult r = test::Convert({gguf_, kes, "--weights", "f32"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  std::unique_ptr<Model> model;
  const Status opened = Model::Open(kes, &model);
  std::remove(kes.c_str());
  ASSERT_TRUE(opened.ok()) << opened.message();
  for (const char* name : {"prefill", "decode", "score"}) {
    const fb::Plan* plan = model->FindPlan(name);
    ASSERT_NE(plan, nullptr) << name;
    std::set<uint32_t> rotated;  // buffers a Rope op wrote
    std::vector<int> layers_rotated;
    for (const fb::Op* op : *plan->ops()) {
      if (op->params_type() == fb::OpParams::Rope) rotated.insert(op->inputs()->Get(0));
      const fb::KvStore* store = op->params_as_KvStore();
      if (store == nullptr) continue;
      const bool keys_rotated = rotated.count(op->inputs()->Get(0)) > 0;
      EXPECT_EQ(keys_rotated, (store->layer() + 1) % 4 != 0)
          << name << " plan, layer " << store->layer();
      layers_rotated.push_back(keys_rotated);
      rotated.clear();
    }
    EXPECT_EQ(layers_rotated, (std::vector<int>{1, 1, 1, 0, 1, 1, 1, 0})) << name;
  }
}
}  // namespace
}  // namespace kestrel
