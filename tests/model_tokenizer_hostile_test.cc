// Hostile text against llama.cpp's own token ids (issue 35): control characters, every byte alone
// and in context, invalid UTF-8, UTF-8-encoded surrogates, overlong forms, NUL, very long runs,
// mixed scripts and special-token look-alikes (tests/py/tokenizer_hostile_corpus.py), through
// the real SmolLM2 (byte-level BPE) and Gemma 3 (SentencePiece) vocabularies, special parsing on
// and off. llama-cpp-python is too slow to build in CI, so its ids are a committed fixture
// (tests/data/tokenizer_hostile_*.jsonl, written by tests/py/record_tokenizer_hostile_fixture.py;
// the by-hand check against llama.cpp itself is tests/py/compare_tokenizer_llama_cpp.py
// --corpus hostile). Whisper's byte-level BPE (from the CTranslate2 folder) has no llama.cpp
// counterpart: there every case must give no control token and decode back. The real Qwen
// vocabulary (Qwen2 and Qwen3's 151,643 tokens with Qwen3's added ones, its qwen2
// pre-tokenizer: tests/py/qwen_vocab_gguf.py from scripts/fetch-model.sh's qwen.tiktoken) on the
// hostile and the mixed-text corpus, against llama.cpp's ids recorded with its own library
// (tests/data/tokenizer_qwen.jsonl, record_tokenizer_hostile_fixture.py --tool).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "converters/ct2/whisper_tokenizer.h"
#include "converters/gguf/gguf_file.h"
#include "converters/gguf_tokenizer.h"
#include "converters/tokenizer_table.h"
#include "runtime/model.h"
#include "runtime/pretokenizer.h"
#include "tests/support/test_support.h"

