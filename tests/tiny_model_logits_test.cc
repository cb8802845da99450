// The same .kes gives the same logits on every platform.
//
// The native build scores a fixed token sequence on each tiny random-weight model family
// (tests/support: Gemma 3 from tests/py/make_tiny_gemma3.py; Llama with Llama 3 RoPE factors,
// Llama with linear RoPE scaling and Qwen2 from tests/py/make_tiny_llama.py; converted by
// kestrel-convert), checks the logits against the family's NumPy oracle (tests/py/
// gemma3_oracle.py, llama_oracle.py) and leaves the GGUF, the .kes and the logits in
// test-tmp/reference/. A cross build (aarch64, armv7, run under qemu-user) then
//   - converts the same GGUF with its own converter and gets the very same bytes, and
//   - loads the host-written .kes and scores the same tokens within the oracle tolerance of the
//     host's logits.
// scripts/test.sh runs the native tests first; a cross build without the reference fails.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "runtime/model.h"
#include "runtime/session.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using namespace test;  // NOLINT: the shared test helpers

const TinyFamily kFamilies[] = {kTinyGemma3, kTinyLlama, kTinyQwen2, kTinyLlamaLinear};

std::string FamilyName(const ::testing::TestParamInfo<TinyFamily>& info) {
  std::string name = info.param.stem;
  for (char& c : name) c = c == '-' ? '_' : c;
  return name;
}

// 40 tokens in chunks of the score plan's 8: Gemma's window-8 rings wrap several times.
std::vector<int32_t> Tokens(size_t vocab) {
  std::vector<int32_t> tokens = {2};  // BOS
  for (int32_t i = 1; i < 40; ++i) tokens.push_back((i * 37 + 11) % static_cast<int32_t>(vocab));
  return tokens;
}

std::vector<float> Score(const Model& model, const std::vector<int32_t>& tokens, size_t threads) {
  SessionOptions options;
  options.context_length = 64;
  options.n_threads = threads;
  std::unique_ptr<Session> session;
  Status s = Session::Create(model, options, &session);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<float> logits(tokens.size() * model.vocab_size());
  if (session) {
    s = session->Score(tokens.data(), tokens.size(), logits.data());
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return logits;
}

std::string ReferencePath(const std::string& test_tmp, const std::string& name) {
  return test_tmp + "/reference/" + name;
}

#if !KESTREL_CROSS_BUILD

class TinyModelLogits : public ::testing::TestWithParam<TinyFamily> {};

TEST_P(TinyModelLogits, MatchTheOracleAndBecomeTheReferenceForCrossBuilds) {
  const TinyFamily& family = GetParam();
  const std::string stem = family.stem;
  TinyModel tiny;
  const std::string error = MakeTinyModel(&tiny, family);
  ASSERT_EQ(error, "");
  std::unique_ptr<Model> model;
  Status s = Model::Open(tiny.kes, &model);
  ASSERT_TRUE(s.ok()) << s.message();
  const size_t vocab = model->vocab_size();
  const std::vector<int32_t> tokens = Tokens(vocab);
  const std::vector<float> ours = Score(*model, tokens, 1);

  const std::string tokens_path = ScratchPath(stem + ".tokens.i32");
  const std::string oracle_path = ScratchPath(stem + ".oracle.f32");
  ASSERT_TRUE(WriteRaw(tokens_path, tokens)) << tokens_path;
  ASSERT_EQ(RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR + "/tests/py/" +
                           family.oracle + " --gguf " + tiny.gguf + " --tokens-file " +
                           tokens_path + " --logits-out " + oracle_path + " > /dev/null"),
            "");
  const std::vector<float> oracle = ReadRaw<float>(oracle_path);
  std::remove(tokens_path.c_str());
  std::remove(oracle_path.c_str());
  ASSERT_EQ(oracle.size(), ours.size()) << "oracle logits have the wrong size";
  size_t worst_at = 0;
  const double worst =
      LargestLogitError(ours.data(), oracle.data(), tokens.size(), vocab, &worst_at);
  std::printf("%s vs NumPy oracle: largest logit error %.3g of the range (position %zu)\n",
              stem.c_str(), worst, worst_at);
  ASSERT_LE(worst, kLogitTolerance) << "at position " << worst_at;

  // Any thread count gives the same logits bit for bit.
  EXPECT_TRUE(Score(*model, tokens, 2) == ours) << "2 threads differ from 1";

  ::mkdir((std::string(KESTREL_TEST_TMP) + "/reference").c_str(), 0755);
  const std::vector<uint8_t> gguf = ReadBytes(tiny.gguf);
  const std::string gguf_path = ReferencePath(KESTREL_TEST_TMP, stem + ".gguf");
  ASSERT_TRUE(WriteBytes(gguf_path, gguf.data(), gguf.size())) << gguf_path;
  const std::string kes_path = ReferencePath(KESTREL_TEST_TMP, stem + ".kes");
  ASSERT_TRUE(WriteBytes(kes_path, tiny.bytes.data(), tiny.bytes.size())) << kes_path;
  const std::string logits_path = ReferencePath(KESTREL_TEST_TMP, stem + "-logits.f32");
  ASSERT_TRUE(WriteRaw(logits_path, ours)) << logits_path;
}

