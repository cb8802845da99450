// Phi-3 (GGUF architecture phi3) against llama.cpp itself: tiny random Phi-3 models
// (tests/py/make_tiny_phi3.py: fused attn_qkv with GQA, fused gate-and-up ffn_up, NEOX RoPE, a
// separate LM head) converted with --weights f32 score 300 tokens of a fixed text; llama.cpp's
// logits for the same files and tokens are the fixtures tests/data/phi3_tiny_llama_cpp_logits.bin
// (plain RoPE) and phi3_long_tiny_llama_cpp_logits.bin (LongRoPE: short and long frequency
// factors, an original context of 128 under the 512 both runtimes run at, so the long factors
// apply, and an attention factor of 1.3) and phi3_partial_tiny_llama_cpp_logits.bin (the same
// LongRoPE with partial rotary, as Phi-4-mini: 12 of each head's 16 elements turn, the factors
// 6 long), recorded by hand with
// tests/py/record_llama_cpp_logits.py --maker make_tiny_phi3.py (CI cannot build llama.cpp).
// Mean KL(llama.cpp || Kestrel) below 1e-5 nats and the same top token at every position,
// through the score plan and through prefill + decode. The long file with the short factors
// chosen, or without its attention factor, must be far off; a Q8_0 file's fused attn_qkv split
// at conversion gives the same model as the same rows stored apart; a file named as Phi-3 drops
// the whitespace after its special tokens as llama.cpp does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/llama_cpp_arch_test.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

constexpr char kMaker[] = "make_tiny_phi3.py";
constexpr char kPlain[] = "phi3";
constexpr char kLong[] = "phi3_long";
constexpr char kPartial[] = "phi3_partial";

using Phi3Test = test::LlamaCppArchTest<kPlain, kMaker>;

using Phi3LongRopeTest = test::LlamaCppArchTest<kLong, kMaker>;
using Phi3PartialRotaryTest = test::LlamaCppArchTest<kPartial, kMaker>;

TEST_F(Phi3Test, LogitsMatchLlamaCpp) { ExpectFixtureMatchesLlamaCpp(); }

// The same model as a Hugging Face folder (the fused qkv_proj and gate_up_proj, the original
// context and sliding window in config.json): converted from the folder, it matches llama.cpp as
// well. (The LongRoPE fixtures' attention factor of 1.3 is not one a folder can give: llama.cpp's
// converter computes it from the context ratio; tests/convert_hf_decoder_test.cc checks LongRoPE
// folders against their GGUFs.)
TEST_F(Phi3Test, HfFolderLogitsMatchLlamaCpp) { ExpectHfFolderMatchesLlamaCpp(); }

TEST_F(Phi3LongRopeTest, LogitsMatchLlamaCpp) { ExpectFixtureMatchesLlamaCpp(); }

// Prefill of the first half, then one decode step per token: the decode plan, and the keys the
// attention step rotates itself, with the long factors too.
TEST_F(Phi3LongRopeTest, PrefillAndDecodeMatchLlamaCpp) {
  ExpectFixturePrefillAndDecodeMatchLlamaCpp();
}

// An original context as long as the session's makes the short factors apply, and an attention
// factor of 1 drops the scaling: either must move the logits well away from llama.cpp's, so the
// fixture really exercises both.
TEST_F(Phi3LongRopeTest, LongFactorsAndAttentionFactorMatter) {
  ExpectEditsMatter({"--set phi3.rope.scaling.original_context_length=u32:512",
                     "--set phi3.rope.scaling.attn_factor=f32:1"});
}

TEST_F(Phi3PartialRotaryTest, LogitsMatchLlamaCpp) { ExpectFixtureMatchesLlamaCpp(); }

TEST_F(Phi3PartialRotaryTest, PrefillAndDecodeMatchLlamaCpp) {
  ExpectFixturePrefillAndDecodeMatchLlamaCpp();
}

