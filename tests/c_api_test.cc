// The C API (include/kestrel/kestrel.h) on the tiny random-weight models: opening and its errors,
// size-prefixed parameter structs from older headers, tokens into caller buffers, greedy
// generation equal to `kestrel run --temp 0` (also through the C99 example on the shared
// library), pull-style next_token equal to kes_generate, stopping by callback and by
// kes_session_abort from another thread, caller arenas, and two sessions of one model on two
// threads.
#include "kestrel/kestrel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/c_api_test_support.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Describe;
using test::ProcessResult;

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<void, AlignedFree>;
AlignedBuffer Aligned(size_t bytes) {
  return AlignedBuffer(std::aligned_alloc(KES_ALIGNMENT, (bytes + 63) / 64 * 64));
}

const char kPrompt[] = "the quick brown fox";
constexpr size_t kNewTokens = 24;

// One thread, so that the results are those of `kestrel run -t 1`.
kes_session_params OneThread() {
  kes_session_params p = kes_session_default_params();
  p.n_threads = 1;
  return p;
}

test::SessionPtr Create(const kes_model* model, const kes_session_params& params = OneThread()) {
  kes_session* session = nullptr;
  const kes_status s = kes_session_create(model, &params, nullptr, 0, &session);
  EXPECT_EQ(s, KES_OK) << kes_last_error();
  return test::SessionPtr(session);
}

std::vector<int32_t> Tokenize(const kes_model* model, const std::string& text,
                              uint32_t flags = KES_TOKENIZE_ADD_SPECIAL |
                                               KES_TOKENIZE_PARSE_SPECIAL) {
  size_t n = 0;
  kes_status s = kes_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
  EXPECT_TRUE(s == KES_OK || s == KES_BUFFER_TOO_SMALL) << kes_status_name(s);
  std::vector<int32_t> tokens(n);
  s = kes_tokenize(model, text.data(), text.size(), flags, tokens.data(), n, &n);
  EXPECT_EQ(s, KES_OK) << kes_model_last_error(model);
  return tokens;
}

kes_sampler_params Greedy() {
  kes_sampler_params p = kes_sampler_default_params();
  p.temperature = 0.0f;
  return p;
}

// What kes_generate's callback saw; it stops after `stop_after` tokens when that is not 0.
struct Collected {
  std::vector<int32_t> tokens;
  std::string text;
  size_t stop_after = 0;
  static int Add(void* user_data, int32_t token, const char* piece, size_t piece_len) {
    auto& c = *static_cast<Collected*>(user_data);
    c.tokens.push_back(token);
    c.text.append(piece, piece_len);
    return c.stop_after != 0 && c.tokens.size() >= c.stop_after;
  }
};

Collected Generate(kes_session* session, const std::vector<int32_t>& prompt,
                   const kes_sampler_params& sampler, size_t max_tokens = kNewTokens) {
  Collected c;
  const kes_status s =
      kes_generate(session, prompt.data(), prompt.size(), &sampler, max_tokens, Collected::Add, &c);
  EXPECT_EQ(s, KES_OK) << kes_session_last_error(session);
  return c;
}

size_t Position(const kes_session* session) {
  size_t position = 0;
  EXPECT_EQ(kes_session_position(session, &position), KES_OK);
  return position;
}

class CApiTest : public ::testing::TestWithParam<const test::TinyFamily*> {
 protected:
  const std::string& path() const { return test::TinyPath(*GetParam()); }
};

TEST_P(CApiTest, OpensDescribesAndCloses) {
  EXPECT_EQ(kes_abi_version(), KES_ABI_VERSION);
  EXPECT_STRNE(kes_version(), "");
  test::ModelPtr model = test::Open(path());
  ASSERT_NE(model, nullptr);
  kes_model_info info;
  info.struct_size = sizeof(info);
  ASSERT_EQ(kes_model_get_info(model.get(), &info), KES_OK);
  EXPECT_GT(info.n_vocab, 0u);
  EXPECT_EQ(info.context_length, 256u);
  EXPECT_EQ(info.can_generate, 1);
  EXPECT_GT(info.weights_bytes, 0u);
  kes_model_close(nullptr);  // accepted, as free(NULL)
  kes_session_destroy(nullptr);
}

