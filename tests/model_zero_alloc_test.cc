// After a Session exists, inference allocates nothing: this test interposes the C allocator
// (operator new and delete go through it too) and counts calls made by any thread while the
// real Gemma 3 270M prefills 600 tokens, decodes 64 steps, samples and detokenizes.
// Built only without sanitizers, which own malloc themselves.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);
}

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_calls{0};
inline void Count() {
  if (g_counting.load(std::memory_order_relaxed)) g_calls.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  Count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  Count();
  return __libc_realloc(p, size);
}
void free(void* p) {
  if (p) Count();
  __libc_free(p);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
void* memalign(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Count();
  void* p = __libc_memalign(alignment, size);
  if (!p) return 12;  // ENOMEM
  *out = p;
  return 0;
}
}

namespace kestrel {
namespace {

struct Collected {
  char text[1 << 16];
  size_t bytes = 0;
  size_t tokens = 0;
};

void Collect(void* context, int32_t, std::string_view piece) {
  auto* c = static_cast<Collected*>(context);
  const size_t n = std::min(piece.size(), sizeof(c->text) - c->bytes);
  std::memcpy(c->text + c->bytes, piece.data(), n);
  c->bytes += n;
  ++c->tokens;
}

struct ZeroAllocCase {
  const char* weights;  // gemma3-270m-<weights>.kes from the ctest fixture
  size_t threads;
};

class ZeroAllocTest : public ::testing::TestWithParam<ZeroAllocCase> {};

TEST_P(ZeroAllocTest, PrefillDecodeSampleDetokenizeAllocateNothing) {
  const ZeroAllocCase& c = GetParam();
  const std::string path = std::string(KESTREL_TEST_TMP) + "/gemma3-270m-" + c.weights + ".kes";
  std::unique_ptr<Model> model;
  Status s = Model::Open(path, &model);
  ASSERT_TRUE(s.ok()) << s.message() << " (the ctest fixture converts the model first)";
  SessionOptions options;
  options.context_length = 1024;
  options.n_threads = c.threads;
  std::unique_ptr<Session> session;
  s = Session::Create(*model, options, &session);
  ASSERT_TRUE(s.ok()) << s.message();

  std::vector<int32_t> prompt;
  std::string text;
  while (prompt.size() < 600) {
    text += "The quick brown fox jumps over the lazy dog, and the kestrel hovers above. ";
    prompt.clear();
    ASSERT_TRUE(model->tokenizer().Encode(text, true, false, &prompt).ok());
  }
  prompt.resize(600);

  GenerateOptions gen;
  gen.max_new_tokens = 65;  // the first comes from the prefill's logits: 64 decode steps
  gen.stop_at_end_of_generation = false;
  gen.sampler.temperature = 0.8f;
  gen.sampler.top_k = 40;
  gen.sampler.top_p = 0.9f;
  gen.sampler.seed = 7;
  auto collected = std::make_unique<Collected>();
  GenerateStats stats;

  g_calls.store(0);
  g_counting.store(true);
  s = Generate(*session, prompt.data(), prompt.size(), gen, Collect, collected.get(), &stats);
  g_counting.store(false);

  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(stats.prompt_tokens, 600u);
  EXPECT_EQ(stats.decode_steps, 64u);
  EXPECT_EQ(collected->tokens, 65u);
  EXPECT_GT(collected->bytes, 0u);
  EXPECT_EQ(g_calls.load(), 0) << "heap calls during inference with " << c.weights
                               << " weights and " << c.threads << " thread(s)";
}

// f32 and the block-quantized kernels (with their on-the-fly activation quantization).
INSTANTIATE_TEST_SUITE_P(WeightsAndThreads, ZeroAllocTest,
                         ::testing::Values(ZeroAllocCase{"f32", 1}, ZeroAllocCase{"f32", 2},
                                           ZeroAllocCase{"q8", 1}, ZeroAllocCase{"q8", 2},
                                           ZeroAllocCase{"q4", 1}, ZeroAllocCase{"q4", 2}),
                         [](const auto& info) {
                           return std::string(info.param.weights) + "_" +
                                  std::to_string(info.param.threads) + "_threads";
                         });

// The interposer itself must see allocations, or the test above proves nothing.
TEST(ZeroAllocInterposer, CountsAllocations) {
  g_calls.store(0);
  g_counting.store(true);
  auto* v = new std::vector<int>(100);
  delete v;
  g_counting.store(false);
  EXPECT_GE(g_calls.load(), 2);
}

}  // namespace
}  // namespace kestrel
