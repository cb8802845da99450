// A C API session allocates nothing once created: kes_session_prefill, kes_generate (its
// callback included), kes_session_next_token with its pieces, kes_session_logits, the position,
// a reset and a rewind (what a server does between requests), counted on every thread
// (tests/support/alloc_counter.h) on the tiny Gemma 3 with 1 and 2 threads, past its context of
// 16 so that every KV ring wraps. The C API's own layer
// (parameter structs, status values, the pending token) must keep the runtime's promise.
// The same for an encoder's kes_embed_tokens (the tiny BERT, a batch of several steps) and a
// transcriber's kes_transcribe_pcm at 16 kHz (the tiny Whisper, several windows, each call with
// other options, segment texts handed to the callback).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/kestrel.h"
#include "tests/support/alloc_counter.h"
#include "tests/support/c_api_test_support.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

// Keeps what the callback receives in fixed storage.
struct Received {
  int32_t tokens[256];
  size_t n = 0;
  char text[1 << 14];
  size_t bytes = 0;
  static int Add(void* user_data, int32_t token, const char* piece, size_t piece_len) {
    auto& r = *static_cast<Received*>(user_data);
    if (r.n < 256) r.tokens[r.n++] = token;
    const size_t room = sizeof(r.text) - r.bytes;
    const size_t n = piece_len < room ? piece_len : room;
    std::memcpy(r.text + r.bytes, piece, n);
    r.bytes += n;
    return 0;
  }
};

TEST(CApiZeroAlloc, SessionCallsAllocateNothing) {
  const test::ModelPtr owned = test::Open(test::TinyPath(test::kTinyGemma3));
  ASSERT_NE(owned, nullptr);
  kes_model* model = owned.get();
  kes_model_info info;
  info.struct_size = sizeof(info);
  ASSERT_EQ(kes_model_get_info(model, &info), KES_OK);
  std::vector<int32_t> prompt;
  for (size_t i = 0; i < 12; ++i) {
    prompt.push_back(static_cast<int32_t>((i * 37 + 11) % info.n_vocab));
  }

  for (size_t threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s)");
    kes_session_params params = kes_session_default_params();
    params.context_length = 16;
    params.n_threads = threads;
    kes_session* session = nullptr;
    ASSERT_EQ(kes_session_create(model, &params, nullptr, 0, &session), KES_OK) << kes_last_error();
    kes_sampler_params sampler = kes_sampler_default_params();
    sampler.seed = 7;
    auto received = std::make_unique<Received>();
    char piece[256];
    size_t len = 0, position = 0, n_vocab = 0;
    int32_t token = -1;
    const float* logits = nullptr;
    kes_status s[9];

    test::StartCountingAllocations();
    s[0] = kes_session_prefill(session, prompt.data(), 4);
    s[1] = kes_generate(session, prompt.data() + 4, prompt.size() - 4, &sampler, 48, Received::Add,
                        received.get());
    const size_t generated = received->n;
    s[2] = KES_OK;
    for (int i = 0; i < 24 && s[2] == KES_OK; ++i) {
      s[2] = kes_session_next_token(session, &sampler, &token, piece, sizeof(piece), &len);
    }
    s[3] = kes_session_logits(session, &logits, &n_vocab);
    s[4] = kes_session_position(session, &position);
    s[5] = kes_session_reset(session);
    s[6] = kes_session_prefill(session, prompt.data(), prompt.size());
    s[7] = kes_session_rewind(session, 6);  // inside the context: the cache still holds 0-5
    s[8] = kes_generate(session, nullptr, 0, &sampler, 8, Received::Add, received.get());
    const long calls = test::StopCountingAllocations();

    for (kes_status status : s) EXPECT_EQ(status, KES_OK) << kes_session_last_error(session);
    EXPECT_EQ(position, 12 + generated + 24);
    EXPECT_GT(position, 16u + 64u) << "every ring wrapped";
    EXPECT_EQ(n_vocab, info.n_vocab);
    EXPECT_EQ(calls, 0) << "heap calls in a C API session";
    kes_session_destroy(session);
  }
}

