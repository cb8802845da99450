// The converter's reading of a Unigram tokenizer.json (converters/hf_tokenizer_unigram.cc): the
// shapes XLM-RoBERTa's files have, loaded as a model loads them, and each shape it refuses named
// in the error. tests/py/compare_unigram_tokenizers.py runs trained models against
// SentencePiece and Hugging Face.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "converters/hf_tokenizer.h"
#include "converters/tokenizer_table.h"
#include "tests/support/charsmap_blob.h"

namespace kestrel {
namespace {

std::string Base64(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k) {
      group = group << 8 | (i + k < bytes.size() ? static_cast<unsigned char>(bytes[i + k]) : 0);
    }
    for (size_t k = 0; k < 4; ++k) {
      out += k <= (bytes.size() - i) ? digits[group >> (18 - 6 * k) & 63] : '=';
    }
  }
  return out;
}

// XLM-R's layout over a tiny vocabulary; each argument replaces one part.
struct UnigramJson {
  std::string normalizer =
      R"({"type": "Sequence", "normalizers": [{"type": "Precompiled", "precompiled_charsmap": ")" +
      Base64(test::Blob(test::TwoRuleUnits(), test::kTwoRuleStrings)) +
      R"("}, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]})";
  std::string pre_tokenizer =
      R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true})";
  std::string model_extra = R"("byte_fallback": false)";
  std::string mask = R"("lstrip": true, "rstrip": false)";

  std::string Text() const {
    return R"({"version": "1.0", "truncation": null, "padding": null,
      "added_tokens": [
        {"id": 0, "content": "<s>", "special": true, "lstrip": false, "rstrip": false,
         "single_word": false, "normalized": false},
        {"id": 2, "content": "</s>", "special": true, "lstrip": false, "rstrip": false,
         "single_word": false, "normalized": false},
        {"id": 3, "content": "<unk>", "special": true, "lstrip": false, "rstrip": false,
         "single_word": false, "normalized": false},
        {"id": 8, "content": "<mask>", "special": true, )" +
           mask + R"(, "single_word": false, "normalized": false}],
      "normalizer": )" +
           normalizer + R"(, "pre_tokenizer": )" + pre_tokenizer + R"(,
      "post_processor": {"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "</s>", "type_id": 0}}]},
      "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always",
                  "split": true},
      "model": {"type": "Unigram", "unk_id": 3, )" +
           model_extra + R"(, "vocab": [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0],
        ["<unk>", 0.0], ["▁", -1.0], ["▁a", -2.0], ["b", -3.0], ["▁ab", -2.5],
        ["<mask>", 0.0]]}})";
  }
};

class HfUnigramFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    dir_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/kestrel-unigram-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_.data()), nullptr);
  }
  void TearDown() override {
    ::unlink((dir_ + "/tokenizer.json").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string Read(const UnigramJson& json, fb::TokenizerT* out) {
    std::ofstream(dir_ + "/tokenizer.json", std::ios::binary) << json.Text();
    const Status s = ReadHfTokenizer(dir_, out);
    return s.ok() ? "" : s.message();
  }
  std::string dir_;
};

TEST_F(HfUnigramFiles, ReadsXlmRobertaLayoutAndLoadsLikeAModel) {
  fb::TokenizerT t;
  ASSERT_EQ(Read(UnigramJson(), &t), "");
  EXPECT_EQ(t.kind, fb::TokenizerKind::Unigram);
  ASSERT_NE(t.unigram, nullptr);
  EXPECT_TRUE(t.unigram->add_dummy_prefix && t.unigram->remove_extra_whitespaces &&
              t.unigram->escape_whitespaces);
  EXPECT_EQ(t.unigram->precompiled_charsmap.size(), 4u + 1024u + 6u);
  EXPECT_EQ(t.unk_id, 3);
  EXPECT_EQ(t.bos_id, 0);
  EXPECT_EQ(t.eos_id, 2);
  EXPECT_EQ(t.lstrip_ids, (std::vector<int32_t>{8}));
  EXPECT_EQ(t.types, (std::vector<int8_t>{3, 1, 3, 2, 1, 1, 1, 1, 3}));
  EXPECT_FLOAT_EQ(t.scores[7], -2.5f);

  Tokenizer tok;
  ASSERT_TRUE(TokenizerFromTable(t, &tok).ok());
  std::vector<int32_t> ids;
  // "A" -> "a" by the charsmap; " <mask>" loses its space (lstrip).
  ASSERT_TRUE(tok.Encode("Ab  <mask>a", true, true, &ids).ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 7, 8, 5, 2}));
}

TEST_F(HfUnigramFiles, ReadsTheNewerLayout) {
  UnigramJson json;
  json.normalizer = R"({"type": "Sequence", "normalizers": [
      {"type": "Strip", "strip_left": false, "strip_right": true},
      {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "▁"}]})";
  json.pre_tokenizer = R"({"type": "Metaspace", "replacement": "▁", "add_prefix_space": true})";
  fb::TokenizerT t;
  ASSERT_EQ(Read(json, &t), "");
  EXPECT_TRUE(t.unigram->precompiled_charsmap.empty());
  Tokenizer tok;
  ASSERT_TRUE(TokenizerFromTable(t, &tok).ok());
}

TEST_F(HfUnigramFiles, RefusedShapesAreNamed) {
  const auto with = [](std::string UnigramJson::*part, std::string text) {
    UnigramJson json;
    json.*part = std::move(text);
    return json;
  };
  const std::vector<std::pair<UnigramJson, std::string>> cases = {
      {with(&UnigramJson::model_extra, R"("byte_fallback": true)"),
       "model.byte_fallback: expected false"},
      {with(&UnigramJson::mask, R"("lstrip": false, "rstrip": true)"), "rstrip: expected false"},
      {with(&UnigramJson::pre_tokenizer,
            R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"})"),
       "pre_tokenizer: expected \"▁\" prepended always"},
      {with(&UnigramJson::pre_tokenizer, R"({"type": "Whitespace"})"),
       "pre_tokenizer.type: expected \"Metaspace\""},
      {with(&UnigramJson::normalizer,
            R"({"type": "Sequence", "normalizers": [
                {"type": "Precompiled", "precompiled_charsmap": "AAAA"}]})"),
       "normalizer.normalizers: expected [Precompiled,] Replace"},
      {with(&UnigramJson::normalizer,
            R"({"type": "Sequence", "normalizers": [
                {"type": "Replace", "pattern": {"Regex": " +"}, "content": " "}]})"),
       "expected runs of spaces"},
      {with(&UnigramJson::normalizer,
            R"({"type": "Sequence", "normalizers": [
                {"type": "Precompiled", "precompiled_charsmap": "AA*A"},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]})"),
       "precompiled_charsmap: expected base64"},
      {with(&UnigramJson::normalizer,
            R"({"type": "Sequence", "normalizers": [
                {"type": "Precompiled", "precompiled_charsmap": "AAAAAA=="},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]})"),
       "precompiled charsmap: expected a trie of whole 1024-byte blocks"},
      {with(&UnigramJson::normalizer, R"({"type": "NFKC"})"), "normalizer.type: expected"},
  };
  for (const auto& [json, expected] : cases) {
    fb::TokenizerT t;
    const std::string message = Read(json, &t);
    EXPECT_NE(message.find(expected), std::string::npos) << "got: " << message;
  }
}

}  // namespace
}  // namespace kestrel
