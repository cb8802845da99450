// Sessions (and encoders) sharing one loaded Model, run from several std::threads at once, give
// exactly what each gives alone: a Model is immutable after Open, and everything a Session or an
// Encoder writes (activations, KV rings, the attention split's arrival counter and partials, its
// thread pool) is its own.
//
// Each case makes two sessions of one tiny random-weight model (Gemma 3 with its quantized
// weights kept, Llama in f32) with different prompts, KV types and thread counts (1 and 2, so
// that one session's pool runs beside the other's single thread), and has each generate greedily
// past its context (a context of 32: the global layers' rings of 32 + 64 slots wrap, the
// window-8 rings of Gemma's local layers many times over). Alone, one after the other, then both
// at once, created and run on two threads released together: the token ids and every step's
// logits must be the same bits. The encoder case does the same with two Encoders of one tiny
// BERT embedding different texts.
//
// Under ThreadSanitizer (scripts/build.sh tsan, run by scripts/test.sh) this is also the race
// check of the thread pool, the steps split across threads (the decode attention's partitions
// and their arrival counter) and sessions created while others run.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/encoder.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using namespace test;  // NOLINT: the shared test helpers

// The tiny Llama with heads of 32 (the others have 16), so that its KV cache can be int8.
constexpr TinyFamily kTinyLlamaHead32 = {"tiny-llama-head32", "make_tiny_llama.py",
                                         "--arch llama --head-dim 32", "llama_oracle.py"};

constexpr size_t kContext = 32;
// Past the context: positions up to prompt + kNewTokens > 32 + 64 slots of the global rings.
constexpr size_t kNewTokens = 100;

struct SessionSetup {
  ops::KvType kv;
  size_t threads;
  uint32_t prompt_seed;
  size_t prompt_tokens;
};

struct Generation {
  std::string error;  // "" when it ran
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // every step's, one row of the vocabulary after another
};

std::vector<int32_t> Prompt(size_t vocab, uint32_t seed, size_t n) {
  std::vector<int32_t> tokens;
  for (size_t i = 0; i < n; ++i) {
    tokens.push_back(static_cast<int32_t>((i * 37 + seed * 101 + 11) % vocab));
  }
  return tokens;
}

int32_t Argmax(const float* logits, size_t vocab) {
  size_t best = 0;
  for (size_t i = 1; i < vocab; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

// Creates a session and generates greedily: the prompt, then kNewTokens tokens.
Generation Generate(const Model& model, const SessionSetup& setup) {
  Generation g;
  SessionOptions options;
  options.context_length = kContext;
  options.n_threads = setup.threads;
  options.kv.type = setup.kv;
  std::unique_ptr<Session> session;
  Status s = Session::Create(model, options, &session);
  if (!s.ok()) {
    g.error = "create: " + s.message();
    return g;
  }
  const size_t vocab = session->vocab_size();
  const std::vector<int32_t> prompt = Prompt(vocab, setup.prompt_seed, setup.prompt_tokens);
  s = session->Prefill(prompt.data(), prompt.size());
  for (size_t step = 0; s.ok(); ++step) {
    g.logits.insert(g.logits.end(), session->logits(), session->logits() + vocab);
    g.tokens.push_back(Argmax(session->logits(), vocab));
    if (step + 1 == kNewTokens) break;
    s = session->Decode(g.tokens.back());
  }
  if (!s.ok()) g.error = "generate: " + s.message();
  return g;
}

// Runs every job on its own thread, all released at once, and waits for them.
void RunTogether(const std::vector<std::function<void()>>& jobs) {
  std::atomic<size_t> ready{0};
  std::vector<std::thread> threads;
  for (const auto& job : jobs) {
    threads.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < jobs.size()) std::this_thread::yield();
      job();
    });
  }
  for (std::thread& t : threads) t.join();
}

void ExpectSame(const Generation& alone, const Generation& together, const std::string& what) {
  ASSERT_EQ(alone.error, "") << what;
  ASSERT_EQ(together.error, "") << what;
  EXPECT_EQ(together.tokens, alone.tokens) << what << ": token ids";
  ASSERT_EQ(together.logits.size(), alone.logits.size()) << what;
  EXPECT_EQ(
      std::memcmp(together.logits.data(), alone.logits.data(), alone.logits.size() * sizeof(float)),
      0)
      << what << ": logits differ";
}

struct ConcurrencyCase {
  TinyFamily family;
  const char* weights;  // kestrel-convert --weights
  SessionSetup a, b;
};

void PrintTo(const ConcurrencyCase& c, std::ostream* os) { *os << c.family.stem; }

class SessionConcurrency : public ::testing::TestWithParam<ConcurrencyCase> {};

