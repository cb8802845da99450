// The C++ API (include/kestrel/kestrel.hpp, header-only over the C API) on the tiny random-weight
// models: failures as Status codes with the C API's messages, Result<T> holding a value or a
// status, tokens round-tripped, Generate and pulled NextToken giving the tokens the C calls give,
// a callback that stops generation, a session in a caller arena, and Encoder and Transcriber
// (their Abort too).
// First: tests/support declares the runtime's own kestrel::Model, which the public
// kestrel::Model (kestrel::api_v1::Model) would make ambiguous there if it were seen before.
#include "tests/support/c_api_test_support.h"
#include "tests/support/test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/kestrel.hpp"

namespace {

namespace t = kestrel::test;
// The public classes by their inline namespace: this test also sees tests/support's declaration
// of the runtime's own kapi::Model, which a program using the public header never includes.
namespace kapi = kestrel::api_v1;

const char kPrompt[] = "the quick brown fox";
constexpr size_t kNewTokens = 16;

using t::TinyPath;

kapi::SessionParams OneThread() {
  kapi::SessionParams params = kapi::DefaultSessionParams();
  params.n_threads = 1;
  return params;
}

// The greedy tokens the C API's kes_generate gives for kPrompt: the reference.
std::vector<int32_t> CGreedyTokens(const std::string& path) {
  kes_model* model = nullptr;
  EXPECT_EQ(kes_model_open(path.c_str(), nullptr, &model), KES_OK) << kes_last_error();
  std::vector<int32_t> prompt(64);
  size_t n = 0;
  EXPECT_EQ(kes_tokenize(model, kPrompt, sizeof(kPrompt) - 1,
                         KES_TOKENIZE_ADD_SPECIAL | KES_TOKENIZE_PARSE_SPECIAL, prompt.data(),
                         prompt.size(), &n),
            KES_OK);
  prompt.resize(n);
  const kes_session_params params = OneThread();
  kes_session* session = nullptr;
  EXPECT_EQ(kes_session_create(model, &params, nullptr, 0, &session), KES_OK);
  kes_sampler_params greedy = kes_sampler_default_params();
  greedy.temperature = 0.0f;
  std::vector<int32_t> tokens;
  auto add = [](void* user, int32_t token, const char*, size_t) {
    static_cast<std::vector<int32_t>*>(user)->push_back(token);
    return 0;
  };
  EXPECT_EQ(kes_generate(session, prompt.data(), prompt.size(), &greedy, kNewTokens, add, &tokens),
            KES_OK);
  kes_session_destroy(session);
  kes_model_close(model);
  return tokens;
}

class CppApiTest : public ::testing::TestWithParam<const t::TinyFamily*> {
 protected:
  const std::string& path() const { return TinyPath(*GetParam()); }
};

TEST(CppApi, MissingFileIsAStatusCodeWithThePath) {
  const std::string missing = t::ScratchPath("cpp-no-such-model.kes");
  kapi::Result<kapi::Model> model = kapi::Model::Open(missing);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), kapi::StatusCode::kIoError);
  EXPECT_NE(model.status().message().find(missing), std::string::npos) << model.status().message();
  EXPECT_EQ(model.status().ToString().rfind("KES_IO_ERROR: ", 0), 0u) << model.status().ToString();
}

TEST(CppApi, ResultMoves) {
  kapi::Result<std::string> text(std::string(100, 'x'));
  ASSERT_TRUE(text.ok());
  kapi::Result<std::string> moved(std::move(text));
  EXPECT_EQ(moved->size(), 100u);
  kapi::Result<std::string> failed(kapi::Status(kapi::StatusCode::kAborted, "stopped"));
  EXPECT_FALSE(failed.ok());
  failed = std::move(moved);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(*failed, std::string(100, 'x'));
  // A Result cannot be made "failed" with an OK status: that would hide a bug.
  kapi::Result<int> odd{kapi::Status()};
  EXPECT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().code(), kapi::StatusCode::kInternal);
}

