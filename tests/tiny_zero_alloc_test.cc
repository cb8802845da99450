// Inference allocates nothing, on the tiny generated models. model_zero_alloc_test checks the
// real models, which a ctest fixture converts and which are left out of the cross builds (too
// slow under qemu-user); this test makes its models in a second, so it runs in every build but
// the sanitizer ones (they own malloc: tests/CMakeLists.txt), cross-built ones included: aarch64
// on SVE2 and on a NEON core without dotprod (the portable quantized kernels), and armv7.
//
// Every weight type the tiny-model tests run, each with 1 and 2 threads: f32, f16, bf16, q8, q4
// and keep (the GGUF's own mix of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16 and BF16) on the tiny
// Gemma 3 (sliding-window and global layers, GeGLU, QK-norm), and the K-quants Q4_K, Q5_K and
// Q6_K (with their Q5_0, Q5_1 and Q8_0 fallbacks: q4_k_m and q5_k) on a 256-wide tiny Llama.
// Every KV type (f32, f16, int8: heads of 32, which the tiny Gemma's 16 do not allow) with 1 and
// 2 threads on a tiny Llama (SiLU, separate output head) with kept weights. Each session
// prefills a 12-token prompt in a context of 16 and samples 72 more tokens, detokenized as they
// come: the 84 positions pass every ring's slots (16 + 64 for global layers; Gemma's window-8
// rings wrap many times). The heap calls of every thread are counted from the first prefill step
// to the last token's text (tests/support/alloc_counter.h). A case's sessions are few because
// each costs seconds under qemu, where the cross builds run this test on three CPUs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/audio/log_mel.h"
#include "runtime/audio_encoder.h"
#include "runtime/encoder.h"
#include "runtime/generate.h"
#include "runtime/memory_plan.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "runtime/transcriber.h"
#include "tests/support/alloc_counter.h"
#include "tests/support/counted_generate.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using namespace test;  // NOLINT: the shared test helpers

// Llama with heads of 32, so that its KV cache can be int8; the same, 256 wide with every matrix
// F32 (the source the K-quant recipes start from, as in convert_kquant_test).
constexpr TinyFamily kLlamaHead32 = {"zero-alloc-llama-head32", "make_tiny_llama.py",
                                     "--arch llama --head-dim 32", "llama_oracle.py"};
constexpr TinyFamily kLlamaKquant = {"zero-alloc-llama-kquant", "make_tiny_llama.py",
                                     "--arch llama --head-dim 32 --d-model 256 --ffn 320 --f32",
                                     "llama_oracle.py"};

constexpr size_t kContext = 16;
constexpr size_t kPromptTokens = 12;
constexpr size_t kDecodeSteps = 72;

struct SessionSetup {
  ops::KvType kv;
  size_t threads;
};
using ops::KvType;
const std::vector<SessionSetup> kOneAndTwoThreads = {{KvType::kF32, 1}, {KvType::kF16, 2}};
const std::vector<SessionSetup> kInt8OneAndTwoThreads = {{KvType::kInt8, 1}, {KvType::kF16, 2}};
const std::vector<SessionSetup> kEveryKvType = {{KvType::kF32, 1},  {KvType::kF32, 2},
                                                {KvType::kF16, 1},  {KvType::kF16, 2},
                                                {KvType::kInt8, 1}, {KvType::kInt8, 2}};

struct TinyCase {
  const TinyFamily* family;
  const char* weights;  // kestrel-convert --weights
  const std::vector<SessionSetup>* sessions;
};
void PrintTo(const TinyCase& c, std::ostream* os) {
  *os << c.family->stem << " --weights " << c.weights;
}

class TinyZeroAllocTest : public ::testing::TestWithParam<TinyCase> {};