namespace kestrel {
namespace {

struct Case {
  std::string name, text;
  std::vector<int32_t> ids_special, ids_plain;
};

std::string FromHex(const std::string& hex) {
  EXPECT_EQ(hex.size() % 2, 0u) << hex.substr(0, 80);
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

// The fixture writes runs once with a count (record_tokenizer_hostile_fixture.py): a text
// segment is "hex" or ["hex", count], an id is id or [id, count].
std::string Text(const nlohmann::json& segments) {
  std::string out;
  for (const nlohmann::json& s : segments) {
    if (s.is_string()) {
      out += FromHex(s.get<std::string>());
      continue;
    }
    const std::string unit = FromHex(s.at(0).get<std::string>());
    for (int k = s.at(1).get<int>(); k > 0; --k) out += unit;
  }
  return out;
}

std::vector<int32_t> Ids(const nlohmann::json& runs) {
  std::vector<int32_t> out;
  for (const nlohmann::json& r : runs) {
    if (r.is_number_integer()) {
      out.push_back(r.get<int32_t>());
    } else {
      out.insert(out.end(), r.at(1).get<size_t>(), r.at(0).get<int32_t>());
    }
  }
  return out;
}

std::vector<Case> ReadFixture(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<Case> cases;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const nlohmann::json j = nlohmann::json::parse(line);
    cases.push_back({j.at("name").get<std::string>(), Text(j.at("text")), Ids(j.at("ids_special")),
                     Ids(j.at("ids_plain"))});
  }
  return cases;
}

// Every case of the fixture, special parsing on and off.
void ExpectLlamaCppIds(const Tokenizer& tok, const std::string& fixture, size_t min_cases) {
  const std::vector<Case> cases =
      ReadFixture(std::string(KESTREL_SOURCE_DIR) + "/tests/data/" + fixture);
  ASSERT_GE(cases.size(), min_cases) << fixture;
  size_t mismatches = 0;
  for (const Case& c : cases) {
    for (const bool special : {true, false}) {
      std::vector<int32_t> got;
      const Status e = tok.Encode(c.text, /*add_special=*/false, special, &got);
      ASSERT_TRUE(e.ok()) << c.name << ": " << e.message();
      const std::vector<int32_t>& want = special ? c.ids_special : c.ids_plain;
      mismatches += got != want;
      EXPECT_EQ(got, want) << "case '" << c.name << "', parse_special=" << special;
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << 2 * cases.size() << " encodings";
}

void ExpectLlamaCppIds(const std::string& kes, const std::string& fixture, size_t min_cases) {
  std::unique_ptr<Model> model;
  const Status s = Model::Open(std::string(KESTREL_TEST_TMP) + "/" + kes, &model);
  ASSERT_TRUE(s.ok()) << s.message() << " (the ctest fixture converts the model first)";
  ExpectLlamaCppIds(model->tokenizer(), fixture, min_cases);
}

TEST(TokenizerHostile, SmolLm2MatchesLlamaCpp) {
  ExpectLlamaCppIds("smollm2-135m-q4.kes", "tokenizer_hostile_smollm2.jsonl", 500);
}

TEST(TokenizerHostile, Gemma3MatchesLlamaCpp) {
  ExpectLlamaCppIds("gemma3-270m-q4.kes", "tokenizer_hostile_gemma3.jsonl", 500);
}

// The real Qwen vocabulary (tests/py/qwen_vocab_gguf.py) under pre-tokenizer `pre`, against
// llama.cpp's ids in `fixture`: the 586 hostile cases and the 48 of mixed text
// (tests/py/tokenizer_corpus.py).
void ExpectQwenVocabularyMatchesLlamaCpp(const std::string& pre, const std::string& fixture) {
  const std::string tiktoken =
      std::string(KESTREL_SOURCE_DIR) + "/models/qwen-vocabulary/qwen.tiktoken";
  ASSERT_TRUE(test::Exists(tiktoken)) << tiktoken << " is missing: scripts/fetch-model.sh";
  const std::string gguf_path = test::ScratchPath("qwen-vocabulary-" + pre + ".gguf");
  ASSERT_EQ(test::RunHostCommand(std::string(KESTREL_PYTHON) + " " + KESTREL_SOURCE_DIR +
                                 "/tests/py/qwen_vocab_gguf.py --tiktoken " + tiktoken + " --pre " +
                                 pre + " --out " + gguf_path),
            "");
  std::unique_ptr<gguf::File> file;
  Status s = gguf::File::Open(gguf_path, &file);
  ASSERT_TRUE(s.ok()) << s.message();
  fb::TokenizerT table;
  s = ImportTokenizer(*file, &table);
  file.reset();
  std::remove(gguf_path.c_str());
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(table.pieces.size(), 151643u + 26u);
  Tokenizer tok;
  s = TokenizerFromTable(table, &tok);
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectLlamaCppIds(tok, fixture, 600);
}

TEST(TokenizerHostile, QwenVocabularyMatchesLlamaCpp) {
  ExpectQwenVocabularyMatchesLlamaCpp("qwen2", "tokenizer_qwen.jsonl");
}

// GPT-4o's pre-tokenizer (Phi-4-mini's tokenizer.ggml.pre "gpt-4o": words split where the case
// changes, digits in threes, '/' kept after punctuation) over the same vocabulary.
TEST(TokenizerHostile, Gpt4oPreTokenizerMatchesLlamaCpp) {
  ExpectQwenVocabularyMatchesLlamaCpp("gpt-4o", "tokenizer_qwen_gpt4o.jsonl");
}

// Typed text never becomes a control token, whatever its bytes (the issue's `a\x04b` gave
// SmolLM2's <|endoftext|>), including the cases llama.cpp's BPE aborts on (above U+10FFFF).
TEST(TokenizerHostile, PlainTextNeverGivesControlTokens) {
  for (const char* kes : {"smollm2-135m-q4.kes", "gemma3-270m-q4.kes"}) {
    std::unique_ptr<Model> model;
    const Status s = Model::Open(std::string(KESTREL_TEST_TMP) + "/" + kes, &model);
    ASSERT_TRUE(s.ok()) << s.message();
    const Tokenizer& tok = model->tokenizer();
    std::vector<std::string> texts = {
        "a\x04"
        "b",
        "a\xF4\x90\x80\x80"
        "b",
        "\xF5\x80\x80\x80 \xF7\xBF\xBF\xBF", "<|endoftext|><eos>"};
    for (int b = 0; b < 256; ++b) texts.push_back("x" + std::string(1, static_cast<char>(b)));
    for (const std::string& text : texts) {
      std::vector<int32_t> ids;
      ASSERT_TRUE(tok.Encode(text, false, /*parse_special=*/false, &ids).ok()) << kes;
      for (int32_t id : ids) {
        const TokenType type = tok.Type(id);
        EXPECT_TRUE(type != TokenType::kControl && type != TokenType::kUnknown)
            << kes << ": id " << id << " for " << testing::PrintToString(text);
      }
    }
  }
}

// Whisper's vocabulary (GPT-2's) has every byte, and its unknown id is <|endoftext|>: hostile
// text gives ordinary tokens only, and decodes back as llama.cpp reads it (SanitizeUtf8: invalid
// bytes as U+FFFD).
TEST(TokenizerHostile, WhisperGivesNoControlTokensAndDecodesBack) {
  fb::TokenizerT table;
  Status s = ct2::ReadWhisperTokenizer(KESTREL_WHISPER_CT2_DIR, 51864, &table);
  ASSERT_TRUE(s.ok()) << s.message() << " (fetch it with scripts/fetch-model.sh whisper)";
  Tokenizer tok;
  s = TokenizerFromTable(table, &tok);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::vector<Case> cases =
      ReadFixture(std::string(KESTREL_SOURCE_DIR) + "/tests/data/tokenizer_hostile_smollm2.jsonl");
  ASSERT_GE(cases.size(), 500u);
  std::vector<int32_t> ids;
  ASSERT_TRUE(tok.Encode("a\x04"
                         "b",
                         false, false, &ids)
                  .ok());
  EXPECT_EQ(tok.Decode(ids),
            "a\x04"
            "b");
  for (const Case& c : cases) {
    ASSERT_TRUE(tok.Encode(c.text, false, /*parse_special=*/false, &ids).ok()) << c.name;
    for (int32_t id : ids) {
      const TokenType type = tok.Type(id);
      EXPECT_TRUE(type != TokenType::kControl && type != TokenType::kUnknown)
          << c.name << ": id " << id;
    }
    EXPECT_EQ(tok.Decode(ids), SanitizeUtf8(c.text)) << c.name;
  }
}

}  // namespace
}  // namespace kestrel
