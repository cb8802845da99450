// `kestrel tokenize` on the tiny models, and the BOS rule `kestrel run` shares with it and with
// llama.cpp: BOS only for vocabularies that ask for it (tiny Gemma does, tiny Llama does not).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace kestrel {
namespace {

using test::Cli;
using test::Describe;
using test::ProcessResult;

// The ids `kestrel tokenize --ids` prints.
std::vector<int> Ids(const ProcessResult& r) {
  std::vector<int> ids;
  std::string number;
  for (char c : r.out) {
    if (c >= '0' && c <= '9') {
      number += c;
    } else if (!number.empty()) {
      ids.push_back(std::stoi(number));
      number.clear();
    }
  }
  return ids;
}

// "prefill: N tokens" from `kestrel run`'s report.
int PrefillTokens(const ProcessResult& r) {
  const size_t at = r.err.find("prefill: ");
  return at == std::string::npos ? -1 : std::stoi(r.err.substr(at + 9));
}

TEST(CliTokenize, IdsPiecesAndErrors) {
  test::TinyModel tiny;
  ASSERT_EQ(test::MakeTinyModel(&tiny, test::kTinyQwen2), "");
  const ProcessResult ids = Cli({"tokenize", tiny.kes, "-p", "the cat<|im_end|>", "--ids"});
  ASSERT_TRUE(ids.exited && ids.exit_code == 0) << Describe(ids);
  ASSERT_EQ(ids.out.front(), '[') << ids.out;
  const std::vector<int> parsed = Ids(ids);
  ASSERT_GE(parsed.size(), 3u) << ids.out;

  // The control token is one id with special parsing, several without.
  const ProcessResult plain =
      Cli({"tokenize", tiny.kes, "-p", "the cat<|im_end|>", "--ids", "--no-parse-special"});
  ASSERT_TRUE(plain.exited && plain.exit_code == 0) << Describe(plain);
  EXPECT_GT(Ids(plain).size(), parsed.size()) << plain.out;

  // One line per token, the control token shown by its piece.
  const ProcessResult pieces = Cli({"tokenize", tiny.kes, "-p", "the cat<|im_end|>"});
  ASSERT_TRUE(pieces.exited && pieces.exit_code == 0) << Describe(pieces);
  size_t lines = 0;
  for (char c : pieces.out) lines += c == '\n';
  EXPECT_EQ(lines, parsed.size()) << pieces.out;
  EXPECT_NE(pieces.out.find("'<|im_end|>'"), std::string::npos) << pieces.out;

  // The same text from a file.
  const std::string path = test::ScratchPath("tokenize.txt");
  const std::string text = "the cat<|im_end|>";
  ASSERT_TRUE(test::WriteBytes(path, reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  const ProcessResult file = Cli({"tokenize", tiny.kes, "-f", path, "--ids"});
  std::remove(path.c_str());
  EXPECT_EQ(file.out, ids.out) << Describe(file);

  const ProcessResult both = Cli({"tokenize", tiny.kes, "-p", "a", "-f", path});
  EXPECT_TRUE(both.exited && both.exit_code == 1 &&
              both.err.find("exactly one of -p and -f") != std::string::npos)
      << Describe(both);
  const ProcessResult missing = Cli({"tokenize", tiny.kes, "-f", path + ".missing"});
  EXPECT_TRUE(missing.exited && missing.exit_code == 1 &&
              missing.err.find("cannot open text file") != std::string::npos)
      << Describe(missing);
}

TEST(CliTokenize, RunAddsBosOnlyWhenTheVocabularyAsks) {
  for (const test::TinyFamily& family : {test::kTinyGemma3, test::kTinyLlama}) {
    test::TinyModel tiny;
    ASSERT_EQ(test::MakeTinyModel(&tiny, family), "");
    const ProcessResult ids = Cli({"tokenize", tiny.kes, "-p", "the cat sat", "--ids"});
    ASSERT_TRUE(ids.exited && ids.exit_code == 0) << Describe(ids);
    const ProcessResult run = Cli({"run", tiny.kes, "-p", "the cat sat", "-n", "1", "--temp", "0"});
    ASSERT_TRUE(run.exited && run.exit_code == 0) << Describe(run);
    EXPECT_EQ(PrefillTokens(run), static_cast<int>(Ids(ids).size()))
        << family.stem << ": " << run.err << " vs " << ids.out;
  }
}

}  // namespace
}  // namespace kestrel
