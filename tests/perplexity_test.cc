// `kestrel perplexity` on the tiny random-weight Gemma 3 (tests/support): the number it prints is
// the one llama.cpp's protocol gives when recomputed here from Session::Score logits (chunks of
// --ctx tokens, first token of each replaced by BOS, logits at positions ctx/2 .. ctx-2 scoring
// the next token), and bad input gets one clean error line. The same for --kl-divergence-base /
// --kl-divergence: the base file has llama.cpp's layout, and the KL divergence reported equals
// the one recomputed from both models' Score logits within the file's rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_model_test.h"

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
  const char* words[] = {"the",  "cat", "sat",  "on",   "mat",  "and",   "dog",   "was",  "in",
                         "sun",  "for", "a",    "long", "time", "hello", "world", "that", "with",
                         "good", "day", "text", "is",   "not",  "what",  "they"};
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

// A scored position: its log-softmax (in double) and the token it scores.
struct ScoredRow {
  std::vector<double> log_p;
  int32_t next = 0;
};

// log(sum(exp(row))) over the vocabulary, in double, shifted by the row's maximum so that exp
// cannot overflow: what turns a row of logits into log-probabilities.
double LogSumExp(const float* row, size_t vocab) {
  double max = row[0], sum = 0;
  for (size_t v = 0; v < vocab; ++v) max = std::max<double>(max, row[v]);
  for (size_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - max);
  return max + std::log(sum);
}

// A session of `options` on `model`; null, the failure reported, when it cannot be made.
std::unique_ptr<Session> CreateSession(const Model& model, const SessionOptions& options) {
  std::unique_ptr<Session> session;
  const Status s = Session::Create(model, options, &session);
  EXPECT_TRUE(s.ok()) << s.message();
  return session;
}

