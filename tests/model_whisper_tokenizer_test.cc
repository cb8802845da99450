// Whisper's tokenizer from the real CTranslate2 folder (scripts/fetch-model.sh whisper) against
// Hugging Face `tokenizers` on the folder's own tokenizer.json, which is what faster-whisper
// encodes and decodes with (tests/py/whisper_tokenize_ref.py): the mixed-text corpus of
// tests/py/tokenizer_corpus.py and Whisper's special tokens in text give the same ids, and the
// ids decode to the same text (special tokens left out, as faster-whisper decodes). Also the
// vocabulary's layout (ids of the special and timestamp tokens) and that damaged folders fail
// clearly.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "converters/ct2/whisper_tokenizer.h"
#include "converters/tokenizer_table.h"
#include "runtime/tokenizer.h"

namespace kestrel::ct2 {
namespace {

const std::string kFolder = KESTREL_WHISPER_CT2_DIR;
constexpr size_t kVocab = 51864;  // Whisper-tiny's embedding rows in this folder

bool ReadRecord(std::ifstream& f, std::string* text, bool with_flag) {
  int flag = 0;
  size_t n = 0;
  if (with_flag && !(f >> flag)) return false;
  if (!(f >> n)) return false;
  f.get();
  text->assign(n, '\0');
  f.read(text->data(), static_cast<std::streamsize>(n));
  f.get();
  return static_cast<bool>(f);
}

TEST(WhisperTokenizer, MatchesHuggingFaceTokenizersAsFasterWhisperUsesThem) {
  fb::TokenizerT table;
  Status s = ReadWhisperTokenizer(kFolder, kVocab, &table);
  ASSERT_TRUE(s.ok()) << s.message() << " (fetch it with scripts/fetch-model.sh whisper)";
  Tokenizer tok;
  s = TokenizerFromTable(table, &tok);
  ASSERT_TRUE(s.ok()) << s.message();

  const std::string prefix =
      std::string(KESTREL_TEST_TMP) + "/whisper-tok-" + std::to_string(::getpid());
  const std::string cases_path = prefix + "-cases.bin", ids_path = prefix + "-ids.txt",
                    decoded_path = prefix + "-decoded.bin";
  const std::string command = std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                              "/tests/py/whisper_tokenize_ref.py --folder " + kFolder +
                              " --cases " + cases_path + " --out " + ids_path + " --decoded " +
                              decoded_path;
  ASSERT_EQ(std::system(command.c_str()), 0) << "oracle failed: " << command;
  std::ifstream cases(cases_path, std::ios::binary), decoded(decoded_path, std::ios::binary);
  std::ifstream ids_file(ids_path);
  size_t n_cases = 0, characters = 0, tokens = 0, mismatches = 0;
  std::string text, want_text, line;
  while (ReadRecord(cases, &text, true)) {
    ASSERT_TRUE(std::getline(ids_file, line)) << "oracle wrote too few id lines";
    ASSERT_TRUE(ReadRecord(decoded, &want_text, false)) << "oracle wrote too few decodings";
    std::istringstream in(line);
    std::vector<int32_t> want;
    for (int32_t id; in >> id;) want.push_back(id);
    std::vector<int32_t> got;
    ASSERT_TRUE(tok.Encode(text, /*add_special=*/false, /*parse_special=*/true, &got).ok());
    ++n_cases;
    characters += text.size();
    tokens += want.size();
    mismatches += got != want;
    EXPECT_EQ(got, want) << "text: " << text;
    EXPECT_EQ(tok.Decode(want), want_text) << "ids of: " << text;
  }
  std::remove(cases_path.c_str());
  std::remove(ids_path.c_str());
  std::remove(decoded_path.c_str());
  std::printf("%zu cases, %zu bytes, %zu tokens, %zu mismatches\n", n_cases, characters, tokens,
              mismatches);
  EXPECT_GE(characters, 20000u);
}

TEST(WhisperTokenizer, KnowsTheSpecialAndTimestampTokens) {
  fb::TokenizerT table;
  const Status s = ReadWhisperTokenizer(kFolder, kVocab, &table);
  ASSERT_TRUE(s.ok()) << s.message();
  // This folder has the 51864-token layout: end of text 50256, timestamps from 50363.
  EXPECT_EQ(table.eos_id, 50256);
  EXPECT_EQ(table.pieces[50257], "<|startoftranscript|>");
  EXPECT_EQ(table.pieces[50363], "<|0.00|>");
  EXPECT_EQ(table.pieces[kVocab - 1], "<|30.00|>");
  EXPECT_EQ(table.types[50363], 3);  // control
  EXPECT_EQ(table.types[kVocab - 1], 3);
  EXPECT_EQ(table.types[50255], 1);  // a word piece
  EXPECT_EQ(table.merges.size(), 50000u);
}

TEST(WhisperTokenizer, DamagedFoldersFailClearly) {
  fb::TokenizerT table;
  Status s = ReadWhisperTokenizer(kFolder, kVocab + 1, &table);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("51864 pieces (expected 51865"), std::string::npos) << s.message();
  const std::string dir =
      std::string(KESTREL_TEST_TMP) + "/whisper-tok-damaged-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kFolder + "/vocabulary.txt", dir + "/vocabulary.txt",
                             std::filesystem::copy_options::overwrite_existing);
  s = ReadWhisperTokenizer(dir, kVocab, &table);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tokenizer.json"), std::string::npos) << s.message();
  std::ofstream(dir + "/tokenizer.json")
      << R"({"model": {"type": "WordPiece", "vocab": {}}, "pre_tokenizer": null})";
  s = ReadWhisperTokenizer(dir, kVocab, &table);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("model.type: expected \"BPE\", found \"WordPiece\""),
            std::string::npos)
      << s.message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kestrel::ct2
