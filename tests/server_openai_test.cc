// `kestrel serve` with the official OpenAI Python client (tests/py/server_openai_check.py): chat
// and completions, streaming and not, greedy output equal to `kestrel chat` and `kestrel run`;
// embeddings equal to `kestrel embed`'s; rerank logits equal to `kestrel rerank`'s; transcripts
// equal to `kestrel transcribe`'s in every response format; bad requests answered with 4xx JSON
// errors while the server keeps serving;
// --api-key and --metrics. On the tiny random Gemma 3 (its vocabulary has the Gemma turn
// markers but it has no template of its own, so the server and the CLI both take --template
// gemma), the tiny BERT and the tiny Whisper.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/test_support.h"

namespace kestrel::test {
namespace {

TEST(ServerOpenAi, OfficialClientAgainstTinyModel) {
  if (KESTREL_CROSS_BUILD) {
    GTEST_SKIP() << "the Python client runs on the host; under qemu-user the server would "
                    "answer too slowly for the test's time limits";
  }
  const ProcessResult help = Cli({"serve", "--help"});
  if (help.exit_code != 0) {
    // A build without cpp-httplib: the command must say so, not fail some other way.
    ASSERT_NE(help.err.find("built without the server"), std::string::npos) << Describe(help);
    GTEST_SKIP() << "this kestrel was built without the server (no cpp-httplib)";
  }
  TinyModel tiny;
  ASSERT_EQ(MakeTinyModel(&tiny), "");
  // The tiny BERT (mean pooling, normalized) for /v1/embeddings.
  std::string bert_folder;
  ASSERT_EQ(MakeTinyBert("tiny-bert", "", &bert_folder), "");
  const std::string bert = ScratchPath("server-tiny-bert.kes");
  const ProcessResult converted = Convert({bert_folder, bert});
  ASSERT_TRUE(converted.exited && converted.exit_code == 0) << Describe(converted);
  // The tiny BERT cross-encoder for /v1/rerank.
  std::string reranker_folder;
  ASSERT_EQ(MakeTinyBert("tiny-bert-reranker", "--reranker", &reranker_folder), "");
  const std::string reranker = ScratchPath("server-tiny-reranker.kes");
  const ProcessResult reranker_converted = Convert({reranker_folder, reranker});
  ASSERT_TRUE(reranker_converted.exited && reranker_converted.exit_code == 0)
      << Describe(reranker_converted);
  // The tiny Whisper (English-only) for /v1/audio/transcriptions.
  const std::string whisper_folder = ScratchPath("server-tiny-whisper");
  ASSERT_EQ(MakeTinyWhisper(whisper_folder), "");
  const std::string whisper = whisper_folder + ".kes";
  const ProcessResult whisper_converted = Convert({whisper_folder, whisper});
  ASSERT_TRUE(whisper_converted.exited && whisper_converted.exit_code == 0)
      << Describe(whisper_converted);
  RunHostCommand("rm -rf '" + whisper_folder + "'");
  const std::string scratch = TmpPath("server");  // its folder holds the test's WAV files
  const std::string command = std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                              "/tests/py/server_openai_check.py --kestrel " + KESTREL_CLI_BIN +
                              " --model " + tiny.kes + " --template gemma --embed-model " + bert +
                              " --rerank-model " + reranker + " --whisper-model " + whisper +
                              " --tmp " + scratch.substr(0, scratch.rfind('/'));
  EXPECT_EQ(RunHostCommand(command), "");
}

// /health and the other endpoints while the model loads, the bounded queue's 503 with
// Retry-After, and clients that hang up mid-answer freeing their slot, on one --parallel 1
// --queue 1 server paced by test-only environment variables (tests/py/server_queue_check.py).
TEST(ServerOpenAi, LoadingBusyAndHangUps) {
  if (KESTREL_CROSS_BUILD) GTEST_SKIP() << "the Python client runs on the host";
  const ProcessResult help = Cli({"serve", "--help"});
  if (help.exit_code != 0) GTEST_SKIP() << "built without the server";
  TinyModel tiny;
  ASSERT_EQ(MakeTinyModel(&tiny), "");
  const std::string scratch = TmpPath("server-queue");  // its folder holds the loading gate
  const std::string command = std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                              "/tests/py/server_queue_check.py --kestrel " + KESTREL_CLI_BIN +
                              " --model " + tiny.kes + " --template gemma --tmp " +
                              scratch.substr(0, scratch.rfind('/'));
  EXPECT_EQ(RunHostCommand(command), "");
}

TEST(ServerOpenAi, BadFlagsAreClearErrors) {
  const ProcessResult help = Cli({"serve", "--help"});
  if (help.exit_code != 0) GTEST_SKIP() << "built without the server";
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"serve"}, "no model given"},
      {{"serve", "m.kes", "--port", "70000"}, "--port"},
      {{"serve", "m.kes", "--parallel", "0"}, "--parallel"},
      {{"serve", "m.kes", "--ctx", "abc"}, "--ctx"},
      {{"serve", "m.kes", "--template", "alpaca"}, "--template"},
      {{"serve", "m.kes", "--api-key"}, "--api-key"},
      {{"serve", "m.kes", "--frobnicate"}, "--frobnicate"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = Cli(c.args);
    EXPECT_EQ(r.exit_code, 1) << Describe(r);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << Describe(r);
  }
  // A model that cannot be opened: the server fails at start with the file named, exit code 1.
  const ProcessResult r = Cli({"serve", ScratchPath("missing.kes"), "--port", "0"});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_NE(r.err.find("missing.kes"), std::string::npos) << Describe(r);
}

}  // namespace
}  // namespace kestrel::test
