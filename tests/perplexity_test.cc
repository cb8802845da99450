// `kestrel perplexity` on the tiny random-weight Gemma 3 (tests/support): the number it prints is
// the one llama.cpp's protocol gives when recomputed here from Session::Score logits (chunks of
// --ctx tokens, first token of each replaced by BOS, logits at positions ctx/2 .. ctx-2 scoring
// the next token), and bad input gets one clean error line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using namespace test;  // NOLINT: the shared test helpers

// Exit code 1, and one stderr line "kestrel: error: ..." naming every keyword (usage errors may
// add the usage text after it).
::testing::AssertionResult IsCleanError(const ProcessResult& r,
                                        const std::vector<std::string>& keywords) {
  if (!r.exited || r.exit_code != 1) {
    return ::testing::AssertionFailure() << "expected exit code 1, got " << Describe(r);
  }
  const size_t newline = r.err.find('\n');
  const std::string first = r.err.substr(0, newline);
  if (first.rfind("kestrel: error: ", 0) != 0) {
    return ::testing::AssertionFailure() << "no 'kestrel: error: ' line: " << Describe(r);
  }
  for (const std::string& k : keywords) {
    if (first.find(k) == std::string::npos) {
      return ::testing::AssertionFailure() << "error does not mention '" << k << "': " << first;
    }
  }
  const std::string rest = newline == std::string::npos ? "" : r.err.substr(newline + 1);
  if (!rest.empty() && rest.rfind("usage: ", 0) != 0) {
    return ::testing::AssertionFailure() << "more than one line on stderr: " << Describe(r);
  }
  return ::testing::AssertionSuccess();
}

// The number after "key": in a flat JSON object (NaN when missing).
double JsonNumber(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

// Lower-case English the tiny vocabulary covers with merges and single letters: a few hundred
// tokens, varied enough that no two chunks are the same.
std::string SampleText() {
  const char* words[] = {"the", "cat", "sat", "on", "mat", "and", "dog", "was", "in",
                         "sun", "for", "a", "long", "time", "hello", "world", "that",
                         "with", "good", "day", "text", "is", "not", "what", "they"};
  const size_t n_words = sizeof(words) / sizeof(words[0]);
  std::string text;
  uint32_t state = 12345;
  for (int i = 0; i < 260; ++i) {
    state = state * 1664525u + 1013904223u;
    text += words[(state >> 16) % n_words];
    text += (i % 11 == 10) ? ".\n" : " ";
  }
  return text;
}

struct Expected {
  double ppl = 0, err = 0;
  size_t chunks = 0, scored = 0;
};

// llama.cpp's perplexity, recomputed independently: one Score call per chunk, two-pass variance.
Expected Recompute(const Model& model, const std::string& text, size_t ctx, size_t max_chunks) {
  const Tokenizer& tokenizer = model.tokenizer();
  std::vector<int32_t> tokens;
  EXPECT_TRUE(tokenizer.Encode(text, true, false, &tokens).ok());
  EXPECT_EQ(tokens.front(), tokenizer.config().bos_id) << "the tiny model adds BOS";
  Expected e;
  e.chunks = std::min(tokens.size() / ctx, max_chunks);
  SessionOptions options;
  options.context_length = ctx;
  std::unique_ptr<Session> session;
  Status s = Session::Create(model, options, &session);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!session) return e;
  const size_t vocab = model.vocab_size();
  std::vector<float> logits(ctx * vocab);
  std::vector<double> nlls;
  for (size_t c = 0; c < e.chunks; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + c * ctx, tokens.begin() + (c + 1) * ctx);
    chunk[0] = tokenizer.config().bos_id;
    session->Reset();
    s = session->Score(chunk.data(), ctx, logits.data());
    EXPECT_TRUE(s.ok()) << s.message();
    for (size_t j = ctx / 2; j + 1 < ctx; ++j) {
      const float* row = logits.data() + j * vocab;
      double max = row[0], sum = 0;
      for (size_t v = 0; v < vocab; ++v) max = std::max<double>(max, row[v]);
      for (size_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - max);
      nlls.push_back(max + std::log(sum) - row[chunk[j + 1]]);
    }
  }
  double mean = 0, variance = 0;
  for (double x : nlls) mean += x / nlls.size();
  for (double x : nlls) variance += (x - mean) * (x - mean) / nlls.size();
  e.scored = nlls.size();
  e.ppl = std::exp(mean);
  e.err = e.ppl * std::sqrt(variance / (nlls.size() - 1));
  return e;
}

class PerplexityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (tiny_ == nullptr) {
      tiny_ = new TinyModel();
      setup_error_ = new std::string(MakeTinyModel(tiny_));
    }
  }
  void SetUp() override {
    ASSERT_TRUE(setup_error_->empty()) << *setup_error_;
    text_path_ = ScratchPath("perplexity-text.txt");
    const std::string text = SampleText();
    ASSERT_TRUE(WriteBytes(text_path_, reinterpret_cast<const uint8_t*>(text.data()),
                           text.size()));
  }
  void TearDown() override { std::remove(text_path_.c_str()); }

  const std::string& kes() const { return tiny_->kes; }

  static TinyModel* tiny_;
  static std::string* setup_error_;
  std::string text_path_;
};
TinyModel* PerplexityTest::tiny_ = nullptr;
std::string* PerplexityTest::setup_error_ = nullptr;

