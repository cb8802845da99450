// Qwen3 (GGUF architecture qwen3) against llama.cpp itself: a tiny random Qwen3
// (tests/py/make_tiny_llama.py --arch qwen3: QK-norm, no biases, tied head, 4 heads of 32 on a
// d_model of 64, so n_heads * head_dim != d_model), converted with --weights f32, scores 300
// tokens of a fixed text; llama.cpp's logits for the same file and tokens are the fixture
// tests/data/qwen3_tiny_llama_cpp_logits.bin, recorded by hand with
// tests/py/record_llama_cpp_logits.py (CI cannot build llama.cpp). Mean KL(llama.cpp || Kestrel)
// must stay below 1e-5 nats and the top token must agree at every position. Also: Kestrel's
// tokenizer gives llama.cpp's ids for the text, and a qwen3 file without its QK-norm weights is
// refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "tests/support/llama_cpp_logits.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

const char kFixture[] = KESTREL_SOURCE_DIR "/tests/data/qwen3_tiny_llama_cpp_logits.bin";
constexpr char kRecord[] = "tests/py/record_llama_cpp_logits.py";

class Qwen3Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gguf_ = test::ScratchPath("qwen3.gguf");
    error_ = test::ReadLlamaCppLogitsAndModel(kFixture, "make_tiny_llama.py", gguf_, &fixture_);
  }
  static void TearDownTestSuite() { std::remove(gguf_.c_str()); }

  static std::string error_, gguf_;
  static test::LlamaCppLogits fixture_;
};
std::string Qwen3Test::error_, Qwen3Test::gguf_;
test::LlamaCppLogits Qwen3Test::fixture_;

TEST_F(Qwen3Test, LogitsMatchLlamaCpp) {
  ASSERT_EQ(error_, "");
  const test::LlamaCppLogits& f = fixture_;
  ASSERT_EQ(test::Fnv1a64(test::ReadBytes(gguf_)), f.gguf_hash)
      << "make_tiny_llama.py " << f.make_args << " no longer writes the GGUF the fixture was "
      << "recorded from; record it again with " << kRecord;
  const std::string kes = test::ScratchPath("qwen3.kes");
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

  // Same ids as llama.cpp's tokenizer (qwen2 pre-tokenizer, ChatML control tokens parsed).
  std::vector<int32_t> ids;
  ASSERT_TRUE(model->tokenizer().Encode(f.text, false, true, &ids).ok());
  ASSERT_EQ(ids.size(), f.text_tokens);
  ids.resize(f.n_tokens);
  ASSERT_EQ(ids, f.tokens);

  std::vector<float> ours;
  ASSERT_EQ(test::ScoreAll(*model, f.tokens, 2, 512, &ours), "");
  const test::LogitAgreement a = test::CompareWithLlamaCpp(f, ours, 0, f.n_tokens);
  std::printf("qwen3 vs llama.cpp (%s): %u positions, mean KL %.3g, max KL %.3g, "
              "max |logit diff| %.3g, top token differs at %d\n",
              f.provenance.c_str(), f.n_tokens, a.kl_mean, a.kl_max, a.logit_diff_max,
              a.top_differ);
  EXPECT_LT(a.kl_mean, 1e-5);
  EXPECT_EQ(a.top_differ, 0) << a.first_differences;
}

// Without its QK-norm weights a qwen3 file is refused, naming the tensor (not converted as a
// Qwen2 without biases).
TEST_F(Qwen3Test, RefusesMissingQkNorm) {
  ASSERT_EQ(error_, "");
  const std::string edited = test::ScratchPath("qwen3-no-k-norm.gguf");
  const std::string out = test::ScratchPath("qwen3-no-k-norm.kes");
  ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                 "/tests/py/edit_gguf.py " + gguf_ + " " + edited +
                                 " --drop-tensor blk.2.attn_k_norm.weight"),
            "");
  const ProcessResult r = test::Convert({edited, out});
  std::remove(edited.c_str());
  ASSERT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_NE(r.err.find("blk.2.attn_k_norm.weight"), std::string::npos) << r.err;
  EXPECT_FALSE(test::Exists(out));
}

// An unknown architecture is still refused by name, and the list of supported ones has qwen3.
TEST_F(Qwen3Test, UnknownArchitectureListsQwen3) {
  ASSERT_EQ(error_, "");
  const std::string edited = test::ScratchPath("qwen3-as-mamba.gguf");
  const std::string out = test::ScratchPath("qwen3-as-mamba.kes");
  ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                 "/tests/py/edit_gguf.py " + gguf_ + " " + edited +
                                 " --set general.architecture=str:mamba"),
            "");
  const ProcessResult r = test::Convert({edited, out});
  std::remove(edited.c_str());
  ASSERT_TRUE(r.exited && r.exit_code == 1) << Describe(r);
  EXPECT_NE(r.err.find("unsupported architecture 'mamba'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gemma3, llama, qwen2, qwen3"), std::string::npos) << r.err;
  EXPECT_FALSE(test::Exists(out));
}

}  // namespace
}  // namespace kestrel