TEST_P(TinyZeroAllocTest, PrefillDecodeSampleDetokenizeAllocateNothing) {
  const TinyCase& c = GetParam();
  TinyModel tiny;  // the GGUF, and its f32 conversion
  ASSERT_EQ(MakeTinyModel(&tiny, *c.family), "");
  std::string path = tiny.kes;
  const bool converted = std::string(c.weights) != "f32";
  if (converted) {
    path = ScratchPath(std::string(c.family->stem) + "-" + c.weights + ".kes");
    const ProcessResult r = Convert({tiny.gguf, path, "--weights", c.weights});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  }
  std::unique_ptr<Model> model;
  Status s = Model::Open(path, &model);
  if (converted) std::remove(path.c_str());  // mapped: the open model keeps it
  ASSERT_TRUE(s.ok()) << s.message();

  std::vector<int32_t> prompt;
  for (size_t i = 0; i < kPromptTokens; ++i) {
    prompt.push_back(static_cast<int32_t>((i * 37 + 11) % model->vocab_size()));
  }
  const GenerateOptions gen = SampledGeneration(kDecodeSteps);

  for (const SessionSetup& setup : *c.sessions) {
    SCOPED_TRACE(std::string(ops::KvTypeName(setup.kv)) + " KV, " + std::to_string(setup.threads) +
                 " thread(s)");
    SessionOptions options;
    options.context_length = kContext;
    options.n_threads = setup.threads;
    options.kv.type = setup.kv;
    std::unique_ptr<Session> session;
    s = Session::Create(*model, options, &session);
    ASSERT_TRUE(s.ok()) << s.message();
    for (const KvRingPlan& ring : session->memory().kv) {
      ASSERT_GT(kPromptTokens + kDecodeSteps, ring.capacity) << "the rings must wrap";
    }
    const CountedGeneration g = GenerateCounted(*session, prompt, gen);

    ASSERT_TRUE(g.status.ok()) << g.status.message();
    EXPECT_EQ(g.stats.prompt_tokens, kPromptTokens);
    EXPECT_EQ(g.stats.decode_steps, kDecodeSteps);
    EXPECT_EQ(g.collected->tokens, kDecodeSteps + 1);
    EXPECT_EQ(session->position(), kPromptTokens + kDecodeSteps);
    EXPECT_EQ(g.heap_calls, 0) << "heap calls during inference";
  }
}

INSTANTIATE_TEST_SUITE_P(
    TinyZeroAlloc, TinyZeroAllocTest,
    ::testing::Values(TinyCase{&kTinyGemma3, "f32", &kOneAndTwoThreads},
                      TinyCase{&kTinyGemma3, "f16", &kOneAndTwoThreads},
                      TinyCase{&kTinyGemma3, "bf16", &kOneAndTwoThreads},
                      TinyCase{&kTinyGemma3, "q8", &kOneAndTwoThreads},
                      TinyCase{&kTinyGemma3, "q4", &kOneAndTwoThreads},
                      TinyCase{&kTinyGemma3, "keep", &kOneAndTwoThreads},
                      TinyCase{&kLlamaHead32, "keep", &kEveryKvType},
                      TinyCase{&kLlamaKquant, "q4_k_m", &kInt8OneAndTwoThreads},
                      TinyCase{&kLlamaKquant, "q5_k", &kInt8OneAndTwoThreads}),
    [](const auto& info) {
      return ParamName(std::string(info.param.family->stem) + "_" + info.param.weights);
    });

// A tiny Whisper's transcription: the log-mel spectrogram of 5 seconds of audio, then the
// Transcriber's windows (encoder, cross K/V, prompt, greedy steps under Whisper's rules, seek),
// with and without timestamps and the previous text, 1 and 2 threads, f32 and q8 weights.
struct SegmentCount {
  size_t segments = 0, tokens = 0;
};
void CountSegment(void* context, const TranscriptSegment& segment) {
  auto* count = static_cast<SegmentCount*>(context);
  ++count->segments;
  count->tokens += segment.n_tokens;
}

