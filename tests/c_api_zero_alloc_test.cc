// A C API session allocates nothing once created: kes_session_prefill, kes_generate (its
// callback included), kes_session_next_token with its pieces, kes_session_logits, the position
// and a reset, counted on every thread (tests/support/alloc_counter.h) on the tiny Gemma 3 with 1
// and 2 threads, past its context of 16 so that every KV ring wraps. The C API's own layer
// (parameter structs, status values, the pending token) must keep the runtime's promise.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/kestrel.h"
#include "tests/support/alloc_counter.h"
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
  test::TinyModel tiny;
  ASSERT_EQ(test::MakeTinyModel(&tiny), "");
  kes_model* model = nullptr;
  ASSERT_EQ(kes_model_open(tiny.kes.c_str(), nullptr, &model), KES_OK) << kes_last_error();
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
    ASSERT_EQ(kes_session_create(model, &params, nullptr, 0, &session), KES_OK)
        << kes_last_error();
    kes_sampler_params sampler = kes_sampler_default_params();
    sampler.seed = 7;
    auto received = std::make_unique<Received>();
    char piece[256];
    size_t len = 0, position = 0, n_vocab = 0;
    int32_t token = -1;
    const float* logits = nullptr;
    kes_status s[8];

    test::StartCountingAllocations();
    s[0] = kes_session_prefill(session, prompt.data(), 4);
    s[1] = kes_generate(session, prompt.data() + 4, prompt.size() - 4, &sampler, 48,
                        Received::Add, received.get());
    const size_t generated = received->n;
    s[2] = KES_OK;
    for (int i = 0; i < 24 && s[2] == KES_OK; ++i) {
      s[2] = kes_session_next_token(session, &sampler, &token, piece, sizeof(piece), &len);
    }
    s[3] = kes_session_logits(session, &logits, &n_vocab);
    s[4] = kes_session_position(session, &position);
    s[5] = kes_session_reset(session);
    s[6] = kes_session_prefill(session, prompt.data(), prompt.size());
    s[7] = kes_generate(session, nullptr, 0, &sampler, 8, Received::Add, received.get());
    const long calls = test::StopCountingAllocations();

    for (kes_status status : s) EXPECT_EQ(status, KES_OK) << kes_session_last_error(session);
    EXPECT_EQ(position, 12 + generated + 24);
    EXPECT_GT(position, 16u + 64u) << "every ring wrapped";
    EXPECT_EQ(n_vocab, info.n_vocab);
    EXPECT_EQ(calls, 0) << "heap calls in a C API session";
    kes_session_destroy(session);
  }
  kes_model_close(model);
}

}  // namespace
}  // namespace kestrel