TEST_F(PerplexityTest, MatchesLlamaCppProtocolRecomputedFromScoreLogits) {
  std::unique_ptr<Model> model;
  Status s = Model::Open(kes(), &model);
  ASSERT_TRUE(s.ok()) << s.message();
  const size_t ctx = 64;
  const Expected e = Recompute(*model, SampleText(), ctx, SIZE_MAX);
  ASSERT_GE(e.chunks, 3u) << "the sample text should give several chunks";
  ASSERT_EQ(e.scored, e.chunks * (ctx - ctx / 2 - 1));
  EXPECT_TRUE(std::isfinite(e.ppl));
  EXPECT_GT(e.ppl, 1.0);

  const ProcessResult r = Cli({"perplexity", kes(), "-f", text_path_, "--ctx", "64", "--json"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_EQ(JsonNumber(r.out, "ctx"), 64.0) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "chunks"), static_cast<double>(e.chunks)) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "tokens_scored"), static_cast<double>(e.scored)) << r.out;
  const double ppl = JsonNumber(r.out, "ppl"), err = JsonNumber(r.out, "ppl_err");
  EXPECT_TRUE(std::isfinite(ppl) && ppl > 1.0) << r.out;
  EXPECT_NEAR(ppl, e.ppl, 1e-9 * e.ppl) << r.out;
  // One-pass (llama.cpp's) against two-pass variance: equal up to rounding.
  EXPECT_NEAR(err, e.err, 1e-6 * e.err) << r.out;
  EXPECT_GT(err, 0.0);
  EXPECT_GE(JsonNumber(r.out, "seconds"), 0.0) << r.out;
  // Running perplexity per chunk on stderr, as llama.cpp prints it: "[1]p1,[2]p2,...".
  EXPECT_EQ(r.err.rfind("[1]", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("[" + std::to_string(e.chunks) + "]"), std::string::npos) << r.err;
}

TEST_F(PerplexityTest, SummaryLineChunkLimitAndThreads) {
  std::unique_ptr<Model> model;
  Status s = Model::Open(kes(), &model);
  ASSERT_TRUE(s.ok()) << s.message();
  const Expected e = Recompute(*model, SampleText(), 32, 2);
  ASSERT_EQ(e.chunks, 2u);

  const ProcessResult r =
      Cli({"perplexity", kes(), "-f", text_path_, "-c", "32", "--chunks", "2", "-t", "2"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  double ppl = 0, err = 0;
  size_t tokens = 0, chunks = 0, ctx = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "perplexity: %lf ± %lf over %zu tokens (%zu chunks of %zu)",
                        &ppl, &err, &tokens, &chunks, &ctx),
            5)
      << r.out;
  EXPECT_NEAR(ppl, e.ppl, 1e-4);  // printed with 4 decimals
  EXPECT_NEAR(err, e.err, 1e-5);
  EXPECT_EQ(tokens, e.scored);
  EXPECT_EQ(chunks, 2u);
  EXPECT_EQ(ctx, 32u);
}

TEST_F(PerplexityTest, BadInputGivesOneErrorLine) {
  const std::string& m = kes();
  const std::string missing = ScratchPath("no-such-text.txt");
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", missing, "--ctx", "64"}),
                           {"cannot open text file", missing}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", TmpPath(""), "-c", "64"}),
                           {"not a regular file"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", ScratchPath("no-such.kes"), "-f", text_path_}),
                           {"cannot open"}));

  // Too short for one chunk: the error says how many tokens the text has and how many it needs.
  const std::string short_path = ScratchPath("perplexity-short.txt");
  const std::string short_text = "the cat sat on the mat";
  ASSERT_TRUE(WriteBytes(short_path, reinterpret_cast<const uint8_t*>(short_text.data()),
                         short_text.size()));
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(m, &model).ok());
  std::vector<int32_t> tokens;
  ASSERT_TRUE(model->tokenizer().Encode(short_text, true, false, &tokens).ok());
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", short_path, "--ctx", "64"}),
                           {"has " + std::to_string(tokens.size()) + " tokens",
                            "needs at least 64"}));
  std::remove(short_path.c_str());

  // Larger than the model's context (256 tokens).
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--ctx", "512"}),
                           {"--ctx 512", "model's context of 256"}));

  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--bogus"}),
                           {"unknown option '--bogus'", "perplexity"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m}), {"no text file given"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", "-f", text_path_}), {"no model given"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f"}), {"-f needs a value"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--ctx", "abc"}),
                           {"--ctx", "whole number", "'abc'"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--ctx", "2"}),
                           {"--ctx", "'2'"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--chunks", "0"}),
                           {"--chunks", "'0'"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "-t", "0"}), {"-t", "'0'"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "extra"}),
                           {"unexpected argument 'extra'"}));
}

}  // namespace
}  // namespace kestrel
