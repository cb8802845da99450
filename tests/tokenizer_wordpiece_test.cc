// WordPiece (BERT) on a hand-written vocabulary: normalization, pre-tokenization, longest match
// first, unknown words, special tokens, decoding; the model-file checks of its options; and
// ReadHfTokenizer's errors on damaged files. Parity with Hugging Face on real text and every code
// point: tests/py/compare_wordpiece_tokenizers.py (ctest wordpiece_vs_hf_tokenizers).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "converters/hf_tokenizer.h"
#include "runtime/model_tokenizer.h"
#include "support/test_support.h"

namespace kestrel {
namespace {

const std::vector<std::string> kPieces = {
    "[PAD]", "[UNK]", "[CLS]",  "[SEP]", "[MASK]",                          // 0-4
    "un",    "##aff", "##able", "una",   "##ffable", "aff",        "able",  // 5-11
    "hello", "world", ",",      "!",     ".",        "$",          "cafe",     "naive",
    "中",    "文",                                                                     // 12-21
    "a",     "##b",   "x",      "##y",   "i",        "##\xCC\x87", "istanbul", "tab",  // 22-29
};

TokenizerConfig WordPieceConfig() {
  TokenizerConfig c;
  c.algorithm = TokenizerAlgorithm::kWordPiece;
  c.unk_id = 1, c.bos_id = 2, c.eos_id = 3, c.pad_id = 0;
  c.add_bos = c.add_eos = true;
  return c;
}

Tokenizer Make(const TokenizerConfig& config = WordPieceConfig()) {
  std::vector<float> scores(kPieces.size(), 0.0f);
  std::vector<int8_t> types(kPieces.size(), 1);
  types[0] = types[2] = types[3] = types[4] = 3;
  types[1] = 2;
  Tokenizer t;
  const Status s = t.Init(
      kPieces.size(), [](size_t i) { return std::string_view(kPieces[i]); }, scores.data(),
      types.data(), config);
  EXPECT_TRUE(s.ok()) << s.message();
  return t;
}

std::vector<int32_t> Ids(const Tokenizer& t, const std::string& text, bool add_special = false) {
  std::vector<int32_t> ids;
  const Status s = t.Encode(text, add_special, /*parse_special=*/true, &ids);
  EXPECT_TRUE(s.ok()) << s.message();
  return ids;
}

using V = std::vector<int32_t>;

TEST(WordPiece, LongestMatchFirstWithContinuationPrefix) {
  const Tokenizer t = Make();
  EXPECT_EQ(Ids(t, "unaffable"), (V{8, 9}));  // "una" + "##ffable" beats "un" + "##aff" ...
  EXPECT_EQ(Ids(t, "ab"), (V{22, 23}));
  EXPECT_EQ(Ids(t, "abb"), (V{22, 23, 23}));
  EXPECT_EQ(Ids(t, "able aff"), (V{11, 10}));
}

TEST(WordPiece, UnknownWordsAreOneUnknownToken) {
  const Tokenizer t = Make();
  EXPECT_EQ(Ids(t, "abz hello"), (V{1, 12}));  // no piece for "z": the whole word, not the rest
  EXPECT_EQ(Ids(t, "zzz"), (V{1}));
  const std::string hundred = "a" + std::string(99, 'b');
  EXPECT_EQ(Ids(t, hundred).size(), 100u);
  EXPECT_EQ(Ids(t, hundred + "b"), (V{1}));  // 101 characters: over max_chars_per_word
  TokenizerConfig short_words = WordPieceConfig();
  short_words.max_chars_per_word = 2;
  EXPECT_EQ(Ids(Make(short_words), "ab abb"), (V{22, 23, 1}));
}

TEST(WordPiece, NormalizesLikeBert) {
  const Tokenizer t = Make();
  EXPECT_EQ(Ids(t, "HeLLo, World!"), (V{12, 14, 13, 15}));
  EXPECT_EQ(Ids(t, "Café NAÏVE"), (V{18, 19}));         // accents stripped, lowercased
  EXPECT_EQ(Ids(t, "cafe\xCC\x81"), (V{18}));           // combining acute dropped
  EXPECT_EQ(Ids(t, "中文"), (V{20, 21}));               // each ideograph its own word
  EXPECT_EQ(Ids(t, "hel\x01lo\xE2\x80\x8B"), (V{12}));  // control and format chars dropped
  EXPECT_EQ(Ids(t,
                "a\tx\r\nhello\xC2\xA0world\xE3\x80\x80"
                "a"),
            (V{22, 24, 12, 13, 22}));
  EXPECT_EQ(Ids(t, "hello\x0Bworld"), (V{1}));    // vertical tab is dropped, not a space
  EXPECT_EQ(Ids(t, "$hello."), (V{17, 12, 16}));  // ASCII symbols are punctuation
  EXPECT_EQ(Ids(t, "\xC4\xB0stanbul"), (V{28}));  // İ: NFD then lowercase
  TokenizerConfig keep_accents = WordPieceConfig();
  keep_accents.normalizer.strip_accents = false;
  EXPECT_EQ(Ids(Make(keep_accents), "\xC4\xB0"), (V{26, 27}));  // full lowercase: i + U+0307
  TokenizerConfig cased = WordPieceConfig();
  cased.normalizer.lowercase = cased.normalizer.strip_accents = false;
  EXPECT_EQ(Ids(Make(cased), "Hello hello"), (V{1, 12}));
}

TEST(WordPiece, SpecialTokensInTextAndAround) {
  const Tokenizer t = Make();
  EXPECT_EQ(Ids(t, "hello [MASK] world", true), (V{2, 12, 4, 13, 3}));
  EXPECT_EQ(Ids(t, "hello[MASK]"), (V{12, 4}));
  EXPECT_EQ(Ids(t, "[mask]"), (V{1, 1, 1}));  // not the special token: "[", "mask", "]" words
  EXPECT_EQ(Ids(t, "", true), (V{2, 3}));
}

TEST(WordPiece, DecodeJoinsContinuationsAndDropsSpecials) {
  const Tokenizer t = Make();
  EXPECT_EQ(t.Decode(Ids(t, "Hello, unaffable world! [MASK] abb.", true)),
            "hello, unaffable world! abb.");
  EXPECT_EQ(t.TokenText(9), "ffable");
  EXPECT_EQ(t.TokenText(12), " hello");
  EXPECT_EQ(t.TokenText(2), "");
}

TEST(WordPiece, InitChecksItsOptions) {
  std::vector<float> scores(kPieces.size(), 0.0f);
  std::vector<int8_t> types(kPieces.size(), 1);
  const auto init = [&](const TokenizerConfig& c) {
    Tokenizer t;
    return t
        .Init(
            kPieces.size(), [](size_t i) { return std::string_view(kPieces[i]); }, scores.data(),
            types.data(), c)
        .message();
  };
  TokenizerConfig c = WordPieceConfig();
  c.unk_id = -1;
  EXPECT_NE(init(c).find("expected an unknown token"), std::string::npos) << init(c);
  c = WordPieceConfig();
  c.continuing_prefix.clear();
  EXPECT_NE(init(c).find("non-empty continuing prefix"), std::string::npos) << init(c);
  c = WordPieceConfig();
  c.max_chars_per_word = 0;
  EXPECT_NE(init(c).find("max_chars_per_word > 0"), std::string::npos) << init(c);
}

// ---- ReadHfTokenizer ----

class HfTokenizerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::TmpPath("hf-tokenizer-" + std::to_string(::getpid()) + "-" +
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ::mkdir(dir_.c_str(), 0755);
  }
  void TearDown() override {
    for (const char* name :
         {"tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"}) {
      ::unlink((dir_ + "/" + name).c_str());
    }
    ::rmdir(dir_.c_str());
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
  }
  std::string Read(fb::TokenizerT* out) {
    const Status s = ReadHfTokenizer(dir_, out);
    return s.ok() ? "" : s.message();
  }
  // The normalizer of a valid tokenizer.json: every option set.
  static constexpr char kBertNormalizer[] = R"({"type": "BertNormalizer", "clean_text": true,
                                               "handle_chinese_chars": true,
                                               "strip_accents": null, "lowercase": true})";
  // A valid tokenizer.json with `model_type`, `normalizer` and `extra` spliced in.
  static std::string Json(const std::string& model_type = "WordPiece",
                          const std::string& normalizer = kBertNormalizer,
                          const std::string& vocab = R"({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2,
                                                        "a": 3, "##b": 4})") {
    return R"({"added_tokens": [{"id": 0, "content": "[UNK]", "special": true, "lstrip": false,
               "rstrip": false, "single_word": false, "normalized": false}],
               "normalizer": )" +
           normalizer + R"(, "pre_tokenizer": {"type": "BertPreTokenizer"},
               "post_processor": {"type": "TemplateProcessing",
                 "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                            {"Sequence": {"id": "A", "type_id": 0}},
                            {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]},
               "model": {"type": ")" +
           model_type + R"(", "unk_token": "[UNK]",
                 "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                 "vocab": )" +
           vocab + "}}";
  }
  std::string dir_;
};