INSTANTIATE_TEST_SUITE_P(TinyModel, TinyModelLogits, ::testing::ValuesIn(kFamilies), FamilyName);

#else  // KESTREL_CROSS_BUILD

class TinyModelCrossTest : public ::testing::TestWithParam<TinyFamily> {
 protected:
  std::string Reference(const std::string& suffix) const {
    return ReferencePath(KESTREL_HOST_TEST_TMP, GetParam().stem + suffix);
  }
  void SetUp() override {
    for (const char* suffix : {".gguf", ".kes", "-logits.f32"}) {
      const std::string path = Reference(suffix);
      struct stat st;
      ASSERT_EQ(::stat(path.c_str(), &st), 0)
          << path << " is missing: run the native Release build's tests first "
          << "(scripts/test.sh does), or point -DKESTREL_HOST_TEST_TMP at its test-tmp";
    }
  }
};

TEST_P(TinyModelCrossTest, ConverterWritesTheSameBytesAsTheHost) {
  const std::string out = ScratchPath(std::string(GetParam().stem) + "-cross.kes");
  const ProcessResult r = Convert({Reference(".gguf"), out});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << Describe(r);
  const std::vector<uint8_t> ours = ReadBytes(out);
  const std::vector<uint8_t> host = ReadBytes(Reference(".kes"));
  std::remove(out.c_str());
  ASSERT_EQ(ours.size(), host.size());
  EXPECT_TRUE(ours == host) << "the .kes written here differs from the host's";
}

TEST_P(TinyModelCrossTest, HostWrittenKesGivesTheHostLogits) {
  std::unique_ptr<Model> model;
  Status s = Model::Open(Reference(".kes"), &model);
  ASSERT_TRUE(s.ok()) << s.message();
  const size_t vocab = model->vocab_size();
  const std::vector<int32_t> tokens = Tokens(vocab);
  const std::vector<float> host = ReadRaw<float>(Reference("-logits.f32"));
  ASSERT_EQ(host.size(), tokens.size() * vocab);
  for (size_t threads : {1, 2}) {
    const std::vector<float> ours = Score(*model, tokens, threads);
    size_t worst_at = 0;
    const double worst =
        LargestLogitError(ours.data(), host.data(), tokens.size(), vocab, &worst_at);
    std::printf("%zu threads: largest logit error vs the host build %.3g of the range "
                "(position %zu)\n", threads, worst, worst_at);
    EXPECT_LE(worst, kLogitTolerance) << "at position " << worst_at;
  }
}

INSTANTIATE_TEST_SUITE_P(TinyModel, TinyModelCrossTest, ::testing::ValuesIn(kFamilies),
                         FamilyName);

#endif  // KESTREL_CROSS_BUILD

}  // namespace
}  // namespace kestrel