TEST(CApi, MissingFileIsAnIoErrorNamingThePath) {
  const std::string missing = test::ScratchPath("no-such-model.kes");
  kes_model* model = reinterpret_cast<kes_model*>(&model);  // must be reset to NULL
  EXPECT_EQ(kes_model_open(missing.c_str(), nullptr, &model), KES_IO_ERROR);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(std::string(kes_last_error()).find(missing), std::string::npos) << kes_last_error();
}

TEST(CApi, GarbageAndTruncatedFilesAreBadModels) {
  const std::vector<uint8_t> bytes = test::ReadBytes(test::TinyPath(test::kTinyGemma3));
  ASSERT_GT(bytes.size(), 1000u);
  const std::string truncated = test::ScratchPath("c-api-truncated.kes");
  ASSERT_TRUE(test::WriteBytes(truncated, bytes.data(), bytes.size() / 2));
  const std::string garbage = test::ScratchPath("c-api-garbage.kes");
  const std::string junk(4096, 'x');
  ASSERT_TRUE(test::WriteBytes(garbage, reinterpret_cast<const uint8_t*>(junk.data()), 4096));
  for (const std::string& path : {truncated, garbage}) {
    kes_model* model = nullptr;
    EXPECT_EQ(kes_model_open(path.c_str(), nullptr, &model), KES_BAD_MODEL) << path;
    EXPECT_EQ(model, nullptr);
    EXPECT_STRNE(kes_last_error(), "");
    std::remove(path.c_str());
  }
  AlignedBuffer buffer = Aligned(bytes.size());
  std::memcpy(buffer.get(), bytes.data(), bytes.size() / 2);
  kes_model* model = nullptr;
  EXPECT_EQ(kes_model_open_memory(buffer.get(), bytes.size() / 2, nullptr, &model), KES_BAD_MODEL);
  // Misaligned: the weights could not be used in place.
  EXPECT_EQ(kes_model_open_memory(static_cast<char*>(buffer.get()) + 8, 64, nullptr, &model),
            KES_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
}

TEST(CApi, OlderStructSizesTakeDefaultsForTheTail) {
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyGemma3));
  ASSERT_NE(model, nullptr);
  // A struct from an older header that ended after context_length: the fields past it hold
  // junk that must not be read.
  kes_session_params old_params;
  std::memset(&old_params, 0xAB, sizeof(old_params));
  old_params.struct_size = offsetof(kes_session_params, n_threads);
  old_params.context_length = 64;
  kes_session* session = nullptr;
  ASSERT_EQ(kes_session_create(model.get(), &old_params, nullptr, 0, &session), KES_OK)
      << kes_last_error();
  test::SessionPtr owned(session);
  // The same arena as a current struct with those values and every default.
  kes_session_params current = kes_session_default_params();
  current.context_length = 64;
  size_t old_bytes = 0, current_bytes = 0;
  ASSERT_EQ(kes_session_arena_size(model.get(), &old_params, &old_bytes), KES_OK);
  ASSERT_EQ(kes_session_arena_size(model.get(), &current, &current_bytes), KES_OK);
  EXPECT_EQ(old_bytes, current_bytes);

  kes_model_params model_params;
  std::memset(&model_params, 0xAB, sizeof(model_params));
  model_params.struct_size = sizeof(size_t);  // the first header had no more: all defaults
  kes_model* reopened = nullptr;
  EXPECT_EQ(kes_model_open(test::TinyPath(test::kTinyGemma3).c_str(), &model_params, &reopened),
            KES_OK)
      << kes_last_error();
  kes_model_close(reopened);

  kes_sampler_params sampler;
  std::memset(&sampler, 0xAB, sizeof(sampler));
  sampler.struct_size = offsetof(kes_sampler_params, top_k);
  sampler.temperature = 0.0f;
  const std::vector<int32_t> prompt = Tokenize(model.get(), kPrompt);
  const Collected old_greedy = Generate(session, prompt, sampler, 8);
  kes_session_reset(session);
  EXPECT_EQ(Generate(session, prompt, Greedy(), 8).tokens, old_greedy.tokens);

  // A struct larger than the library knows comes from a newer header: refused.
  kes_session_params newer = kes_session_default_params();
  newer.struct_size = sizeof(newer) + 8;
  EXPECT_EQ(kes_session_arena_size(model.get(), &newer, &old_bytes), KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_model_last_error(model.get())).find("newer kestrel.h"),
            std::string::npos)
      << kes_model_last_error(model.get());
}