// The rows llama.cpp's protocol scores, recomputed independently: one Score call per chunk.
std::vector<ScoredRow> ScoreRows(const Model& model, const std::string& text, size_t ctx,
                                 size_t max_chunks, size_t* n_chunks,
                                 ops::KvType kv_type = SessionOptions().kv.type) {
  const Tokenizer& tokenizer = model.tokenizer();
  std::vector<int32_t> tokens;
  EXPECT_TRUE(tokenizer.Encode(text, true, false, &tokens).ok());
  EXPECT_EQ(tokens.front(), tokenizer.config().bos_id) << "the tiny model adds BOS";
  *n_chunks = std::min(tokens.size() / ctx, max_chunks);
  std::vector<ScoredRow> rows;
  SessionOptions options;
  options.context_length = ctx;
  options.kv.type = kv_type;
  const std::unique_ptr<Session> session = CreateSession(model, options);
  if (!session) return rows;
  const size_t vocab = model.vocab_size();
  std::vector<float> logits(ctx * vocab);
  for (size_t c = 0; c < *n_chunks; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + c * ctx, tokens.begin() + (c + 1) * ctx);
    chunk[0] = tokenizer.config().bos_id;
    session->Reset();
    const Status s = session->Score(chunk.data(), ctx, logits.data());
    EXPECT_TRUE(s.ok()) << s.message();
    for (size_t j = ctx / 2; j + 1 < ctx; ++j) {
      const float* row = logits.data() + j * vocab;
      const double log_sum = LogSumExp(row, vocab);
      ScoredRow r{std::vector<double>(row, row + vocab), chunk[j + 1]};
      for (double& x : r.log_p) x -= log_sum;
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

struct Expected {
  double ppl = 0, err = 0;
  size_t chunks = 0, scored = 0;
};

// The perplexity of these NLLs and its error, with a two-pass variance.
Expected FromNlls(const std::vector<double>& nlls, size_t chunks) {
  Expected e;
  e.chunks = chunks;
  double mean = 0, variance = 0;
  for (double x : nlls) mean += x / nlls.size();
  for (double x : nlls) variance += (x - mean) * (x - mean) / nlls.size();
  e.scored = nlls.size();
  e.ppl = std::exp(mean);
  e.err = e.ppl * std::sqrt(variance / (nlls.size() - 1));
  return e;
}

// llama.cpp's perplexity, recomputed independently.
Expected Recompute(const Model& model, const std::string& text, size_t ctx, size_t max_chunks,
                   ops::KvType kv_type = SessionOptions().kv.type) {
  size_t chunks = 0;
  std::vector<double> nlls;
  for (const ScoredRow& r : ScoreRows(model, text, ctx, max_chunks, &chunks, kv_type)) {
    nlls.push_back(-r.log_p[r.next]);
  }
  return FromNlls(nlls, chunks);
}

// --stream's perplexity, recomputed independently: the chunks' tokens (BOS first, none replaced)
// scored by one Score call from position 0 of a session of `ctx` positions and `sinks` sinks,
// counting the positions chunked scoring counts (offsets ctx/2 .. ctx-2 of every chunk).
Expected RecomputeStreamed(const Model& model, const std::string& text, size_t ctx, size_t sinks) {
  std::vector<int32_t> tokens;
  EXPECT_TRUE(model.tokenizer().Encode(text, true, false, &tokens).ok());
  const size_t chunks = tokens.size() / ctx, n = chunks * ctx, vocab = model.vocab_size();
  SessionOptions options;
  options.context_length = ctx;
  options.kv.sinks = sinks;
  const std::unique_ptr<Session> session = CreateSession(model, options);
  std::vector<float> logits(n * vocab);
  if (session) {
    const Status s = session->Score(tokens.data(), n, logits.data());
    EXPECT_TRUE(s.ok()) << s.message();
  }
  std::vector<double> nlls;
  for (size_t j = 0; j + 1 < n; ++j) {
    if (j % ctx < ctx / 2 || j % ctx == ctx - 1) continue;
    const float* row = logits.data() + j * vocab;
    nlls.push_back(LogSumExp(row, vocab) - row[tokens[j + 1]]);
  }
  return FromNlls(nlls, chunks);
}

class PerplexityTest : public TinyModelSuite {
 protected:
  void SetUp() override {
    ASSERT_TRUE(setup_error_->empty()) << *setup_error_;
    text_path_ = ScratchPath("perplexity-text.txt");
    const std::string text = SampleText();
    ASSERT_TRUE(WriteBytes(text_path_, reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  void TearDown() override { std::remove(text_path_.c_str()); }

  const std::string& kes() const { return tiny_->kes; }

  std::string text_path_;
};

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

  const ProcessResult r =
      Cli({"perplexity", "-t", "1", kes(), "-f", text_path_, "--ctx", "64", "--json"});
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
  // An f32 cache on both sides: 2 threads split the attention's sums differently from the
  // recomputation's 1, which an f16 cache's rounding carried to 1.5e-6 of the perplexity on
  // SVE2-512 under qemu (f32: a float ULP of a few logits).
  const Expected e = Recompute(*model, SampleText(), 32, 2, ops::KvType::kF32);
  ASSERT_EQ(e.chunks, 2u);

  const ProcessResult r = Cli({"perplexity", kes(), "-f", text_path_, "-c", "32", "--chunks", "2",
                               "-t", "2", "--kv-type", "f32"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  double ppl = 0, err = 0;
  size_t tokens = 0, chunks = 0, ctx = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "perplexity: %lf ± %lf over %zu tokens (%zu chunks of %zu)",
                        &ppl, &err, &tokens, &chunks, &ctx),
            5)
      << r.out;
  EXPECT_NEAR(ppl, e.ppl, 1e-4);  // printed with 4 decimals
  // Printed with 5 decimals; 2 threads against the recomputation's 1 may round a few logits
  // differently by a float ULP (seen on SVE2-512 under qemu: 6.6e-8 of the error's value).
  EXPECT_NEAR(err, e.err, 1e-5 + 2e-7 * e.err);
  EXPECT_EQ(tokens, e.scored);
  EXPECT_EQ(chunks, 2u);
  EXPECT_EQ(ctx, 32u);
}

// --stream: the same tokens scored, as one sequence running past the context (--ctx 32 over the
// sample text's chunks), with the perplexity recomputed from one Score call.
TEST_F(PerplexityTest, StreamScoresTheChunksAsOneSequence) {
  std::unique_ptr<Model> model;
  Status s = Model::Open(kes(), &model);
  ASSERT_TRUE(s.ok()) << s.message();
  const size_t ctx = 32;
  for (const char* sinks : {"4", "0"}) {
    const Expected e = RecomputeStreamed(*model, SampleText(), ctx, std::atoi(sinks));
    const Expected chunked = Recompute(*model, SampleText(), ctx, SIZE_MAX);
    ASSERT_GE(e.chunks, 5u) << "the sample text should run well past the context";
    ASSERT_EQ(e.scored, chunked.scored);

    const ProcessResult r = Cli({"perplexity", "-t", "1", kes(), "-f", text_path_, "--ctx", "32",
                                 "--stream", "--sinks", sinks, "--json"});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    EXPECT_NE(r.out.find("\"stream\": true"), std::string::npos) << r.out;
    EXPECT_EQ(JsonNumber(r.out, "sinks"), std::atof(sinks)) << r.out;
    EXPECT_NE(r.out.find("\"kv_type\": \"f16\""), std::string::npos) << "the default\n" << r.out;
    EXPECT_EQ(JsonNumber(r.out, "chunks"), static_cast<double>(e.chunks)) << r.out;
    EXPECT_EQ(JsonNumber(r.out, "tokens_scored"), static_cast<double>(e.scored)) << r.out;
    EXPECT_NEAR(JsonNumber(r.out, "ppl"), e.ppl, 1e-9 * e.ppl) << r.out;
    EXPECT_NEAR(JsonNumber(r.out, "ppl_err"), e.err, 1e-6 * e.err) << r.out;
    // The running perplexity per chunk, as chunked scoring prints it.
    EXPECT_NE(r.err.find("[" + std::to_string(e.chunks) + "]"), std::string::npos) << r.err;
  }
  const ProcessResult line = Cli({"perplexity", "-t", "1", kes(), "-f", text_path_, "--ctx", "32",
                                  "--stream", "--kv-type", "f32"});
  ASSERT_TRUE(line.exited && line.exit_code == 0) << Describe(line);
  EXPECT_NE(line.out.find("chunks of 32, streamed with 4 sinks), KV f32"), std::string::npos)
      << line.out;
}

// One chunk streamed is the chunk scored from position 0: the same tokens, the same numbers.
TEST_F(PerplexityTest, StreamOfOneChunkIsTheChunk) {
  const ProcessResult chunked = Cli(
      {"perplexity", "-t", "1", kes(), "-f", text_path_, "--ctx", "64", "--chunks", "1", "--json"});
  const ProcessResult streamed = Cli({"perplexity", "-t", "1", kes(), "-f", text_path_, "--ctx",
                                      "64", "--chunks", "1", "--stream", "--json"});
  ASSERT_TRUE(chunked.exited && chunked.exit_code == 0) << Describe(chunked);
  ASSERT_TRUE(streamed.exited && streamed.exit_code == 0) << Describe(streamed);
  EXPECT_EQ(JsonNumber(streamed.out, "ppl"), JsonNumber(chunked.out, "ppl")) << streamed.out;
  EXPECT_EQ(JsonNumber(streamed.out, "tokens_scored"), JsonNumber(chunked.out, "tokens_scored"));
}

TEST_F(PerplexityTest, BadInputGivesOneErrorLine) {
  const std::string& m = kes();
  const std::string missing = ScratchPath("no-such-text.txt");
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", missing, "--ctx", "64"}),
                           {"cannot open text file", missing}));
  EXPECT_TRUE(
      IsCleanError(Cli({"perplexity", m, "-f", TmpPath(""), "-c", "64"}), {"not a regular file"}));
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
  EXPECT_TRUE(
      IsCleanError(Cli({"perplexity", m, "-f", short_path, "--ctx", "64"}),
                   {"has " + std::to_string(tokens.size()) + " tokens", "needs at least 64"}));
  std::remove(short_path.c_str());

  // Larger than the model's context (256 tokens): lowered to it, with a warning (as run and chat).
  {
    const ProcessResult r = Cli({"perplexity", "-t", "1", m, "-f", text_path_, "--ctx", "512"});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    EXPECT_NE(r.err.find("warning: --ctx 512 is more than the model's context of 256 tokens; "
                         "using 256"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.out.find("chunks of 256"), std::string::npos) << r.out;
  }

  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--bogus"}),
                           {"unknown option '--bogus'", "perplexity"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m}), {"no text file given"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", "-f", text_path_}), {"no model given"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f"}), {"-f needs a value"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--ctx", "abc"}),
                           {"--ctx", "whole number", "'abc'"}));
  EXPECT_TRUE(
      IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--ctx", "2"}), {"--ctx", "'2'"}));
  EXPECT_TRUE(
      IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--chunks", "0"}), {"--chunks", "'0'"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "-t", "0"}), {"-t", "'0'"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "extra"}),
                           {"unexpected argument 'extra'"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--kv-type", "q8_0"}),
                           {"--kv-type", "expected f32, f16 or int8", "found 'q8_0'"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--ctx", "64", "--sinks", "64"}),
                           {"--sinks", "fewer than the context of 64 tokens", "found 64"}));
  EXPECT_TRUE(IsCleanError(
      Cli({"perplexity", m, "-f", text_path_, "--stream", "--kl-divergence-base", "base.kld"}),
      {"--stream", "--kl-divergence-base", "'base.kld'"}));
}

// What --kl-divergence should report for `model` against `base`, recomputed in double from both
// models' Score logits, with bounds on what the base file's rounding may change.
//
// The bounds. A row of the file keeps the 16 nats below its top: floor = max(min, max - 16),
// step s = (max - floor) / 65535, m = the floor's log-probability; token i is stored as
// q_i = round((l_i - floor) / s) and read back as b~_i = s q_i + m. Rounding to the nearest step
// errs by s/2; the float quotient, the float s times up to 65535 steps (2^-24 * 65535 < 0.004
// steps) and the float sums in the writer and reader (each under 2^-24 of a value no larger than
// |m| + 16) add the rest, so for every token above the floor
//   |b~_i - b_i| <= d = 0.52 s + 2^-22 (|m| + 16),
// and a token at the floor has b_i <= m = b~_i, with b~_i <= -16 unless the floor is the
// minimum logit (then b_i = m, within d). The KL sum is of f(b_i) = e^b_i (b_i - lq_i) over the
// tokens with b~_i > -16, and for |e| <= d
//   |f(b + e) - f(b)| = e^b |(e^e - 1)(b - lq) + e^e e| <= e^b d e^d (|b - lq| + 1)
// since e^x - 1 <= x e^x. A token with b_i > -16 + d is kept and errs by at most that; one with
// b_i <= -16 + d may be kept or dropped, so it may move the sum by all of e^(b_i + d)
// (|b_i - lq_i| + d). A position's bound is the sum over its tokens; the mean KLD errs by at most
// the mean of the bounds. The NLL of the base errs by d, so ln(PPL(Q)/PPL(base)) by the mean d
// and RMS dp by at most max e^(b_next) d e^d (Minkowski). The base's most likely token is the
// first one stored as 65535: any token within one step s of the top makes that position's
// "same top" ambiguous.
struct ExpectedKld {
  size_t count = 0;
  double kld_mean = 0, kld_mean_bound = 0, kld_max = 0, kld_max_bound = 0;
  double ln_ppl_ratio = 0, ln_ppl_ratio_bound = 0, rms_dp = 0, rms_dp_bound = 0;
  double same_top = 0;
  size_t ambiguous_top = 0;
};

ExpectedKld RecomputeKld(const Model& base, const Model& model, const std::string& text, size_t ctx,
                         size_t max_chunks) {
  size_t chunks = 0;
  const std::vector<ScoredRow> base_rows = ScoreRows(base, text, ctx, max_chunks, &chunks);
  const std::vector<ScoredRow> rows = ScoreRows(model, text, ctx, max_chunks, &chunks);
  EXPECT_EQ(base_rows.size(), rows.size());
  ExpectedKld e;
  e.count = std::min(base_rows.size(), rows.size());
  double dp2 = 0;
  for (size_t k = 0; k < e.count; ++k) {
    const std::vector<double>&b = base_rows[k].log_p, &lq = rows[k].log_p;
    const size_t top = std::max_element(b.begin(), b.end()) - b.begin();
    const double max = b[top], floor = std::max(*std::min_element(b.begin(), b.end()), max - 16);
    const double step = (max - floor) / 65535;
    const double d = 0.52 * step + std::ldexp(std::fabs(floor) + 16, -22);
    double kld = 0, bound = 0;
    size_t near_top = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      const double gap = std::fabs(b[i] - lq[i]);
      kld += std::exp(b[i]) * (b[i] - lq[i]);
      bound += b[i] > -16 + d ? std::exp(b[i]) * d * std::exp(d) * (gap + 1)
                              : std::exp(b[i] + d) * (gap + d);
      near_top += b[i] >= max - step;
    }
    e.kld_mean += kld / e.count;
    e.kld_mean_bound += bound / e.count;
    e.kld_max = std::max(e.kld_max, kld);
    e.kld_max_bound = std::max(e.kld_max_bound, bound);
    const int32_t next = rows[k].next;
    e.ln_ppl_ratio += (b[next] - lq[next]) / e.count;
    e.ln_ppl_ratio_bound += d / e.count;
    const double dp = std::exp(lq[next]) - std::exp(b[next]);
    dp2 += dp * dp / e.count;
    e.rms_dp_bound = std::max(e.rms_dp_bound, std::exp(b[next]) * d * std::exp(d));
    e.same_top += (std::max_element(lq.begin(), lq.end()) - lq.begin() == static_cast<long>(top));
    e.ambiguous_top += near_top > 1;
  }
  e.same_top /= e.count;
  e.rms_dp = std::sqrt(dp2);
  return e;
}

// The tiny model's GGUF converted again with --weights `weights` (once per test process).
std::string ConvertTiny(const std::string& gguf, const std::string& weights) {
  const std::string out = ScratchPath("perplexity-tiny-" + weights + ".kes");
  if (!Exists(out)) {
    const ProcessResult r = Convert({gguf, out, "--weights", weights});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  }
  return out;
}

// Writes a base file for `kes` (ctx 64) with the CLI; returns its path.
std::string WriteBase(const std::string& kes, const std::string& text_path,
                      const std::string& name) {
  const std::string path = ScratchPath(name);
  const ProcessResult r = Cli(
      {"perplexity", "-t", "1", kes, "-f", text_path, "--ctx", "64", "--kl-divergence-base", path});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_NE(r.err.find("saved to '" + path + "'"), std::string::npos) << r.err;
  return path;
}

template <typename T>
T ReadAt(const std::vector<uint8_t>& bytes, size_t offset) {
  T value{};
  if (offset + sizeof(T) <= bytes.size()) std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// Read back with llama.cpp's layout (kl_divergence.h): header, tokens, then rows of
// 2 * ceil(vocab / 2) + 4 uint16, each within d of the exact log-softmax (the bound above).
TEST_F(PerplexityTest, KlDivergenceBaseFileHasLlamaCppLayout) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(kes(), &model).ok());
  const size_t ctx = 64, vocab = model->vocab_size(), slots = 2 * ((vocab + 1) / 2) + 4;
  size_t chunks = 0;
  const std::vector<ScoredRow> rows = ScoreRows(*model, SampleText(), ctx, SIZE_MAX, &chunks);
  ASSERT_EQ(rows.size(), chunks * (ctx - 1 - ctx / 2));
  const std::string path = WriteBase(kes(), text_path_, "kld-layout.bin");
  const std::vector<uint8_t> bytes = ReadBytes(path);
  const size_t rows_at = 20 + 4 * chunks * ctx;
  ASSERT_EQ(bytes.size(), rows_at + rows.size() * slots * 2);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "_logits_");
  EXPECT_EQ(ReadAt<uint32_t>(bytes, 8), ctx);
  EXPECT_EQ(ReadAt<int32_t>(bytes, 12), static_cast<int32_t>(vocab));
  EXPECT_EQ(ReadAt<int32_t>(bytes, 16), static_cast<int32_t>(chunks));
  std::vector<int32_t> tokens;
  ASSERT_TRUE(model->tokenizer().Encode(SampleText(), true, false, &tokens).ok());
  for (size_t t = 0; t < chunks * ctx; ++t) {
    ASSERT_EQ(ReadAt<int32_t>(bytes, 20 + 4 * t), tokens[t]) << "token " << t;
  }
  for (size_t k = 0; k < rows.size(); ++k) {
    const size_t at = rows_at + k * slots * 2;
    const float scale = ReadAt<float>(bytes, at), min_log_prob = ReadAt<float>(bytes, at + 4);
    const double d = 0.52 * scale + std::ldexp(std::fabs(min_log_prob) + 16, -22);
    for (size_t i = 0; i < vocab; ++i) {
      const double stored = scale * ReadAt<uint16_t>(bytes, at + 8 + 2 * i) + min_log_prob;
      const double exact = rows[k].log_p[i];
      if (exact > min_log_prob + d) {
        ASSERT_NEAR(stored, exact, d) << "row " << k << " token " << i;
      } else {
        ASSERT_LE(exact, stored + d) << "row " << k << " token " << i;
      }
    }
  }
  std::remove(path.c_str());
}