TEST_P(SessionConcurrency, TwoSessionsOnOneModelGenerateWhatEachGeneratesAlone) {
  const ConcurrencyCase& c = GetParam();
  TinyModel tiny;
  ASSERT_EQ(MakeTinyModel(&tiny, c.family), "");
  const std::string kes = ScratchPath(std::string(c.family.stem) + "-" + c.weights + ".kes");
  const ProcessResult converted = Convert({tiny.gguf, kes, "--weights", c.weights});
  ASSERT_TRUE(converted.exited && converted.exit_code == 0) << Describe(converted);
  std::unique_ptr<Model> model;
  const Status s = Model::Open(kes, &model);
  std::remove(kes.c_str());  // mapped: the mapping keeps the bytes
  ASSERT_TRUE(s.ok()) << s.message();

  const Generation alone_a = Generate(*model, c.a), alone_b = Generate(*model, c.b);
  ASSERT_EQ(alone_a.error, "");
  ASSERT_EQ(alone_b.error, "");
  // Different prompts and KV types: the two sessions really do different work.
  ASSERT_NE(alone_a.logits, alone_b.logits);
  std::printf("%s: %zu tokens each, alone: first ids %d and %d\n", c.family.stem,
              alone_a.tokens.size(), alone_a.tokens[0], alone_b.tokens[0]);

  // Twice, for another interleaving of the two threads.
  for (int round = 0; round < 2; ++round) {
    Generation together_a, together_b;
    RunTogether(
        {[&] { together_a = Generate(*model, c.a); }, [&] { together_b = Generate(*model, c.b); }});
    const std::string r = " (round " + std::to_string(round) + ")";
    ExpectSame(alone_a, together_a, "session a" + r);
    ExpectSame(alone_b, together_b, "session b" + r);
  }
}

const ConcurrencyCase kCases[] = {
    // Gemma 3 (heads of 16) with the GGUF's own mix of types (quantized matmuls on int8
    // activations): f32 and f16 caches.
    {kTinyGemma3, "keep", {ops::KvType::kF32, 1, 1, 12}, {ops::KvType::kF16, 2, 2, 17}},
    // Llama with heads of 32, f32 weights: f32 and int8 caches, the int8 session on two threads.
    {kTinyLlamaHead32, "f32", {ops::KvType::kF32, 1, 3, 9}, {ops::KvType::kInt8, 2, 4, 20}},
};

std::string CaseName(const ::testing::TestParamInfo<ConcurrencyCase>& info) {
  return ParamName(info.param.family.stem);
}

// Not "TinyModel...": scripts/test-cross.sh repeats tests of that prefix on every emulated CPU.
INSTANTIATE_TEST_SUITE_P(SharedModel, SessionConcurrency, ::testing::ValuesIn(kCases), CaseName);

// Embeds `texts` with a new Encoder of `threads` threads; "" or what failed.
std::string Embed(const Model& model, const std::vector<std::string>& texts, size_t threads,
                  std::vector<float>* out) {
  EncoderOptions options;
  options.n_threads = threads;
  std::unique_ptr<Encoder> encoder;
  Status s = Encoder::Create(model, options, &encoder);
  if (!s.ok()) return s.message();
  std::vector<std::vector<int32_t>> ids(texts.size());
  std::vector<const int32_t*> pointers;
  std::vector<size_t> lengths;
  for (size_t i = 0; i < texts.size(); ++i) {
    s = encoder->Tokenize(texts[i], &ids[i]);
    if (!s.ok()) return s.message();
    pointers.push_back(ids[i].data());
    lengths.push_back(ids[i].size());
  }
  out->assign(texts.size() * encoder->embedding_dim(), 0.0f);
  // Several rounds: the same texts must give the same embeddings each time.
  for (int round = 0; round < 3 && s.ok(); ++round) {
    s = encoder->Encode(pointers.data(), lengths.data(), texts.size(), out->data());
  }
  return s.ok() ? "" : s.message();
}

TEST(EncoderConcurrency, TwoEncodersOnOneModelEmbedWhatEachEmbedsAlone) {
  std::string folder;
  ASSERT_EQ(MakeTinyBert("tiny-bert", "", &folder), "");
  const std::string kes = ScratchPath("concurrency-tiny-bert.kes");
  const ProcessResult converted = Convert({folder, kes});
  ASSERT_TRUE(converted.exited && converted.exit_code == 0) << Describe(converted);
  std::unique_ptr<Model> model;
  const Status s = Model::Open(kes, &model);
  ASSERT_TRUE(s.ok()) << s.message();

  const std::vector<std::string> texts_a = {"The cat sits outside", "A man is playing guitar",
                                            "The new movie is awesome"};
  const std::vector<std::string> texts_b = {"The dog plays in the garden", "A woman watches TV",
                                            "The new movie is so great", "Hello world",
                                            "one two three four five six seven eight nine ten"};
  std::vector<float> alone_a, alone_b;
  ASSERT_EQ(Embed(*model, texts_a, 1, &alone_a), "");
  ASSERT_EQ(Embed(*model, texts_b, 2, &alone_b), "");
  for (int round = 0; round < 2; ++round) {
    std::vector<float> together_a, together_b;
    std::string error_a, error_b;
    RunTogether({[&] { error_a = Embed(*model, texts_a, 1, &together_a); },
                 [&] { error_b = Embed(*model, texts_b, 2, &together_b); }});
    ASSERT_EQ(error_a, "");
    ASSERT_EQ(error_b, "");
    ASSERT_EQ(together_a.size(), alone_a.size());
    ASSERT_EQ(together_b.size(), alone_b.size());
    EXPECT_EQ(std::memcmp(together_a.data(), alone_a.data(), alone_a.size() * sizeof(float)), 0)
        << "encoder a, round " << round;
    EXPECT_EQ(std::memcmp(together_b.data(), alone_b.data(), alone_b.size() * sizeof(float)), 0)
        << "encoder b, round " << round;
  }
  model.reset();
  std::remove(kes.c_str());
}

}  // namespace
}  // namespace kestrel
