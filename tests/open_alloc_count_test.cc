// Opening a model and creating what runs it makes a small, fixed number of heap allocations,
// never one per vocabulary entry, merge, tensor or op: the tokenizer's tables are a few arrays
// sized once at load, and verification builds its messages only for an error. Counted from
// outside, as the zero-allocation tests count (tests/support/alloc_counter.h: the C allocator
// interposed, any thread), over Model::Open plus Session::Create (decoders: Gemma 3 270M with
// 262,144 pieces, SmolLM2-135M with a byte-level BPE merge list), Encoder::Create
// (all-MiniLM-L6-v2, WordPiece) or Transcriber::Create (Whisper tiny: its audio encoder, decoder
// session and suppressed-token sets, which encode about a hundred short texts); the same through
// the C API (kes_model_open and kes_session_create / kes_encoder_create / kes_transcriber_create,
// the handles' own bookkeeping included). Each figure is printed for the docs. Built only without
// sanitizers, which own malloc themselves.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "kestrel/kestrel.h"
#include "runtime/encoder.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "runtime/tokenizer.h"
#include "runtime/transcriber.h"
#include "tests/support/alloc_counter.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

// The bound: a small constant, whatever the vocabulary.
constexpr long kMaxAllocations = 1000;

enum class Runner { kSession, kEncoder, kTranscriber };

struct OpenCase {
  const char* name;
  const char* kes;  // in test-tmp, the ctest fixture's; "" for Whisper (converted here)
  Runner runner;
};

struct Counted {
  long allocations = 0;  // malloc, calloc, realloc, aligned and operator new calls
  long frees = 0;
};

// Opens `path` and creates the case's runner with 2 threads, counting every heap call; the
// objects are destroyed after counting stops.
std::string OpenAndCreate(const std::string& path, Runner runner, Counted* counted) {
  std::unique_ptr<Model> model;
  std::unique_ptr<Session> session;
  std::unique_ptr<Encoder> encoder;
  std::unique_ptr<Transcriber> transcriber;
  test::StartCountingAllocations();
  Status s = Model::Open(path, &model);
  if (s.ok() && runner == Runner::kSession) {
    SessionOptions options;
    options.context_length = 1024;
    options.n_threads = 2;
    s = Session::Create(*model, options, &session);
  } else if (s.ok() && runner == Runner::kEncoder) {
    EncoderOptions options;
    options.n_threads = 2;
    s = Encoder::Create(*model, options, &encoder);
  } else if (s.ok()) {
    TranscriberOptions options;
    options.n_threads = 2;
    s = Transcriber::Create(*model, options, &transcriber);
  }
  const long calls = test::StopCountingAllocations();
  counted->frees = test::CountedFrees();
  counted->allocations = calls - counted->frees;
  return s.ok() ? "" : s.message();
}

// OpenAndCreate through the C API: the handles an embedding program makes.
std::string OpenAndCreateThroughCApi(const std::string& path, Runner runner, Counted* counted) {
  kes_model* model = nullptr;
  kes_session* session = nullptr;
  kes_encoder* encoder = nullptr;
  kes_transcriber* transcriber = nullptr;
  kes_session_params session_params = kes_session_default_params();
  session_params.context_length = 1024;
  session_params.n_threads = 2;
  kes_encoder_params encoder_params = kes_encoder_default_params();
  encoder_params.n_threads = 2;
  kes_transcriber_params transcriber_params = kes_transcriber_default_params();
  transcriber_params.n_threads = 2;
  test::StartCountingAllocations();
  kes_status s = kes_model_open(path.c_str(), nullptr, &model);
  if (s == KES_OK && runner == Runner::kSession) {
    s = kes_session_create(model, &session_params, nullptr, 0, &session);
  } else if (s == KES_OK && runner == Runner::kEncoder) {
    s = kes_encoder_create(model, &encoder_params, nullptr, 0, &encoder);
  } else if (s == KES_OK) {
    s = kes_transcriber_create(model, &transcriber_params, &transcriber);
  }
  const long calls = test::StopCountingAllocations();
  counted->frees = test::CountedFrees();
  counted->allocations = calls - counted->frees;
  const std::string error = s == KES_OK ? "" : kes_last_error();
  kes_session_destroy(session);
  kes_encoder_destroy(encoder);
  kes_transcriber_destroy(transcriber);
  kes_model_close(model);
  return error;
}

// gtest prints a case by its name.
inline void PrintTo(const OpenCase& c, std::ostream* os) { *os << c.name; }

class OpenAllocCountTest : public ::testing::TestWithParam<OpenCase> {};

