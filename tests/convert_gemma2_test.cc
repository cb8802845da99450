// Gemma 2 (GGUF architecture gemma2) against llama.cpp itself: a tiny random Gemma 2
// (tests/py/make_tiny_gemma2.py: post-norms, no QK-norm, tied head, every other layer a sliding
// window of 32 positions, attention scores soft-capped at 4 and logits at 2, weights wide enough
// that both caps bite), converted with --weights f32, scores 300 tokens of a fixed text (so the
// window is far smaller than the text); llama.cpp's logits for the same file and tokens are the
// fixture tests/data/gemma2_tiny_llama_cpp_logits.bin, recorded by hand with
// tests/py/record_llama_cpp_logits.py --maker make_tiny_gemma2.py (CI cannot build llama.cpp).
// Mean KL(llama.cpp || Kestrel) must stay below 1e-5 nats and the top token must agree at every
// position, through the score plan and through prefill + decode (whose logits are a one-row
// buffer). The same file with either cap lifted, or no window, must be far off.
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
#include "runtime/session.h"
#include "tests/support/llama_cpp_arch_test.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

constexpr char kArch[] = "gemma2";
constexpr char kMaker[] = "make_tiny_gemma2.py";

class Gemma2Test : public test::LlamaCppArchTest<kArch, kMaker> {
 protected:
  // The fixture's GGUF with one key changed, scored over every position.
  static void ScoreEdited(const std::string& set, test::LogitAgreement* out) {
    const std::string edited = test::ScratchPath("gemma2-edited.gguf");
    ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                   "/tests/py/edit_gguf.py " + gguf_ + " " + edited + " --set " +
                                   set),
              "");
    std::unique_ptr<Model> model;
    OpenF32(edited, &model);
    std::remove(edited.c_str());
    if (model == nullptr) return;
    std::vector<float> ours;
    ASSERT_EQ(test::ScoreAll(*model, fixture_.tokens, 2, 512, &ours), "");
    *out = test::CompareWithLlamaCpp(fixture_, ours, 0, fixture_.n_tokens);
  }
};

TEST_F(Gemma2Test, LogitsMatchLlamaCpp) {
  ASSERT_EQ(error_, "");
  std::unique_ptr<Model> model;
  OpenF32(gguf_, &model);
  ASSERT_NE(model, nullptr);
  ExpectMatchesLlamaCpp(*model);
}

// Prefill of the first half, then one decode step per token: the prefill and decode plans, whose
// logits are a one-row buffer that the final soft-cap rewrites in place.
TEST_F(Gemma2Test, PrefillAndDecodeMatchLlamaCpp) {
  ASSERT_EQ(error_, "");
  const test::LlamaCppLogits& f = fixture_;
  std::unique_ptr<Model> model;
  OpenF32(gguf_, &model);
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.context_length = 512;
  options.n_threads = 2;
  options.kv.type = ops::KvType::kF32;
  std::unique_ptr<Session> session;
  Status s = Session::Create(*model, options, &session);
  ASSERT_TRUE(s.ok()) << s.message();
  const uint32_t half = f.n_tokens / 2;
  std::vector<float> ours(size_t{f.n_tokens} * f.vocab, 0.0f);
  s = session->Prefill(f.tokens.data(), half);
  ASSERT_TRUE(s.ok()) << s.message();
  std::copy(session->logits(), session->logits() + f.vocab, &ours[size_t{half - 1} * f.vocab]);
  for (uint32_t t = half; t < f.n_tokens; ++t) {
    s = session->Decode(f.tokens[t]);
    ASSERT_TRUE(s.ok()) << s.message();
    std::copy(session->logits(), session->logits() + f.vocab, &ours[size_t{t} * f.vocab]);
  }
  const test::LogitAgreement a = test::CompareWithLlamaCpp(f, ours, half - 1, f.n_tokens);
  std::printf("gemma2 vs llama.cpp, prefill %u + decode %u: mean KL %.3g, max KL %.3g, "
              "top token differs at %d\n",
              half, f.n_tokens - half, a.kl_mean, a.kl_max, a.top_differ);
  EXPECT_LT(a.kl_mean, 1e-5);
  EXPECT_EQ(a.top_differ, 0);
}

// With either cap lifted far above anything the model reaches, or the window wider than the
// text, the logits must move well away from llama.cpp's: the fixture really exercises the caps and
// the sliding layers.
TEST_F(Gemma2Test, SoftCapsAndWindowMatter) {
  ASSERT_EQ(error_, "");
  for (const char* set : {"gemma2.attn_logit_softcapping=f32:1000000",
                          "gemma2.final_logit_softcapping=f32:1000000",
                          "gemma2.attention.sliding_window=u32:4096"}) {
    test::LogitAgreement a;
    ScoreEdited(set, &a);
    std::printf("%s: mean KL %.3g\n", set, a.kl_mean);
    EXPECT_GT(a.kl_mean, 1e-3) << set;
  }
}

}  // namespace
}  // namespace kestrel
