// The byte-level BPE tokenizer of SmolLM2 (converted by the ctest fixture) against Hugging Face
// `tokenizers` built from the same GGUF (tests/py/bpe_tokenize_ref.py) on over 20,000
// characters of mixed text (tests/py/tokenizer_corpus.py), special parsing on and off; decoding
// gives the text back. (Against llama.cpp itself: tests/py/compare_tokenizer_llama_cpp.py.)
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "runtime/model.h"

namespace kestrel {
namespace {

struct Case {
  bool parse_special;
  std::string text;
};

bool ReadCases(const std::string& path, std::vector<Case>* out) {
  std::ifstream f(path, std::ios::binary);
  int special;
  size_t n;
  while (f >> special >> n) {
    f.get();  // the newline after the header
    Case c{special != 0, std::string(n, '\0')};
    f.read(c.text.data(), static_cast<std::streamsize>(n));
    f.get();
    if (!f) return false;
    out->push_back(std::move(c));
  }
  return !out->empty();
}

TEST(TokenizerBpeSmolLm2, MatchesHuggingFaceTokenizersOnMixedText) {
  std::unique_ptr<Model> model;
  const Status s = Model::Open(std::string(KESTREL_TEST_TMP) + "/smollm2-135m-q8.kes", &model);
  ASSERT_TRUE(s.ok()) << s.message() << " (the ctest fixture converts the model first)";
  const Tokenizer& tok = model->tokenizer();

  const std::string prefix = std::string(KESTREL_TEST_TMP) + "/bpe-" + std::to_string(::getpid());
  const std::string cases_path = prefix + "-cases.bin", ids_path = prefix + "-ids.txt";
  const std::string command = std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                              "/tests/py/bpe_tokenize_ref.py --gguf " + KESTREL_SMOLLM2_GGUF +
                              " --cases " + cases_path + " --out " + ids_path;
  ASSERT_EQ(std::system(command.c_str()), 0) << "oracle failed: " << command;
  std::vector<Case> cases;
  ASSERT_TRUE(ReadCases(cases_path, &cases)) << cases_path;
  std::ifstream ids_file(ids_path);
  size_t characters = 0, tokens = 0, mismatches = 0;
  for (const Case& c : cases) {
    std::string line;
    ASSERT_TRUE(std::getline(ids_file, line)) << "oracle wrote too few lines";
    std::istringstream in(line);
    std::vector<int32_t> want;
    for (int32_t id; in >> id;) want.push_back(id);
    std::vector<int32_t> got;
    ASSERT_TRUE(tok.Encode(c.text, /*add_special=*/false, c.parse_special, &got).ok());
    characters += c.text.size();
    tokens += want.size();
    mismatches += got != want;
    EXPECT_EQ(got, want) << "parse_special=" << c.parse_special << " text: " << c.text;
    if (!c.parse_special) {
      EXPECT_EQ(tok.Decode(got), c.text);
    }
  }
  std::remove(cases_path.c_str());
  std::remove(ids_path.c_str());
  std::printf("%zu cases, %zu bytes, %zu tokens, %zu mismatches\n", cases.size(), characters,
              tokens, mismatches);
  EXPECT_GE(characters, 40000u);  // 20,000+ characters, each case twice
}

}  // namespace
}  // namespace kestrel