// Opens and creates the case's runner twice with `open_and_create` and checks the second count
// (the first open pays for one-time set-ups of the process: the SIMD dispatch, locale and stream
// buffers, which are not the model's).
// `property`: the XML property the count is recorded as.
void CheckOpenAndCreate(const OpenCase& c, const char* api, const char* property,
                        std::string (*open_and_create)(const std::string&, Runner, Counted*)) {
  std::string path = std::string(KESTREL_TEST_TMP) + "/" + c.kes;
  if (c.runner == Runner::kTranscriber) {
    path = test::ScratchPath("whisper-tiny-q8.kes");
    const test::ProcessResult r = test::Convert({KESTREL_WHISPER_CT2_DIR, path, "--weights", "q8"});
    ASSERT_TRUE(r.exited && r.exit_code == 0)
        << test::Describe(r) << " (fetch the model with scripts/fetch-model.sh whisper)";
  }
  Counted first, counted;
  ASSERT_EQ(open_and_create(path, c.runner, &first), "")
      << "(the ctest fixture converts the model first)";
  ASSERT_EQ(open_and_create(path, c.runner, &counted), "");
  if (c.runner == Runner::kTranscriber) std::remove(path.c_str());

  std::printf(
      "%s, %s: open + create: %ld heap allocations, %ld frees (first open in the "
      "process: %ld allocations)\n",
      c.name, api, counted.allocations, counted.frees, first.allocations);
  ::testing::Test::RecordProperty(property, static_cast<int>(counted.allocations));
  EXPECT_LE(counted.allocations, kMaxAllocations)
      << c.name << ", " << api << ": heap allocations opening the model and creating its runner";
  EXPECT_LE(first.allocations, kMaxAllocations + 100)
      << c.name << ", " << api << ": the process's first open pays little more than a later one";
}

TEST_P(OpenAllocCountTest, OpenAndCreateAllocateASmallConstant) {
  CheckOpenAndCreate(GetParam(), "C++", "allocations", OpenAndCreate);
}

TEST_P(OpenAllocCountTest, ThroughTheCApiTooAllocateASmallConstant) {
  CheckOpenAndCreate(GetParam(), "C", "allocations_c_api", OpenAndCreateThroughCApi);
}

INSTANTIATE_TEST_SUITE_P(
    Models, OpenAllocCountTest,
    ::testing::Values(OpenCase{"gemma3_270m", "gemma3-270m-keep.kes", Runner::kSession},
                      OpenCase{"smollm2_135m", "smollm2-135m-keep.kes", Runner::kSession},
                      OpenCase{"minilm_l6", "minilm-l6-q8.kes", Runner::kEncoder},
                      OpenCase{"whisper_tiny", "", Runner::kTranscriber}),
    [](const auto& info) { return std::string(info.param.name); });

// Tokenizer::Encode reuses the caller's vector (Transcriber::Create encodes a hundred short
// texts into one): the ids replace what it held, and a vector with room for them costs no
// allocation for the result, only the algorithm's own few.
TEST(OpenAllocCount, EncodeReusesTheCallersVector) {
  std::unique_ptr<Model> model;
  ASSERT_TRUE(Model::Open(std::string(KESTREL_TEST_TMP) + "/smollm2-135m-keep.kes", &model).ok())
      << "(the ctest fixture converts the model first)";
  const Tokenizer& tok = model->tokenizer();
  const std::string text = "A falcon \xE2\x99\xAA <|im_start|>";  // a note, a special token
  std::vector<int32_t> fresh, reused;
  ASSERT_TRUE(tok.Encode("The kestrel hovers, then drops.", false, false, &reused).ok());
  reused.reserve(64);
  const std::vector<int32_t> before = reused;

  test::StartCountingAllocations();
  Status s = tok.Encode(text, false, true, &fresh);
  const long fresh_calls = test::StopCountingAllocations();
  const long fresh_allocations = fresh_calls - test::CountedFrees();
  ASSERT_TRUE(s.ok()) << s.message();
  test::StartCountingAllocations();
  s = tok.Encode(text, false, true, &reused);
  const long reused_calls = test::StopCountingAllocations();
  const long reused_allocations = reused_calls - test::CountedFrees();
  ASSERT_TRUE(s.ok()) << s.message();

  EXPECT_EQ(reused, fresh);
  EXPECT_NE(before, fresh);
  EXPECT_LT(reused_allocations, fresh_allocations)
      << "encoding into a vector with room allocated for the result too";
}

}  // namespace
}  // namespace kestrel