// A Q8_0 file converted with --weights keep: attn_qkv's blocks split by rows give the model that
// the same rows stored as attn_q, attn_k and attn_v give, logit for logit.
TEST(Phi3FusedMatrices, SplitQ8RowsAreTheSeparateMatrices) {
  std::vector<float> logits[2];
  const char* layouts[2] = {"", " --split-qkv"};
  for (int i = 0; i < 2; ++i) {
    const std::string gguf = test::ScratchPath("phi3-q8-" + std::to_string(i) + ".gguf");
    const std::string kes = test::ScratchPath("phi3-q8-" + std::to_string(i) + ".kes");
    ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                   "/tests/py/make_tiny_phi3.py " + gguf + " --q8" + layouts[i]),
              "");
    const test::ProcessResult r = test::Convert({gguf, kes, "--weights", "keep"});
    std::remove(gguf.c_str());
    ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
    std::unique_ptr<Model> model;
    const Status opened = Model::Open(kes, &model);
    std::remove(kes.c_str());
    ASSERT_TRUE(opened.ok()) << opened.message();
    std::vector<int32_t> tokens;
    ASSERT_TRUE(model->tokenizer().Encode("The fused rows of phi3", false, true, &tokens).ok());
    ASSERT_EQ(test::ScoreAll(*model, tokens, 1, 64, &logits[i]), "");
  }
  ASSERT_FALSE(logits[0].empty());
  EXPECT_EQ(logits[0], logits[1]);
}

// llama.cpp gives the special tokens of a model whose general.name says Phi-3 an rstrip
// attribute (not <s>, <unk> and <|endoftext|>; </s> too): the whitespace after them is dropped.
// The ids are llama.cpp's for make_tiny_phi3.py --phi3-name, recorded by hand
// (tests/py/llama_cpp_logits.cc prints a text's tokens; build/llama.cpp of the llama-cpp-python
// 0.3.36 sdist). The same file under another name keeps the whitespace.
TEST(Phi3SpecialTokens, NamedPhi3DropsTheWhitespaceAfterThemAsLlamaCpp) {
  struct Case {
    const char* text;
    std::vector<int32_t> llama_cpp, unnamed;
  };
  const Case cases[] = {
      {"<|user|>\nHello there<|end|>\n<|assistant|>",
       {326, 72, 101, 292, 111, 258, 270, 328, 327},
       {326, 10, 72, 101, 292, 111, 258, 270, 328, 10, 327}},
      {"<|system|>  spaced  \t\n<|end|>\n\n<|user|> x </s> y <s> z <|endoftext|> w <unk> "
       "v<|im_end|>\n q<|assistant|>",
       {325, 115, 112, 97, 99,  101, 100, 32,  32, 9,   10, 328, 326, 120, 32, 324,
        121, 32,  323, 32, 122, 32,  320, 264, 32, 329, 32, 118, 322, 113, 327},
       {}},
  };
  const std::string named_gguf = test::ScratchPath("phi3-named.gguf");
  const std::string renamed_gguf = test::ScratchPath("phi3-renamed.gguf");
  const std::string python = std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR + "/tests/py/";
  ASSERT_EQ(test::RunHostCommand(python + "make_tiny_phi3.py " + named_gguf + " --phi3-name"), "");
  ASSERT_EQ(test::RunHostCommand(python + "edit_gguf.py " + named_gguf + " " + renamed_gguf +
                                 " --set general.name=str:tiny-random-phi"),
            "");
  for (bool named : {true, false}) {
    const std::string& gguf = named ? named_gguf : renamed_gguf;
    const std::string kes = test::ScratchPath(named ? "phi3-named.kes" : "phi3-renamed.kes");
    const test::ProcessResult r = test::Convert({gguf, kes});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
    std::unique_ptr<Model> model;
    const Status opened = Model::Open(kes, &model);
    std::remove(kes.c_str());
    ASSERT_TRUE(opened.ok()) << opened.message();
    for (const Case& c : cases) {
      if (!named && c.unnamed.empty()) continue;
      std::vector<int32_t> ids;
      ASSERT_TRUE(model->tokenizer().Encode(c.text, false, true, &ids).ok());
      EXPECT_EQ(ids, named ? c.llama_cpp : c.unnamed)
          << (named ? "named" : "unnamed") << ": " << c.text;
    }
  }
  std::remove(named_gguf.c_str());
  std::remove(renamed_gguf.c_str());
}

}  // namespace
}  // namespace kestrel