TEST_P(CApiTest, TokenizeDetokenizeIntoCallerBuffers) {
  test::ModelPtr model = test::Open(path());
  ASSERT_NE(model, nullptr);
  const std::string text = "Hello world, the cat sat";
  size_t n = 0;
  int32_t one = -1;
  ASSERT_EQ(kes_tokenize(model.get(), text.data(), text.size(), 0, &one, 1, &n),
            KES_BUFFER_TOO_SMALL);
  ASSERT_GT(n, 1u);
  EXPECT_EQ(one, -1) << "a short buffer is left alone";
  EXPECT_EQ(std::string(kes_model_last_error(model.get())),
            "tokens: expected a capacity of at least " + std::to_string(n) + " tokens, found 1");
  std::vector<int32_t> tokens(n);
  size_t n_again = 0;
  ASSERT_EQ(kes_tokenize(model.get(), text.data(), text.size(), 0, tokens.data(), n, &n_again),
            KES_OK);
  EXPECT_EQ(n_again, n);

  size_t bytes = 0;
  char small[4];
  ASSERT_EQ(kes_detokenize(model.get(), tokens.data(), n, small, sizeof(small), &bytes),
            KES_BUFFER_TOO_SMALL);
  EXPECT_EQ(bytes, text.size());
  EXPECT_EQ(
      std::string(kes_model_last_error(model.get())),
      "buf: expected a capacity of at least " + std::to_string(text.size()) + " bytes, found 4");
  std::string back(bytes, '\0');
  ASSERT_EQ(kes_detokenize(model.get(), tokens.data(), n, &back[0], back.size(), &bytes), KES_OK);
  EXPECT_EQ(back, text);

  const int32_t bad = static_cast<int32_t>(1 << 30);
  EXPECT_EQ(kes_detokenize(model.get(), &bad, 1, &back[0], back.size(), &bytes),
            KES_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kes_model_last_error(model.get())).find("1073741824"), std::string::npos)
      << kes_model_last_error(model.get());
}

TEST_P(CApiTest, GreedyGenerationEqualsKestrelRun) {
  test::ModelPtr model = test::Open(path());
  ASSERT_NE(model, nullptr);
  std::string prompt = kPrompt;
  for (int i = 0; i < 12; ++i) prompt += " jumps over the lazy dog";
  const std::vector<int32_t> tokens = Tokenize(model.get(), prompt);
  test::SessionPtr session = Create(model.get());
  ASSERT_NE(session, nullptr);
  const Collected c = Generate(session.get(), tokens, Greedy());
  ASSERT_FALSE(c.tokens.empty());

  const std::string n = std::to_string(kNewTokens);
  const ProcessResult cli =
      test::Cli({"run", path(), "-p", prompt, "-n", n, "--temp", "0", "-t", "1"});
  ASSERT_TRUE(cli.exited && cli.exit_code == 0) << Describe(cli);
  EXPECT_EQ(cli.out, prompt + c.text + "\n");
  // "prefill: N tokens": the CLI prefilled the ids kes_tokenize gave.
  EXPECT_NE(cli.err.find("prefill: " + std::to_string(tokens.size()) + " tokens"),
            std::string::npos)
      << cli.err;

  // The C99 example, on the shared library.
  const ProcessResult example = test::RunProcess({KESTREL_C_EXAMPLE_BIN, path(), prompt, n});
  ASSERT_TRUE(example.exited && example.exit_code == 0) << Describe(example);
  EXPECT_EQ(example.out, cli.out);
}