TEST_F(PerplexityTest, KlDivergenceOfAModelAgainstItselfIsZero) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(kes(), &model).ok());
  const ExpectedKld e = RecomputeKld(*model, *model, SampleText(), 64, SIZE_MAX);
  ASSERT_EQ(e.kld_mean, 0.0);
  const std::string base = WriteBase(kes(), text_path_, "kld-self.bin");
  const ProcessResult r = Cli({"perplexity", "-t", "1", kes(), "-f", text_path_, "--ctx", "64",
                               "--json", "--kl-divergence-base", base, "--kl-divergence"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  EXPECT_EQ(JsonNumber(r.out, "kld_positions"), static_cast<double>(e.count)) << r.out;
  EXPECT_LE(std::fabs(JsonNumber(r.out, "kld_mean")), e.kld_mean_bound) << r.out;
  EXPECT_LE(std::fabs(JsonNumber(r.out, "kld_max")), e.kld_max_bound) << r.out;
  EXPECT_LE(std::fabs(JsonNumber(r.out, "kld_min")), e.kld_max_bound) << r.out;
  EXPECT_LE(std::fabs(JsonNumber(r.out, "ln_ppl_ratio")), e.ln_ppl_ratio_bound) << r.out;
  EXPECT_LE(JsonNumber(r.out, "rms_dp"), e.rms_dp_bound) << r.out;
  EXPECT_EQ(JsonNumber(r.out, "same_top"), 1.0) << r.out;
  std::remove(base.c_str());
}

// q8 and q4 conversions of the tiny model against its f32 one: every figure equals the one
// recomputed from both models' Score logits, within the bounds derived above RecomputeKld.
TEST_F(PerplexityTest, KlDivergenceOfQuantizedModelsMatchesRecomputedFromScoreLogits) {
  std::unique_ptr<Model> base;
  ASSERT_TRUE(Model::Open(kes(), &base).ok());
  const std::string base_file = WriteBase(kes(), text_path_, "kld-f32.bin");
  for (const char* weights : {"q8", "q4"}) {
    SCOPED_TRACE(weights);
    const std::string quantized = ConvertTiny(tiny_->gguf, weights);
    std::unique_ptr<Model> model;
    ASSERT_TRUE(Model::Open(quantized, &model).ok());
    const ExpectedKld e = RecomputeKld(*base, *model, SampleText(), 64, SIZE_MAX);
    EXPECT_GT(e.kld_mean, 4 * e.kld_mean_bound) << "the test should see a real divergence";
    const ProcessResult r =
        Cli({"perplexity", "-t", "1", quantized, "-f", text_path_, "--ctx", "64", "--json",
             "--kl-divergence-base", base_file, "--kl-divergence"});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    EXPECT_EQ(JsonNumber(r.out, "kld_positions"), static_cast<double>(e.count)) << r.out;
    EXPECT_NEAR(JsonNumber(r.out, "kld_mean"), e.kld_mean, e.kld_mean_bound) << r.out;
    EXPECT_NEAR(JsonNumber(r.out, "kld_max"), e.kld_max, e.kld_max_bound) << r.out;
    EXPECT_NEAR(JsonNumber(r.out, "ln_ppl_ratio"), e.ln_ppl_ratio, e.ln_ppl_ratio_bound) << r.out;
    EXPECT_NEAR(JsonNumber(r.out, "rms_dp"), e.rms_dp, e.rms_dp_bound + 1e-12) << r.out;
    EXPECT_NEAR(JsonNumber(r.out, "same_top"), e.same_top,
                static_cast<double>(e.ambiguous_top) / e.count)
        << r.out;
    EXPECT_NEAR(JsonNumber(r.out, "ppl"), Recompute(*model, SampleText(), 64, SIZE_MAX).ppl,
                1e-9 * JsonNumber(r.out, "ppl"))
        << r.out;
    // --chunks scores the first chunks of a longer base file.
    const ProcessResult two =
        Cli({"perplexity", "-t", "1", quantized, "-f", text_path_, "--ctx", "64", "--chunks", "2",
             "--json", "--kl-divergence-base", base_file, "--kl-divergence"});
    ASSERT_TRUE(two.exited && two.exit_code == 0) << Describe(two);
    EXPECT_EQ(JsonNumber(two.out, "kld_positions"), 2.0 * (64 - 1 - 32)) << two.out;
    EXPECT_NEAR(JsonNumber(two.out, "kld_mean"),
                RecomputeKld(*base, *model, SampleText(), 64, 2).kld_mean, e.kld_max_bound)
        << two.out;
  }
  // The summary names each figure as llama-perplexity does.
  const ProcessResult r =
      Cli({"perplexity", "-t", "1", ConvertTiny(tiny_->gguf, "q4"), "-f", text_path_, "--ctx", "64",
           "--kl-divergence-base", base_file, "--kl-divergence"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  for (const char* name :
       {"Mean PPL(base)", "Mean ln(PPL(Q)/PPL(base))", "Mean    KLD:", "Median  KLD:",
        "99.0%   KLD:", "Maximum KLD:", "RMS Δp    :", "Same top p:"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name << " missing from " << r.out;
  }
  std::remove(base_file.c_str());
}

TEST_F(PerplexityTest, KlDivergenceBaseFileMismatchGivesOneErrorLine) {
  const std::string& m = kes();
  const std::string base = WriteBase(m, text_path_, "kld-mismatch.bin");
  const std::vector<uint8_t> bytes = ReadBytes(base);
  ASSERT_GT(bytes.size(), 1000u);
  const auto compare = [&](const std::string& file, const std::string& ctx,
                           const std::string& text) {
    return Cli({"perplexity", "-t", "1", m, "-f", text, "--ctx", ctx, "--kl-divergence-base", file,
                "--kl-divergence"});
  };
  EXPECT_TRUE(IsCleanError(compare(base, "32", text_path_),
                           {"was made with --ctx 64", "this run uses --ctx 32"}));

  const std::string other_text = ScratchPath("kld-other-text.txt");
  const std::string text = "the dog " + SampleText();
  ASSERT_TRUE(WriteBytes(other_text, reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  EXPECT_TRUE(
      IsCleanError(compare(base, "64", other_text), {"made from other tokens", "there", "here"}));
  std::remove(other_text.c_str());

  const std::string edited = ScratchPath("kld-edited.bin");
  const auto compare_edited = [&](std::vector<uint8_t> edit) {
    EXPECT_TRUE(WriteBytes(edited, edit.data(), edit.size()));
    return compare(edited, "64", text_path_);
  };
  EXPECT_TRUE(
      IsCleanError(compare_edited({bytes.begin(), bytes.end() - 100}),
                   {edited, "is truncated", std::to_string(bytes.size() - 100) + " bytes"}));
  EXPECT_TRUE(IsCleanError(compare_edited({bytes.begin(), bytes.begin() + 12}),
                           {"is truncated", "20-byte header"}));
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_TRUE(IsCleanError(compare_edited(longer), {"is longer than", "header announces"}));
  std::vector<uint8_t> magic = bytes;
  magic[0] = 'X';
  EXPECT_TRUE(IsCleanError(compare_edited(magic), {"'_logits_' magic"}));
  std::vector<uint8_t> vocab = bytes;
  const int32_t other_vocab = ReadAt<int32_t>(bytes, 12) + 1;
  std::memcpy(vocab.data() + 12, &other_vocab, sizeof(other_vocab));
  EXPECT_TRUE(IsCleanError(compare_edited(vocab),
                           {"vocabulary of " + std::to_string(other_vocab) + " tokens"}));
  std::vector<uint8_t> scale = bytes;  // the first row's scale, after the header and tokens
  const float nan = std::nanf("");
  std::memcpy(scale.data() + 20 + 4 * ReadAt<int32_t>(bytes, 16) * 64, &nan, sizeof(nan));
  EXPECT_TRUE(IsCleanError(compare_edited(scale), {"chunk 1", "row 0", "not log-probabilities"}));
  std::remove(edited.c_str());

  const std::string missing = ScratchPath("no-such-base.bin");
  EXPECT_TRUE(IsCleanError(compare(missing, "64", text_path_), {"cannot open base file", missing}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--kl-divergence"}),
                           {"--kl-divergence needs", "--kl-divergence-base"}));
  EXPECT_TRUE(IsCleanError(Cli({"perplexity", m, "-f", text_path_, "--ctx", "64",
                                "--kl-divergence-base", TmpPath("no-such-dir/base.bin")}),
                           {"cannot create base file"}));
  std::remove(base.c_str());
}

}  // namespace
}  // namespace kestrel