TEST_P(CppApiTest, TokensRoundTrip) {
  kapi::Result<kapi::Model> model = kapi::Model::Open(path());
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  kapi::Result<kapi::ModelInfo> info = model->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->can_generate, 1);
  // Longer than the first guess the wrapper sizes its buffer by, so the retry is exercised.
  std::string text;
  for (int i = 0; i < 40; ++i) text += "fox jumps over ";
  kapi::Result<std::vector<int32_t>> ids = model->Tokenize(text, 0);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_GT(ids->size(), 40u);
  kapi::Result<std::string> back = model->Detokenize(*ids);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, text);
  const int32_t out_of_range = static_cast<int32_t>(info->n_vocab) + 5;
  kapi::Result<std::string> bad = model->Detokenize(&out_of_range, 1);
  EXPECT_EQ(bad.status().code(), kapi::StatusCode::kInvalidArgument);
  EXPECT_FALSE(bad.status().message().empty());
}

TEST_P(CppApiTest, GenerateNextTokenAndStopAsTheCApi) {
  const std::vector<int32_t> expected = CGreedyTokens(path());
  ASSERT_FALSE(expected.empty());
  kapi::Result<kapi::Model> model = kapi::Model::Open(path());
  ASSERT_TRUE(model.ok());
  kapi::Result<std::vector<int32_t>> prompt = model->Tokenize(kPrompt);
  ASSERT_TRUE(prompt.ok());
  const kapi::SessionParams params = OneThread();
  kapi::Result<kapi::Session> session = kapi::Session::Create(*model, &params);
  ASSERT_TRUE(session.ok()) << session.status().ToString();

  std::vector<int32_t> generated;
  std::string text;
  kapi::Status s = session->Generate(*prompt, kapi::GreedySampler(), kNewTokens,
                                     [&](int32_t id, std::string_view piece) {
                                       generated.push_back(id);
                                       text.append(piece);
                                     });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(generated, expected);
  kapi::Result<std::string> detok = model->Detokenize(generated);
  ASSERT_TRUE(detok.ok());
  EXPECT_EQ(text, *detok);

  // Pulled one at a time after a prefill: the same tokens (up to the first end token, which
  // kes_generate does not pass on).
  ASSERT_TRUE(session->Reset().ok());
  ASSERT_TRUE(session->Prefill(*prompt).ok());
  std::vector<int32_t> pulled;
  for (size_t i = 0; i < expected.size(); ++i) {
    kapi::Result<kapi::Session::Token> token = session->NextToken(kapi::GreedySampler());
    ASSERT_TRUE(token.ok()) << token.status().ToString();
    pulled.push_back(token->id);
  }
  EXPECT_EQ(pulled, expected);
  kapi::Result<size_t> position = session->Position();
  ASSERT_TRUE(position.ok());
  EXPECT_EQ(*position, prompt->size() + expected.size());

  // A callback returning false stops generation after that token.
  ASSERT_TRUE(session->Reset().ok());
  size_t calls = 0;
  ASSERT_TRUE(session
                  ->Generate(*prompt, kapi::GreedySampler(), kNewTokens,
                             [&](int32_t, std::string_view) { return ++calls < 3; })
                  .ok());
  EXPECT_EQ(calls, 3u);
}

