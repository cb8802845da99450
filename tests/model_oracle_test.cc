// Kestrel's Gemma 3 270M and SmolLM2-135M-Instruct (f32 weights) against independent NumPy
// forward passes (tests/py/gemma3_oracle.py, llama_oracle.py: float64, weights dequantized by
// gguf-py): logits at every position agree within 1e-3 of each position's logit range, and
// greedy continuations are identical. Runs on a short prompt, a chat-formatted prompt with the
// model's control tokens, and a 720-token prompt prefilled in chunks (Gemma's sliding-window KV
// rings wrap).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::kLogitTolerance;
using test::LargestLogitError;
using test::ReadRaw;
using test::WriteRaw;

constexpr size_t kGreedyTokens = 32;

std::string TmpPath(const std::string& name) { return std::string(KESTREL_TEST_TMP) + "/" + name; }

struct OracleResult {
  std::vector<float> logits;    // [n, vocab]
  std::vector<int32_t> greedy;  // kGreedyTokens ids
};

struct RealModel {
  const char* name;  // <name>-f32.kes from the ctest fixture
  const char* gguf;
  const char* oracle;  // under tests/py
  const char* chat_prompt;
};

void PrintTo(const RealModel& m, std::ostream* os) { *os << m.name; }

const RealModel kModels[] = {
    {"gemma3-270m", KESTREL_MODEL_GGUF, "gemma3_oracle.py",
     "<start_of_turn>user\nName three birds of prey.<end_of_turn>\n<start_of_turn>model\n"},
    {"smollm2-135m", KESTREL_SMOLLM2_GGUF, "llama_oracle.py",
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nName three "
     "birds of prey.<|im_end|>\n<|im_start|>assistant\n"},
};

void RunOracle(const RealModel& m, const std::string& tag, const std::vector<int32_t>& tokens,
               OracleResult* out) {
  const std::string in = TmpPath(tag + ".tokens.i32"), logits = TmpPath(tag + ".oracle.f32"),
                    gen = TmpPath(tag + ".oracle-gen.i32");
  ASSERT_TRUE(WriteRaw(in, tokens)) << in;
  std::remove(logits.c_str());
  std::remove(gen.c_str());
  const std::string command = std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                              "/tests/py/" + m.oracle + " --gguf " + m.gguf + " --tokens-file " +
                              in + " --logits-out " + logits + " --generate " +
                              std::to_string(kGreedyTokens) + " --generated-out " + gen;
  ASSERT_EQ(std::system(command.c_str()), 0) << "oracle failed: " << command;
  out->logits = ReadRaw<float>(logits);
  out->greedy = ReadRaw<int32_t>(gen);
}

class OracleTest : public ::testing::TestWithParam<RealModel> {
 protected:
  void SetUp() override {
    Status s = Model::Open(TmpPath(std::string(GetParam().name) + "-f32.kes"), &model_);
    ASSERT_TRUE(s.ok()) << s.message() << " (the ctest fixture converts the model first)";
  }

  std::unique_ptr<Session> NewSession(size_t threads) {
    SessionOptions options;
    options.context_length = 2048;
    options.n_threads = threads;
    // The oracle keeps keys and values in float64: an f32 cache, not the default f16, is what
    // the tolerance and the identical greedy tokens are measured against.
    options.kv.type = ops::KvType::kF32;
    std::unique_ptr<Session> session;
    Status s = Session::Create(*model_, options, &session);
    EXPECT_TRUE(s.ok()) << s.message();
    return session;
  }

  std::vector<int32_t> Tokenize(const std::string& text, bool parse_special = false) {
    std::vector<int32_t> ids;
    Status s = model_->tokenizer().Encode(text, /*add_special=*/true, parse_special, &ids);
    EXPECT_TRUE(s.ok()) << s.message();
    return ids;
  }