TEST_P(CApiTest, NextTokenGivesWhatGenerateGives) {
  test::ModelPtr model = test::Open(path());
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> prompt = Tokenize(model.get(), kPrompt);
  kes_sampler_params sampled = kes_sampler_default_params();
  sampled.seed = 7;
  for (const kes_sampler_params& sampler : {Greedy(), sampled}) {
    SCOPED_TRACE(sampler.temperature);
    test::SessionPtr a = Create(model.get());
    test::SessionPtr b = Create(model.get());
    ASSERT_TRUE(a && b);
    const Collected generated = Generate(a.get(), prompt, sampler);
    ASSERT_FALSE(generated.tokens.empty());

    ASSERT_EQ(kes_session_prefill(b.get(), prompt.data(), prompt.size()), KES_OK);
    std::vector<int32_t> pulled;
    std::string text;
    while (pulled.size() < kNewTokens) {
      int32_t token = -1;
      char piece[256];
      size_t len = 0;
      ASSERT_EQ(kes_session_next_token(b.get(), &sampler, &token, piece, sizeof(piece), &len),
                KES_OK)
          << kes_session_last_error(b.get());
      int is_end = 0;
      ASSERT_EQ(kes_token_is_end(model.get(), token, &is_end), KES_OK);
      if (is_end) break;  // kes_generate stops there too, without passing it on
      pulled.push_back(token);
      text.append(piece, len);
    }
    EXPECT_EQ(pulled, generated.tokens);
    EXPECT_EQ(text, generated.text);
    if (generated.tokens.size() == kNewTokens) {
      EXPECT_EQ(Position(a.get()), prompt.size() + kNewTokens);
      EXPECT_EQ(Position(b.get()), prompt.size() + kNewTokens);
    }
  }
}

TEST_P(CApiTest, LogitsAndShortPieceBuffers) {
  test::ModelPtr model = test::Open(path());
  test::SessionPtr session = Create(model.get());
  test::SessionPtr reference = Create(model.get());
  ASSERT_TRUE(model && session && reference);
  const float* logits = nullptr;
  size_t n_vocab = 0;
  EXPECT_EQ(kes_session_logits(session.get(), &logits, &n_vocab), KES_INVALID_ARGUMENT);
  int32_t token = -1;
  EXPECT_EQ(kes_session_next_token(session.get(), nullptr, &token, nullptr, 0, nullptr),
            KES_INVALID_ARGUMENT)
      << "nothing to sample from before a prefill";
  const std::vector<int32_t> prompt = Tokenize(model.get(), kPrompt);
  ASSERT_EQ(kes_session_prefill(session.get(), prompt.data(), prompt.size()), KES_OK);
  ASSERT_EQ(kes_session_prefill(reference.get(), prompt.data(), prompt.size()), KES_OK);
  ASSERT_EQ(kes_session_logits(session.get(), &logits, &n_vocab), KES_OK);
  size_t best = 0;
  for (size_t i = 1; i < n_vocab; ++i) best = logits[i] > logits[best] ? i : best;
  const kes_sampler_params greedy = Greedy();
  char piece[256];
  size_t len = 0;
  ASSERT_EQ(kes_session_next_token(reference.get(), &greedy, &token, piece, sizeof(piece), &len),
            KES_OK);
  EXPECT_EQ(static_cast<size_t>(token), best);

  // Sampled tokens asked for with no room for their piece first: each refusal must leave the
  // session and its random sequence as they were, so the tokens are the reference's.
  kes_sampler_params sampled = kes_sampler_default_params();
  sampled.seed = 3;
  ASSERT_EQ(kes_session_next_token(session.get(), &greedy, &token, piece, sizeof(piece), &len),
            KES_OK);
  size_t refused = 0;
  for (int i = 0; i < 8; ++i) {
    int32_t expected = -1;
    ASSERT_EQ(
        kes_session_next_token(reference.get(), &sampled, &expected, piece, sizeof(piece), &len),
        KES_OK);
    const size_t position = Position(session.get());
    kes_status s = kes_session_next_token(session.get(), &sampled, &token, piece, 0, &len);
    if (s == KES_BUFFER_TOO_SMALL) {
      ++refused;
      EXPECT_EQ(Position(session.get()), position) << "no token taken";
      EXPECT_EQ(
          std::string(kes_session_last_error(session.get())),
          "piece_buf: expected a capacity of at least " + std::to_string(len) + " bytes, found 0");
      s = kes_session_next_token(session.get(), &sampled, &token, piece, len, &len);
    }
    ASSERT_EQ(s, KES_OK) << kes_session_last_error(session.get());
    EXPECT_EQ(token, expected) << "token " << i;
  }
  EXPECT_GT(refused, 0u) << "no piece was longer than 0 bytes";
}