// A rewound session going on with another ending gives the tokens of a fresh session given
// that prompt whole; past the sequence's length it refuses, changing nothing.
TEST_P(CppApiTest, RewindKeepsTheSharedBeginning) {
  kapi::Result<kapi::Model> model = kapi::Model::Open(path());
  ASSERT_TRUE(model.ok());
  kapi::Result<std::vector<int32_t>> shared = model->Tokenize("the quick brown fox");
  kapi::Result<std::vector<int32_t>> first = model->Tokenize(" jumps over", 0);
  kapi::Result<std::vector<int32_t>> second = model->Tokenize(" sleeps under the tree", 0);
  ASSERT_TRUE(shared.ok() && first.ok() && second.ok());
  std::vector<int32_t> whole = *shared;
  whole.insert(whole.end(), second->begin(), second->end());
  const kapi::SessionParams params = OneThread();
  const auto greedy = [](kapi::Session& s, const std::vector<int32_t>& prompt) {
    std::vector<int32_t> out;
    EXPECT_TRUE(
        s.Generate(prompt, kapi::GreedySampler(), kNewTokens, [&](int32_t id, std::string_view) {
           out.push_back(id);
         }).ok());
    return out;
  };
  kapi::Result<kapi::Session> fresh = kapi::Session::Create(*model, &params);
  ASSERT_TRUE(fresh.ok());
  const std::vector<int32_t> expected = greedy(*fresh, whole);

  kapi::Result<kapi::Session> session = kapi::Session::Create(*model, &params);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE(session->Prefill(*shared).ok());
  ASSERT_TRUE(session->Prefill(*first).ok());
  // A pulled token is pending (counted, not run): the sequence is one longer.
  ASSERT_TRUE(session->NextToken(kapi::GreedySampler()).ok());
  const size_t length = shared->size() + first->size() + 1;
  EXPECT_EQ(*session->Position(), length);
  kapi::Status past = session->Rewind(length + 1);
  EXPECT_EQ(past.code(), kapi::StatusCode::kInvalidArgument);
  EXPECT_NE(past.message().find("expected at most the sequence's"), std::string::npos)
      << past.message();
  EXPECT_EQ(*session->Position(), length) << "a refused rewind changes nothing";
  ASSERT_TRUE(session->Rewind(shared->size()).ok());
  EXPECT_EQ(*session->Position(), shared->size());
  EXPECT_EQ(greedy(*session, *second), expected);
}

TEST_P(CppApiTest, SessionInACallerArena) {
  kapi::Result<kapi::Model> model = kapi::Model::Open(path());
  ASSERT_TRUE(model.ok());
  const kapi::SessionParams params = OneThread();
  kapi::Result<size_t> bytes = kapi::Session::ArenaSize(*model, &params);
  ASSERT_TRUE(bytes.ok());
  ASSERT_GT(*bytes, 0u);
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> arena(std::aligned_alloc(KES_ALIGNMENT, (*bytes + 63) / 64 * 64));
  kapi::Result<kapi::Session> short_arena =
      kapi::Session::Create(*model, &params, arena.get(), *bytes - 1);
  EXPECT_EQ(short_arena.status().code(), kapi::StatusCode::kInvalidArgument);
  EXPECT_FALSE(short_arena.status().message().empty());
  kapi::Result<kapi::Session> session = kapi::Session::Create(*model, &params, arena.get(), *bytes);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  // Logits before anything was prefilled: a clear error, not a crash.
  EXPECT_EQ(session->GetLogits().status().code(), kapi::StatusCode::kInvalidArgument);
  kapi::Result<std::vector<int32_t>> prompt = model->Tokenize(kPrompt);
  ASSERT_TRUE(session->Prefill(*prompt).ok());
  kapi::Result<kapi::Session::Logits> logits = session->GetLogits();
  ASSERT_TRUE(logits.ok());
  EXPECT_EQ(logits->size, model->Info()->n_vocab);
}

// A converted scratch copy of a tiny model folder, removed when the test ends.
struct ScratchKes {
  std::string path;
  ~ScratchKes() { std::remove(path.c_str()); }
};

// The tiny BERT tests/py/make_tiny_bert.py writes with `flags` (scratch folder `stem`), converted
// into `kes`.
void ConvertTinyBert(const std::string& stem, const std::string& flags, const ScratchKes& kes) {
  std::string folder;
  ASSERT_EQ(t::MakeTinyBert(stem, flags, &folder), "");
  const t::ProcessResult r = t::Convert({folder, kes.path});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << t::Describe(r);
}