TEST_F(HfTokenizerFiles, ReadsTokenizerJsonAndLoadsLikeAModel) {
  Write("tokenizer.json", Json());
  fb::TokenizerT t;
  ASSERT_EQ(Read(&t), "");
  EXPECT_EQ(t.kind, fb::TokenizerKind::WordPiece);
  EXPECT_EQ(t.pieces.size(), 5u);
  EXPECT_EQ(t.unk_id, 0);
  EXPECT_EQ(t.bos_id, 1);
  EXPECT_EQ(t.eos_id, 2);
  EXPECT_TRUE(t.add_bos && t.add_eos);
  EXPECT_EQ(t.types[0], 2);
  ASSERT_NE(t.wordpiece, nullptr);
  EXPECT_TRUE(t.wordpiece->lowercase && t.wordpiece->strip_accents && t.wordpiece->clean_text);
  EXPECT_EQ(t.wordpiece->max_chars_per_word, 100u);

  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Tokenizer::Pack(builder, &t));
  Tokenizer tok;
  const auto* table = flatbuffers::GetRoot<fb::Tokenizer>(builder.GetBufferPointer());
  ASSERT_TRUE(InitTokenizer(table, t.pieces.size(), &tok).ok());
  EXPECT_EQ(Ids(tok, "AB [UNK]", true), (V{1, 3, 4, 0, 2}));
}

