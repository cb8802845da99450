// `kestrel serve`'s sessions allocate nothing while serving: the server's own generation path
// (server/generation.cc RunGeneration: a slot's prompt prefilled after what the slot holds,
// through Position, Rewind or Reset and Prefill, then NextToken per token) run for a first
// request, a second that shares its beginning (the rewind), and a third that shares nothing (the
// reset), counted on every thread (tests/support/alloc_counter.h), on the tiny Gemma 3 with 1 and
// 2 threads. The reply text and the delta sink get room before counting: the HTTP and JSON layer
// around them may allocate, the sessions not.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/kestrel.hpp"
#include "server/generation.h"
#include "server/slot_pool.h"
#include "tests/support/alloc_counter.h"
#include "tests/support/tiny_kes_path.h"

namespace kestrel::server {
namespace {

constexpr size_t kContext = 96;

TEST(ServerGenerationZeroAlloc, RequestsOnASlotAllocateNothing) {
  std::string error;
  const std::string tiny = test::TinyGemma3KesPath(&error);
  ASSERT_EQ(error, "");
  Result<Model> model = Model::Open(tiny);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const size_t n_vocab = model->Info()->n_vocab;

  for (size_t threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s)");
    SessionParams params = kes_session_default_params();
    params.context_length = kContext;
    params.n_threads = threads;
    Result<Session> session = Session::Create(*model, &params);
    ASSERT_TRUE(session.ok()) << session.status().message();
    Slot slot{0, std::move(session).value(), {}};
    slot.held.reserve(kContext + 1);  // as the server makes its slots

    std::vector<int32_t> first, unrelated;
    for (size_t i = 0; i < 12; ++i) {
      first.push_back(static_cast<int32_t>((i * 37 + 11) % n_vocab));
      unrelated.push_back(static_cast<int32_t>((i * 53 + 5) % n_vocab));
    }
    GenerationRequest request;
    request.temperature = 0;
    const std::atomic<bool> stopping{false};
    size_t deltas = 0;
    const DeltaSink sink = [&deltas](std::string_view) {
      ++deltas;
      return true;
    };
    GenerationOutcome outcomes[3];
    for (GenerationOutcome& o : outcomes) o.text.reserve(1 << 14);
    // The second request: the first turn's prompt and reply, then three tokens more, as a chat's
    // next turn shares its beginning with what the slot holds. Sized before counting.
    std::vector<int32_t> second;
    second.reserve(kContext);

    test::StartCountingAllocations();
    RunGeneration(*model, slot, first, request, 16, stopping, sink, &outcomes[0]);
    second.assign(slot.held.begin(), slot.held.end());
    for (int32_t extra : {3, 5, 7}) second.push_back(extra);
    RunGeneration(*model, slot, second, request, 16, stopping, sink, &outcomes[1]);
    RunGeneration(*model, slot, unrelated, request, 16, stopping, sink, &outcomes[2]);
    const long calls = test::StopCountingAllocations();

    for (const GenerationOutcome& o : outcomes) EXPECT_TRUE(o.status.ok()) << o.status.message();
    EXPECT_EQ(outcomes[0].reused_tokens, 0u);
    EXPECT_EQ(outcomes[1].reused_tokens, second.size() - 3) << "the second request rewinds";
    EXPECT_EQ(outcomes[2].reused_tokens, 0u) << "the third shares nothing: a reset";
    EXPECT_GT(deltas, 0u);
    EXPECT_EQ(calls, 0) << "heap calls in a slot's session while serving";
  }
}

}  // namespace
}  // namespace kestrel::server