// Encoder::Embed gives kes_embed's vectors bit for bit; a decoder is refused with a code.
TEST(CppApi, EncoderEmbedsAsTheCCall) {
  ScratchKes kes{t::ScratchPath("cpp-api-tiny-bert.kes")};
  ASSERT_NO_FATAL_FAILURE(ConvertTinyBert("tiny-bert", "", kes));
  kapi::Result<kapi::Model> model = kapi::Model::Open(kes.path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  kapi::EncoderParams params = kapi::DefaultEncoderParams();
  params.n_threads = 1;
  kapi::Result<kapi::Encoder> encoder = kapi::Encoder::Create(*model, &params);
  ASSERT_TRUE(encoder.ok()) << encoder.status().ToString();
  const std::vector<std::string_view> texts = {"a small dog", "", "the quick brown fox jumps"};
  kapi::Result<std::vector<float>> vectors = encoder->Embed(texts);
  ASSERT_TRUE(vectors.ok()) << vectors.status().ToString();
  const size_t dim = encoder->Info()->embedding_dim;
  ASSERT_EQ(vectors->size(), texts.size() * dim);

  std::vector<const char*> data;
  std::vector<size_t> lengths;
  for (std::string_view text : texts) {
    data.push_back(text.data());
    lengths.push_back(text.size());
  }
  std::vector<float> expected(texts.size() * dim);
  kes_encoder* c_encoder = nullptr;
  ASSERT_EQ(kes_encoder_create(model->get(), &params, nullptr, 0, &c_encoder), KES_OK);
  EXPECT_EQ(kes_embed(c_encoder, data.data(), lengths.data(), texts.size(), expected.data(), dim),
            KES_OK);
  kes_encoder_destroy(c_encoder);
  EXPECT_EQ(*vectors, expected);

  // Abort: the next Embed stops with kAborted and the C message, and the one after works.
  EXPECT_TRUE(encoder->Abort().ok());
  kapi::Result<std::vector<float>> aborted = encoder->Embed(texts);
  EXPECT_EQ(aborted.status().code(), kapi::StatusCode::kAborted);
  EXPECT_EQ(aborted.status().message(), "aborted by kes_encoder_abort");
  kapi::Result<std::vector<float>> after = encoder->Embed(texts);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(*after, expected);

  const kapi::Status refused = encoder->Embed(texts, expected.data(), dim + 1);
  EXPECT_EQ(refused.code(), kapi::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("dim: expected the model's"), std::string::npos)
      << "the message of this call: " << refused.ToString();
  kapi::Result<kapi::Model> decoder = kapi::Model::Open(TinyPath(t::kTinyGemma3));
  ASSERT_TRUE(decoder.ok());
  kapi::Result<kapi::Encoder> wrong = kapi::Encoder::Create(*decoder);
  EXPECT_EQ(wrong.status().code(), kapi::StatusCode::kUnsupported);
  EXPECT_FALSE(wrong.status().message().empty());
}

// Encoder::Rerank gives kes_rerank's logits bit for bit; an embedding model refuses it.
TEST(CppApi, EncoderReranksAsTheCCall) {
  ScratchKes kes{t::ScratchPath("cpp-api-tiny-reranker.kes")};
  ASSERT_NO_FATAL_FAILURE(ConvertTinyBert("tiny-bert-reranker", "--reranker", kes));
  kapi::Result<kapi::Model> model = kapi::Model::Open(kes.path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  kapi::Result<kapi::Encoder> encoder = kapi::Encoder::Create(*model);
  ASSERT_TRUE(encoder.ok()) << encoder.status().ToString();
  EXPECT_EQ(encoder->Info()->is_reranker, 1u);
  const std::vector<std::string_view> docs = {"a small dog", "", "the quick brown fox jumps"};
  kapi::Result<std::vector<float>> logits = encoder->Rerank("a dog", docs);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  ASSERT_EQ(logits->size(), docs.size());
  std::vector<const char*> data;
  std::vector<size_t> lengths;
  for (std::string_view doc : docs) data.push_back(doc.data()), lengths.push_back(doc.size());
  std::vector<float> expected(docs.size());
  EXPECT_EQ(kes_rerank(encoder->get(), "a dog", 5, data.data(), lengths.data(), docs.size(),
                       expected.data()),
            KES_OK);
  EXPECT_EQ(*logits, expected);
  kapi::Result<std::vector<float>> embedded = encoder->Embed(docs);
  EXPECT_EQ(embedded.status().code(), kapi::StatusCode::kUnsupported);
  EXPECT_NE(embedded.status().message().find("kes_rerank"), std::string::npos)
      << embedded.status().ToString();
}

// Transcriber gives the segments kes_transcribe_pcm gives.
TEST(CppApi, TranscriberGivesTheCCallsSegments) {
  const std::string folder = t::ScratchPath("cpp-api-tiny-whisper");
  ASSERT_EQ(t::MakeTinyWhisper(folder), "");
  ScratchKes kes{folder + ".kes"};
  const t::ProcessResult r = t::Convert({folder, kes.path});
  t::RunHostCommand("rm -rf '" + folder + "'");
  ASSERT_TRUE(r.exited && r.exit_code == 0) << t::Describe(r);
  kapi::Result<kapi::Model> model = kapi::Model::Open(kes.path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  kapi::TranscriberParams params = kapi::DefaultTranscriberParams();
  params.n_threads = 1;
  kapi::Result<kapi::Transcriber> transcriber = kapi::Transcriber::Create(*model, &params);
  ASSERT_TRUE(transcriber.ok()) << transcriber.status().ToString();
  // Two seconds of a 440 Hz tone: the tiny random model writes whatever it writes, the same
  // through both calls.
  std::vector<float> samples(32000);
  for (size_t i = 0; i < samples.size(); ++i) {
    samples[i] = 0.3f * static_cast<float>(std::sin(2.0 * 3.14159265358979 * 440.0 * i / 16000));
  }
  kapi::Result<std::vector<kapi::Transcriber::Segment>> segments =
      transcriber->Transcribe(samples.data(), samples.size(), 16000);
  ASSERT_TRUE(segments.ok()) << segments.status().ToString();
  EXPECT_EQ(transcriber->Language(), "en");

  std::string expected;
  auto collect = [](void* user, const kes_segment* segment) {
    *static_cast<std::string*>(user) += std::to_string(segment->start) + "-" +
                                        std::to_string(segment->end) + ":" +
                                        std::string(segment->text, segment->text_len) + "\n";
  };
  kes_transcriber* c_transcriber = nullptr;
  ASSERT_EQ(kes_transcriber_create(model->get(), &params, &c_transcriber), KES_OK);
  EXPECT_EQ(kes_transcribe_pcm(c_transcriber, samples.data(), samples.size(), 16000, nullptr,
                               collect, &expected),
            KES_OK);
  kes_transcriber_destroy(c_transcriber);
  std::string got;
  for (const kapi::Transcriber::Segment& s : *segments) {
    got += std::to_string(s.start) + "-" + std::to_string(s.end) + ":" + s.text + "\n";
  }
  EXPECT_FALSE(segments->empty()) << "nothing to compare";
  EXPECT_EQ(got, expected);

  // Abort: the next Transcribe stops with kAborted and the C message, and the one after works.
  EXPECT_TRUE(transcriber->Abort().ok());
  kapi::Result<std::vector<kapi::Transcriber::Segment>> aborted =
      transcriber->Transcribe(samples.data(), samples.size(), 16000);
  EXPECT_EQ(aborted.status().code(), kapi::StatusCode::kAborted);
  EXPECT_EQ(aborted.status().message(), "aborted by kes_transcriber_abort");
  kapi::Result<std::vector<kapi::Transcriber::Segment>> after =
      transcriber->Transcribe(samples.data(), samples.size(), 16000);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->size(), segments->size());

  kapi::Result<std::vector<kapi::Transcriber::Segment>> missing =
      transcriber->TranscribeFile(t::ScratchPath("cpp-api-no-such.wav"));
  EXPECT_EQ(missing.status().code(), kapi::StatusCode::kIoError);
}

INSTANTIATE_TEST_SUITE_P(Tiny, CppApiTest, ::testing::Values(&t::kTinyGemma3, &t::kTinyLlama),
                         [](const ::testing::TestParamInfo<const t::TinyFamily*>& info) {
                           return std::string(info.param == &t::kTinyGemma3 ? "Gemma3" : "Llama");
                         });

}  // namespace