// Texts of 1 to 23 words and one cut to the model's limit, tokenized before counting.
TEST(CApiZeroAlloc, EmbedTokensAllocatesNothing) {
  std::string folder;
  ASSERT_EQ(test::MakeTinyBert("tiny-bert", "", &folder), "");
  const std::string kes = test::ScratchPath("c-api-zero-alloc-bert.kes");
  const test::ProcessResult r = test::Convert({folder, kes});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  kes_model* model = nullptr;
  ASSERT_EQ(kes_model_open(kes.c_str(), nullptr, &model), KES_OK) << kes_last_error();
  std::remove(kes.c_str());
  std::vector<std::string> texts;
  for (size_t i = 0; i < 40; ++i) {
    std::string t = "a kestrel";
    for (size_t w = 0; w < (i * 7) % 23; ++w) t += w % 2 ? " hovers" : " over the field";
    texts.push_back(t);
  }

  for (size_t threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s)");
    kes_encoder_params params = kes_encoder_default_params();
    params.n_threads = threads;
    kes_encoder* encoder = nullptr;
    ASSERT_EQ(kes_encoder_create(model, &params, nullptr, 0, &encoder), KES_OK) << kes_last_error();
    std::vector<std::vector<int32_t>> ids(texts.size(), std::vector<int32_t>(64));
    std::vector<const int32_t*> pointers;
    std::vector<size_t> lengths(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      ASSERT_EQ(kes_encoder_tokenize(encoder, texts[i].data(), texts[i].size(), ids[i].data(),
                                     ids[i].size(), &lengths[i]),
                KES_OK);
      pointers.push_back(ids[i].data());
    }
    kes_encoder_info info;
    info.struct_size = sizeof(info);
    ASSERT_EQ(kes_encoder_get_info(encoder, &info), KES_OK);
    std::vector<float> out(texts.size() * info.embedding_dim);
    kes_status s[2];

    test::StartCountingAllocations();
    s[0] = kes_encoder_get_info(encoder, &info);
    s[1] = kes_embed_tokens(encoder, pointers.data(), lengths.data(), texts.size(), out.data(),
                            info.embedding_dim);
    const long calls = test::StopCountingAllocations();

    for (kes_status status : s) EXPECT_EQ(status, KES_OK) << kes_encoder_last_error(encoder);
    EXPECT_EQ(calls, 0) << "heap calls in kes_embed_tokens";
    EXPECT_GT(texts.size(), info.max_batch) << "more than one step";
    double norm = 0;
    for (size_t j = 0; j < info.embedding_dim; ++j) norm += double{out[j]} * out[j];
    EXPECT_NEAR(norm, 1.0, 1e-5);
    kes_encoder_destroy(encoder);
  }
  kes_model_close(model);
}

// Keeps what the segment callback receives in fixed storage.
struct Segments {
  size_t n = 0, tokens = 0, bytes = 0;
  char text[1 << 14];
  double end = 0;
  static void Add(void* user_data, const kes_segment* s) {
    auto& r = *static_cast<Segments*>(user_data);
    ++r.n;
    r.tokens += s->n_tokens;
    const size_t n = std::min(s->text_len, sizeof(r.text) - r.bytes);
    std::memcpy(r.text + r.bytes, s->text, n);
    r.bytes += n;
    r.end = s->end;
  }
};

// 5 seconds of a tone: two windows of the tiny Whisper's 4 seconds.
TEST(CApiZeroAlloc, TranscribePcmAllocatesNothing) {
  const std::string folder = test::ScratchPath("c-api-zero-alloc-whisper");
  ASSERT_EQ(test::MakeTinyWhisper(folder), "");
  const std::string kes = folder + ".kes";
  const test::ProcessResult r = test::Convert({folder, kes});
  test::RunHostCommand("rm -rf '" + folder + "'");
  ASSERT_TRUE(r.exited && r.exit_code == 0) << test::Describe(r);
  kes_model* model = nullptr;
  ASSERT_EQ(kes_model_open(kes.c_str(), nullptr, &model), KES_OK) << kes_last_error();
  std::remove(kes.c_str());
  std::vector<float> samples(16000 * 5);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = 0.3f * std::sin(0.05f * i);

  for (size_t threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s)");
    kes_transcriber_params params = kes_transcriber_default_params();
    params.n_threads = threads;
    kes_transcriber* t = nullptr;
    ASSERT_EQ(kes_transcriber_create(model, &params, &t), KES_OK) << kes_last_error();
    kes_transcribe_params plain = kes_transcribe_default_params();
    kes_transcribe_params timed = kes_transcribe_default_params();
    timed.language = "en";
    timed.timestamps = 1;
    timed.previous_text = 1;
    auto segments = std::make_unique<Segments>();
    const char* code = nullptr;
    size_t len = 0;
    kes_status s[4];

    test::StartCountingAllocations();
    s[0] = kes_transcribe_pcm(t, samples.data(), samples.size(), 16000, &plain, Segments::Add,
                              segments.get());
    s[1] = kes_transcribe_pcm(t, samples.data(), samples.size(), 16000, &timed, Segments::Add,
                              segments.get());
    s[2] = kes_transcribe_pcm(t, samples.data(), samples.size(), 16000, nullptr, Segments::Add,
                              segments.get());
    s[3] = kes_transcriber_language(t, &code, &len);
    const long calls = test::StopCountingAllocations();

    for (kes_status status : s) EXPECT_EQ(status, KES_OK) << kes_transcriber_last_error(t);
    EXPECT_EQ(calls, 0) << "heap calls in kes_transcribe_pcm";
    EXPECT_GE(segments->n, 3u);
    EXPECT_GT(segments->bytes, 0u);
    EXPECT_GT(segments->end, 4.0) << "the second window ran";
    EXPECT_EQ(std::string(code, len), "en");
    kes_transcriber_destroy(t);
  }

  // A recording longer than max_audio_seconds grows the spectrogram once, then no more.
  kes_transcriber_params params = kes_transcriber_default_params();
  params.n_threads = 1;
  params.max_audio_seconds = 2;
  kes_transcriber* t = nullptr;
  ASSERT_EQ(kes_transcriber_create(model, &params, &t), KES_OK) << kes_last_error();
  long calls[2];
  for (long& c : calls) {
    test::StartCountingAllocations();
    EXPECT_EQ(
        kes_transcribe_pcm(t, samples.data(), samples.size(), 16000, nullptr, nullptr, nullptr),
        KES_OK);
    c = test::StopCountingAllocations();
  }
  EXPECT_GT(calls[0], 0) << "5 s past a spectrogram made for 2 s";
  EXPECT_EQ(calls[1], 0);
  kes_transcriber_destroy(t);
  kes_model_close(model);
}

}  // namespace
}  // namespace kestrel