  void CompareWithOracle(const std::string& prompt, const std::vector<int32_t>& tokens,
                         size_t threads) {
    const std::string tag = std::string(GetParam().name) + "-" + prompt;
    const size_t n = tokens.size(), vocab = model_->vocab_size();
    OracleResult oracle;
    RunOracle(GetParam(), tag, tokens, &oracle);
    ASSERT_EQ(oracle.logits.size(), n * vocab) << "oracle logits have the wrong size";
    ASSERT_EQ(oracle.greedy.size(), kGreedyTokens);

    // Every position, through the all-logits 'score' plan (chunks of its max_tokens).
    auto session = NewSession(threads);
    std::vector<float> ours(n * vocab);
    Status s = session->Score(tokens.data(), n, ours.data());
    ASSERT_TRUE(s.ok()) << s.message();
    size_t worst_at = 0;
    const double worst = LargestLogitError(ours.data(), oracle.logits.data(), n, vocab, &worst_at);
    std::printf(
        "[%s] %zu positions, %zu threads: largest logit error %.3g of the range "
        "(position %zu)\n",
        tag.c_str(), n, threads, worst, worst_at);
    EXPECT_LE(worst, kLogitTolerance) << "at position " << worst_at;

    // The prefill plan (bigger chunks, last-token logits) and greedy decoding.
    session = NewSession(threads);
    s = session->Prefill(tokens.data(), n);
    ASSERT_TRUE(s.ok()) << s.message();
    const double last =
        LargestLogitError(session->logits(), &oracle.logits[(n - 1) * vocab], 1, vocab);
    std::printf("[%s] prefill-plan last-position error %.3g of the range\n", tag.c_str(), last);
    EXPECT_LE(last, kLogitTolerance);
    std::vector<int32_t> greedy;
    for (size_t i = 0; i < kGreedyTokens; ++i) {
      const float* logits = session->logits();
      const int32_t next = static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
      greedy.push_back(next);
      if (i + 1 < kGreedyTokens) {
        ASSERT_TRUE(session->Decode(next).ok());
      }
    }
    EXPECT_EQ(greedy, oracle.greedy) << "greedy continuation differs from the oracle's";
    std::printf("[%s] greedy: %s\n", tag.c_str(), model_->tokenizer().Decode(greedy).c_str());
  }

  std::unique_ptr<Model> model_;
};

TEST_P(OracleTest, ShortPromptMatchesAtEveryPositionAndGreedy) {
  const std::vector<int32_t> tokens = Tokenize(
      "The kestrel is a small falcon that hovers in the wind while it hunts. It feeds on voles, "
      "mice and large insects, and it nests on cliffs, in trees and on tall buildings in cities.");
  ASSERT_GE(tokens.size(), 32u);
  CompareWithOracle("short", tokens, 1);
}

TEST_P(OracleTest, ChatPromptWithControlTokensMatches) {
  const std::vector<int32_t> tokens = Tokenize(GetParam().chat_prompt, /*parse_special=*/true);
  ASSERT_GE(tokens.size(), 12u);
  CompareWithOracle("chat", tokens, 2);
}

TEST_P(OracleTest, LongPromptPrefilledInChunksWrapsTheSlidingWindow) {
  std::ifstream license("/usr/share/common-licenses/GPL-3");
  ASSERT_TRUE(license.good()) << "/usr/share/common-licenses/GPL-3 (Debian base-files) is missing";
  const std::string text((std::istreambuf_iterator<char>(license)),
                         std::istreambuf_iterator<char>());
  std::vector<int32_t> tokens = Tokenize(text);
  ASSERT_GE(tokens.size(), 720u);
  tokens.resize(720);
  // The rings of sliding-window layers must be smaller than the prompt, or nothing wraps.
  auto session = NewSession(1);
  for (const KvRingPlan& ring : session->memory().kv) {
    if (ring.window) {
      ASSERT_LT(ring.capacity, tokens.size());
    }
  }
  CompareWithOracle("long", tokens, 2);
}

INSTANTIATE_TEST_SUITE_P(RealModels, OracleTest, ::testing::ValuesIn(kModels),
                         [](const auto& info) { return test::ParamName(info.param.name); });

}  // namespace
}  // namespace kestrel