TEST_P(CApiTest, CallbackStopsAndGenerationGoesOnFromThere) {
  test::ModelPtr model = test::Open(path());
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> prompt = Tokenize(model.get(), kPrompt);
  test::SessionPtr whole = Create(model.get());
  const Collected reference = Generate(whole.get(), prompt, Greedy(), 10);
  ASSERT_EQ(reference.tokens.size(), 10u) << "the prompt must not lead to an end token early";

  test::SessionPtr session = Create(model.get());
  Collected first;
  first.stop_after = 3;
  const kes_sampler_params greedy = Greedy();
  ASSERT_EQ(kes_generate(session.get(), prompt.data(), prompt.size(), &greedy, 10, Collected::Add,
                         &first),
            KES_OK);
  EXPECT_EQ(first.tokens.size(), 3u);
  EXPECT_EQ(Position(session.get()), prompt.size() + 3);
  // No prompt: on from the sequence, the third token first run through the model.
  const Collected rest = Generate(session.get(), {}, Greedy(), 7);
  std::vector<int32_t> joined = first.tokens;
  joined.insert(joined.end(), rest.tokens.begin(), rest.tokens.end());
  EXPECT_EQ(joined, reference.tokens);
}

// Blocks the generation's callback at its second token until another thread has called
// kes_session_abort, so the abort lands mid-generation every time.
struct AbortFromThread {
  kes_session* session;
  std::atomic<bool> reached{false}, aborted{false};
  size_t seen = 0;
  static int OnToken(void* user_data, int32_t, const char*, size_t) {
    auto& a = *static_cast<AbortFromThread*>(user_data);
    if (++a.seen == 2) {
      a.reached.store(true);
      while (!a.aborted.load()) std::this_thread::yield();
    }
    return 0;
  }
};

TEST_P(CApiTest, AbortFromAnotherThread) {
  test::ModelPtr model = test::Open(path());
  test::SessionPtr session = Create(model.get());
  ASSERT_TRUE(model && session);
  const std::vector<int32_t> prompt = Tokenize(model.get(), kPrompt);
  AbortFromThread state{session.get()};
  std::thread aborter([&] {
    while (!state.reached.load()) std::this_thread::yield();
    EXPECT_EQ(kes_session_abort(state.session), KES_OK);
    state.aborted.store(true);
  });
  const kes_sampler_params greedy = Greedy();
  const kes_status s = kes_generate(session.get(), prompt.data(), prompt.size(), &greedy, 200,
                                    AbortFromThread::OnToken, &state);
  aborter.join();
  EXPECT_EQ(s, KES_ABORTED);
  EXPECT_EQ(state.seen, 2u);
  EXPECT_NE(std::string(kes_session_last_error(session.get())).find("abort"), std::string::npos);
  EXPECT_EQ(Position(session.get()), prompt.size() + 2) << "what ran before the abort stays";

  // Answered once: the session goes on.
  EXPECT_FALSE(Generate(session.get(), {}, greedy, 2).tokens.empty());
  // An abort while nothing runs stops the next call before it changes anything.
  const size_t position = Position(session.get());
  ASSERT_EQ(kes_session_abort(session.get()), KES_OK);
  EXPECT_EQ(kes_session_prefill(session.get(), prompt.data(), prompt.size()), KES_ABORTED);
  EXPECT_EQ(Position(session.get()), position);
  EXPECT_EQ(kes_session_prefill(session.get(), prompt.data(), prompt.size()), KES_OK);
}