TEST(TinyZeroAllocAudio, TranscriptionAllocatesNothing) {
  const std::string folder = ScratchPath("zero-alloc-whisper");
  ASSERT_EQ(MakeTinyWhisper(folder), "");
  for (const char* weights : {"f32", "q8"}) {
    const std::string path = folder + "-" + weights + ".kes";
    const ProcessResult r = Convert({folder, path, "--weights", weights});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
    std::unique_ptr<Model> model;
    Status s = Model::Open(path, &model);
    std::remove(path.c_str());
    ASSERT_TRUE(s.ok()) << s.message();
    for (size_t threads : {1, 2}) {
      for (bool timestamps : {false, true}) {
        SCOPED_TRACE(std::string(weights) + ", " + std::to_string(threads) + " thread(s), " +
                     (timestamps ? "timestamps" : "no timestamps"));
        TranscriberOptions options;
        options.n_threads = threads;
        options.timestamps = timestamps;
        options.condition_on_previous_text = timestamps;
        std::unique_ptr<Transcriber> transcriber;
        s = Transcriber::Create(*model, options, &transcriber);
        ASSERT_TRUE(s.ok()) << s.message();
        std::unique_ptr<audio::LogMelSpectrogram> mel;
        ASSERT_TRUE(audio::LogMelSpectrogram::Create(80, &mel).ok());
        std::vector<float> samples(16000 * 5);
        for (size_t i = 0; i < samples.size(); ++i) samples[i] = 0.3f * std::sin(0.05f * i);
        const size_t frames = audio::LogMelSpectrogram::FrameCount(samples.size());
        std::vector<float> all(80 * frames);
        SegmentCount count;
        TranscribeStats stats;

        StartCountingAllocations();
        mel->Compute(samples.data(), samples.size(), all.data());
        s = transcriber->Transcribe(all.data(), frames, CountSegment, &count, &stats);
        const long calls = StopCountingAllocations();
        ASSERT_TRUE(s.ok()) << s.message();
        EXPECT_EQ(calls, 0) << "heap calls during transcription";
        // The tiny model's window is shorter than the audio: several windows ran.
        EXPECT_GE(stats.windows, 2u);
        EXPECT_GT(stats.tokens, stats.windows);
        std::printf("%s, %zu thread(s)%s: %zu windows, %zu segments, %zu tokens\n", weights,
                    threads, timestamps ? ", timestamps" : "", stats.windows, count.segments,
                    stats.tokens);
      }
    }
  }
}

// A decoder embedding model's Encode (Qwen3-Embedding's shape: causal layers, QK-norm, RoPE at
// each text's own positions, last-token pooling): 40 texts of 1 to 64 tokens in two steps of
// mixed lengths (32 texts a step at most), the file's own quantized types, 1 and 2 threads.
// Longer texts add only attention work (quadratic: 256 tokens took minutes under qemu's
// 512-bit SVE), the same kernels.
TEST(TinyZeroAllocDecoderEmbedding, EncodeAllocatesNothing) {
  const std::string gguf = ScratchPath("zero-alloc-qwen3-embedding.gguf");
  const std::string kes = ScratchPath("zero-alloc-qwen3-embedding.kes");
  ASSERT_EQ(RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                           "/tests/py/make_tiny_llama.py " + gguf +
                           " --arch qwen3 --pooling last --head-dim 32"),
            "");
  const ProcessResult r = Convert({gguf, kes, "--weights", "keep"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  std::unique_ptr<Model> model;
  Status s = Model::Open(kes, &model);
  std::remove(gguf.c_str());
  std::remove(kes.c_str());
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<std::vector<int32_t>> texts(40);
  std::vector<const int32_t*> ids;
  std::vector<size_t> lengths;
  for (size_t i = 0; i < texts.size(); ++i) {
    for (size_t t = 0; t < 1 + i * i * 7 % 64; ++t) {
      texts[i].push_back(static_cast<int32_t>((i * 31 + t * 7) % 500));
    }
    ids.push_back(texts[i].data());
    lengths.push_back(texts[i].size());
  }
  for (size_t threads : {1, 2}) {
    EncoderOptions options;
    options.n_threads = threads;
    std::unique_ptr<Encoder> encoder;
    ASSERT_TRUE(Encoder::Create(*model, options, &encoder).ok());
    std::vector<float> out(texts.size() * encoder->embedding_dim());
    StartCountingAllocations();
    s = encoder->Encode(ids.data(), lengths.data(), ids.size(), out.data());
    const long calls = StopCountingAllocations();
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(calls, 0) << "heap calls during Encode with " << threads << " thread(s)";
  }
}

// The interposer itself must see allocations, or the test above proves nothing.
TEST(TinyZeroAllocInterposer, CountsAllocations) {
  StartCountingAllocations();
  auto* v = new std::vector<int>(100);
  delete v;
  EXPECT_GE(StopCountingAllocations(), 2);
}

}  // namespace
}  // namespace kestrel
