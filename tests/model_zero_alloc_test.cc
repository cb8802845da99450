// After a Session exists, inference allocates nothing: this test interposes the C allocator
// (operator new and delete go through it too; tests/support/alloc_counter.h) and counts calls
// made by any thread while the real Gemma 3 270M prefills 600 tokens, decodes 64 steps, samples
// and detokenizes. Built only without sanitizers, which own malloc themselves. The same check on
// the tiny generated models, which also runs cross-built under qemu: tiny_zero_alloc_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "runtime/chat_template.h"
#include "runtime/encoder.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/alloc_counter.h"
#include "tests/support/counted_generate.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::CollectedText;
using test::CollectText;
using test::CountedGeneration;
using test::GenerateCounted;
using test::SampledGeneration;
using test::StartCountingAllocations;
using test::StopCountingAllocations;

// Opens <model>.kes, which the ctest fixture (convert_real_models) converts first.
void OpenConverted(const std::string& model_name, std::unique_ptr<Model>* model) {
  const Status s = Model::Open(std::string(KESTREL_TEST_TMP) + "/" + model_name + ".kes", model);
  ASSERT_TRUE(s.ok()) << s.message() << " (the ctest fixture converts the model first)";
}

struct ZeroAllocCase {
  const char* model;  // <model>.kes from the ctest fixture
  size_t threads;
  ops::KvType kv_type = ops::KvType::kF32;
  // 512: the 600 tokens of prompt and generation pass the context and the rings wrap.
  size_t context = 1024;
};

class ZeroAllocTest : public ::testing::TestWithParam<ZeroAllocCase> {};

TEST_P(ZeroAllocTest, PrefillDecodeSampleDetokenizeAllocateNothing) {
  const ZeroAllocCase& c = GetParam();
  std::unique_ptr<Model> model;
  ASSERT_NO_FATAL_FAILURE(OpenConverted(c.model, &model));
  SessionOptions options;
  options.context_length = c.context;
  options.n_threads = c.threads;
  options.kv.type = c.kv_type;
  std::unique_ptr<Session> session;
  Status s = Session::Create(*model, options, &session);
  ASSERT_TRUE(s.ok()) << s.message();
  const size_t prompt_tokens = std::min<size_t>(600, c.context - 64);

  std::vector<int32_t> prompt;
  std::string text;
  while (prompt.size() < 600) {
    text += "The quick brown fox jumps over the lazy dog, and the kestrel hovers above. ";
    prompt.clear();
    ASSERT_TRUE(model->tokenizer().Encode(text, true, false, &prompt).ok());
  }
  prompt.resize(prompt_tokens);

  const CountedGeneration g = GenerateCounted(*session, prompt, SampledGeneration(64));

  ASSERT_TRUE(g.status.ok()) << g.status.message();
  EXPECT_EQ(g.stats.prompt_tokens, prompt_tokens);
  EXPECT_EQ(g.stats.decode_steps, 64u);
  EXPECT_EQ(g.collected->tokens, 65u);
  EXPECT_GT(g.collected->bytes, 0u);
  EXPECT_EQ(g.heap_calls, 0) << "heap calls during inference with " << c.model << " and "
                             << c.threads << " thread(s)";
}

// Gemma 3 and SmolLM2 (Llama family), f32 and the block-quantized kernels (with their
// on-the-fly activation quantization).
INSTANTIATE_TEST_SUITE_P(
    ModelsAndThreads, ZeroAllocTest,
    ::testing::Values(ZeroAllocCase{"gemma3-270m-f32", 1}, ZeroAllocCase{"gemma3-270m-f32", 2},
                      ZeroAllocCase{"gemma3-270m-q8", 1}, ZeroAllocCase{"gemma3-270m-q8", 2},
                      ZeroAllocCase{"gemma3-270m-q4", 1}, ZeroAllocCase{"gemma3-270m-q4", 2},
                      ZeroAllocCase{"smollm2-135m-f32", 2}, ZeroAllocCase{"smollm2-135m-q8", 1},
                      ZeroAllocCase{"smollm2-135m-q4", 2},
                      // keep: mixed kept types (Q8_0, Q5_0, Q4_K, Q6_K; Q4_1 and Q8_0)
                      ZeroAllocCase{"gemma3-270m-keep", 1}, ZeroAllocCase{"gemma3-270m-keep", 2},
                      ZeroAllocCase{"smollm2-135m-keep", 2},
                      // every KV type, with generation past a context of 512
                      ZeroAllocCase{"gemma3-270m-q8", 1, ops::KvType::kF32, 512},
                      ZeroAllocCase{"gemma3-270m-q8", 2, ops::KvType::kF16, 512},
                      ZeroAllocCase{"gemma3-270m-q8", 1, ops::KvType::kInt8, 512},
                      ZeroAllocCase{"smollm2-135m-q8", 2, ops::KvType::kInt8, 512},
                      ZeroAllocCase{"smollm2-135m-q8", 1, ops::KvType::kF16, 1024}),
    [](const auto& info) {
      std::string name = test::ParamName(info.param.model);
      name += "_" + std::to_string(info.param.threads) + "_threads";
      if (info.param.kv_type != ops::KvType::kF32 || info.param.context != 1024) {
        name += std::string("_kv_") + ops::KvTypeName(info.param.kv_type) + "_ctx_" +
                std::to_string(info.param.context);
      }
      return name;
    });

