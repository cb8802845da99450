// The Unigram tokenizer (runtime/tokenizer_unigram.cc) on a tiny vocabulary: the Viterbi
// search, unknown runs, special tokens with lstrip, the charsmap before the search, Init's
// checks. tests/py/compare_unigram_tokenizers.py compares trained models with SentencePiece and
// Hugging Face.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/tokenizer.h"
#include "tests/support/charsmap_blob.h"

namespace kestrel {
namespace {

using test::Blob;
using test::kTwoRuleStrings;
using test::TwoRuleUnits;

// A tiny Unigram vocabulary (no charsmap): <unk> <s> </s> then pieces with scores.
struct TinyUnigram {
  std::vector<std::string> pieces = {"<unk>",
                                     "<s>",
                                     "</s>",
                                     "\xE2\x96\x81",
                                     "\xE2\x96\x81"
                                     "a",
                                     "a",
                                     "b",
                                     "\xE2\x96\x81"
                                     "ab",
                                     "ab",
                                     "c",
                                     "<mask>"};
  std::vector<float> scores = {0, 0, 0, -1, -2, -3, -3, -2.5f, -4, -5, 0};
  std::vector<int8_t> types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 3};

  Status Init(Tokenizer* t, TokenizerConfig config, std::string_view charsmap = {}) const {
    return t->Init(
        pieces.size(), [this](size_t i) -> std::string_view { return pieces[i]; }, scores.data(),
        types.data(), config, 0, {}, charsmap);
  }
};

TokenizerConfig UnigramConfig() {
  TokenizerConfig config;
  config.algorithm = TokenizerAlgorithm::kUnigram;
  config.unk_id = 0;
  config.bos_id = 1;
  config.eos_id = 2;
  config.add_bos = config.add_eos = true;
  config.lstrip_ids = {10};
  return config;
}

std::vector<int32_t> Ids(const Tokenizer& t, std::string_view text, bool add_special = false) {
  std::vector<int32_t> ids;
  EXPECT_TRUE(t.Encode(text, add_special, true, &ids).ok());
  return ids;
}

TEST(TokenizerUnigram, ViterbiPicksTheHighestScore) {
  Tokenizer t;
  ASSERT_TRUE(TinyUnigram().Init(&t, UnigramConfig()).ok());
  // "▁ab" (-2.5) beats "▁a" + "b" (-5) and "▁" + "ab" (-5).
  EXPECT_EQ(Ids(t, "ab"), (std::vector<int32_t>{7}));
  EXPECT_EQ(Ids(t, "ab", true), (std::vector<int32_t>{1, 7, 2}));
  EXPECT_EQ(Ids(t, "  ab   a  "), (std::vector<int32_t>{7, 4}));
  EXPECT_EQ(Ids(t, "abc"), (std::vector<int32_t>{7, 9}));
  EXPECT_EQ(t.Decode(Ids(t, "ab  a")), "ab a");
}

TEST(TokenizerUnigram, UnknownRunsFuseAndSpecialsSplit) {
  Tokenizer t;
  ASSERT_TRUE(TinyUnigram().Init(&t, UnigramConfig()).ok());
  // "x", "y" and U+2603 have no piece: one unknown token for the run.
  EXPECT_EQ(Ids(t,
                "axy\xE2\x98\x83"
                "b"),
            (std::vector<int32_t>{4, 0, 6}));
  EXPECT_EQ(Ids(t, "a x"), (std::vector<int32_t>{4, 3, 0}));
  // Invalid UTF-8 becomes U+FFFD, which has no piece either.
  EXPECT_EQ(Ids(t, "a\xFF\xFE"), (std::vector<int32_t>{4, 0}));
  // <mask> takes the whitespace before it (lstrip), each fragment gets its dummy prefix.
  EXPECT_EQ(Ids(t, "a \xE3\x80\x80<mask>b"), (std::vector<int32_t>{4, 10, 3, 6}));
  EXPECT_EQ(Ids(t, "<s>ab</s>"), (std::vector<int32_t>{1, 7, 2}));
}

TEST(TokenizerUnigram, InitChecks) {
  Tokenizer t;
  TokenizerConfig config = UnigramConfig();
  config.unk_id = -1;
  Status s = TinyUnigram().Init(&t, config);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Unigram expected an unknown token"), std::string::npos);

  s = TinyUnigram().Init(&t, UnigramConfig(), "xyz");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("precompiled charsmap: expected at least 4 bytes"), std::string::npos)
      << s.message();

  config = UnigramConfig();
  config.algorithm = TokenizerAlgorithm::kSentencePiece;
  s = TinyUnigram().Init(&t, config, Blob(TwoRuleUnits(), kTwoRuleStrings));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not Unigram"), std::string::npos) << s.message();
}

TEST(TokenizerUnigram, CharsmapNormalizesBeforeTheSearch) {
  Tokenizer t;
  ASSERT_TRUE(TinyUnigram().Init(&t, UnigramConfig(), Blob(TwoRuleUnits(), kTwoRuleStrings)).ok());
  // "A" -> "a"; "AB" -> "x y": "▁", unknown "x", "▁", unknown "y".
  EXPECT_EQ(Ids(t, "Ab"), (std::vector<int32_t>{7}));
  EXPECT_EQ(Ids(t, "AB"), (std::vector<int32_t>{3, 0, 3, 0}));
  const Tokenizer copy = t;  // copies keep working: no internal pointers
  EXPECT_EQ(Ids(copy, "Ab"), (std::vector<int32_t>{7}));
}

}  // namespace
}  // namespace kestrel