TEST_P(CApiTest, CallerArenaOfArenaSizeBytesAndNoLess) {
  test::ModelPtr model = test::Open(path());
  ASSERT_NE(model, nullptr);
  const kes_session_params params = OneThread();
  size_t bytes = 0;
  ASSERT_EQ(kes_session_arena_size(model.get(), &params, &bytes), KES_OK);
  ASSERT_GT(bytes, 0u);
  AlignedBuffer arena = Aligned(bytes);
  kes_session* session = nullptr;
  EXPECT_EQ(kes_session_create(model.get(), &params, arena.get(), bytes - 1, &session),
            KES_INVALID_ARGUMENT);
  EXPECT_EQ(session, nullptr);
  EXPECT_NE(std::string(kes_last_error()).find(std::to_string(bytes)), std::string::npos)
      << kes_last_error();
  EXPECT_EQ(kes_session_create(model.get(), &params, static_cast<char*>(arena.get()) + 8, bytes - 8,
                               &session),
            KES_INVALID_ARGUMENT)
      << "misaligned";

  ASSERT_EQ(kes_session_create(model.get(), &params, arena.get(), bytes, &session), KES_OK)
      << kes_last_error();
  test::SessionPtr on_caller_arena(session);
  test::SessionPtr on_own_arena = Create(model.get(), params);
  const std::vector<int32_t> prompt = Tokenize(model.get(), kPrompt);
  EXPECT_EQ(Generate(on_caller_arena.get(), prompt, Greedy()).tokens,
            Generate(on_own_arena.get(), prompt, Greedy()).tokens);
}

TEST_P(CApiTest, TwoSessionsOfOneModelOnTwoThreads) {
  test::ModelPtr model = test::Open(path());
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> prompts[2] = {Tokenize(model.get(), kPrompt),
                                           Tokenize(model.get(), "a different prompt here")};
  kes_session_params two_threads = OneThread();
  two_threads.n_threads = 2;  // its pool runs beside the other session's thread
  const kes_session_params params[2] = {OneThread(), two_threads};
  std::vector<int32_t> alone[2], together[2];
  for (int i = 0; i < 2; ++i) {
    test::SessionPtr session = Create(model.get(), params[i]);
    alone[i] = Generate(session.get(), prompts[i], Greedy()).tokens;
    ASSERT_FALSE(alone[i].empty());
  }
  std::atomic<int> ready{0};
  auto run = [&](int i) {
    kes_session* session = nullptr;
    ASSERT_EQ(kes_session_create(model.get(), &params[i], nullptr, 0, &session), KES_OK);
    ++ready;
    while (ready.load() < 2) std::this_thread::yield();  // both generate at once
    together[i] = Generate(session, prompts[i], Greedy()).tokens;
    kes_session_destroy(session);
  };
  std::thread a(run, 0), b(run, 1);
  a.join();
  b.join();
  EXPECT_EQ(together[0], alone[0]);
  EXPECT_EQ(together[1], alone[1]);
}

TEST_P(CApiTest, ModelInCallerMemory) {
  const std::vector<uint8_t> bytes = test::ReadBytes(path());
  AlignedBuffer buffer = Aligned(bytes.size());
  std::memcpy(buffer.get(), bytes.data(), bytes.size());
  kes_model* in_memory = nullptr;
  ASSERT_EQ(kes_model_open_memory(buffer.get(), bytes.size(), nullptr, &in_memory), KES_OK)
      << kes_last_error();
  test::ModelPtr memory_model(in_memory);
  test::ModelPtr file_model = test::Open(path());
  const std::vector<int32_t> prompt = Tokenize(file_model.get(), kPrompt);
  test::SessionPtr a = Create(memory_model.get());
  test::SessionPtr b = Create(file_model.get());
  EXPECT_EQ(Generate(a.get(), prompt, Greedy()).tokens, Generate(b.get(), prompt, Greedy()).tokens);
}