// An encoder's Encode: 40 texts of 4 to 256 tokens (two steps of at most 32 texts, mixed
// lengths in each), tokenized before counting.
class ZeroAllocEncodeTest : public ::testing::TestWithParam<ZeroAllocCase> {};

TEST_P(ZeroAllocEncodeTest, EncodeAllocatesNothing) {
  const ZeroAllocCase& c = GetParam();
  std::unique_ptr<Model> model;
  ASSERT_NO_FATAL_FAILURE(OpenConverted(c.model, &model));
  EncoderOptions options;
  options.n_threads = c.threads;
  std::unique_ptr<Encoder> encoder;
  ASSERT_TRUE(Encoder::Create(*model, options, &encoder).ok());
  std::vector<std::vector<int32_t>> texts(40);
  std::vector<const int32_t*> ids;
  std::vector<size_t> lengths;
  std::string text;
  while (text.size() < 2000) text += "The kestrel hovers over the field, then drops. ";
  for (size_t i = 0; i < texts.size(); ++i) {
    // 4 to ~2000 characters: the longest are cut to the model's 256 tokens.
    ASSERT_TRUE(encoder->Tokenize(text.substr(0, 4 + i * i * 13 % 1990), &texts[i]).ok());
    ids.push_back(texts[i].data());
    lengths.push_back(texts[i].size());
  }
  EXPECT_EQ(*std::max_element(lengths.begin(), lengths.end()), encoder->max_sequence_tokens());
  std::vector<float> out(texts.size() * encoder->embedding_dim());

  StartCountingAllocations();
  Status s = encoder->Encode(ids.data(), lengths.data(), ids.size(), out.data());
  const long calls = StopCountingAllocations();

  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(calls, 0) << "heap calls during Encode with " << c.model << " and " << c.threads
                      << " thread(s)";
  double norm = 0;
  for (size_t j = 0; j < encoder->embedding_dim(); ++j) norm += double{out[j]} * out[j];
  EXPECT_NEAR(norm, 1.0, 1e-4) << "MiniLM's embeddings are L2-normalized";
}

INSTANTIATE_TEST_SUITE_P(Encoders, ZeroAllocEncodeTest,
                         ::testing::Values(ZeroAllocCase{"minilm-l6-f32", 1},
                                           ZeroAllocCase{"minilm-l6-f32", 2},
                                           ZeroAllocCase{"minilm-l6-q8", 2},
                                           ZeroAllocCase{"minilm-l6-q4", 1}),
                         [](const auto& info) {
                           return test::ParamName(info.param.model) + "_" +
                                  std::to_string(info.param.threads) + "_threads";
                         });

// `kestrel chat`'s inference: turns of the model's chat format generated one after another on
// one session (the KV cache kept), counted over every Generate call. Encoding a turn happens
// between the calls, as in the chat loop, and may allocate.
struct ChatCase {
  const char* model;
  ChatFormat format;
};

class ZeroAllocChatTest : public ::testing::TestWithParam<ChatCase> {};

TEST_P(ZeroAllocChatTest, ChatTurnsAllocateNothing) {
  const ChatCase& c = GetParam();
  std::unique_ptr<Model> model;
  ASSERT_NO_FATAL_FAILURE(OpenConverted(c.model, &model));
  SessionOptions options;
  options.context_length = 512;
  options.n_threads = 2;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::Create(*model, options, &session).ok());
  GenerateOptions gen;
  gen.max_new_tokens = 24;
  gen.sampler.temperature = 0.7f;
  gen.sampler.seed = 3;
  auto collected = std::make_unique<CollectedText>();
  const char* turns[] = {"What do kestrels eat?", "And where do they nest?", "Thank you."};
  bool first = true;
  long calls = 0;
  for (const char* user : turns) {
    std::vector<int32_t> tokens, ids;
    for (const ChatSegment& seg : ChatTurn(c.format, first, "Answer briefly.", user)) {
      ASSERT_TRUE(model->tokenizer().Encode(seg.text, false, seg.markup, &ids).ok());
      tokens.insert(tokens.end(), ids.begin(), ids.end());
    }
    if (first && model->tokenizer().config().add_bos) {
      tokens.insert(tokens.begin(), model->tokenizer().config().bos_id);
    }
    first = false;
    const size_t before = session->position();
    GenerateStats stats;
    StartCountingAllocations();
    const Status s =
        Generate(*session, tokens.data(), tokens.size(), gen, CollectText, collected.get(), &stats);
    calls += StopCountingAllocations();
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(session->position(), before + tokens.size() + stats.decode_steps);
  }
  EXPECT_GT(collected->tokens, 0u);
  EXPECT_EQ(calls, 0) << "heap calls during chat turns with " << c.model;
}

INSTANTIATE_TEST_SUITE_P(Models, ZeroAllocChatTest,
                         ::testing::Values(ChatCase{"gemma3-270m-q8", ChatFormat::kGemma},
                                           ChatCase{"smollm2-135m-q8", ChatFormat::kChatMl}),
                         [](const auto& info) { return test::ParamName(info.param.model); });

// That the interposer (tests/support/alloc_counter.cc) sees allocations at all is checked once,
// by TinyZeroAllocInterposer.CountsAllocations in tests/tiny_zero_alloc_test.cc.

}  // namespace
}  // namespace kestrel