TEST_F(HfTokenizerFiles, ModelFileChecksWordPieceFields) {
  Write("tokenizer.json", Json());
  fb::TokenizerT t;
  ASSERT_EQ(Read(&t), "");
  t.wordpiece->continuing_prefix.clear();
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Tokenizer::Pack(builder, &t));
  Tokenizer tok;
  Status s = InitTokenizer(flatbuffers::GetRoot<fb::Tokenizer>(builder.GetBufferPointer()),
                           t.pieces.size(), &tok);
  EXPECT_NE(s.message().find("continuing_prefix"), std::string::npos) << s.message();
  t.wordpiece.reset();
  builder.Clear();
  builder.Finish(fb::Tokenizer::Pack(builder, &t));
  s = InitTokenizer(flatbuffers::GetRoot<fb::Tokenizer>(builder.GetBufferPointer()),
                    t.pieces.size(), &tok);
  EXPECT_NE(s.message().find("expected a wordpiece table"), std::string::npos) << s.message();
}

TEST_F(HfTokenizerFiles, DamagedTokenizerJsonNamesFileAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Json("WordLevel"), "model.type: expected \"WordPiece\", \"Unigram\" or \"BPE\""},
      {Json().substr(0, 200), "expected well-formed JSON"},
      {Json("WordPiece", R"({"type": "Lowercase"})"),
       "normalizer.type: expected \"BertNormalizer\""},
      {Json("WordPiece", R"({"type": "BertNormalizer", "clean_text": 1})"),
       "normalizer.clean_text: expected a boolean, found the number 1"},
      {Json("WordPiece", R"({"type": "BertNormalizer", "clean_text": true,
                             "handle_chinese_chars": true, "lowercase": true,
                             "lowercase": false})"),
       "duplicate key 'lowercase'"},
      {Json("WordPiece", kBertNormalizer, R"({"[UNK]": 0, "a": 5})"),
       "model.vocab: expected ids 0..1"},
      {Json("WordPiece", kBertNormalizer, R"({"[UNK]": 0, "a": "1"})"),
       "model.vocab.a: expected a non-negative integer, found the string \"1\""},
      {Json("WordPiece", kBertNormalizer, R"({"[CLS]": 0, "a": 1})"),
       "model.unk_token: \"[UNK]\" is not in the vocabulary"},
  };
  for (const auto& [text, expected] : cases) {
    Write("tokenizer.json", text);
    fb::TokenizerT t;
    const std::string message = Read(&t);
    EXPECT_NE(message.find(expected), std::string::npos) << "got: " << message;
    EXPECT_NE(message.find("tokenizer.json"), std::string::npos) << message;
  }
}

TEST_F(HfTokenizerFiles, ReadsVocabTxtWithConfigFiles) {
  Write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n##s\r\n");
  Write("tokenizer_config.json", R"({"do_lower_case": false, "strip_accents": null})");
  Write("special_tokens_map.json", R"({"unk_token": {"content": "[UNK]"}, "cls_token": "[CLS]"})");
  fb::TokenizerT t;
  ASSERT_EQ(Read(&t), "");
  EXPECT_EQ(t.pieces.back(), "##s");
  EXPECT_EQ(t.unk_id, 1);
  EXPECT_EQ(t.bos_id, 2);
  EXPECT_EQ(t.eos_id, 3);
  EXPECT_EQ(t.pad_id, 0);
  EXPECT_EQ(t.types[4], 3);  // [MASK]: control
  EXPECT_FALSE(t.wordpiece->lowercase);
  EXPECT_FALSE(t.wordpiece->strip_accents);  // null follows do_lower_case
  EXPECT_TRUE(t.wordpiece->handle_chinese_chars);
}

TEST_F(HfTokenizerFiles, DamagedVocabFolderNamesFileAndField) {
  fb::TokenizerT t;
  EXPECT_NE(Read(&t).find("vocab.txt': cannot open"), std::string::npos) << Read(&t);
  Write("vocab.txt", "[UNK]\na\na\n");
  EXPECT_NE(Read(&t).find("piece \"a\" appears twice, as ids 1 and 2"), std::string::npos)
      << Read(&t);
  Write("vocab.txt", "[UNK]\na\n");
  Write("tokenizer_config.json", R"({"do_lower_case": "yes"})");
  EXPECT_NE(Read(&t).find("tokenizer_config.json': do_lower_case: expected a boolean"),
            std::string::npos)
      << Read(&t);
  Write("tokenizer_config.json", "{}");
  Write("special_tokens_map.json", R"({"unk_token": "<unk>"})");
  EXPECT_NE(Read(&t).find("the unknown token \"<unk>\" (unk_token) is not in the vocabulary"),
            std::string::npos)
      << Read(&t);
}

}  // namespace
}  // namespace kestrel