TEST(CApi, ArgumentErrors) {
  test::ModelPtr model = test::Open(test::TinyPath(test::kTinyGemma3));
  ASSERT_NE(model, nullptr);
  kes_session_params small = OneThread();
  small.context_length = 16;
  test::SessionPtr session = Create(model.get(), small);
  ASSERT_NE(session, nullptr);
  std::vector<int32_t> long_prompt =
      Tokenize(model.get(), std::string(kPrompt) + " " + kPrompt + " " + kPrompt + " " + kPrompt);
  ASSERT_GT(long_prompt.size(), 16u);
  const kes_sampler_params greedy = Greedy();
  EXPECT_EQ(kes_generate(session.get(), long_prompt.data(), long_prompt.size(), &greedy, 4, nullptr,
                         nullptr),
            KES_CONTEXT_FULL);
  EXPECT_NE(std::string(kes_session_last_error(session.get())).find("context of 16"),
            std::string::npos)
      << kes_session_last_error(session.get());
  EXPECT_EQ(Position(session.get()), 0u);

  const int32_t bad[2] = {1, -5};
  EXPECT_EQ(kes_session_prefill(session.get(), bad, 2), KES_INVALID_ARGUMENT);
  EXPECT_EQ(Position(session.get()), 0u) << "nothing prefilled";
  kes_sampler_params hot = Greedy();
  hot.top_p = 0.0f;
  EXPECT_EQ(kes_generate(session.get(), bad, 1, &hot, 4, nullptr, nullptr), KES_INVALID_ARGUMENT);
  EXPECT_EQ(kes_generate(nullptr, bad, 1, &greedy, 4, nullptr, nullptr), KES_INVALID_ARGUMENT);
  EXPECT_EQ(kes_model_open(nullptr, nullptr, nullptr), KES_INVALID_ARGUMENT);
  EXPECT_STRNE(kes_last_error(), "");

  kes_session_params sinks = OneThread();
  sinks.context_length = 8;
  sinks.kv_sinks = 8;
  kes_session* none = nullptr;
  EXPECT_EQ(kes_session_create(model.get(), &sinks, nullptr, 0, &none), KES_INVALID_ARGUMENT);
  kes_session_params reserved = OneThread();
  reserved.reserved0 = 1;
  EXPECT_EQ(kes_session_create(model.get(), &reserved, nullptr, 0, &none), KES_INVALID_ARGUMENT);
  EXPECT_EQ(none, nullptr);
  EXPECT_STREQ(kes_status_name(KES_CONTEXT_FULL), "KES_CONTEXT_FULL");
}

TEST(CApi, EncoderModelsMakeNoSession) {
  std::string folder;
  ASSERT_EQ(test::MakeTinyBert("tiny-bert", "", &folder), "");
  const std::string kes = test::ScratchPath("c-api-tiny-bert.kes");
  const ProcessResult r = test::Convert({folder, kes, "--weights", "f32"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  test::ModelPtr model = test::Open(kes);
  std::remove(kes.c_str());  // mapped: the open model keeps it
  ASSERT_NE(model, nullptr);
  kes_model_info info;
  info.struct_size = sizeof(info);
  ASSERT_EQ(kes_model_get_info(model.get(), &info), KES_OK);
  EXPECT_EQ(info.can_generate, 0);
  kes_session* session = nullptr;
  EXPECT_EQ(kes_session_create(model.get(), nullptr, nullptr, 0, &session), KES_UNSUPPORTED);
  EXPECT_EQ(session, nullptr);
  EXPECT_NE(std::string(kes_model_last_error(model.get())).find("encoder"), std::string::npos)
      << kes_model_last_error(model.get());
}

INSTANTIATE_TEST_SUITE_P(TinyModels, CApiTest,
                         ::testing::Values(&test::kTinyGemma3, &test::kTinyLlama),
                         [](const ::testing::TestParamInfo<const test::TinyFamily*>& info) {
                           return std::string(info.param == &test::kTinyGemma3 ? "Gemma3"
                                                                               : "Llama");
                         });

}  // namespace
}  // namespace kestrel
