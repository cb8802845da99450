// Saving a C API session's state to a buffer and loading it back allocate nothing (counted on
// every thread, tests/support/alloc_counter.h), also past the context with every ring wrapped
// and with a pending token, so that a board restores a saved system prompt without a heap.
// What loads is what was saved: generation then goes on with the same tokens.
#include <gtest/gtest.h>

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

struct Received {
  int32_t tokens[128];
  size_t n = 0;
  static int Add(void* user_data, int32_t token, const char*, size_t) {
    auto& r = *static_cast<Received*>(user_data);
    if (r.n < 128) r.tokens[r.n++] = token;
    return 0;
  }
};

TEST(CApiStateZeroAlloc, SaveAndLoadToABufferAllocateNothing) {
  const test::ModelPtr owned = test::Open(test::TinyPath(test::kTinyGemma3));
  ASSERT_NE(owned, nullptr);
  kes_model* model = owned.get();
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 12; ++i) prompt.push_back((i * 37 + 11) % 200);
  kes_session_params params = kes_session_default_params();
  params.context_length = 16;
  params.n_threads = 2;
  kes_session* a = nullptr;
  kes_session* b = nullptr;
  ASSERT_EQ(kes_session_create(model, &params, nullptr, 0, &a), KES_OK) << kes_last_error();
  ASSERT_EQ(kes_session_create(model, &params, nullptr, 0, &b), KES_OK) << kes_last_error();
  kes_sampler_params greedy = kes_sampler_default_params();
  greedy.temperature = 0.0f;
  // The largest state: every ring full; generation leaves its last token pending.
  std::vector<uint8_t> buffer(1 << 20);
  auto first = std::make_unique<Received>();
  auto second = std::make_unique<Received>();
  kes_status s[6];

  test::StartCountingAllocations();
  s[0] = kes_generate(a, prompt.data(), prompt.size(), &greedy, 90, Received::Add, first.get());
  size_t size = 0, need = 0;
  s[1] = kes_session_state_size(a, &need);
  s[2] = kes_session_save_state(a, buffer.data(), buffer.size(), &size);
  s[3] = kes_session_load_state(b, buffer.data(), size);
  s[4] = kes_generate(a, nullptr, 0, &greedy, 20, Received::Add, first.get());
  s[5] = kes_generate(b, nullptr, 0, &greedy, 20, Received::Add, second.get());
  const long calls = test::StopCountingAllocations();

  for (kes_status status : s) EXPECT_EQ(status, KES_OK) << kes_last_error();
  EXPECT_EQ(calls, 0) << "heap calls saving or loading a state";
  EXPECT_EQ(size, need);
  EXPECT_GT(size, 1000u);
  ASSERT_EQ(first->n, 110u);
  ASSERT_EQ(second->n, 20u);
  EXPECT_EQ(std::memcmp(first->tokens + 90, second->tokens, 20 * sizeof(int32_t)), 0);
  kes_session_destroy(a);
  kes_session_destroy(b);
}

}  // namespace
}  // namespace kestrel
